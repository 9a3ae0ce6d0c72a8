// StepPlan: everything the scheduler decided for one engine step, as plain data.
//
// The only way decisions leave the core. Executors apply the block operations first, in this
// order: swap_out, swap_in, copies; then run one forward pass over `sequences` and sample where
// asked. Spans point into the scheduler's state and stay valid until the next schedule() call.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/common/types.h"
#include "core/kv/block_ops.h"
#include "core/kv/block_pool.h"
#include "core/sched/request.h"
#include "core/sched/sequence.h"

namespace pagedllm::sched {

struct ScheduledSequence {
  RequestId request = 0;
  SeqId seq = 0;
  int32_t sample_index = 0;         // the sequence's place in its group (random stream)
  std::span<const TokenId> tokens;  // all tokens so far but the unstored ones; [start, end) are computed now
  // Leading tokens not in `tokens` (position p is tokens[p - num_unstored_tokens]): a simulated
  // prompt's, for an executor that reads no prompt (Executor::reads_prompt_tokens); 0 otherwise.
  int32_t num_unstored_tokens = 0;
  int32_t start = 0;  // first position computed this step
  int32_t end = 0;    // one past the last
  int32_t num_prompt_tokens = 0;
  std::span<const kv::BlockId> block_table;  // device blocks after this step's allocations
  bool sample = false;                       // end == num_tokens(): produce logits and sample
  // Speculative decoding: the last this-many tokens of [start, end) are proposals. The executor
  // returns logits for each of them and for the token before them, and keeps the longest run of
  // proposals its sampler would have drawn itself, plus its own next token (SequenceOutput).
  int32_t num_proposed_tokens = 0;
  int32_t num_samples = 1;          // parallel sampling's first token: n samples at once
  int32_t num_beam_candidates = 0;  // beam search: the best this-many tokens with logprobs
  const SamplingParams* params = nullptr;
  // Structured outputs: the tokens this sample may take, one bit per token id (32 to a word, bit
  // id % 32 of word id / 32), a row of StepPlan::token_bitmask; empty = unconstrained. A verify
  // pass has num_proposed_tokens + 1 rows, one per sampled position (allowed_row()).
  std::span<const uint32_t> allowed_tokens{};

  int32_t num_new_tokens() const { return end - start; }
  int32_t num_tokens() const { return num_unstored_tokens + static_cast<int32_t>(tokens.size()); }  // unstored too
  bool is_prefill() const { return end - start - num_proposed_tokens > 1 || start < num_prompt_tokens; }
  // The mask of sampled position `row` (0: after the confirmed tokens; r: after r proposals).
  std::span<const uint32_t> allowed_row(size_t row) const {
    if (allowed_tokens.empty()) return {};
    const size_t words = allowed_tokens.size() / (static_cast<size_t>(num_proposed_tokens) + 1);
    return allowed_tokens.subspan(row * words, words);
  }
  // The tokens the sequence had before this step's proposals (the verify pass's first logits row
  // follows the last of them).
  std::span<const TokenId> confirmed_tokens() const {
    return tokens.first(tokens.size() - static_cast<size_t>(num_proposed_tokens));
  }
};

struct PreemptedGroup {
  RequestId request = 0;
  PreemptionMode mode = PreemptionMode::recompute;
};

struct RejectedGroup {
  RequestId request = 0;
  std::string reason;
};

struct StepPlan {
  int64_t step = 0;
  std::vector<ScheduledSequence> sequences;  // decodes first, then prefill chunks
  std::vector<kv::BlockMove> swap_out;       // device -> host, applied first
  std::vector<kv::BlockMove> swap_in;        // host -> device
  std::vector<kv::BlockCopy> copies;         // copy-on-write within the device
  std::vector<PreemptedGroup> preempted;
  std::vector<RejectedGroup> rejected;
  int32_t num_batched_tokens = 0;  // sum of num_new_tokens()
  int32_t num_prefill_tokens = 0;
  int32_t num_decode_tokens = 0;    // proposals included
  int32_t num_proposed_tokens = 0;  // of the decode tokens, proposals to verify
  // [constrained sampled sequence][vocabulary words]: the rows ScheduledSequence::allowed_tokens
  // views, filled by the engine after scheduling (one upload for a device sampler).
  std::vector<uint32_t> token_bitmask;

  bool empty() const { return sequences.empty() && swap_out.empty() && swap_in.empty() && copies.empty(); }
};

// What an executor returns for one sampled token.
struct SampledToken {
  TokenId token = 0;
  float logprob = 0.0f;
};

// One entry per ScheduledSequence with sample = true, in plan order.
struct SequenceOutput {
  SeqId seq = 0;
  // num_samples tokens (parallel sampling), or num_beam_candidates tokens by descending logprob.
  // With proposals (num_proposed_tokens = k): the sequence's next 1 to k + 1 tokens, the accepted
  // proposals (equal to the first of them) then the token drawn where the first proposal failed,
  // or after the last.
  std::vector<SampledToken> samples;
  // When params->logprobs is set: the top tokens at this position, per sample (with proposals: at
  // each token's own position).
  std::vector<std::vector<SampledToken>> top_logprobs;
};

struct StepResult {
  std::vector<SequenceOutput> outputs;
  double elapsed_seconds = 0.0;  // the simulator's predicted step time; measured time otherwise
};

}  // namespace pagedllm::sched
