// Engine outputs as serving-benchmark records.
#pragma once

#include <span>
#include <vector>

#include "core/engine/replay.h"
#include "core/engine/request_output.h"
#include "core/metrics/request_record.h"

namespace pagedllm::metrics {

// Send time is the arrival, chunk times are the engine steps that produced output; output tokens
// count every returned sample. Rejected and aborted requests are failures with their reason.
RequestRecord to_request_record(const engine::RequestOutput& output);
// The same, taking the output's token times instead of copying them.
RequestRecord to_request_record(engine::RequestOutput&& output);
// A request the engine refused: a failure at its arrival, with the engine's message.
RequestRecord to_request_record(const engine::RefusedRequest& refused);

// Every finished output and every request the engine refused, by request id.
std::vector<RequestRecord> to_request_records(const engine::ReplayResult& result);
// The same, consuming the result: each output's token times move into its record and the output
// is freed as it goes, so the records never sit beside a copy of every output (a long simulation
// holds 8 bytes per output token in them).
std::vector<RequestRecord> to_request_records(engine::ReplayResult&& result);

}  // namespace pagedllm::metrics
