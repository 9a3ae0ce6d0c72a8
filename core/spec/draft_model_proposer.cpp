#include "core/spec/draft_model_proposer.h"

#include <algorithm>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <utility>

#include "core/common/check.h"

namespace pagedllm::spec {

kv::KvCacheConfig draft_cache_config(const kv::KvCacheConfig& target, int32_t draft_sliding_window) {
  kv::KvCacheConfig cache = target;
  cache.num_host_blocks = 0;
  cache.watermark = 0.0;
  cache.sliding_window = draft_sliding_window;
  return cache;
}

DraftModelProposer::DraftModelProposer(const DraftModelProposerConfig& config,
                                       std::unique_ptr<engine::Executor> executor)
    : config_(config), executor_(std::move(executor)), kv_(config.cache) {
  if (executor_ == nullptr) throw std::invalid_argument("draft model: no executor");
  if (config_.max_num_batched_tokens < 1) throw std::invalid_argument("draft model: max_num_batched_tokens < 1");
  greedy_.temperature = 0.0f;
  greedy_.max_tokens = 1;
}

void DraftModelProposer::release_gone(const std::function<bool(SeqId)>& alive) {
  for (auto it = sequences_.begin(); it != sequences_.end();) {
    if (alive(it->first)) {
      ++it;
      continue;
    }
    if (kv_.contains(it->first)) kv_.free(it->first);
    it = sequences_.erase(it);
  }
}

bool DraftModelProposer::prepare(const DraftQuery& query, DraftSequence& state, int32_t& budget) {
  const auto num_tokens = static_cast<int32_t>(query.tokens.size());
  // A sequence's tokens only grow (beams, which rewrite theirs, never speculate), so what the
  // draft computed is still its prefix; at least one token is new since the last round.
  PAGEDLLM_ASSERT(num_tokens > state.num_computed, "a sequence asks for proposals with no token new to the draft");
  PAGEDLLM_ASSERT(state.num_computed == 0 || query.tokens[static_cast<size_t>(state.num_computed - 1)] ==
                                                 state.tokens[static_cast<size_t>(state.num_computed - 1)],
                  "a sequence's tokens changed under the draft");
  PAGEDLLM_DEBUG_ASSERT(
      std::equal(query.tokens.begin(), query.tokens.begin() + state.num_computed, state.tokens.begin()),
      "a sequence's tokens changed under the draft");
  // Last round's proposals that the target kept (its tokens agree with them) keep their KV, short
  // of the sequence's last token: the pass that samples the first proposal computes at least that
  // one. (It could be past them all when the target did not verify them: the scheduler detached
  // them for want of blocks and sampled one token, which agreed with the first.)
  if (state.num_tentative > 0) {
    int32_t accepted = 0;
    while (accepted < state.num_tentative && state.num_computed + accepted < num_tokens - 1 &&
           query.tokens[static_cast<size_t>(state.num_computed + accepted)] ==
               state.proposals[static_cast<size_t>(accepted)]) {
      ++accepted;
    }
    kv_.settle_proposals(query.seq,
                         query.tokens.subspan(static_cast<size_t>(state.num_computed), static_cast<size_t>(accepted)));
    state.num_computed += accepted;
    state.num_tentative = 0;
  }
  state.proposals.clear();

  const kv::PromptRef prompt{.tokens = query.tokens, .salt = query.cache_salt};
  const bool first = !kv_.contains(query.seq);
  // First round (or after losing its KV): the blocks its tokens share with other sequences are reused.
  if (first) state.num_computed = kv_.match_prefix(prompt).num_cached_tokens;
  PAGEDLLM_ASSERT(first || kv_.num_tokens(query.seq) == state.num_computed,
                  "the draft's cache and its sequence disagree");
  const int32_t pending = num_tokens - state.num_computed;
  const int32_t chunk = std::min(pending, budget);
  const bool reaches_end = chunk == pending;
  int32_t tentative = reaches_end ? query.num_proposals - 1 : 0;
  const auto append = [&](int32_t num_confirmed, int32_t num_tentative) {
    placeholders_.assign(query.tokens.begin() + state.num_computed,
                         query.tokens.begin() + state.num_computed + num_confirmed);
    placeholders_.resize(static_cast<size_t>(num_confirmed + num_tentative), 0);
    return kv_.try_append_slots({.seq = query.seq, .tokens = placeholders_, .num_tentative = num_tentative},
                                plan_.copies);
  };
  // Without room for the proposals' slots the chunk is still computed (blocks an allocation
  // offered to the prefix cache must get their KV), and the sequence proposes next round.
  bool room_for_proposals = reaches_end;
  if (first) {
    if (kv_.try_allocate(query.seq, prompt, state.num_computed + chunk, {}).status != kv::AllocStatus::ok) {
      return false;  // nothing reserved
    }
    if (tentative > 0 && !append(0, tentative)) room_for_proposals = false;
  } else if (!append(chunk, tentative)) {
    room_for_proposals = false;
    if (tentative == 0 || !append(chunk, 0)) {  // the draft's cache is full: its KV goes back
      kv_.free(query.seq);
      return false;
    }
  }
  if (!room_for_proposals) tentative = 0;
  // The mirror: only the tokens new to the draft are copied (all of them the first time).
  state.tokens.resize(first ? 0 : static_cast<size_t>(state.num_computed));
  state.tokens.insert(state.tokens.end(), query.tokens.begin() + static_cast<std::ptrdiff_t>(state.tokens.size()),
                      query.tokens.end());
  state.tokens.reserve(query.tokens.size() + static_cast<size_t>(query.num_proposals));
  state.num_tentative = tentative;
  state.num_wanted = room_for_proposals ? query.num_proposals : 0;
  budget -= chunk;
  return true;
}

const sched::StepResult& DraftModelProposer::run_pass(DraftRoundStats& stats) {
  plan_.num_batched_tokens = plan_.num_prefill_tokens = plan_.num_decode_tokens = 0;
  for (sched::ScheduledSequence& scheduled : plan_.sequences) {
    scheduled.block_table = kv_.block_table(scheduled.seq);  // after every append of the round
    const int32_t count = scheduled.num_new_tokens();
    PAGEDLLM_ASSERT(count >= 1, "a draft pass computes at least one token of each sequence");
    plan_.num_batched_tokens += count;
    (scheduled.is_prefill() ? plan_.num_prefill_tokens : plan_.num_decode_tokens) += count;
  }
  if (!result_.outputs.empty()) executor_->recycle(std::move(result_));
  result_ = executor_->execute(plan_);
  plan_.copies.clear();  // applied: the round's appends made them before its first pass
  ++plan_.step;
  ++stats.num_passes;
  stats.num_tokens_computed += plan_.num_batched_tokens;
  stats.elapsed_seconds += result_.elapsed_seconds;
  return result_;
}

DraftRoundStats DraftModelProposer::propose(std::span<const DraftQuery> queries) {
  DraftRoundStats stats;
  for (const DraftQuery& query : queries) query.proposals->clear();
  plan_.sequences.clear();
  plan_.copies.clear();
  round_.clear();
  // Pass 1: each sequence's catch-up, within the budget; it samples the first proposal when the
  // chunk reaches the sequence's end. A sequence left without room waits for the next round.
  int32_t budget = config_.max_num_batched_tokens;
  for (const DraftQuery& query : queries) {
    if (budget == 0) break;
    PAGEDLLM_ASSERT(query.num_proposals >= 1, "a draft query for no proposals");
    DraftSequence& state = sequences_[query.seq];
    if (!prepare(query, state, budget)) {
      sequences_.erase(query.seq);
      continue;
    }
    sched::ScheduledSequence scheduled;
    scheduled.request = query.request;
    scheduled.seq = query.seq;
    scheduled.sample_index = query.sample_index;
    scheduled.num_prompt_tokens = query.num_prompt_tokens;
    scheduled.start = state.num_computed;
    scheduled.end = kv_.num_tokens(query.seq) - state.num_tentative;
    scheduled.sample = state.num_wanted > 0;
    scheduled.tokens = std::span<const TokenId>(state.tokens).first(static_cast<size_t>(scheduled.end));
    scheduled.params = &greedy_;
    plan_.sequences.push_back(scheduled);
    round_.push_back({&query, &state});
  }
  if (plan_.sequences.empty()) return stats;
  const sched::StepResult* result = &run_pass(stats);
  decoding_.clear();
  for (size_t i = 0; i < round_.size(); ++i) {
    round_[i].state->num_computed = plan_.sequences[i].end;
    decoding_.push_back(round_[i].state);
  }
  // Each sampled sequence takes its token; those wanting more decode their last proposal (its
  // slot reserved as tentative) in the next pass.
  for (;;) {
    next_sequences_.clear();
    next_decoding_.clear();
    size_t next_output = 0;
    for (size_t i = 0; i < plan_.sequences.size(); ++i) {
      const sched::ScheduledSequence& scheduled = plan_.sequences[i];
      if (!scheduled.sample) continue;
      if (next_output >= result->outputs.size() || result->outputs[next_output].seq != scheduled.seq ||
          result->outputs[next_output].samples.empty()) {
        throw std::logic_error("draft executor " + executor_->name() + " returned outputs that do not follow its plan");
      }
      DraftSequence& state = *decoding_[i];
      const TokenId token = result->outputs[next_output++].samples.front().token;
      state.proposals.push_back(token);
      state.tokens.push_back(token);
      if (static_cast<int32_t>(state.proposals.size()) == state.num_wanted) continue;
      sched::ScheduledSequence decode = scheduled;
      decode.tokens = state.tokens;
      decode.start = static_cast<int32_t>(state.tokens.size()) - 1;
      decode.end = decode.start + 1;
      next_sequences_.push_back(decode);
      next_decoding_.push_back(&state);
    }
    if (next_sequences_.empty()) break;
    std::swap(plan_.sequences, next_sequences_);
    std::swap(decoding_, next_decoding_);
    result = &run_pass(stats);
  }
  for (const RoundEntry& entry : round_) {
    if (entry.state->num_wanted == 0) continue;
    entry.query->proposals->assign(entry.state->proposals.begin(), entry.state->proposals.end());
    entry.state->num_wanted = 0;
  }
  return stats;
}

}  // namespace pagedllm::spec
