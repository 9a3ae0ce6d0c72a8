// Scheduling policies as small functions: who runs first, who is preempted, how, and how much of
// a prompt one step computes. The scheduler applies their decisions; they change no state.
#pragma once

#include <cstdint>

#include "core/sched/scheduler_config.h"
#include "core/sched/sequence.h"

namespace pagedllm::sched {

// Strict order in which groups are served: FCFS by (arrival, id); priority by (priority,
// arrival, id), lower priority values first. Preemption victims come from the other end.
bool runs_before(SchedulingPolicy policy, const SequenceGroup& a, const SequenceGroup& b);

// The configured mode, or vLLM v0's choice: swap keeps the shared blocks of a group with more
// than one running sequence; a single sequence is cheaper to recompute.
PreemptionMode choose_preemption_mode(const SchedulerConfig& config, const SequenceGroup& victim);

struct ChunkRequest {
  int32_t start = 0;         // first uncomputed token
  int32_t end = 0;           // tokens the sequence has (the chunk never passes it)
  int32_t token_budget = 0;  // tokens left in this step
  int32_t block_size = 16;
  bool allow_chunking = true;
};

// How many tokens to compute now: everything if the budget allows; otherwise (with chunking) as
// much as fits, ending on a block boundary where that leaves a non-empty chunk; 0 if nothing fits.
// Inline: the scheduler asks once per scheduled sequence and step.
inline int32_t plan_chunk(const ChunkRequest& request) {
  const int32_t remaining = request.end - request.start;
  if (remaining <= request.token_budget) return remaining > 0 ? remaining : 0;
  if (!request.allow_chunking || request.token_budget <= 0) return 0;
  const int32_t end = request.start + request.token_budget;
  const int32_t aligned_end = end / request.block_size * request.block_size;
  return aligned_end > request.start ? aligned_end - request.start : request.token_budget;
}

}  // namespace pagedllm::sched
