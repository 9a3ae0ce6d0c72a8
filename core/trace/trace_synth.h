// The trace synthesizer: arrivals, prompt and output lengths, a mix of sampling modes and
// optional multi-turn sessions with shared prefixes, all from one seed.
//
// Same config, same trace, bit for bit, on every platform (see trace_random.h). Each concern
// draws from its own random stream, so changing, say, the output lengths leaves the arrival
// times as they were.
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>

#include "core/trace/trace.h"

namespace pagedllm::trace {

enum class LengthKind : uint8_t { fixed, uniform, lognormal };
const char* to_string(LengthKind kind);
// "fixed", "uniform" or "lognormal"; throws std::invalid_argument listing these otherwise.
LengthKind parse_length_kind(std::string_view name);

inline constexpr int32_t kMaxSynthLength = 1 << 24;  // tokens; catches unit mix-ups

// A token-count distribution. Every kind's result lies in [min, max]: uniform draws integers in
// that range, lognormal rounds exp(N(mu, sigma^2)) to the nearest integer and clips.
struct LengthDistribution {
  LengthKind kind = LengthKind::fixed;
  int32_t value = 128;  // fixed: the length (within [min, max])
  int32_t min = 1;      // >= 1
  int32_t max = kMaxSynthLength;
  double mu = 0.0;     // lognormal: mean of ln(length)
  double sigma = 0.0;  // lognormal: standard deviation of ln(length), >= 0
};

// The maximum-likelihood lognormal for observed lengths (mu, sigma = mean and population standard
// deviation of ln x), clipped to [min, max]. Throws std::invalid_argument on an empty span, a
// length below 1, or bounds outside 1 <= min <= max.
LengthDistribution fit_lognormal(std::span<const int32_t> lengths, int32_t min, int32_t max);

// Which requests exercise parallel sampling or beam search; each request independently falls in
// one bucket (fractions are probabilities, summing to at most 1). The rest carry no sampling
// entry: the replay's defaults apply.
struct RequestMix {
  double parallel_fraction = 0.0;  // n = parallel_n, temperature 1, a seed per request
  int32_t parallel_n = 2;          // >= 2
  double beam_fraction = 0.0;      // beam search with beam_width, n = 1, temperature 0
  int32_t beam_width = 2;          // >= 2
};

// Mooncake-style conversations. Turn 1's prompt is the system prompt plus a user message; turn
// t's prompt is turn t-1's prompt, its output and a new user message. The trace has no completion
// times, so a turn arrives a think time after the previous turn's arrival.
struct SessionConfig {
  int32_t num_sessions = 0;  // 0: lone requests (SynthConfig::num_requests) instead
  int32_t min_turns = 1;     // turns per session, uniform in [min_turns, max_turns]
  int32_t max_turns = 1;
  double mean_think_time = 0.0;  // seconds between turns, exponentially distributed, >= 0
};

struct SynthConfig {
  uint64_t seed = 0;
  int32_t num_requests = 0;  // lone requests; must be 0 when sessions are on
  // Arrivals of lone requests (or of sessions' first turns), as vLLM's benchmark_serving: the
  // first at time 0, then gamma gaps with shape = burstiness and mean 1 / request_rate
  // (burstiness 1 = Poisson, < 1 burstier, > 1 more regular). 0 or infinity: all at time 0.
  double request_rate = std::numeric_limits<double>::infinity();
  double burstiness = 1.0;
  int32_t system_prompt_len = 0;  // tokens every prompt starts with (shared prefix), >= 0
  LengthDistribution prompt_len;  // the user message after the system prompt (per turn)
  LengthDistribution output_len;
  RequestMix mix;
  SessionConfig sessions;
  int32_t prefix_block_tokens = kDefaultPrefixBlockTokens;  // header.prefix_block_tokens
};

// A configuration that cannot be synthesized; field() names the culprit ("prompt_len.sigma").
class SynthConfigError : public std::invalid_argument {
 public:
  SynthConfigError(std::string field, const std::string& message)
      : std::invalid_argument(message), field_(std::move(field)) {}
  const std::string& field() const { return field_; }

 private:
  std::string field_;
};

// Throws SynthConfigError naming the first field out of range.
void validate(const SynthConfig& config);

// The trace, sorted by arrival (stable over generation order: sessions by index, turns in order).
// Prompts are PromptKind::length. prefix_block_ids cover ceil(prompt_len / B) blocks: blocks
// wholly inside the system prompt share ids across all requests, blocks wholly inside the
// previous turn's prompt reuse its ids, the rest (a partial last block included) are fresh. Ids
// are numbered 0, 1, 2, ... in order of first appearance. header.source = "synth"; the command
// is left for the caller.
Trace synthesize_trace(const SynthConfig& config);

}  // namespace pagedllm::trace
