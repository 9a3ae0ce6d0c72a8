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

// Every finished output and every request the engine refused, by request id.
std::vector<RequestRecord> to_request_records(const engine::ReplayResult& result);

}  // namespace pagedllm::metrics
