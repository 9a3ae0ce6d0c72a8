// Sequences and sequence groups: the scheduler's view of a request in flight.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/common/types.h"
#include "core/kv/block_hash.h"
#include "core/kv/token_run.h"
#include "core/sched/request.h"
#include "core/spec/speculation_tally.h"
#include "core/structured/token_mask.h"

namespace pagedllm::sched {

// One sample of a request: its tokens and how many of them have KV in the cache.
struct Sequence {
  SeqId id = 0;
  // Prompt, then output; without the first num_unstored_tokens: a simulated prompt's tokens that
  // nothing reads (Request::prompt_synthesis; whole blocks, named by the request's content ids).
  // Position p is tokens[p - num_unstored_tokens].
  std::vector<TokenId> tokens;
  int32_t num_unstored_tokens = 0;
  int32_t num_prompt_tokens = 0;
  int32_t num_computed_tokens = 0;  // leading tokens whose KV is in the cache
  double cumulative_logprob = 0.0;
  FinishReason finish_reason = FinishReason::none;
  std::vector<std::vector<std::pair<TokenId, float>>> top_logprobs;  // per output token, when asked
  std::vector<float> token_logprobs;  // per output token, when logprobs are asked: the chosen token's
  // The sequence's place in its request's output constraint (structured outputs), if any. Copied
  // with the sequence when it forks; preemption keeps the output, so it keeps the matcher too.
  std::optional<structured::TokenMatcher> matcher;
  // Speculative decoding: the proposer's guess at the tokens after `tokens`, for the next step to
  // verify (empty: none). While a step is in flight the scheduler has appended the first
  // num_proposed_tokens of them to `tokens` (the verify pass computes them as if sampled); the
  // engine takes them off again when it applies the step (Scheduler::take_proposals).
  std::vector<TokenId> proposals;
  int32_t num_proposed_tokens = 0;

  bool finished() const { return finish_reason != FinishReason::none; }
  int32_t num_tokens() const { return num_unstored_tokens + static_cast<int32_t>(tokens.size()); }
  int32_t num_output_tokens() const { return num_tokens() - num_prompt_tokens; }
  int32_t num_uncomputed_tokens() const { return num_tokens() - num_computed_tokens; }
  // Positions [begin, end): how many are unstored, and the stored ones.
  kv::TokenRun run(int32_t begin, int32_t end) const {
    return kv::TokenRun::of(tokens, num_unstored_tokens, begin, end);
  }
};

enum class GroupState : uint8_t { waiting, running, swapped, finished };
const char* to_string(GroupState state);

enum class PreemptionMode : uint8_t { recompute, swap };

// Timestamps the engine records per request (seconds on the engine clock; < 0 = not yet).
struct RequestTimes {
  double arrival = 0.0;
  double first_scheduled = -1.0;
  double first_token = -1.0;
  double finished = -1.0;
  std::vector<double> token_times;  // when each output step of the group completed
  int32_t num_preemptions_recompute = 0;
  int32_t num_preemptions_swap = 0;
};

// Output tokens whose room (token ids, token times) a group reserves when it is made: most
// requests' outputs fit (ShareGPT's mean is about 340), at 12 bytes a token.
constexpr int32_t kReservedOutputTokens = 512;

// One request: its sequences (one until the prompt is done; then n samples or the beams).
struct SequenceGroup {
  Request request;  // as submitted, less its prompt_tokens: moved into seqs.front().tokens
  int32_t num_prompt_tokens = 0;
  std::vector<Sequence> seqs;            // live sequences, in creation order
  std::vector<Sequence> finished_beams;  // beam search: complete hypotheses
  GroupState state = GroupState::waiting;
  FinishReason finish_reason = FinishReason::none;
  std::string finish_message;  // why a group was rejected
  RequestTimes times;
  // Block hashes of the admitted sequence's tokens: cached while it waits, then kept while its
  // prompt is computed, for a group not forked since (the KV manager then need not hash again).
  std::vector<kv::BlockHash> admission_hashes;
  int64_t last_scheduled_step = -1;          // the scheduler's mark: scheduled in this step
  int64_t last_sampled_step = -1;            // the engine's mark: sampled in this step
  std::vector<int32_t> num_reported_tokens;  // per sequence: output tokens already reported (delta)
  // Its decode and verify passes' counts, under speculative decoding only. Last: the fields above
  // are read every step, this one only by a speculating engine.
  spec::SpeculationTally speculation;

  int32_t num_unfinished_seqs() const {  // inline: the scheduler and the engine ask every step
    int32_t count = 0;
    for (const Sequence& seq : seqs) count += seq.finished() ? 0 : 1;
    return count;
  }
  bool is_beam_search() const { return request.params.use_beam_search(); }
  // True while a live sequence has prompt tokens, or more than its last token, left to compute
  // (the same test as ScheduledSequence::is_prefill, so plans list decodes first).
  bool is_prefilling() const {
    for (const Sequence& seq : seqs) {
      if (seq.finished()) continue;
      if (seq.num_uncomputed_tokens() > 1 || seq.num_computed_tokens < seq.num_prompt_tokens) return true;
    }
    return false;
  }
};

// A new request's group: waiting, with one sequence `first_seq` holding the prompt. A prompt
// given by its synthesis (and no tokens) is written from position `first_stored` on, a multiple of
// the KV block size inside its named blocks (0: all of it).
std::unique_ptr<SequenceGroup> make_sequence_group(Request request, SeqId first_seq, int32_t first_stored = 0);

}  // namespace pagedllm::sched
