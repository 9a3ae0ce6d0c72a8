// The fields of OpenAI's and vLLM's request schemas that this server does not act on, each
// refused with a 400 naming it unless its value asks for nothing (null, false, an empty list, the
// schema's default). A field that is in neither schema is refused as unknown: a server that
// answers 200 while ignoring part of a request returns something other than what was asked.
#pragma once

#include <cstdint>
#include <string_view>

#include "core/common/json_value.h"

namespace pagedllm::server {

// The routes a field belongs to (a bit set).
enum RequestRoutes : uint8_t { kCompletionsRoute = 1, kChatRoute = 2, kBothRoutes = 3 };

// Throws JsonError naming `name` when it is a refused field of `route` whose value asks for
// something, or when it is no field of `route` at all (then saying whether the other route has
// it: `read_by_other_route` is the reader table's answer). `value` is not null (null means
// absent). Called for every member of a request body that the route's reader table does not read.
void refuse_unread_field(std::string_view name, const JsonValue& value, RequestRoutes route, bool read_by_other_route);

}  // namespace pagedllm::server
