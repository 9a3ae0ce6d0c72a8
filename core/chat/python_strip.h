// Python's str.strip() on UTF-8 text: what Jinja's `trim` filter does to message content.
#pragma once

#include <string>
#include <string_view>

namespace pagedllm::chat {

// Removes leading and trailing characters that Python's str.isspace() accepts: ASCII
// whitespace, \x1c-\x1f, U+0085, U+00A0, U+1680, U+2000-U+200A, U+2028, U+2029, U+202F, U+205F
// and U+3000. Invalid UTF-8 is left as it is.
std::string python_strip(std::string_view text);

}  // namespace pagedllm::chat
