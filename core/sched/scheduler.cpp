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
  const auto position = std::upper_bound(
      queue.begin(), queue.end(), group,
      [this](const SequenceGroup* a, const SequenceGroup* b) { return runs_before(config_.policy, *a, *b); });
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
  // Worst case: the prompt's full blocks shared, every sequence's other blocks its own. With a
  // sliding window and chunked prefill a sequence holds at most the window plus one chunk (the
  // KV manager releases the blocks before the window, and a recompute computes its tokens again
  // chunk by chunk); without chunking a recompute needs its whole length at once.
  const int64_t shared = prompt / block_size;
  const int64_t window = kv_.config().sliding_window;
  const int64_t whole = ceil_div(prompt + max_tokens, block_size);
  int64_t held = whole;
  if (window > 0 && config_.enable_chunked_prefill) {
    const int64_t chunk_window = std::min(prompt + max_tokens, window - 1 + config_.max_num_batched_tokens);
    held = std::min(whole, std::max(ceil_div(window, block_size), ceil_div(chunk_window, block_size)) + 1);
  }
  const int64_t worst = std::min(shared, held) + num_seqs * (held - std::min(shared, held));
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
  for (SequenceGroup* group : running_)
    (group->is_prefilling() ? scratch_prefilling_ : scratch_groups_).push_back(group);
  scratch_groups_.insert(scratch_groups_.end(), scratch_prefilling_.begin(), scratch_prefilling_.end());
  for (SequenceGroup* group : scratch_groups_) {
    if (group->state != GroupState::running || scheduled_now(*group)) continue;
    if (try_schedule(state, *group) != Outcome::out_of_blocks) continue;
    if (running_.size() == 1) {
      // It holds the device tier alone (swapped and waiting groups hold none) and still does not
      // fit: preempting it would only bring it back to this point. add() rules this out for a group whose sequences
      // share their prompt, so this is a forked group that lost that sharing to a preemption by recompute.
      reject(state, *group,
             "its " + std::to_string(group->num_unfinished_seqs()) +
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
    kv::SwapInResult swapped_in =
        kv_.try_swap_in(ids, swap_in_headroom(kv_.watermark_blocks(), num_seqs, !running_.empty()));
    if (swapped_in.status == kv::AllocStatus::never) {
      reject(state, *group, "its swapped-out blocks no longer fit the KV cache");
      continue;
    }
    if (swapped_in.status == kv::AllocStatus::later) break;
    state.plan->swap_in.insert(state.plan->swap_in.end(), swapped_in.moves.begin(), swapped_in.moves.end());
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
      reject(state, *group,
             "its first sequence (" + std::to_string(group->seqs.front().num_tokens()) +
                 " tokens) does not fit the empty KV cache");
      continue;
    }
    // Head-of-line: a waiting group that does not fit now holds the ones behind it (FCFS order).
    if (outcome != Outcome::scheduled && outcome != Outcome::rejected) break;
  }
}

void Scheduler::preempt_for_priority(StepState& state) {
  while (!waiting_.empty() && !running_.empty()) {
    SequenceGroup& head = *waiting_.front();
    SequenceGroup& tail = *running_.back();
    const Sequence& seq = *std::find_if(head.seqs.begin(), head.seqs.end(),
                                        [](const Sequence& candidate) { return !candidate.finished(); });
    const int32_t first_chunk = std::min(seq.num_tokens(), config_.max_num_batched_tokens);
    const kv::AllocStatus admission =
        kv_.allocation_status(admission_prompt(head, seq), first_chunk, admission_headroom(kv_.watermark_blocks()));
    const std::optional<PreemptionMode> mode = priority_preemption(head, tail, admission);
    if (!mode) break;
    preempt(state, tail, *mode);
  }
  state.preempted_any = false;  // these preemptions make room for admission, not against it
}

Scheduler::Outcome Scheduler::try_schedule(StepState& state, SequenceGroup& group) {
  const int32_t block_size = kv_.config().block_size;
  scratch_new_tokens_.assign(group.seqs.size(), 0);
  const bool lockstep = group.is_beam_search() && group.is_prefilling() && group.num_unfinished_seqs() > 1;
  int32_t active = 0;
  int32_t num_rejoining = 0;
  for (const Sequence& seq : group.seqs) {
    if (seq.finished()) continue;
    if (is_rejoining(seq)) {
      ++num_rejoining;
    } else if (seq.num_computed_tokens < lockstep_end(group, seq, lockstep)) {
      ++active;
    }
  }
  // Siblings waiting to rejoin after a recompute do so once the prompt's KV is back (they hit it
  // in the prefix cache), or at once when there is no prefix cache to share through.
  const bool may_join =
      num_rejoining > 0 && (!kv_.config().enable_prefix_caching ||
                            std::any_of(group.seqs.begin(), group.seqs.end(), [](const Sequence& seq) {
                              return seq.num_computed_tokens >= seq.num_prompt_tokens;
                            }));
  if (may_join) active += num_rejoining;
  if (active == 0 || active > state.token_budget) return Outcome::out_of_budget;
  // Sequences that compute side by side share the budget, or the first would take it all.
  const int32_t share = state.token_budget / active;
  int32_t holder_tokens = 0;  // of the sequences that hold KV
  for (size_t i = 0; i < group.seqs.size(); ++i) {
    const Sequence& seq = group.seqs[i];
    const int32_t end = lockstep_end(group, seq, lockstep);
    if (seq.finished() || is_rejoining(seq) || seq.num_computed_tokens >= end) continue;
    const int32_t tokens =
        plan_chunk({seq.num_computed_tokens, end, share, block_size, config_.enable_chunked_prefill || active > 1});
    if (tokens == 0) return Outcome::out_of_budget;
    scratch_new_tokens_[i] = tokens;
    holder_tokens += tokens;
  }
  const int32_t group_seqs = group.num_unfinished_seqs();  // all count, waiting siblings too
  if (group_seqs > state.seq_budget) return Outcome::out_of_budget;
  if (!lockstep) holder_tokens += attach_proposals(group, share);

  // One call appends every holder's slots, or none; it must leave free the blocks the rejoining
  // siblings' allocations take after it. Out of blocks, the victim policy gives up groups one by
  // one, the rejoins planned again each time (a preempted group may have held prompt blocks
  // they hit).
  int32_t total_tokens = holder_tokens;
  bool appended = false;
  while (true) {
    total_tokens = holder_tokens;
    scratch_rejoins_.clear();
    const int32_t rejoin_blocks = may_join ? plan_rejoins(group, share, lockstep, total_tokens) : 0;
    build_appends(group);
    if (kv_.try_append_slots(scratch_appends_, state.plan->copies, rejoin_blocks, scratch_tables_.data())) {
      appended = true;
      break;
    }
    // Short of blocks, proposals go before anybody is preempted for them.
    if (const int32_t detached = detach_proposals(group); detached > 0) {
      holder_tokens -= detached;
      continue;
    }
    if (!preempt_one_for(state, group)) break;
  }
  if (!appended) {
    // Nobody left to preempt: a lone prompt may still compute the part that fits.
    const auto only =
        std::find_if(group.seqs.begin(), group.seqs.end(), [](const Sequence& seq) { return !seq.finished(); });
    if (group_seqs != 1 || !group.is_prefilling() || is_rejoining(*only)) return Outcome::out_of_blocks;
    const int32_t free_slots =
        kv_.device_pool().num_free() * block_size + (block_size - only->num_computed_tokens % block_size) % block_size;
    const int32_t tokens = plan_chunk(
        {only->num_computed_tokens, only->num_tokens(), std::min(free_slots, state.token_budget), block_size, true});
    if (tokens == 0 || tokens >= only->num_uncomputed_tokens()) return Outcome::out_of_blocks;
    scratch_new_tokens_.assign(group.seqs.size(), 0);
    scratch_new_tokens_[static_cast<size_t>(only - group.seqs.begin())] = tokens;
    total_tokens = tokens;
    scratch_rejoins_.clear();
    build_appends(group);
    const bool fits = kv_.try_append_slots(scratch_appends_, state.plan->copies, 0, scratch_tables_.data());
    PAGEDLLM_ASSERT(fits, "a prompt chunk sized to the free slots did not fit");
  }
  for (size_t i = 0, append = 0; i < group.seqs.size(); ++i) {
    const int32_t tokens = scratch_new_tokens_[i];
    if (tokens == 0) continue;
    const int32_t start = group.seqs[i].num_computed_tokens;
    add_to_plan(state, group, i, start, start + tokens, scratch_tables_[append++]);
  }
  for (const Rejoin& rejoin : scratch_rejoins_) {
    // Matched again: a sibling allocated just before may have filled blocks of the shared prompt
    // (computed in this same step), so the hits only grow and the blocks taken only shrink.
    Sequence& seq = group.seqs[rejoin.index];
    const kv::PromptRef prompt = rejoin_prompt(group, seq);
    const int32_t cached = kv_.match_prefix(prompt).num_cached_tokens;
    const int32_t tokens = plan_chunk({cached, lockstep_end(group, seq, lockstep), share, block_size, true});
    seq.num_computed_tokens = kv_.allocate(seq.id, prompt, cached + tokens);
    if (tokens > 0) add_to_plan(state, group, rejoin.index, cached, cached + tokens, kv_.block_table(seq.id));
    total_tokens += tokens - rejoin.tokens;
  }
  if (group.seqs.size() == 1 && scratch_new_tokens_[0] > 0) {
    release_admission_hashes(group, group.seqs[0].num_computed_tokens + scratch_new_tokens_[0]);
  }
  state.token_budget -= total_tokens;
  state.seq_budget -= group_seqs;
  group.last_scheduled_step = current_step_;
  return Outcome::scheduled;
}

int32_t Scheduler::attach_proposals(SequenceGroup& group, int32_t share) {
  if (group.is_beam_search()) return 0;  // beams do not speculate (as vLLM)
  int32_t attached = 0;
  for (size_t i = 0; i < group.seqs.size(); ++i) {
    Sequence& seq = group.seqs[i];
    // A decode only: the one token left to compute is the last one sampled.
    if (seq.proposals.empty() || scratch_new_tokens_[i] != 1 || seq.num_uncomputed_tokens() != 1 ||
        seq.num_computed_tokens < seq.num_prompt_tokens) {
      continue;
    }
    PAGEDLLM_ASSERT(seq.num_proposed_tokens == 0, "proposals attached twice");
    // Within the sequence's share of the budget and the context: every proposal is a position.
    const int32_t count =
        std::min({static_cast<int32_t>(seq.proposals.size()), share - 1, config_.max_model_len - seq.num_tokens()});
    if (count <= 0) continue;
    seq.tokens.insert(seq.tokens.end(), seq.proposals.begin(), seq.proposals.begin() + count);
    seq.num_proposed_tokens = count;
    scratch_new_tokens_[i] += count;
    attached += count;
  }
  return attached;
}

int32_t Scheduler::pop_proposals(Sequence& seq) {
  const int32_t count = seq.num_proposed_tokens;
  seq.tokens.resize(seq.tokens.size() - static_cast<size_t>(count));
  seq.num_proposed_tokens = 0;
  return count;
}

int32_t Scheduler::detach_proposals(SequenceGroup& group) {
  int32_t detached = 0;
  for (size_t i = 0; i < group.seqs.size(); ++i) {
    const int32_t count = pop_proposals(group.seqs[i]);
    scratch_new_tokens_[i] -= count;
    detached += count;
  }
  return detached;
}

int32_t Scheduler::take_proposals(Sequence& seq) {
  const int32_t count = pop_proposals(seq);
  seq.num_computed_tokens = seq.num_tokens();  // the verify pass computed the last confirmed token
  return count;
}

void Scheduler::settle_proposals(Sequence& seq, int32_t num_accepted) {
  const int32_t confirmed = seq.num_computed_tokens;
  PAGEDLLM_ASSERT(num_accepted >= 0 && confirmed + num_accepted < seq.num_tokens(),
                  "settling proposals the sequence did not take");
  kv_.settle_proposals(seq.id, seq.run(confirmed, confirmed + num_accepted).stored);
  seq.num_computed_tokens = confirmed + num_accepted;
}

void Scheduler::build_appends(const SequenceGroup& group) {
  scratch_appends_.clear();
  if (scratch_tables_.size() < group.seqs.size()) scratch_tables_.resize(group.seqs.size());
  for (size_t i = 0; i < group.seqs.size(); ++i) {
    const int32_t tokens = scratch_new_tokens_[i];
    if (tokens == 0) continue;
    const Sequence& seq = group.seqs[i];
    // A group of one sequence holds the sequence its admission hashed: the KV manager takes those
    // hashes instead of hashing the blocks again. (A forked group's siblings differ past the
    // prompt: the hashes are its first sequence's only.)
    const bool hashed = group.seqs.size() == 1;
    const kv::TokenRun run = seq.run(seq.num_computed_tokens, seq.num_computed_tokens + tokens);
    scratch_appends_.push_back(
        kv::AppendRequest{.seq = seq.id,
                          .tokens = run.stored,
                          .block_hashes = hashed ? std::span<const kv::BlockHash>(group.admission_hashes)
                                                 : std::span<const kv::BlockHash>(),
                          .num_named_hashes = hashed ? num_named_hashes(group) : 0,
                          .num_tentative = seq.num_proposed_tokens,
                          .num_unstored_tokens = run.num_unstored});
  }
}

bool Scheduler::preempt_one_for(StepState& state, const SequenceGroup& group) {
  SequenceGroup* victim = choose_victim(running_, current_step_);
  if (victim == nullptr || victim == &group) return false;  // the asker is the last: it runs out itself
  preempt(state, *victim);
  return true;
}

void Scheduler::preempt(StepState& state, SequenceGroup& victim, std::optional<PreemptionMode> forced_mode) {
  PreemptionMode mode = forced_mode ? *forced_mode : choose_preemption_mode(config_, victim);
  const std::span<const SeqId> ids = resident_ids(victim);
  std::optional<std::vector<kv::BlockMove>> moves;
  if (mode == PreemptionMode::swap && !ids.empty()) moves = kv_.try_swap_out(ids);
  if (!moves) mode = PreemptionMode::recompute;  // no swap space left (or nothing resident): recompute
  erase(running_, &victim);
  if (mode == PreemptionMode::swap) {
    state.plan->swap_out.insert(state.plan->swap_out.end(), moves->begin(), moves->end());
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
  const auto leader =
      std::find_if(group.seqs.begin(), group.seqs.end(), [](const Sequence& seq) { return !seq.finished(); });
  PAGEDLLM_ASSERT(leader != group.seqs.end(), "a waiting group with no live sequence");
  Sequence& seq = *leader;
  const kv::PromptRef prompt = admission_prompt(group, seq);
  const int32_t cached = kv_.match_prefix(prompt).num_cached_tokens;
  const int32_t end = lockstep_end(group, seq, num_seqs > 1);
  const int32_t tokens = plan_chunk({cached, end, state.token_budget, block_size, config_.enable_chunked_prefill});
  if (tokens == 0 && cached < end) return Outcome::out_of_budget;
  const kv::AllocResult allocated =
      kv_.try_allocate(seq.id, prompt, cached + tokens, admission_headroom(kv_.watermark_blocks()));
  if (allocated.status == kv::AllocStatus::never) {
    reject(
        state, group,
        "the prompt (" + std::to_string(seq.num_tokens()) + " tokens) is larger than the KV cache less its watermark");
    return Outcome::rejected;
  }
  if (allocated.status == kv::AllocStatus::later) return Outcome::out_of_blocks;
  seq.num_computed_tokens = allocated.num_cached_tokens;
  PAGEDLLM_ASSERT(seq.num_computed_tokens == cached, "prefix match changed between lookup and allocation");
  erase(waiting_, &group);
  group.state = GroupState::running;
  insert_sorted(running_, &group);
  if (tokens > 0) {
    add_to_plan(state, group, static_cast<size_t>(leader - group.seqs.begin()), cached, cached + tokens,
                kv_.block_table(seq.id));
  }
  // The hashes are kept while the prompt's later chunks are computed (try_schedule passes them
  // on, so that the KV manager does not hash those blocks again).
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
    const kv::PrefixMatch match = kv_.match_prefix(rejoin_prompt(group, seq));
    const int32_t cached = match.num_cached_tokens;
    const int32_t tokens = plan_chunk({cached, lockstep_end(group, seq, lockstep), share, block_size, true});
    if (cached + tokens == 0) continue;
    // Free blocks its allocation takes: new ones, and cached ones that are free now.
    blocks +=
        static_cast<int32_t>(ceil_div(cached + tokens, block_size)) - match.num_hit_blocks + match.num_free_hit_blocks;
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

void Scheduler::add_to_plan(StepState& state, SequenceGroup& group, size_t seq_index, int32_t start, int32_t end,
                            std::span<const kv::BlockId> block_table) {
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
  scheduled.num_unstored_tokens = seq.num_unstored_tokens;
  scheduled.start = start;
  scheduled.end = end;
  scheduled.num_prompt_tokens = seq.num_prompt_tokens;
  scheduled.block_table = block_table;
  scheduled.sample = end == seq.num_tokens();
  scheduled.num_proposed_tokens = seq.num_proposed_tokens;
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
  plan.num_proposed_tokens += seq.num_proposed_tokens;
  if (group.times.first_scheduled < 0) group.times.first_scheduled = state.now;
}

// --- between steps -----------------------------------------------------------------------------

SequenceGroup* Scheduler::find(RequestId id) {
  const int32_t slot = group_index_.find(id);
  return slot == decltype(group_index_)::kAbsent ? nullptr : group_slots_[static_cast<size_t>(slot)].get();
}

int32_t Scheduler::num_named_hashes(const SequenceGroup& group) const {
  return std::min(group.request.content_ids.num_named_blocks(kv_.config().block_size),
                  static_cast<int32_t>(group.admission_hashes.size()));
}

kv::PromptRef Scheduler::admission_prompt(SequenceGroup& group, const Sequence& seq) const {
  if (group.admission_hashes.empty() && kv_.config().enable_prefix_caching) {
    group.admission_hashes = kv::hash_prompt_blocks(seq.tokens, seq.num_unstored_tokens, kv_.config().block_size,
                                                    group.request.cache_salt, group.request.content_ids);
  }
  return {.tokens = seq.tokens,
          .salt = group.request.cache_salt,
          .block_hashes = group.admission_hashes,
          .num_named_hashes = num_named_hashes(group),
          .num_unstored_tokens = seq.num_unstored_tokens};
}

kv::PromptRef Scheduler::rejoin_prompt(const SequenceGroup& group, const Sequence& seq) {
  const kv::PromptContentIds& content = group.request.content_ids;
  if (content.empty() || !kv_.config().enable_prefix_caching) {
    return {.tokens = seq.tokens, .salt = group.request.cache_salt, .num_unstored_tokens = seq.num_unstored_tokens};
  }
  // Blocks registered under hashes named by content ids are found only by those hashes.
  const int32_t block_size = kv_.config().block_size;
  scratch_rejoin_hashes_ =
      kv::hash_prompt_blocks(seq.tokens, seq.num_unstored_tokens, block_size, group.request.cache_salt, content);
  return {.tokens = seq.tokens,
          .salt = group.request.cache_salt,
          .block_hashes = scratch_rejoin_hashes_,
          .num_named_hashes = content.num_named_blocks(block_size),
          .num_unstored_tokens = seq.num_unstored_tokens};
}

void Scheduler::release_admission_hashes(SequenceGroup& group, int32_t num_slots) const {
  if (group.admission_hashes.empty()) return;
  if (static_cast<int64_t>(num_slots) < static_cast<int64_t>(group.admission_hashes.size()) * kv_.config().block_size)
    return;
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
    case GroupState::waiting:
      erase(waiting_, &group);
      break;
    case GroupState::running:
      erase(running_, &group);
      break;
    case GroupState::swapped:
      erase(swapped_, &group);
      break;
    case GroupState::finished:
      return;
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
