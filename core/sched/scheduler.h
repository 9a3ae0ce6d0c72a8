// The scheduler: continuous batching over waiting, running and swapped queues.
//
// Each step it serves, in order: running groups that decode, running groups in the middle of a
// prompt (chunked prefill), swapped groups (only in a step that preempted nothing), and waiting
// groups (only when nothing is swapped and nothing was preempted), within the token budget
// (max_num_batched_tokens) and max_num_seqs. Slots are reserved only for tokens computed in the
// step being planned, which is what lets the KV manager offer each block to the prefix cache as
// soon as it fills. When blocks run out, the group last in policy order among those not yet
// scheduled this step is preempted (by recompute or swap); a group that finds nobody else to
// preempt is preempted itself. Policies are the functions of policy.h; this class applies them.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/kv/flat_index.h"
#include "core/kv/kv_cache_manager.h"
#include "core/sched/policy.h"
#include "core/sched/scheduler_config.h"
#include "core/sched/sequence.h"
#include "core/sched/step_plan.h"

namespace pagedllm::sched {

class Scheduler {
 public:
  // The KV manager must outlive the scheduler.
  Scheduler(const SchedulerConfig& config, kv::KvCacheManager& kv);

  const SchedulerConfig& config() const { return config_; }
  const kv::KvCacheManager& kv() const { return kv_; }

  // Takes a new request: one waiting sequence holding the prompt. A group that can never fit the
  // KV cache (its prompt and max_tokens for every sequence exceed the device tier) is finished at
  // once as `rejected`, with the reason in finish_message.
  SequenceGroup& add(std::unique_ptr<SequenceGroup> group);

  // Frees the request's blocks in whatever state it is and finishes it as `abort`. False when
  // the request is unknown or already finished.
  bool abort(RequestId id);

  StepPlan schedule(int64_t step, double now);
  // The group of each sequence of the last plan, in plan order (what find(request) returns), so
  // that applying a step needs no lookups. Valid until the next schedule() or take_finished().
  std::span<SequenceGroup* const> plan_groups() const { return plan_groups_; }
  // Hands a plan back once the step is applied: the next schedule() reuses its buffers. Optional.
  void recycle(StepPlan&& plan);

  // --- between steps: the engine's bookkeeping after a step ----------------------------------
  SequenceGroup* find(RequestId id);
  // A new sequence sharing all of `parent`'s blocks (parallel sampling, beam search).
  Sequence& fork(SequenceGroup& group, size_t parent_index, SeqId child_id);
  // Speculative decoding, applying a verify pass: take_proposals() takes the sequence's proposals
  // off its tokens (returns how many) and counts its confirmed tokens computed; once the engine
  // has appended the tokens it keeps, settle_proposals() keeps the KV of the first num_accepted
  // proposals (now tokens) and drops the rest (KvCacheManager::settle_proposals). A sequence that
  // finished meanwhile is released instead.
  int32_t take_proposals(Sequence& seq);
  void settle_proposals(Sequence& seq, int32_t num_accepted);
  // Releases a finished or dropped sequence's blocks (it stays in the group unless erased).
  void release(Sequence& seq);
  // Marks the group finished, drops it from its queue and releases every sequence's blocks.
  void finish(SequenceGroup& group, FinishReason reason);
  // Hands a finished group back to the caller and forgets it.
  std::unique_ptr<SequenceGroup> take_finished(RequestId id);

  int32_t num_waiting() const { return static_cast<int32_t>(waiting_.size()); }
  int32_t num_running() const { return static_cast<int32_t>(running_.size()); }
  int32_t num_swapped() const { return static_cast<int32_t>(swapped_.size()); }
  bool has_unfinished() const { return !waiting_.empty() || !running_.empty() || !swapped_.empty(); }

  // Test support: each running sequence's KV slots equal its computed tokens, and each queue
  // holds exactly the groups in its state. Throws std::logic_error naming the broken one.
  void check_invariants() const;

 private:
  using Queue = GroupQueue;

  enum class Outcome : uint8_t { scheduled, out_of_budget, out_of_blocks, rejected };

  struct StepState {
    StepPlan* plan;
    double now;
    int32_t token_budget;
    int32_t seq_budget;
    bool preempted_any = false;
  };

  void insert_sorted(Queue& queue, SequenceGroup* group) const;
  static void erase(Queue& queue, const SequenceGroup* group);
  std::string never_fits_reason(const SequenceGroup& group) const;

  void schedule_running(StepState& state);
  void schedule_swapped(StepState& state);
  void schedule_waiting(StepState& state);
  void preempt_for_priority(StepState& state);

  // Reserves slots and adds the group's sequences to the plan, or reports what stopped it: one
  // path for every group (one sequence, samples, beams, siblings rejoining after a recompute).
  Outcome try_schedule(StepState& state, SequenceGroup& group);
  // Speculative decoding: appends each decoding sequence's proposals to its tokens, as many as its
  // budget `share` and the context allow, and adds them to scratch_new_tokens_; returns how many.
  // detach_proposals() undoes it (the blocks are short); returns how many it took off.
  int32_t attach_proposals(SequenceGroup& group, int32_t share);
  int32_t detach_proposals(SequenceGroup& group);
  // Takes the sequence's attached proposals off its tokens; returns how many.
  static int32_t pop_proposals(Sequence& seq);
  // The holders' appends of scratch_new_tokens_, into scratch_appends_.
  void build_appends(const SequenceGroup& group);
  bool scheduled_now(const SequenceGroup& group) const { return group.last_scheduled_step == current_step_; }
  // Live sequences holding KV: every one but siblings waiting to rejoin after a recompute.
  std::span<const SeqId> resident_ids(const SequenceGroup& group);
  // A live sequence of a running or swapped group with no KV yet: a sibling of a forked group
  // preempted by recompute, waiting to rejoin (between steps, every other holds >= 1 token).
  static bool is_rejoining(const Sequence& seq) { return seq.num_computed_tokens == 0; }
  static int32_t lockstep_end(const SequenceGroup& group, const Sequence& seq, bool lockstep);
  // Plans the rejoining siblings' first chunks into scratch_rejoins_ (adding their tokens to
  // total_tokens); returns the free blocks their allocation takes. They are allocated with the
  // group's other work, so preemption makes room for them too.
  int32_t plan_rejoins(const SequenceGroup& group, int32_t share, bool lockstep, int32_t& total_tokens);
  // Preempts the victim policy's choice to make room for `group`. False when that would be
  // `group` itself, or nobody is left.
  bool preempt_one_for(StepState& state, const SequenceGroup& group);
  void preempt(StepState& state, SequenceGroup& victim, std::optional<PreemptionMode> forced_mode = std::nullopt);
  // `block_table`: the sequence's, as the KV manager holds it after this step's slots.
  void add_to_plan(StepState& state, SequenceGroup& group, size_t seq_index, int32_t start, int32_t end,
                   std::span<const kv::BlockId> block_table);
  // Leading admission hashes derived from the request's content ids rather than its tokens.
  int32_t num_named_hashes(const SequenceGroup& group) const;
  // The admitted sequence's prompt for the prefix cache, its block hashes computed once (kept in
  // group.admission_hashes) when prefix caching is on.
  kv::PromptRef admission_prompt(SequenceGroup& group, const Sequence& seq) const;
  // A rejoining sibling's prompt for the prefix cache; hashed from the request's content ids
  // when it names them (into scratch_rejoin_hashes_, valid until the next call).
  kv::PromptRef rejoin_prompt(const SequenceGroup& group, const Sequence& seq);
  // Drops the group's admission hashes once its sequence holds slots for every block they cover.
  void release_admission_hashes(SequenceGroup& group, int32_t num_slots) const;
  Outcome admit(StepState& state, SequenceGroup& group);
  void reject(StepState& state, SequenceGroup& group, const std::string& reason);

  SchedulerConfig config_;
  kv::KvCacheManager& kv_;
  struct RequestIdBits {
    uint64_t operator()(RequestId id) const;  // mixes the id: sequential ids must spread out
  };
  // Every group not yet taken back, in slots (null = free) found by request id: a flat index,
  // since find() runs for each scheduled sequence in each step.
  kv::FlatIndex<RequestId, RequestIdBits> group_index_;
  std::vector<std::unique_ptr<SequenceGroup>> group_slots_;
  std::vector<int32_t> free_group_slots_;
  Queue waiting_;
  Queue running_;
  Queue swapped_;
  int64_t current_step_ = -1;
  std::vector<ScheduledSequence> spare_sequences_;  // a recycled plan's buffer (empty, with capacity)
  std::vector<SequenceGroup*> plan_groups_;         // the group of each planned sequence
  std::vector<SequenceGroup*> scratch_groups_;      // queue snapshots: preemption edits the queues
  std::vector<SequenceGroup*> scratch_prefilling_;
  std::vector<int32_t> scratch_new_tokens_;
  std::vector<SeqId> scratch_ids_;
  struct Rejoin {
    size_t index;    // in group.seqs
    int32_t tokens;  // planned for this step
  };
  std::vector<Rejoin> scratch_rejoins_;
  std::vector<kv::BlockHash> scratch_rejoin_hashes_;
  std::vector<kv::AppendRequest> scratch_appends_;
  std::vector<std::span<const kv::BlockId>> scratch_tables_;  // each append's block table afterwards
};

}  // namespace pagedllm::sched
