// What `pagedllm bench` sends: a trace (read, or synthesized as vLLM's random dataset) turned
// into streamed OpenAI requests with their send times. Pure: no sockets.
//
// Prompts go out as the trace gives them: text as text; token ids as a token-id prompt
// ("prompt": [ids], completions only); a bare length as synthetic token ids drawn exactly as
// `replay` draws them (core/trace/materialize.h: same seed, same ids, and Mooncake prefix blocks
// shared across requests), from a range the caller sets because the API has no way to ask for
// the vocabulary.
#pragma once

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "core/common/types.h"
#include "core/sched/sampling_params.h"
#include "core/trace/trace.h"
#include "tools/bench/http_load_client.h"

namespace pagedllm::bench {

inline constexpr std::string_view kCompletionsPath = "/v1/completions";
inline constexpr std::string_view kChatCompletionsPath = "/v1/chat/completions";

// Safe for any vocabulary of 900 tokens or more whose special tokens lie outside [256, 900):
// Llama, Qwen, GPT-2 and SmolLM2 keep theirs below 256 or far above; the tiny test model has 943
// tokens, its special ones at 0..2.
inline constexpr TokenId kDefaultSyntheticTokenBegin = 256;
inline constexpr TokenId kDefaultSyntheticTokenEnd = 900;

struct BenchBodyConfig {
  std::string endpoint = std::string(kCompletionsPath);  // or kChatCompletionsPath
  std::string model;
  bool ignore_eos = true;                                // "ignore_eos": true, so that outputs have the trace's lengths
  bool include_usage = true;                             // stream_options.include_usage: token counts from the server
  nlohmann::json extra_body = nlohmann::json::object();  // merged last (overrides)
};

// A prompt as sent: text, or token ids.
using BenchPrompt = std::variant<std::string, std::vector<TokenId>>;

// The JSON body of one streamed request. Sampling fields are sent only where they differ from
// the API's defaults; max_tokens is `output_len`; temperature is always sent (0 = greedy, the
// trace's default); a seed goes out as its low 63 bits (the API's seed is a signed int64). Throws std::invalid_argument
// for a token-id prompt to the chat endpoint, and for beam search (no OpenAI field for it).
nlohmann::json request_body(const BenchPrompt& prompt, int32_t output_len, const sched::SamplingParams& sampling,
                            const BenchBodyConfig& config);

struct BenchRequestConfig {
  BenchBodyConfig body;
  TokenId synthetic_token_begin = kDefaultSyntheticTokenBegin;  // [begin, end)
  TokenId synthetic_token_end = kDefaultSyntheticTokenEnd;
  uint64_t seed = 0;        // synthetic prompt content and sampling seeds, as replay's --seed
  double rate_scale = 1.0;  // trace arrival times are divided by it
  // Replace the trace's arrival times by vLLM's arrival process (see arrival_times).
  std::optional<double> request_rate;
  double burstiness = 1.0;
};

struct BenchRequests {
  std::vector<LoadRequest> requests;        // in arrival order; id = the request's trace index
  std::vector<trace::TraceIssue> rejected;  // left out, with why (an empty prompt, ...)
};

// `file` names the trace in issues. Throws std::invalid_argument for a bad config, and for a
// chat endpoint when no request of the trace has a text prompt.
BenchRequests build_bench_requests(const trace::Trace& trace, const BenchRequestConfig& config,
                                   const std::string& file);

// vLLM benchmark_serving's arrivals, from the trace synthesizer's arrival stream (so `trace
// synth` with the same seed, rate and burstiness gives the same times): the first at 0, then
// gamma gaps with shape `burstiness` and mean 1 / rate; rate 0 or infinite: all at 0.
std::vector<double> arrival_times(int32_t count, double request_rate, double burstiness, uint64_t seed);

// vLLM's random dataset: `num_prompts` prompts of input_len tokens (uniform in
// [input_len * (1 - range_ratio), input_len * (1 + range_ratio)]) after a shared prefix of
// prefix_len tokens, outputs likewise; arrivals as arrival_times.
struct RandomDatasetConfig {
  int32_t num_prompts = 1000;
  int32_t input_len = 1024;
  int32_t output_len = 128;
  double range_ratio = 0.0;
  int32_t prefix_len = 0;
  double request_rate = std::numeric_limits<double>::infinity();
  double burstiness = 1.0;
  uint64_t seed = 0;
};
trace::Trace random_dataset(const RandomDatasetConfig& config);

}  // namespace pagedllm::bench
