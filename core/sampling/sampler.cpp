#include "core/sampling/sampler.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>

#include "core/common/check.h"
#include "core/common/mix.h"

namespace pagedllm::sampling {
namespace {

// Four fp32 lanes (GCC / Clang vector extensions: one SSE / NEON register; plain IEEE operations,
// so the results are those of the scalar code lane by lane).
using Vec4f = float __attribute__((vector_size(16)));
using Vec4i = int32_t __attribute__((vector_size(16)));
constexpr size_t kLanes = 4;

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kExpFloor = -87.0f;         // exp(x) = 0 below (fp32's normal range ends at -87.34)
constexpr size_t kSmallTopK = 64;           // top-k selections up to this size scan with a sorted buffer
constexpr float kHeadWeight = 1.0f / 1024;  // candidates ranked first: weight >= this * the largest
constexpr size_t kFirstChunk = 64;          // the first lazily sorted chunk; chunks then double

Vec4f splat(float value) { return Vec4f{value, value, value, value}; }

Vec4f load(const float* p) {
  Vec4f v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// Fewer than four floats from p; the missing lanes hold `fill`.
Vec4f load_partial(const float* p, size_t count, float fill) {
  Vec4f v = splat(fill);
  for (size_t l = 0; l < count; ++l) v[l] = p[l];
  return v;
}

bool any(Vec4i mask) { return (mask[0] | mask[1] | mask[2] | mask[3]) != 0; }

// exp(x) for x <= 0 (-inf included) in fp32: x = n ln2 + r with |r| <= ln2 / 2 (Cody-Waite, two
// constants), e^r by Cephes' degree-6 polynomial, times 2^n; relative error < 1e-7 on [-87, 0];
// 0 below -87. Our own so that results do not depend on the C library.
Vec4f exp_nonpositive(Vec4f x) {
  const Vec4f floor = splat(kExpFloor);
  const Vec4f clamped = x < floor ? floor : x;
  const Vec4f round_magic = splat(12582912.0f);  // 1.5 * 2^23: adding it rounds to an integer
  const Vec4f n = (clamped * splat(1.44269504088896341f) + round_magic) - round_magic;
  Vec4f r = clamped - n * splat(0.693359375f);
  r = r - n * splat(-2.12194440e-4f);
  Vec4f p = splat(1.9875691500e-4f);
  p = p * r + splat(1.3981999507e-3f);
  p = p * r + splat(8.3334519073e-3f);
  p = p * r + splat(4.1665795894e-2f);
  p = p * r + splat(1.6666665459e-1f);
  p = p * r + splat(5.0000001201e-1f);
  p = p * (r * r) + r + splat(1.0f);
  const Vec4i exponent = (__builtin_convertvector(n, Vec4i) + 127) << 23;  // n in [-126, 0]
  const Vec4f y = p * std::bit_cast<Vec4f>(exponent);
  return x < floor ? splat(0.0f) : y;
}

// The fixed-order double sum of the header: lanes by token id mod 4.
double combine(const double (&acc)[kLanes]) { return (acc[0] + acc[1]) + (acc[2] + acc[3]); }

using Vec2d = double __attribute__((vector_size(16)));

// Adds the four lanes of v, widened to double, to the lane sums lanes01 / lanes23.
void accumulate(Vec2d& lanes01, Vec2d& lanes23, Vec4f v) {
  lanes01 += __builtin_convertvector(__builtin_shufflevector(v, v, 0, 1), Vec2d);
  lanes23 += __builtin_convertvector(__builtin_shufflevector(v, v, 2, 3), Vec2d);
}

double combine(Vec2d lanes01, Vec2d lanes23) { return (lanes01[0] + lanes01[1]) + (lanes23[0] + lanes23[1]); }

struct ExpSums {
  double all = 0.0;   // sum of every weight
  double kept = 0.0;  // sum of the weights >= min_weight (kKept), else = all
};

// w_i = exp(x_i / divisor - shift) (every argument <= 0: shift is max(x) / divisor); without
// kScale the divisor is 1 (x / 1 = x: the same numbers). Stores w_i, or 0 where
// w_i < min_weight (kKept), to out when kStore.
template <bool kStore, bool kScale, bool kKept>
ExpSums exp_pass(std::span<const float> x, float divisor, float shift, float min_weight, float* out) {
  Vec2d all01{};
  Vec2d all23{};
  Vec2d kept01{};
  Vec2d kept23{};
  const Vec4f divisors = splat(divisor);
  const Vec4f shifts = splat(shift);
  const Vec4f min_weights = splat(min_weight);
  const auto step = [&](Vec4f v) {
    if constexpr (kScale) v = v / divisors;
    const Vec4f w = exp_nonpositive(v - shifts);
    accumulate(all01, all23, w);
    Vec4f w_kept = w;
    if constexpr (kKept) {
      w_kept = w < min_weights ? splat(0.0f) : w;
      accumulate(kept01, kept23, w_kept);
    }
    return w_kept;
  };
  // Whole vectors, then the tail padded with -inf (weight 0: adds nothing to any lane).
  const size_t n = x.size();
  const size_t body = n - n % kLanes;
  for (size_t i = 0; i < body; i += kLanes) {
    const Vec4f w = step(load(x.data() + i));
    if constexpr (kStore) std::memcpy(out + i, &w, sizeof w);
  }
  if (body < n) {
    const Vec4f w = step(load_partial(x.data() + body, n - body, -kInf));
    if constexpr (kStore) {
      for (size_t l = 0; l < n - body; ++l) out[body + l] = w[l];
    }
  }
  const double all = combine(all01, all23);
  return {all, kKept ? combine(kept01, kept23) : all};
}

// max(x); with `check`, throws when x holds NaN or +inf or only -inf.
float max_of(std::span<const float> x, bool check) {
  Vec4f best = splat(-kInf);
  Vec4i ok = Vec4i{-1, -1, -1, -1};
  const auto step = [&](Vec4f v) {
    ok &= v < splat(kInf);  // false for NaN and +inf
    best = v > best ? v : best;
  };
  const size_t n = x.size();
  const size_t body = n - n % kLanes;
  for (size_t i = 0; i < body; i += kLanes) step(load(x.data() + i));
  if (body < n) step(load_partial(x.data() + body, n - body, -kInf));
  const float result = std::max(std::max(best[0], best[1]), std::max(best[2], best[3]));
  if (check) {
    if ((ok[0] & ok[1] & ok[2] & ok[3]) == 0) throw std::invalid_argument("sampler: the logits hold NaN or +inf");
    if (result == -kInf) throw std::invalid_argument("sampler: every logit is -inf");
  }
  return result;
}

// The lowest id whose value equals `value` (the greedy token: argmax, ties to the lowest id).
TokenId first_index_of(std::span<const float> x, float value) {
  const size_t n = x.size();
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    if (any(load(x.data() + i) == splat(value))) break;
  }
  for (; i < n; ++i) {
    if (x[i] == value) return static_cast<TokenId>(i);
  }
  return 0;
}

// A float's order as an unsigned integer (-0 taken as +0); -inf lowest.
uint32_t order_bits(float value) {
  const auto bits = std::bit_cast<uint32_t>(value + 0.0f);
  return (bits & 0x80000000u) != 0 ? ~bits : bits | 0x80000000u;
}

float from_order_bits(uint32_t bits) {
  return std::bit_cast<float>((bits & 0x80000000u) != 0 ? bits & 0x7fffffffu : ~bits);
}

// A rank key: larger keys rank first (larger value, then lower id); keys of distinct ids differ.
uint64_t rank_key(float value, size_t id) {
  return static_cast<uint64_t>(order_bits(value)) << 32 | (0xffffffffu - static_cast<uint32_t>(id));
}

TokenId key_token(uint64_t key) { return static_cast<TokenId>(0xffffffffu - static_cast<uint32_t>(key)); }

float key_value(uint64_t key) { return from_order_bits(static_cast<uint32_t>(key >> 32)); }

using Ranked = detail::RankedValue;

// The k largest values with their ids, by value descending, ties by lower id. positive_only
// skips values that are not > 0 (zero weights: tokens that cannot be drawn).
void select_top(std::span<const float> values, size_t k, bool positive_only, std::vector<Ranked>& out,
                std::vector<uint64_t>& scratch) {
  out.clear();
  if (k == 0) return;
  if (k > kSmallTopK) {
    scratch.clear();
    for (size_t i = 0; i < values.size(); ++i) {
      if (!positive_only || values[i] > 0.0f) scratch.push_back(rank_key(values[i], i));
    }
    const size_t count = std::min(k, scratch.size());
    std::partial_sort(scratch.begin(), scratch.begin() + static_cast<std::ptrdiff_t>(count), scratch.end(),
                      std::greater<>());
    for (size_t j = 0; j < count; ++j) out.push_back({key_value(scratch[j]), key_token(scratch[j])});
    return;
  }
  // A sorted buffer: scanning ids in ascending order, an equal value never displaces an entry.
  const auto consider = [&](size_t i) {
    const float value = values[i];
    if (positive_only && !(value > 0.0f)) return;
    size_t j = out.size();
    if (j == k) {
      if (!(value > out.back().value)) return;
      --j;
    } else {
      out.emplace_back();
    }
    while (j > 0 && out[j - 1].value < value) {
      out[j] = out[j - 1];
      --j;
    }
    out[j] = {value, static_cast<TokenId>(i)};
  };
  const size_t n = values.size();
  size_t i = 0;
  for (; i < n && out.size() < k; ++i) consider(i);
  // Full: four values at a time skip unless one beats the last entry (> 0 when positive_only).
  for (; i + kLanes <= n; i += kLanes) {
    if (!any(load(values.data() + i) > splat(out.back().value))) continue;
    for (size_t l = 0; l < kLanes; ++l) consider(i + l);
  }
  for (; i < n; ++i) consider(i);
}

[[noreturn]] void refuse(const std::string& message) { throw std::invalid_argument("sampler: " + message); }

void validate(const SamplerInput& input) {
  if (input.params == nullptr) refuse("no sampling parameters");
  if (input.logits.empty()) refuse("empty logits");
  if (input.logits.size() > static_cast<size_t>(std::numeric_limits<TokenId>::max())) refuse("vocabulary too large");
  if (input.num_samples < 1) refuse("num_samples must be at least 1, got " + std::to_string(input.num_samples));
  if (input.first_stream_index < 0) {
    refuse("first_stream_index must be non-negative, got " + std::to_string(input.first_stream_index));
  }
  if (input.position < 0) refuse("position must be non-negative, got " + std::to_string(input.position));
  if (input.num_beam_candidates < 0 || static_cast<size_t>(input.num_beam_candidates) > input.logits.size()) {
    refuse("num_beam_candidates must be in [0, vocab=" + std::to_string(input.logits.size()) + "], got " +
           std::to_string(input.num_beam_candidates));
  }
  if (input.params->logprobs && *input.params->logprobs < 0) {
    refuse("logprobs must be non-negative, got " + std::to_string(*input.params->logprobs));
  }
}

void check_tokens(std::span<const TokenId> tokens, size_t vocab, const char* what) {
  for (const TokenId token : tokens) {
    if (token < 0 || static_cast<size_t>(token) >= vocab) {
      refuse(std::string(what) + " token " + std::to_string(token) + " is outside the vocabulary of " +
             std::to_string(vocab));
    }
  }
}

// min_tokens: stop tokens get no mass until that many are out (vLLM's MinTokensLogitsProcessor).
// Ids outside the vocabulary are ignored.
void suppress_stop_tokens(const sched::SamplingParams& params, std::vector<float>& logits) {
  for (const TokenId token : params.all_stop_token_ids) {
    if (token >= 0 && static_cast<size_t>(token) < logits.size()) {
      logits[static_cast<size_t>(token)] = -std::numeric_limits<float>::infinity();
    }
  }
}

}  // namespace

uint64_t stream_seed(const sched::SamplingParams& params, sched::RequestId request) {
  if (params.seed) return *params.seed;
  return mix64(static_cast<uint64_t>(request) ^ 0x5851f42d4c957f2dULL);
}

sched::SequenceOutput Sampler::sample(const sched::ScheduledSequence& scheduled, std::span<const float> logits) {
  const auto num_prompt = static_cast<size_t>(scheduled.num_prompt_tokens);
  SamplerOutput sampled = sample(SamplerInput{
      .logits = logits,
      .params = scheduled.params,
      .prompt_tokens = scheduled.tokens.first(num_prompt),
      .output_tokens = scheduled.tokens.subspan(num_prompt),
      .seed = stream_seed(*scheduled.params, scheduled.request),
      .position = static_cast<int32_t>(scheduled.tokens.size() - num_prompt),
      .num_samples = scheduled.num_samples,
      .first_stream_index = scheduled.sample_index,
      .num_beam_candidates = scheduled.num_beam_candidates,
      .allowed_tokens = scheduled.allowed_tokens,
  });
  return sched::SequenceOutput{
      .seq = scheduled.seq, .samples = std::move(sampled.samples), .top_logprobs = std::move(sampled.top_logprobs)};
}

SamplerOutput Sampler::sample(const SamplerInput& input) {
  if (!input.allowed_tokens.empty()) {
    // Structured outputs: the constraint comes first, as if the model gave the refused tokens no
    // mass (vLLM applies its grammar bitmask to the logits before its sampler).
    const size_t vocab = input.logits.size();
    if (input.allowed_tokens.size() != (vocab + 31) / 32) {
      refuse("allowed_tokens has " + std::to_string(input.allowed_tokens.size()) + " words for a vocabulary of " +
             std::to_string(vocab));
    }
    masked_.resize(vocab);
    bool any = false;
    for (size_t token = 0; token < vocab; ++token) {
      const bool allowed = structured::is_allowed(input.allowed_tokens, static_cast<TokenId>(token));
      masked_[token] = allowed ? input.logits[token] : -std::numeric_limits<float>::infinity();
      any = any || (allowed && input.logits[token] != -std::numeric_limits<float>::infinity());
    }
    if (!any) refuse("the output constraint allows no token the logits give mass to");
    SamplerInput masked = input;
    masked.logits = masked_;
    masked.allowed_tokens = {};
    return sample(masked);
  }
  validate(input);
  const sched::SamplingParams& params = *input.params;
  const std::span<const float> logits = input.logits;
  const size_t vocab = logits.size();
  const float raw_max = max_of(logits, /*check=*/true);

  SamplerOutput output;
  const auto num_samples = static_cast<size_t>(input.num_samples);
  double raw_sum = 0.0;  // sum of exp(logit - raw_max), once known
  bool have_raw_sum = false;
  const auto compute_raw_sum = [&] {
    if (!have_raw_sum) raw_sum = exp_pass<false, false, false>(logits, 1.0f, raw_max, 0.0f, nullptr).all;
    have_raw_sum = true;
  };

  bool beams_masked = false;  // min_tokens held stop tokens out of the beam candidates
  if (input.num_beam_candidates > 0) {
    std::span<const float> candidates = logits;
    if (params.suppresses_stop_tokens(input.position)) {
      work_.assign(logits.begin(), logits.end());
      suppress_stop_tokens(params, work_);
      candidates = work_;
      beams_masked = true;
    }
    const auto take_candidates = [&](std::span<const float> values) {
      select_top(values, static_cast<size_t>(input.num_beam_candidates), false, top_, keys_);
      for (const Ranked& entry : top_) {
        if (entry.value == -std::numeric_limits<float>::infinity()) break;  // no mass: not a candidate
        output.samples.push_back({entry.token, 0.0f});
      }
    };
    take_candidates(candidates);
    if (output.samples.empty() && beams_masked) {
      // min_tokens held back every token with mass: an output constraint that allows only stop
      // tokens here. The constraint wins, as it does for a sampled sequence (below).
      beams_masked = false;
      take_candidates(logits);
    }
  } else {
    std::span<const float> processed = logits;
    float processed_max = raw_max;
    if (params.adjusts_logits(input.position)) {
      apply_logits_processors(input);
      processed = work_;
      processed_max = max_of(work_, /*check=*/false);
    }
    const float temperature = params.temperature;
    const bool greedy = !(temperature >= kGreedyTemperature);
    // Degenerate cases sample greedily: penalties that push every logit to -inf (then the argmax
    // of the logits as given: min_tokens may hold back the only token a constraint allows), or
    // logits so large that dividing by the temperature overflows.
    if (greedy || !std::isfinite(processed_max / temperature)) {
      const bool no_mass = processed_max == -std::numeric_limits<float>::infinity();
      const TokenId token = no_mass ? first_index_of(logits, raw_max) : first_index_of(processed, processed_max);
      output.samples.assign(num_samples, {token, 0.0f});
    } else {
      const double sum_all = prepare_random(params, processed, processed_max / temperature);
      if (processed.data() == logits.data() && temperature == 1.0f) {
        raw_sum = sum_all;  // the very same pass as compute_raw_sum's
        have_raw_sum = true;
      }
      for (size_t j = 0; j < num_samples; ++j) {
        const double u = uniform_draw(input.seed, input.first_stream_index + static_cast<int32_t>(j), input.position);
        output.samples.push_back({draw(u), 0.0f});
      }
    }
  }

  compute_raw_sum();
  const double log_normalizer = static_cast<double>(raw_max) + std::log(raw_sum);
  const auto raw_logprob = [&](TokenId token) {
    return static_cast<float>(static_cast<double>(logits[static_cast<size_t>(token)]) - log_normalizer);
  };
  for (sched::SampledToken& sampled : output.samples) sampled.logprob = raw_logprob(sampled.token);

  if (params.logprobs) {
    const size_t k = std::min(static_cast<size_t>(*params.logprobs), vocab);
    std::vector<sched::SampledToken> top;
    top.reserve(k);
    if (input.num_beam_candidates > 0 && !beams_masked && k <= output.samples.size()) {
      top.assign(output.samples.begin(), output.samples.begin() + static_cast<std::ptrdiff_t>(k));
    } else {
      select_top(logits, k, false, top_, keys_);
      for (const Ranked& entry : top_) top.push_back({entry.token, raw_logprob(entry.token)});
    }
    output.top_logprobs.assign(output.samples.size(), top);
  }
  return output;
}

void Sampler::apply_logits_processors(const SamplerInput& input) {
  const sched::SamplingParams& params = *input.params;
  const size_t vocab = input.logits.size();
  check_tokens(input.prompt_tokens, vocab, "prompt");
  check_tokens(input.output_tokens, vocab, "output");
  work_.assign(input.logits.begin(), input.logits.end());
  const auto index = [](TokenId token) { return static_cast<size_t>(token); };

  // allowed_token_ids, then bad words, then logit_bias (vLLM v1's order: all before the penalties).
  if (!params.allowed_token_ids.empty()) {
    check_tokens(params.allowed_token_ids, vocab, "allowed");
    if (seen_.size() != vocab) seen_.assign(vocab, 0);
    for (const TokenId token : params.allowed_token_ids) seen_[index(token)] = 1;
    for (size_t i = 0; i < vocab; ++i) {
      if (seen_[i] == 0) work_[i] = -std::numeric_limits<float>::infinity();
    }
    for (const TokenId token : params.allowed_token_ids) seen_[index(token)] = 0;
  }
  // A bad word's last token is banned where the output so far ends with its other tokens.
  for (const std::vector<TokenId>& word : params.bad_words_token_ids) {
    check_tokens(word, vocab, "bad word");
    if (word.empty() || word.size() - 1 > input.output_tokens.size()) continue;
    const size_t prefix = word.size() - 1;
    if (std::equal(word.begin(), word.end() - 1, input.output_tokens.end() - static_cast<std::ptrdiff_t>(prefix))) {
      work_[index(word.back())] = -std::numeric_limits<float>::infinity();
    }
  }
  for (const auto& [token, bias] : params.logit_bias) {
    if (token < 0 || index(token) >= vocab) {
      refuse("logit_bias token " + std::to_string(token) + " is outside the vocabulary of " + std::to_string(vocab));
    }
    work_[index(token)] += bias;
  }

  // Repetition: once per distinct token of prompt + output.
  const float repetition = params.repetition_penalty;
  if (repetition != 1.0f) {
    if (seen_.size() != vocab) seen_.assign(vocab, 0);
    const auto penalize = [&](TokenId token) {
      if (seen_[index(token)] != 0) return;
      seen_[index(token)] = 1;
      float& logit = work_[index(token)];
      logit = logit > 0.0f ? logit / repetition : logit * repetition;
    };
    for (const TokenId token : input.prompt_tokens) penalize(token);
    for (const TokenId token : input.output_tokens) penalize(token);
    for (const TokenId token : input.prompt_tokens) seen_[index(token)] = 0;
    for (const TokenId token : input.output_tokens) seen_[index(token)] = 0;
  }

  // Frequency, then presence (as vLLM: two subtractions), over the output's distinct tokens.
  if (params.frequency_penalty != 0.0f || params.presence_penalty != 0.0f) {
    if (counts_.size() != vocab) counts_.assign(vocab, 0);
    for (const TokenId token : input.output_tokens) ++counts_[index(token)];
    for (const TokenId token : input.output_tokens) {
      const int32_t count = counts_[index(token)];
      if (count == 0) continue;  // already applied
      float& logit = work_[index(token)];
      logit -= params.frequency_penalty * static_cast<float>(count);
      logit -= params.presence_penalty;
      counts_[index(token)] = 0;
    }
  }

  if (params.suppresses_stop_tokens(input.position)) suppress_stop_tokens(params, work_);
}

double Sampler::prepare_random(const sched::SamplingParams& params, std::span<const float> processed,
                               float scaled_max) {
  const size_t vocab = processed.size();
  weights_.resize(vocab);
  // min_p: p_i < min_p * p_max  <=>  w_i < min_p, as the largest weight is exp(0) = 1.
  const float min_p = std::min(params.min_p, 1.0f);
  const bool scale = params.temperature != 1.0f;
  const bool filter = min_p > 0.0f;
  const auto pass = scale ? (filter ? exp_pass<true, true, true> : exp_pass<true, true, false>)
                          : (filter ? exp_pass<true, false, true> : exp_pass<true, false, false>);
  const ExpSums sums = pass(processed, params.temperature, scaled_max, filter ? min_p : 0.0f, weights_.data());
  keys_.clear();
  cum_.clear();
  sorted_ = 0;
  tail_pending_ = false;

  double total = sums.kept;
  if (params.top_k > 0 && static_cast<size_t>(params.top_k) < vocab) {
    const auto k = static_cast<size_t>(params.top_k);
    if (k <= kSmallTopK) {
      select_top(weights_, k, /*positive_only=*/true, top_, keys_);
      keys_.clear();
      for (const Ranked& entry : top_) keys_.push_back(rank_key(entry.value, static_cast<size_t>(entry.token)));
      append_ranked(keys_.size());
    } else {
      build_band(/*head=*/true);  // every head key ranks above every tail key
      if (keys_.size() < k) build_band(/*head=*/false);
      if (keys_.size() > k) {
        std::nth_element(keys_.begin(), keys_.begin() + static_cast<std::ptrdiff_t>(k), keys_.end(), std::greater<>());
        keys_.resize(k);
      }
    }
    // The kept mass in the fixed lane order (the dropped tokens' zero terms left out change nothing).
    ids_.clear();
    for (const uint64_t key : keys_) ids_.push_back(key_token(key));
    std::sort(ids_.begin(), ids_.end());
    double acc[kLanes] = {};
    for (const TokenId token : ids_) {
      const auto i = static_cast<size_t>(token);
      acc[i % kLanes] += static_cast<double>(weights_[i]);
    }
    total = combine(acc);
  } else {
    build_band(/*head=*/true);
    tail_pending_ = true;
  }

  limit_ = std::numeric_limits<size_t>::max();
  mass_ = total;
  if (params.top_p < 1.0f) {
    // Keep token i while the tokens ranked before it hold less than top_p of the mass.
    const double threshold = static_cast<double>(params.top_p) * total;
    while ((cum_.empty() || cum_.back() < threshold) && extend_ranked()) {
    }
    PAGEDLLM_ASSERT(!cum_.empty(), "sampler: no candidate token");
    const auto reached = std::lower_bound(cum_.begin(), cum_.end(), threshold);
    limit_ = std::min(static_cast<size_t>(reached - cum_.begin()) + 1, cum_.size());
    mass_ = cum_[limit_ - 1];
  }
  return sums.all;
}

void Sampler::build_band(bool head) {
  const size_t vocab = weights_.size();
  size_t i = 0;
  if (head) {  // few tokens: four weights at a time skip unless one is in the head
    for (; i + kLanes <= vocab; i += kLanes) {
      if (!any(load(weights_.data() + i) >= splat(kHeadWeight))) continue;
      for (size_t l = i; l < i + kLanes; ++l) {
        if (weights_[l] >= kHeadWeight) keys_.push_back(rank_key(weights_[l], l));
      }
    }
  }
  for (; i < vocab; ++i) {
    const float w = weights_[i];
    if (head ? w >= kHeadWeight : (w > 0.0f && w < kHeadWeight)) keys_.push_back(rank_key(w, i));
  }
}

void Sampler::append_ranked(size_t end) {
  double cum = cum_.empty() ? 0.0 : cum_.back();
  for (size_t i = cum_.size(); i < end; ++i) {
    cum += static_cast<double>(weights_[static_cast<size_t>(key_token(keys_[i]))]);
    cum_.push_back(cum);
  }
  sorted_ = end;
}

bool Sampler::extend_ranked() {
  if (sorted_ == keys_.size()) {
    if (!tail_pending_) return false;
    tail_pending_ = false;
    build_band(/*head=*/false);  // every tail key ranks below every head key
    if (sorted_ == keys_.size()) return false;
  }
  const size_t remaining = keys_.size() - sorted_;
  size_t chunk = std::max(kFirstChunk, sorted_);
  const auto first = keys_.begin() + static_cast<std::ptrdiff_t>(sorted_);
  if (chunk * 2 >= remaining) {
    chunk = remaining;
  } else {
    std::nth_element(first, first + static_cast<std::ptrdiff_t>(chunk), keys_.end(), std::greater<>());
  }
  std::sort(first, first + static_cast<std::ptrdiff_t>(chunk), std::greater<>());
  append_ranked(sorted_ + chunk);
  return true;
}

TokenId Sampler::draw(double u) {
  const double target = u * mass_;
  while (cum_.size() < limit_ && (cum_.empty() || !(cum_.back() > target)) && extend_ranked()) {
  }
  PAGEDLLM_ASSERT(!cum_.empty(), "sampler: no candidate token");
  const auto end = cum_.begin() + static_cast<std::ptrdiff_t>(std::min(cum_.size(), limit_));
  auto chosen = std::upper_bound(cum_.begin(), end, target);
  if (chosen == end) --chosen;  // rounding: the mass summed in rank order fell short of target
  return key_token(keys_[static_cast<size_t>(chosen - cum_.begin())]);
}

}  // namespace pagedllm::sampling
