// Scheduling policies as small functions: who runs first, who is preempted, how, what an
// admission must leave free, and how much of a prompt one step computes. The scheduler applies
// their decisions; they change no state. docs/ARCHITECTURE.md lists every decision and its place.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>

#include "core/kv/kv_cache_manager.h"
#include "core/sched/scheduler_config.h"
#include "core/sched/sequence.h"

namespace pagedllm::sched {

// A scheduler queue (waiting, running or swapped), in policy order: runs_before.
using GroupQueue = std::deque<SequenceGroup*>;

// Strict order in which groups are served: FCFS by (arrival, id); priority by (priority,
// arrival, id), lower priority values first. Preemption victims come from the other end.
bool runs_before(SchedulingPolicy policy, const SequenceGroup& a, const SequenceGroup& b);

// The configured mode, or vLLM v0's choice: swap keeps the shared blocks of a group with more
// than one running sequence; a single sequence is cheaper to recompute.
PreemptionMode choose_preemption_mode(const SchedulerConfig& config, const SequenceGroup& victim);

// Who gives up its blocks when a step runs out: the running group last in policy order that
// the step `step` has not scheduled yet (vLLM's "preempt from the back"). Null when every
// running group has been scheduled.
SequenceGroup* choose_victim(const GroupQueue& running, int64_t step);

// Priority scheduling, before anything else is planned: the waiting head takes the blocks of the
// last running group while it outranks it (a strictly lower priority value) and does not fit now
// (`head_admission` is later). The victim is recomputed, never swapped: a swapped group would
// come back before the waiting head is admitted. Nothing (nullopt) when no preemption is due.
std::optional<PreemptionMode> priority_preemption(const SequenceGroup& waiting_head, const SequenceGroup& running_tail,
                                                  kv::AllocStatus head_admission);

// What an admission of new work must leave of the device tier: the watermark, always.
kv::Headroom admission_headroom(int32_t watermark_blocks);
// What a swap-in must leave: the watermark, and while other groups run, a free block for each of
// the group's sequences (its next step's slot), or it would be preempted again at once. With
// nothing running it may fill the cache: waiting could not make room for it.
kv::Headroom swap_in_headroom(int32_t watermark_blocks, int32_t num_seqs, bool others_running);

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
