// The draft-model proposer: a smaller model of the target's tokenizer decodes k tokens greedily
// ahead of each speculating sequence, on an executor of its own with a paged KV cache of its own,
// managed by a second kv::KvCacheManager (the same core: block tables, prefix caching, rollback).
//
// One round per engine step, before the target's (Engine::begin_step): every sequence asked for
// proposals first catches up, in one batched pass, on the tokens the draft has not computed (its
// prompt the first time, then the tokens the target confirmed since), which samples the first
// proposal; then k - 1 batched single-token passes sample the rest. The slots of the proposals the
// draft computes (all but the last) are reserved as tentative in the draft's cache. At the next
// round the draft compares its proposals with the tokens the target kept: the agreeing ones are
// settled (kv::KvCacheManager::settle_proposals), the blocks past them released.
//
// The draft decodes greedily, so its proposals are a deterministic function of the sequence; the
// target's verify rule (core/sampling/proposal_verify.h) keeps the output distribution exactly the
// target's at any temperature. The draft's cache holds no host tier: a sequence the target swaps
// out or frees loses its draft KV (release_gone) and catches up again from its prefix cache hits.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "core/common/types.h"
#include "core/engine/executor.h"
#include "core/kv/kv_cache_manager.h"
#include "core/sched/sampling_params.h"

namespace pagedllm::spec {

struct DraftModelProposerConfig {
  // The draft's KV cache: the draft executor's own tiers (no host tier is used). Its block size
  // is the target's; its device blocks the target's count, so that it holds whatever the target
  // holds (a draft block is smaller: the draft has fewer layers or heads).
  kv::KvCacheConfig cache;
  int32_t max_num_batched_tokens = 0;  // a catch-up pass's tokens at most (the target's step budget)
};

// The draft's cache for a target's: the same block size and device-block count, no host tier, no
// watermark, the same prefix caching, the draft model's own sliding window (0: none).
kv::KvCacheConfig draft_cache_config(const kv::KvCacheConfig& target, int32_t draft_sliding_window);

// One sequence asking for proposals this round.
struct DraftQuery {
  sched::RequestId request = 0;
  SeqId seq = 0;
  int32_t sample_index = 0;         // its place in its group
  std::span<const TokenId> tokens;  // the sequence's tokens, all confirmed (prompt, then output)
  int32_t num_prompt_tokens = 0;
  uint64_t cache_salt = 0;          // the request's: the draft's prefix cache is shared as the target's
  int32_t num_proposals = 0;        // k for this sequence (>= 1)
  std::vector<TokenId>* proposals;  // out: 0 to num_proposals tokens (0 while catching up, or out of blocks)
};

struct DraftRoundStats {
  int32_t num_passes = 0;           // forward passes of the draft model
  int32_t num_tokens_computed = 0;  // tokens the draft's passes computed, catch-up included
  double elapsed_seconds = 0.0;     // the draft executor's reported time
};

class DraftModelProposer {
 public:
  // The draft executor must run with config.cache (its KV store sized for it).
  DraftModelProposer(const DraftModelProposerConfig& config, std::unique_ptr<engine::Executor> executor);

  // One round (see the file comment). Queries name distinct sequences.
  DraftRoundStats propose(std::span<const DraftQuery> queries);

  // Frees the draft KV of every sequence `alive` no longer holds (finished, aborted, preempted,
  // swapped out); the engine calls it before each round.
  void release_gone(const std::function<bool(SeqId)>& alive);

  const kv::KvCacheManager& kv() const { return kv_; }
  const engine::Executor& executor() const { return *executor_; }

 private:
  struct DraftSequence {
    std::vector<TokenId>
        tokens;                // mirror of the sequence's tokens (grown by the new ones), then this round's proposals
    int32_t num_computed = 0;  // leading confirmed tokens whose KV the draft's cache holds
    std::vector<TokenId> proposals;  // the last round's, whose first num_tentative have KV slots
    int32_t num_tentative = 0;
    int32_t num_wanted = 0;  // this round: the proposals to sample (0: catching up, or no room for them)
  };

  // Keeps the last round's proposals the sequence confirmed, mirrors its new tokens, and reserves
  // this round's slots: the catch-up chunk (within `budget`) and, when it reaches the end, the
  // tentative slots. False when the draft's cache has no room even for the chunk (its draft KV is
  // freed; the caller drops its state).
  bool prepare(const DraftQuery& query, DraftSequence& state, int32_t& budget);
  // Runs one pass of the draft over plan_ (block tables and counts filled in here); its result.
  const sched::StepResult& run_pass(DraftRoundStats& stats);

  DraftModelProposerConfig config_;
  std::unique_ptr<engine::Executor> executor_;
  kv::KvCacheManager kv_;  // no event log: the target's log is the one checked across executors
  std::unordered_map<SeqId, DraftSequence> sequences_;
  sched::SamplingParams greedy_;  // the draft's sampling: argmax
  // The round's sequences (pass 1, in query order) and the ones each later pass decodes (aligned
  // with plan_.sequences).
  struct RoundEntry {
    const DraftQuery* query;
    DraftSequence* state;
  };
  sched::StepPlan plan_;      // the pass being run; its buffers reused (copies: the round's appends')
  sched::StepResult result_;  // the last pass's
  std::vector<RoundEntry> round_;
  std::vector<DraftSequence*> decoding_;
  std::vector<sched::ScheduledSequence> next_sequences_;
  std::vector<DraftSequence*> next_decoding_;
  std::vector<TokenId> placeholders_;  // an append's tokens; tentative slots' are 0 (never hashed, never read)
};

}  // namespace pagedllm::spec
