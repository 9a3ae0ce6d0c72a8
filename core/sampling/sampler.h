// The sampler of the CPU reference engine: one position's logits -> the sampled tokens (or beam
// candidates) with their logprobs, following vLLM v1's sampler.
//
// Processing order (vLLM v1, `vllm/v1/sample/sampler.py`):
//   0. structured outputs (allowed_tokens non-empty): every token the constraint refuses gets no
//      mass, before anything below, so the raw logprobs of step 1 are those of the constrained
//      distribution (vLLM v1 applies its grammar bitmask to the logits before the sampler);
//   1. raw logprobs: log_softmax of the logits as given, before anything below. These are the
//      logprobs returned, for the sampled tokens, the beam candidates and the top lists (vLLM's
//      default `logprobs_mode = "raw_logprobs"`): biases, penalties, temperature and the filters
//      change which token is drawn, never the logprob reported for it.
//   2. allowed_token_ids (empty = off): every other token gets no mass; bad words: the last
//      token of a bad word gets no mass where the output so far ends with the word's other
//      tokens; then each logit_bias entry is added to its token's logit;
//   3. repetition penalty over every distinct token of prompt + output: a positive logit is
//      divided by the penalty, any other multiplied by it (1 = off);
//   4. frequency and presence penalties over the output tokens: logit -= frequency * count, then
//      logit -= presence for every token with count > 0 (0 = off); below min_tokens the stop
//      tokens get no mass (vLLM's MinTokensLogitsProcessor);
//   5. temperature below kGreedyTemperature (vLLM's _SAMPLING_EPS, 1e-5; 0 included): greedy, the
//      argmax of the processed logits, ties to the lowest id; steps 6-9 are skipped. Otherwise the
//      logits are divided by the temperature;
//   6. min_p: tokens whose probability is below min_p * (the largest probability) are dropped;
//   7. top_k (0 or -1 = off): the top_k most probable tokens are kept. Exactly top_k: tokens tied
//      with the k-th are ranked by lower id (vLLM keeps every token tied with the k-th logit);
//   8. top_p (1 = off): the smallest set of most probable tokens whose mass reaches top_p of the
//      mass left by 6-7 (a token is kept when the tokens ranked before it hold less than top_p);
//      at least one token;
//   9. one draw per sample by inverse CDF over the kept tokens in rank order.
// Beam search (num_beam_candidates > 0) bypasses 2-9: the candidates are the best tokens by raw
// logprob, descending, ties by lower id, with no randomness (as vLLM's beam search, which asks the
// model for raw logprobs). Below min_tokens the stop tokens are not candidates (vLLM v0 applied
// its min-tokens processor before beam search), unless that leaves none (a constraint that allows
// only stop tokens here: the constraint wins, as for sampling); tokens with no mass (-inf) never
// are, so fewer candidates than asked may come back.
//
// Ranks, order and determinism. Tokens are ranked by processed probability descending, ties by
// id ascending: a strict total order, so sorting is unambiguous. The draw of sample j is
//   u = uniform_draw(seed, first_stream_index + j, position)   in [0, 1), 53 random bits,
// a counter-based function (mix64 chains) of the request's stream seed, the sample's stream and
// the output position: no generator state, so a request's tokens depend on nothing else in the
// batch, on the thread count or on preemption and recompute. The drawn token is the first in rank
// order whose cumulative mass exceeds u * (mass of the kept tokens), as detailed below.
//
// Arithmetic. Exponentials are this file's own fp32 routine (Cody-Waite reduction and a degree-6
// polynomial, relative error < 1e-7, exp(x) = 0 below x = -87), not libm's, so results do not
// depend on the C library. log_softmax subtracts the max in fp32 (x - max), takes exp in fp32 and
// sums in double in a fixed order: four lanes by token id mod 4, each in ascending id order,
// combined as (lane0 + lane1) + (lane2 + lane3); the logprob of token t is
//   float(double(x_t) - (double(max) + log(sum)))
// Sampling weights are w_i = exp(x_i / T - max / T) in fp32 over the penalized logits x (the
// largest is exactly 1, so min_p drops w_i < min_p); ranks compare these fp32 weights. The mass
// kept by 5-6 is summed like the normalizer (lanes by id); cumulative masses along the rank order
// are summed in rank order in double, and with top_p the kept mass is the cumulative mass at the
// cut. A draw takes the first kept token whose cumulative mass exceeds u * (kept mass), the last
// kept token if rounding leaves none. Every result is a pure function of the inputs: the same
// logits, parameters, tokens, seed, stream and position give the same tokens and logprobs bit
// for bit.
//
// Cost (vocab V): one exp pass over V for the raw normalizer (shared with the sampling weights
// when no penalty applies and the temperature is 1), one more to sample otherwise; argmax and the
// small top-k selections (logprobs, beam candidates, top_k <= 64) are single vectorized scans
// into a sorted buffer. Sampling ranks lazily: first the tokens whose weight is at least 1/1024
// of the largest (few, for a peaked distribution), partially selected (nth_element) and sorted
// in doubling chunks only as far as top_p's cut or the draw needs; the rest of the vocabulary
// only if a draw walks past them; a larger top_k by nth_element. The whole vocabulary is sorted
// only when the distribution is so flat that top_p or the draw needs it. A Sampler keeps its
// buffers between calls (one Sampler per thread: sample() is not reentrant).
//
// Degenerate inputs sample greedily: logits / temperature that overflows (argmax of the penalized
// logits), or penalties that push every logit to -inf (argmax of the logits before the penalties:
// min_tokens may hold back the only token a constraint allows).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/common/types.h"
#include "core/sampling/uniform_draw.h"
#include "core/sched/request.h"
#include "core/sched/sampling_params.h"
#include "core/sched/step_plan.h"

namespace pagedllm::sampling {

// Temperatures below this sample greedily (vLLM's _SAMPLING_EPS).
inline constexpr float kGreedyTemperature = 1e-5f;

// One position of one sequence. Views only; nothing is kept after sample() returns.
struct SamplerInput {
  std::span<const float> logits;  // [vocab]; finite or -inf, at least one finite
  const sched::SamplingParams* params = nullptr;
  std::span<const TokenId> prompt_tokens;  // repetition penalty
  std::span<const TokenId> output_tokens;  // the output so far: all penalties
  uint64_t seed = 0;                       // the request's stream seed (stream_seed())
  int32_t position = 0;                    // output index being sampled (output tokens so far);
                                           // below min_tokens, all_stop_token_ids get no mass
  // Parallel sampling's first step draws num_samples tokens, sample j from stream
  // first_stream_index + j; a later step draws 1 token from the sequence's own stream
  // (first_stream_index = its sample_index).
  int32_t num_samples = 1;
  int32_t first_stream_index = 0;
  int32_t num_beam_candidates = 0;  // > 0: beam search; the best this-many tokens
  // Structured outputs: one bit per token id (ScheduledSequence::allowed_tokens); empty = all.
  std::span<const uint32_t> allowed_tokens{};
};

struct SamplerOutput {
  // num_samples drawn tokens in stream order, or at most num_beam_candidates tokens by descending
  // logprob (ties by lower id); logprobs are raw (see the top of this file).
  std::vector<sched::SampledToken> samples;
  // When params->logprobs is set: one list per entry of `samples`, each the top `*logprobs`
  // tokens at this position by raw logprob, descending, ties by lower id (the lists of one call
  // are equal: they describe the same position). Empty otherwise.
  std::vector<std::vector<sched::SampledToken>> top_logprobs;
};

// The stream seed of a request: params.seed when set, else a fixed mix of the request id (so
// unseeded requests are reproducible too).
uint64_t stream_seed(const sched::SamplingParams& params, sched::RequestId request);

namespace detail {
struct RankedValue {
  float value = 0.0f;
  TokenId token = 0;
};
}  // namespace detail

class Sampler {
 public:
  // Throws std::invalid_argument for malformed input: no params, empty logits, NaN or +inf
  // logits, all logits -inf, num_samples < 1, a negative stream, position or logprobs count,
  // more beam candidates than the vocabulary, a penalized token id outside the vocabulary.
  SamplerOutput sample(const SamplerInput& input);

  // A scheduled sequence's logits row sampled as every executor samples it: its prompt and output
  // for the penalties, its request's stream, its samples or beam candidates. The step's output
  // for that sequence.
  sched::SequenceOutput sample(const sched::ScheduledSequence& scheduled, std::span<const float> logits);

 private:
  // work_ = the logits after steps 2-4 (allowed ids, bad words, biases, penalties, min_tokens).
  void apply_logits_processors(const SamplerInput& input);
  // Weights, candidates, top_k and top_p; returns the sum of every weight (min_p aside).
  double prepare_random(const sched::SamplingParams& params, std::span<const float> processed, float scaled_max);
  void build_band(bool head);
  void append_ranked(size_t end);
  bool extend_ranked();
  TokenId draw(double u);

  std::vector<float> masked_;  // the logits with the tokens a constraint refuses at -inf
  // Penalties.
  std::vector<float> work_;      // penalized logits
  std::vector<uint8_t> seen_;    // all zero between calls
  std::vector<int32_t> counts_;  // all zero between calls
  // Random sampling.
  std::vector<float> weights_;            // exp(processed / T - max), 0 where min_p dropped the token
  std::vector<uint64_t> keys_;            // (weight bits << 32) | ~id of candidates: larger = ranked first
  std::vector<double> cum_;               // cumulative mass of keys_[0, sorted_) in rank order
  std::vector<TokenId> ids_;              // scratch: kept ids in id order
  std::vector<detail::RankedValue> top_;  // scratch: top-k selections
  size_t sorted_ = 0;                     // keys_[0, sorted_) are in rank order
  bool tail_pending_ = false;             // candidates below kHeadWeight not yet in keys_
  size_t limit_ = 0;                      // tokens a draw may pick (top_p's cut), from the front
  double mass_ = 0.0;                     // the mass a draw scales u by
};

}  // namespace pagedllm::sampling
