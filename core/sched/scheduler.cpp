#include "core/sched/scheduler.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "core/common/check.h"
#include "core/common/mix.h"
#include "core/kv/kv_errors.h"
#include "core/sched/policy.h"

namespace pagedllm::sched {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

Scheduler::Scheduler(const SchedulerConfig& config, kv::KvCacheManager& kv) : config_(config), kv_(kv) {
  validate(config_);
}

uint64_t Scheduler::RequestIdBits::operator()(RequestId id) const { return mix64(static_cast<uint64_t>(id)); }

// --- queues ------------------------------------------------------------------------------------

void Scheduler::insert_sorted(Queue& queue, SequenceGroup* group) const {
  const auto position = std::upper_bound(queue.begin(), queue.end(), group,
                                         [this](const SequenceGroup* a, const SequenceGroup* b) {
                                           return runs_before(config_.policy, *a, *b);
                                         });
  queue.insert(position, group);
}

void Scheduler::erase(Queue& queue, const SequenceGroup* group) {
  const auto it = std::find(queue.begin(), queue.end(), group);
  PAGEDLLM_ASSERT(it != queue.end(), "group missing from the queue of its state");
  queue.erase(it);
}

std::span<const SeqId> Scheduler::resident_ids(const SequenceGroup& group) {
  scratch_ids_.clear();
  for (const Sequence& seq : group.seqs) {
    if (!seq.finished() && !is_rejoining(seq)) scratch_ids_.push_back(seq.id);
  }
  return scratch_ids_;
}

// --- admission of new requests -----------------------------------------------------------------

std::string Scheduler::never_fits_reason(const SequenceGroup& group) const {
  const Sequence& seq = group.seqs.front();
  const int64_t block_size = kv_.config().block_size;
  const int64_t usable = kv_.device_pool().num_blocks() - kv_.watermark_blocks();
  const int64_t prompt = seq.num_tokens();
  const int64_t max_tokens = group.request.params.max_tokens;
  const int64_t num_seqs = group.request.params.num_sequences();
  // Worst case: the prompt's full blocks shared, every sequence's other blocks its own.
  const int64_t shared = prompt / block_size;
  const int64_t worst = shared + num_seqs * (ceil_div(prompt + max_tokens, block_size) - shared);
  if (num_seqs > config_.max_num_seqs || num_seqs > config_.max_num_batched_tokens) {
    return "the request runs " + std::to_string(num_seqs) + " sequences at once, more than max_num_seqs (" +
           std::to_string(config_.max_num_seqs) + ") or max_num_batched_tokens (" +
           std::to_string(config_.max_num_batched_tokens) + ") allow";
  }
  if (worst <= usable) return {};
  return "the request can never fit the KV cache: " + std::to_string(num_seqs) + " sequence(s) of up to " +
         std::to_string(prompt + max_tokens) + " tokens (" + std::to_string(prompt) + " prompt + " +
         std::to_string(max_tokens) + " max_tokens) need up to " + std::to_string(worst) + " blocks of " +
         std::to_string(block_size) + " tokens, the cache has " + std::to_string(usable) +
         " usable blocks; lower max_tokens or n, or give the cache more memory";
}

SequenceGroup& Scheduler::add(std::unique_ptr<SequenceGroup> group) {
  if (!group || group->seqs.size() != 1 || group->state != GroupState::waiting) {
    throw std::invalid_argument("scheduler: a new group must be waiting with exactly one sequence");
  }
  const RequestId id = group->request.id;
  if (find(id) != nullptr) throw std::invalid_argument("scheduler: request id " + std::to_string(id) + " is in use");
  SequenceGroup& added = *group;
  int32_t slot = 0;
  if (free_group_slots_.empty()) {
    slot = static_cast<int32_t>(group_slots_.size());
    group_slots_.push_back(std::move(group));
  } else {
    slot = free_group_slots_.back();
    free_group_slots_.pop_back();
    group_slots_[static_cast<size_t>(slot)] = std::move(group);
  }
  group_index_.insert(id, slot);
  const std::string reason = never_fits_reason(added);
  if (!reason.empty()) {
    added.state = GroupState::finished;
    added.finish_reason = FinishReason::rejected;
    added.finish_message = reason;
    return added;
  }
  insert_sorted(waiting_, &added);
  return added;
}

// --- the step ----------------------------------------------------------------------------------

StepPlan Scheduler::schedule(int64_t step, double now) {
  StepPlan plan;
  plan.step = step;
  current_step_ = step;
  StepState state{&plan, now, config_.max_num_batched_tokens, config_.max_num_seqs};
  if (config_.policy == SchedulingPolicy::priority) preempt_for_priority(state);
  plan.sequences = std::move(spare_sequences_);
  plan.sequences.clear();
  plan.sequences.reserve(running_.size() + 64);
  plan_groups_.clear();
  schedule_running(state);
  if (!state.preempted_any) schedule_swapped(state);
  if (!state.preempted_any && swapped_.empty()) schedule_waiting(state);
  return plan;
}

void Scheduler::recycle(StepPlan&& plan) {
  if (plan.sequences.capacity() > spare_sequences_.capacity()) spare_sequences_ = std::move(plan.sequences);
}

void Scheduler::schedule_running(StepState& state) {
  // Decodes first, then prompts in progress, each in policy order. Iterates a snapshot, since
  // preemption edits running_.
  scratch_groups_.clear();
  scratch_prefilling_.clear();
  for (SequenceGroup* group : running_) (group->is_prefilling() ? scratch_prefilling_ : scratch_groups_).push_back(group);
  scratch_groups_.insert(scratch_groups_.end(), scratch_prefilling_.begin(), scratch_prefilling_.end());
  for (SequenceGroup* group : scratch_groups_) {
    if (group->state != GroupState::running || scheduled_now(*group)) continue;
    if (try_schedule(state, *group) != Outcome::out_of_blocks) continue;
    if (running_.size() == 1) {
      // It holds the device tier alone (swapped and waiting groups hold none) and still does not
      // fit: preempting it would only bring it back to this point. add() rules this out for a group whose sequences share their prompt, so
      // this is a forked group that lost that sharing to a preemption by recompute.
      reject(state, *group, "its " + std::to_string(group->num_unfinished_seqs()) +
                                " sequences outgrew the KV cache after a preemption by recompute undid their "
                                "sharing of the prompt; allow swap preemption with enough swap space, enable "
                                "prefix caching, or give the cache more memory");
      continue;
    }
    preempt(state, *group);
  }
}

void Scheduler::schedule_swapped(StepState& state) {
  scratch_groups_.assign(swapped_.begin(), swapped_.end());
  for (SequenceGroup* group : scratch_groups_) {
    const std::span<const SeqId> ids = resident_ids(*group);
    const int32_t num_seqs = group->num_unfinished_seqs();
    if (num_seqs > state.seq_budget || num_seqs > state.token_budget) break;
    const kv::AllocStatus status = kv_.can_swap_in(ids);
    if (status == kv::AllocStatus::never) {
      reject(state, *group, "its swapped-out blocks no longer fit the KV cache");
      continue;
    }
    if (status == kv::AllocStatus::later) break;
    // Room for every sequence's next slot afterwards, or it would be preempted again at once;
    // unless nothing runs, when waiting could not make room (and the group, alone, either grows
    // or is found never to fit).
    const bool leaves_room = kv_.device_pool().num_free() - kv_.num_free_blocks_to_swap_in(ids) >= num_seqs;
    if (!leaves_room && !running_.empty()) break;
    const std::vector<kv::BlockMove> moves = kv_.swap_in(ids);
    state.plan->swap_in.insert(state.plan->swap_in.end(), moves.begin(), moves.end());
    erase(swapped_, group);
    group->state = GroupState::running;
    insert_sorted(running_, group);
    try_schedule(state, *group);
  }
}

void Scheduler::schedule_waiting(StepState& state) {
  scratch_groups_.assign(waiting_.begin(), waiting_.end());
  for (SequenceGroup* group : scratch_groups_) {
    const Outcome outcome = admit(state, *group);
    if (outcome == Outcome::out_of_blocks && running_.empty() && swapped_.empty()) {
      // A safety net: add()'s bound lets any group's first sequence fit an empty cache, so this
      // should not happen; if it does, the request is reported instead of waiting forever.
      reject(state, *group, "its first sequence (" + std::to_string(group->seqs.front().num_tokens()) +
                                " tokens) does not fit the empty KV cache");
      continue;
    }
    // Head-of-line: a waiting group that does not fit now holds the ones behind it (FCFS order).
    if (outcome != Outcome::scheduled && outcome != Outcome::rejected) break;
  }
}

void Scheduler::preempt_for_priority(StepState& state) {
  // A waiting request of strictly higher priority than the last running one takes its blocks.
  while (!waiting_.empty() && !running_.empty()) {
    SequenceGroup& head = *waiting_.front();
    SequenceGroup& tail = *running_.back();
    if (head.request.priority >= tail.request.priority) break;
    const Sequence& seq = *std::find_if(head.seqs.begin(), head.seqs.end(),
                                        [](const Sequence& candidate) { return !candidate.finished(); });
    const int32_t first_chunk = std::min(seq.num_tokens(), config_.max_num_batched_tokens);
    if (kv_.can_allocate({seq.tokens, head.request.cache_salt}, first_chunk) != kv::AllocStatus::later) break;
    // By recompute: a swapped victim would return before the waiting head is admitted.
    preempt(state, tail, PreemptionMode::recompute);
  }
  state.preempted_any = false;  // these preemptions make room for admission, not against it
}

Scheduler::Outcome Scheduler::try_schedule_one(StepState& state, SequenceGroup& group) {
  const int32_t block_size = kv_.config().block_size;
  Sequence& seq = group.seqs.front();
  // One sequence, so no lockstep and nothing to rejoin: try_schedule's `active` is 1 or 0, its
  // share the whole budget, and the group counts one sequence.
  if (seq.num_computed_tokens >= seq.num_tokens() || state.token_budget < 1) return Outcome::out_of_budget;
  int32_t tokens = plan_chunk({seq.num_computed_tokens, seq.num_tokens(), state.token_budget, block_size,
                               config_.enable_chunked_prefill});
  if (tokens == 0) return Outcome::out_of_budget;
  const int32_t offset = seq.num_computed_tokens % block_size;
  int32_t blocks = (offset + tokens + block_size - 1) / block_size;  // an upper bound, as try_schedule's
  if (blocks > kv_.device_pool().num_free()) blocks = kv_.num_blocks_to_append(seq.id, tokens);
  if (state.seq_budget < 1) return Outcome::out_of_budget;
  bool fits = blocks <= kv_.device_pool().num_free();
  while (!fits && make_room(state, group, blocks)) fits = blocks <= kv_.device_pool().num_free();
  if (!fits) {
    // Nobody left to preempt: a lone prompt may still compute the part that fits.
    if (!group.is_prefilling()) return Outcome::out_of_blocks;
    const int32_t free_slots = kv_.device_pool().num_free() * block_size + (block_size - offset) % block_size;
    tokens = plan_chunk({seq.num_computed_tokens, seq.num_tokens(), std::min(free_slots, state.token_budget),
                         block_size, true});
    if (tokens == 0 || tokens >= seq.num_uncomputed_tokens()) return Outcome::out_of_blocks;
  }
  const int32_t start = seq.num_computed_tokens;
  // A group of one sequence that was never forked holds the sequence its admission hashed.
  const auto copy =
      kv_.append_slots(seq.id, std::span<const TokenId>(seq.tokens).subspan(start, tokens), group.admission_hashes);
  if (copy) state.plan->copies.push_back(*copy);
  add_to_plan(state, group, 0, start, start + tokens);
  release_admission_hashes(group, start + tokens);
  state.token_budget -= tokens;
  state.seq_budget -= 1;
  group.last_scheduled_step = current_step_;
  return Outcome::scheduled;
}

Scheduler::Outcome Scheduler::try_schedule(StepState& state, SequenceGroup& group) {
  if (group.seqs.size() == 1 && !group.seqs.front().finished() && !is_rejoining(group.seqs.front())) {
    return try_schedule_one(state, group);
  }
  const int32_t block_size = kv_.config().block_size;
  scratch_new_tokens_.assign(group.seqs.size(), 0);
  const bool lockstep = group.is_beam_search() && group.is_prefilling() && group.num_unfinished_seqs() > 1;
  // Siblings waiting to rejoin after a recompute do so once the prompt's KV is back (they hit it
  // in the prefix cache), or at once when there is no prefix cache to share through.
  const bool may_join = !kv_.config().enable_prefix_caching ||
                        std::any_of(group.seqs.begin(), group.seqs.end(), [](const Sequence& seq) {
                          return seq.num_computed_tokens >= seq.num_prompt_tokens;
                        });
  int32_t active = 0;
  for (const Sequence& seq : group.seqs) {
    if (seq.finished()) continue;
    if (is_rejoining(seq)) {
      active += may_join ? 1 : 0;
    } else if (seq.num_computed_tokens < lockstep_end(group, seq, lockstep)) {
      ++active;
    }
  }
  if (active == 0 || active > state.token_budget) return Outcome::out_of_budget;
  // Sequences that compute side by side share the budget, or the first would take it all.
  const int32_t share = state.token_budget / active;
  int32_t total_tokens = 0;
  int32_t blocks = 0;
  for (size_t i = 0; i < group.seqs.size(); ++i) {
    const Sequence& seq = group.seqs[i];
    const int32_t end = lockstep_end(group, seq, lockstep);
    if (seq.finished() || is_rejoining(seq) || seq.num_computed_tokens >= end) continue;
    const int32_t tokens = plan_chunk({seq.num_computed_tokens, end, share, block_size,
                                       config_.enable_chunked_prefill || active > 1});
    if (tokens == 0) return Outcome::out_of_budget;
    scratch_new_tokens_[i] = tokens;
    total_tokens += tokens;
    // An upper bound from our own counts (the KV holds exactly num_computed slots): the new
    // blocks, ceil((offset + tokens) / block_size) - 1 past a partial last block, plus one for
    // its copy-on-write if it is shared; ceil(tokens / block_size) from a block boundary.
    const int32_t offset = seq.num_computed_tokens % block_size;
    blocks += (offset + tokens + block_size - 1) / block_size;
  }
  const int32_t holder_tokens = total_tokens;
  scratch_rejoins_.clear();
  int32_t rejoin_blocks = may_join ? plan_rejoins(group, share, lockstep, total_tokens) : 0;
  if (blocks + rejoin_blocks > kv_.device_pool().num_free()) {
    blocks = 0;  // tight: ask the KV manager for the exact count (shared last blocks only)
    for (size_t i = 0; i < group.seqs.size(); ++i) {
      if (scratch_new_tokens_[i] > 0) blocks += kv_.num_blocks_to_append(group.seqs[i].id, scratch_new_tokens_[i]);
    }
  }
  const int32_t group_seqs = group.num_unfinished_seqs();  // all count, waiting siblings too
  if (group_seqs > state.seq_budget) return Outcome::out_of_budget;
  bool fits = blocks + rejoin_blocks <= kv_.device_pool().num_free();
  while (!fits && make_room(state, group, blocks + rejoin_blocks)) {
    // A preempted group may have held prompt blocks the rejoining siblings hit; freed, reviving
    // them takes free blocks too: plan the rejoins again until the count holds.
    if (!scratch_rejoins_.empty()) {
      total_tokens = holder_tokens;
      scratch_rejoins_.clear();
      rejoin_blocks = plan_rejoins(group, share, lockstep, total_tokens);
    }
    fits = blocks + rejoin_blocks <= kv_.device_pool().num_free();
  }
  if (!fits) {
    // Nobody left to preempt: a lone prompt may still compute the part that fits.
    const auto only = std::find_if(group.seqs.begin(), group.seqs.end(), [](const Sequence& seq) { return !seq.finished(); });
    if (group_seqs != 1 || !group.is_prefilling() || is_rejoining(*only)) return Outcome::out_of_blocks;
    const int32_t free_slots = kv_.device_pool().num_free() * block_size +
                               (block_size - only->num_computed_tokens % block_size) % block_size;
    const int32_t tokens = plan_chunk({only->num_computed_tokens, only->num_tokens(),
                                       std::min(free_slots, state.token_budget), block_size, true});
    if (tokens == 0 || tokens >= only->num_uncomputed_tokens()) return Outcome::out_of_blocks;
    scratch_new_tokens_.assign(group.seqs.size(), 0);
    scratch_new_tokens_[static_cast<size_t>(only - group.seqs.begin())] = tokens;
    total_tokens = tokens;
  }
  for (const Rejoin& rejoin : scratch_rejoins_) {
    // Matched again: a sibling allocated just before may have filled blocks of the shared prompt
    // (computed in this same step), so the hits only grow and the blocks taken only shrink.
    Sequence& seq = group.seqs[rejoin.index];
    const kv::PromptRef prompt{seq.tokens, group.request.cache_salt};
    const int32_t cached = kv_.match_prefix(prompt).num_cached_tokens;
    const int32_t tokens = plan_chunk({cached, lockstep_end(group, seq, lockstep), share, block_size, true});
    seq.num_computed_tokens = kv_.allocate(seq.id, prompt, cached + tokens);
    if (tokens > 0) add_to_plan(state, group, rejoin.index, cached, cached + tokens);
    total_tokens += tokens - rejoin.tokens;
  }
  for (size_t i = 0; i < group.seqs.size(); ++i) {
    const int32_t tokens = scratch_new_tokens_[i];
    if (tokens == 0) continue;
    Sequence& seq = group.seqs[i];
    const int32_t start = seq.num_computed_tokens;
    const auto copy = kv_.append_slots(seq.id, std::span<const TokenId>(seq.tokens).subspan(start, tokens));
    if (copy) state.plan->copies.push_back(*copy);
    add_to_plan(state, group, i, start, start + tokens);
  }
  state.token_budget -= total_tokens;
  state.seq_budget -= group_seqs;
  group.last_scheduled_step = current_step_;
  return Outcome::scheduled;
}

bool Scheduler::make_room(StepState& state, const SequenceGroup& group, int32_t blocks) {
  while (kv_.device_pool().num_free() < blocks) {
    SequenceGroup* victim = nullptr;
    for (auto it = running_.rbegin(); it != running_.rend(); ++it) {
      if (!scheduled_now(**it)) {
        victim = *it;
        break;
      }
    }
    if (victim == nullptr || victim == &group) return false;
    preempt(state, *victim);
  }
  return true;
}

void Scheduler::preempt(StepState& state, SequenceGroup& victim, std::optional<PreemptionMode> forced_mode) {
  PreemptionMode mode = forced_mode ? *forced_mode : choose_preemption_mode(config_, victim);
  const std::span<const SeqId> ids = resident_ids(victim);
  if (mode == PreemptionMode::swap && (ids.empty() || kv_.host_pool().num_blocks() == 0 || !kv_.can_swap_out(ids))) {
    mode = PreemptionMode::recompute;  // no swap space left (or nothing resident): recompute
  }
  erase(running_, &victim);
  if (mode == PreemptionMode::swap) {
    const std::vector<kv::BlockMove> moves = kv_.swap_out(ids);
    state.plan->swap_out.insert(state.plan->swap_out.end(), moves.begin(), moves.end());
    victim.state = GroupState::swapped;
    insert_sorted(swapped_, &victim);
    ++victim.times.num_preemptions_swap;
  } else {
    for (Sequence& seq : victim.seqs) {
      if (seq.finished()) continue;
      release(seq);
      seq.num_computed_tokens = 0;
    }
    victim.state = GroupState::waiting;
    victim.admission_hashes.clear();
    insert_sorted(waiting_, &victim);
    ++victim.times.num_preemptions_recompute;
  }
  state.plan->preempted.push_back({victim.request.id, mode});
  state.preempted_any = true;
}

Scheduler::Outcome Scheduler::admit(StepState& state, SequenceGroup& group) {
  const int32_t block_size = kv_.config().block_size;
  const int32_t num_seqs = group.num_unfinished_seqs();
  if (num_seqs > state.seq_budget) return Outcome::out_of_budget;
  // The first live sequence is admitted. The others of a forked group preempted by recompute join
  // it later (try_schedule), once its prompt's KV is back, so that they share it again.
  const auto leader = std::find_if(group.seqs.begin(), group.seqs.end(), [](const Sequence& seq) { return !seq.finished(); });
  PAGEDLLM_ASSERT(leader != group.seqs.end(), "a waiting group with no live sequence");
  Sequence& seq = *leader;
  if (group.admission_hashes.empty() && kv_.config().enable_prefix_caching) {
    group.admission_hashes = kv::hash_prompt_blocks(seq.tokens, block_size, group.request.cache_salt);
  }
  const kv::PromptRef prompt{seq.tokens, group.request.cache_salt, group.admission_hashes};
  const int32_t cached = kv_.match_prefix(prompt).num_cached_tokens;
  const int32_t end = lockstep_end(group, seq, num_seqs > 1);
  const int32_t tokens = plan_chunk({cached, end, state.token_budget, block_size, config_.enable_chunked_prefill});
  if (tokens == 0 && cached < end) return Outcome::out_of_budget;
  const kv::AllocStatus status = kv_.can_allocate(prompt, cached + tokens);
  if (status == kv::AllocStatus::never) {
    reject(state, group, "the prompt (" + std::to_string(seq.num_tokens()) +
                             " tokens) is larger than the KV cache less its watermark");
    return Outcome::rejected;
  }
  if (status == kv::AllocStatus::later) return Outcome::out_of_blocks;
  seq.num_computed_tokens = kv_.allocate(seq.id, prompt, cached + tokens);
  PAGEDLLM_ASSERT(seq.num_computed_tokens == cached, "prefix match changed between lookup and allocation");
  erase(waiting_, &group);
  group.state = GroupState::running;
  insert_sorted(running_, &group);
  if (tokens > 0) add_to_plan(state, group, static_cast<size_t>(leader - group.seqs.begin()), cached, cached + tokens);
  // The hashes are kept while the prompt's later chunks are computed (try_schedule_one passes
  // them on, so that the KV manager does not hash those blocks again).
  release_admission_hashes(group, cached + tokens);
  state.token_budget -= tokens;
  state.seq_budget -= num_seqs;
  group.last_scheduled_step = current_step_;
  return Outcome::scheduled;
}

int32_t Scheduler::lockstep_end(const SequenceGroup& group, const Sequence& seq, bool lockstep) {
  // Beams sample together: while some are still recomputing, none computes its last token.
  return lockstep && group.is_beam_search() ? seq.num_tokens() - 1 : seq.num_tokens();
}

int32_t Scheduler::plan_rejoins(const SequenceGroup& group, int32_t share, bool lockstep, int32_t& total_tokens) {
  const int32_t block_size = kv_.config().block_size;
  int32_t blocks = 0;
  for (size_t i = 0; i < group.seqs.size(); ++i) {
    const Sequence& seq = group.seqs[i];
    if (seq.finished() || !is_rejoining(seq)) continue;
    const kv::PrefixMatch match = kv_.match_prefix({seq.tokens, group.request.cache_salt});
    const int32_t cached = match.num_cached_tokens;
    const int32_t tokens = plan_chunk({cached, lockstep_end(group, seq, lockstep), share, block_size, true});
    if (cached + tokens == 0) continue;
    // Free blocks its allocation takes: new ones, and cached ones that are free now.
    blocks += static_cast<int32_t>(ceil_div(cached + tokens, block_size)) - match.num_hit_blocks +
              match.num_free_hit_blocks;
    total_tokens += tokens;
    scratch_rejoins_.push_back({i, tokens});
  }
  return blocks;
}

void Scheduler::reject(StepState& state, SequenceGroup& group, const std::string& reason) {
  finish(group, FinishReason::rejected);
  group.finish_message = reason;
  state.plan->rejected.push_back({group.request.id, reason});
}

void Scheduler::add_to_plan(StepState& state, SequenceGroup& group, size_t seq_index, int32_t start, int32_t end) {
  const Sequence& seq = group.seqs[seq_index];
  const SamplingParams& params = group.request.params;
  // Built in place: a local copied in afterwards costs store-forwarding stalls in this hot loop.
  StepPlan& plan = *state.plan;
  ScheduledSequence& scheduled = plan.sequences.emplace_back();
  plan_groups_.push_back(&group);
  scheduled.request = group.request.id;
  scheduled.seq = seq.id;
  scheduled.sample_index = static_cast<int32_t>(seq_index);
  scheduled.tokens = seq.tokens;
  scheduled.start = start;
  scheduled.end = end;
  scheduled.num_prompt_tokens = seq.num_prompt_tokens;
  scheduled.block_table = kv_.block_table(seq.id);
  scheduled.sample = end == seq.num_tokens();
  scheduled.params = &params;
  if (scheduled.sample) {
    if (params.use_beam_search()) {
      scheduled.num_beam_candidates = 2 * params.beam_width;
    } else if (params.n > 1 && group.seqs.size() == 1 && seq.num_output_tokens() == 0) {
      scheduled.num_samples = params.n;  // the group forks into n samples after this step
    }
  }
  const int32_t tokens = end - start;
  plan.num_batched_tokens += tokens;
  (scheduled.is_prefill() ? plan.num_prefill_tokens : plan.num_decode_tokens) += tokens;
  if (group.times.first_scheduled < 0) group.times.first_scheduled = state.now;
}

// --- between steps -----------------------------------------------------------------------------

SequenceGroup* Scheduler::find(RequestId id) {
  const int32_t slot = group_index_.find(id);
  return slot == decltype(group_index_)::kAbsent ? nullptr : group_slots_[static_cast<size_t>(slot)].get();
}

void Scheduler::release_admission_hashes(SequenceGroup& group, int32_t num_slots) const {
  if (group.admission_hashes.empty()) return;
  if (static_cast<int64_t>(num_slots) < static_cast<int64_t>(group.admission_hashes.size()) * kv_.config().block_size) return;
  group.admission_hashes.clear();  // every hashed block has its slots
  group.admission_hashes.shrink_to_fit();
}

Sequence& Scheduler::fork(SequenceGroup& group, size_t parent_index, SeqId child_id) {
  group.admission_hashes.clear();  // they belong to one sequence: the sequences now differ
  group.admission_hashes.shrink_to_fit();
  Sequence child = group.seqs.at(parent_index);
  child.id = child_id;
  kv_.fork(group.seqs[parent_index].id, child_id);
  group.seqs.push_back(std::move(child));
  return group.seqs.back();
}

void Scheduler::release(Sequence& seq) {
  if (kv_.contains(seq.id)) kv_.free(seq.id);
}

void Scheduler::finish(SequenceGroup& group, FinishReason reason) {
  switch (group.state) {
    case GroupState::waiting: erase(waiting_, &group); break;
    case GroupState::running: erase(running_, &group); break;
    case GroupState::swapped: erase(swapped_, &group); break;
    case GroupState::finished: return;
  }
  for (Sequence& seq : group.seqs) release(seq);
  group.state = GroupState::finished;
  if (group.finish_reason == FinishReason::none) group.finish_reason = reason;
}

bool Scheduler::abort(RequestId id) {
  SequenceGroup* group = find(id);
  if (group == nullptr || group->state == GroupState::finished) return false;
  finish(*group, FinishReason::abort);
  for (Sequence& seq : group->seqs) {
    if (!seq.finished()) seq.finish_reason = FinishReason::abort;
  }
  return true;
}

std::unique_ptr<SequenceGroup> Scheduler::take_finished(RequestId id) {
  const int32_t slot = group_index_.find(id);
  if (slot == decltype(group_index_)::kAbsent) return nullptr;
  std::unique_ptr<SequenceGroup>& owned = group_slots_[static_cast<size_t>(slot)];
  if (owned->state != GroupState::finished) return nullptr;
  std::unique_ptr<SequenceGroup> group = std::move(owned);
  group_index_.erase(id);
  free_group_slots_.push_back(slot);
  return group;
}

void Scheduler::check_invariants() const {
  const auto fail = [](const std::string& what) { throw std::logic_error("scheduler invariant broken: " + what); };
  size_t queued = 0;
  int32_t live_kv_sequences = 0;
  for (const std::unique_ptr<SequenceGroup>& owned : group_slots_) {
    if (!owned) continue;
    const SequenceGroup& group = *owned;
    const RequestId id = group.request.id;
    const std::string name = "request " + std::to_string(id);
    const Queue* queue = group.state == GroupState::waiting   ? &waiting_
                         : group.state == GroupState::running ? &running_
                         : group.state == GroupState::swapped ? &swapped_
                                                              : nullptr;
    if (queue != nullptr) {
      ++queued;
      if (std::find(queue->begin(), queue->end(), &group) == queue->end()) {
        fail(name + " is " + to_string(group.state) + " but not in that queue");
      }
    }
    for (const Sequence& seq : group.seqs) {
      const bool holds_kv = kv_.contains(seq.id);
      const bool should_hold = !seq.finished() && !is_rejoining(seq) &&
                               (group.state == GroupState::running || group.state == GroupState::swapped);
      if (holds_kv != should_hold) {
        fail(name + " sequence " + std::to_string(seq.id) + (holds_kv ? " holds" : " lacks") + " KV blocks while " +
             to_string(group.state));
      }
      if (!holds_kv) continue;
      ++live_kv_sequences;
      if (group.state == GroupState::running && kv_.num_tokens(seq.id) != seq.num_computed_tokens) {
        fail(name + " sequence " + std::to_string(seq.id) + " has " + std::to_string(kv_.num_tokens(seq.id)) +
             " KV slots for " + std::to_string(seq.num_computed_tokens) + " computed tokens");
      }
      if (kv_.is_swapped(seq.id) != (group.state == GroupState::swapped)) fail(name + " is in the wrong KV tier");
    }
  }
  if (queued != waiting_.size() + running_.size() + swapped_.size()) fail("a queue holds a group of another state");
  if (live_kv_sequences != kv_.stats().num_sequences) {
    fail("the KV cache holds " + std::to_string(kv_.stats().num_sequences) + " sequences, live requests " +
         std::to_string(live_kv_sequences));
  }
  kv_.check_invariants();
}

}  // namespace pagedllm::sched
