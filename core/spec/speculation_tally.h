// One request's speculative decoding, counted as EngineCounters counts the engine's (vLLM's
// spec_decode counters), over all its sequences. Acceptance varies between requests (an edit of a
// given text is predictable, a summary much less), so a run's per-request tallies, written into a
// trace as each request's simulated_speculation, let the simulator replay that spread instead of
// one engine-wide rate (docs/SIMULATOR.md, "Speculative decoding").
#pragma once

#include <cstdint>
#include <vector>

#include "core/spec/speculative_config.h"

namespace pagedllm::spec {

struct SpeculationTally {
  int64_t decode_passes = 0;                   // decode or verify passes of the request's sequences
  int64_t drafts = 0;                          // verify passes (passes that had proposals)
  int64_t draft_tokens = 0;                    // proposals verified
  std::vector<int64_t> accepted_per_position;  // [j]: drafts whose proposal j was accepted

  void add_verify(int32_t num_proposed, int32_t num_accepted) {
    ++drafts;
    draft_tokens += num_proposed;
    if (accepted_per_position.size() < static_cast<size_t>(num_proposed))
      accepted_per_position.resize(static_cast<size_t>(num_proposed), 0);
    for (int32_t j = 0; j < num_accepted; ++j) ++accepted_per_position[static_cast<size_t>(j)];
  }

  // The simulator's rates for this request: drafts per decode pass, and each position's accepted
  // drafts over all drafts (0 where there were none).
  SimulatedAcceptance rates() const {
    SimulatedAcceptance simulated;
    simulated.draft_rate = decode_passes > 0 ? static_cast<double>(drafts) / static_cast<double>(decode_passes) : 0.0;
    for (const int64_t accepted : accepted_per_position) {
      simulated.accepted_per_position.push_back(drafts > 0 ? static_cast<double>(accepted) / static_cast<double>(drafts)
                                                           : 0.0);
    }
    return simulated;
  }
};

}  // namespace pagedllm::spec
