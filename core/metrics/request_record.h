// What a serving benchmark knows about one request, however it ran (engine replay, simulator,
// HTTP client): when it was sent, when each chunk of output arrived, how many tokens it had.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/spec/speculation_tally.h"

namespace pagedllm::metrics {

struct RequestRecord {
  int64_t id = 0;
  double send_time = 0.0;          // seconds: when the request arrived (was sent)
  double first_token_time = -1.0;  // seconds: when its first output token arrived; < 0 = none
  double end_time = -1.0;          // seconds: when its last token arrived (or it failed)
  // When each output chunk arrived (one engine step, or one streamed HTTP chunk), first included;
  // ITL is every gap between consecutive entries.
  std::vector<double> chunk_times;
  int32_t prompt_tokens = 0;
  int32_t output_tokens = 0;  // generated tokens, all samples of the request together
  bool success = true;        // false: rejected, aborted or failed; excluded from latencies
  std::string error;          // why it failed
  // Speculative decoding (an engine run that speculates): the request's drafts and acceptance.
  std::optional<spec::SpeculationTally> speculation;
};

}  // namespace pagedllm::metrics
