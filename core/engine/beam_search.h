// One step of beam search over a group's candidates: which beams live on, which extend, which end.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/common/types.h"

namespace pagedllm::engine {

struct BeamCandidate {
  int32_t parent = 0;  // index of the beam it extends
  TokenId token = 0;
  float logprob = 0.0f;
  double score = 0.0;  // the parent's cumulative logprob + logprob
};

struct BeamStep {
  std::vector<BeamCandidate> extend;    // the next beams, best first (at most beam_width)
  std::vector<BeamCandidate> complete;  // candidates that end with EOS: finished hypotheses
};

// Ranks every candidate by score (ties keep input order: the engine passes them by parent, then
// by rank) and takes the best beam_width that do not end the sequence; candidates that end it
// (EOS or a stop token: `stop_tokens`) ranked above the last kept beam become finished
// hypotheses, up to `room_for_complete`.
BeamStep select_beams(std::vector<BeamCandidate> candidates, int32_t beam_width, std::span<const TokenId> stop_tokens,
                      int32_t room_for_complete);

// vLLM's beam score: cumulative logprob over the sequence length to the power length_penalty.
double beam_score(double cumulative_logprob, int32_t num_tokens, double length_penalty = 1.0);

}  // namespace pagedllm::engine
