#include "core/engine/beam_search.h"

#include <algorithm>
#include <cmath>

namespace pagedllm::engine {

BeamStep select_beams(std::vector<BeamCandidate> candidates, int32_t beam_width, std::span<const TokenId> stop_tokens,
                      int32_t room_for_complete) {
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const BeamCandidate& a, const BeamCandidate& b) { return a.score > b.score; });
  BeamStep step;
  for (const BeamCandidate& candidate : candidates) {
    if (static_cast<int32_t>(step.extend.size()) == beam_width) break;
    if (std::find(stop_tokens.begin(), stop_tokens.end(), candidate.token) != stop_tokens.end()) {
      if (static_cast<int32_t>(step.complete.size()) < room_for_complete) step.complete.push_back(candidate);
      continue;
    }
    step.extend.push_back(candidate);
  }
  return step;
}

double beam_score(double cumulative_logprob, int32_t num_tokens, double length_penalty) {
  return cumulative_logprob / std::pow(static_cast<double>(std::max(num_tokens, 1)), length_penalty);
}

}  // namespace pagedllm::engine
