// What the engine reports about a request: cumulative, as vLLM's RequestOutput.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/common/types.h"
#include "core/sched/request.h"
#include "core/sched/sequence.h"

namespace pagedllm::engine {

struct Completion {
  int32_t index = 0;
  std::vector<TokenId> tokens;  // output tokens only
  double cumulative_logprob = 0.0;
  sched::FinishReason finish_reason = sched::FinishReason::none;
  std::vector<std::vector<std::pair<TokenId, float>>> top_logprobs;  // per token, when asked
  std::vector<float> token_logprobs;  // per token, when logprobs are asked: the chosen token's
};

// How RequestOutput::message starts when the request's output constraint gave up (a grammar too
// ambiguous to follow; the request ends as `rejected`): a frontend reports it against the field
// that carried the constraint.
inline constexpr std::string_view kConstraintFailedPrefix = "structured outputs: ";

struct RequestOutput {
  sched::RequestId id = 0;
  int32_t num_prompt_tokens = 0;
  std::vector<Completion> completions;  // n samples, or the n best beams once finished
  bool finished = false;
  sched::FinishReason finish_reason = sched::FinishReason::none;
  std::string message;  // why a request was rejected
  sched::RequestTimes times;
  // Final reports of an engine that speculates: the request's drafts and acceptance (null
  // otherwise: a pointer, since outputs are moved every step and this is rarely set).
  std::shared_ptr<const spec::SpeculationTally> speculation;
};

}  // namespace pagedllm::engine
