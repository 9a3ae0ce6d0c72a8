// From a trace to engine requests for one model: prompt tokens, sampling, arrival times.
//
// Prompts given as text are tokenized with the model's tokenizer; prompts given as token ids are
// checked against the vocabulary; prompts given only as a length are filled with deterministic
// pseudo-random tokens. Mooncake-style prefix block ids become shared token content: block i of a
// prompt, with id h, holds tokens that depend only on (seed, h, offset), so two requests that
// name the same id share that block's tokens and the prefix cache sees the sharing the trace
// recorded. Tokens outside named blocks depend on (seed, request index, position).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/common/types.h"
#include "core/sched/request.h"
#include "core/sched/sampling_params.h"
#include "core/trace/trace.h"

namespace pagedllm::trace {

// What happens to a request whose prompt + output exceeds max_model_len.
enum class OverLength : uint8_t {
  clip,    // keep the prompt's leading tokens (shared prefixes survive) and shorten the output
           // only when it alone leaves no room: output <= max_model_len - 1, then
           // prompt <= max_model_len - output
  reject,  // leave it out, counted and reported
};

struct MaterializeConfig {
  int32_t max_model_len = 2048;
  OverLength over_length = OverLength::clip;
  // Synthetic prompt tokens are drawn from [synthetic_token_begin, synthetic_token_end), a range
  // that should leave out the model's special tokens.
  TokenId synthetic_token_begin = 0;
  TokenId synthetic_token_end = 0;
  int32_t vocab_size = 0;   // prompt_token_ids must be below it
  uint64_t seed = 0;        // of the synthetic token content
  double rate_scale = 1.0;  // arrival_time / rate_scale: 2 = twice the request rate
  // Sampling for requests whose trace entry has none (greedy by default); max_tokens is always
  // the trace's output_len.
  sched::SamplingParams default_sampling = greedy_sampling();
  // Generate exactly output_len tokens (as vLLM's benchmark with --ignore-eos). Off: a request
  // may stop early at EOS.
  bool ignore_eos = true;
  // Tokenizes text prompts; absent: a text prompt is an error naming its line.
  std::function<std::vector<TokenId>(const std::string&)> encode;
  // Leave prompts given only as a length unwritten: each request carries its description
  // (Request::prompt_synthesis; sched::write_prompt writes it), and an engine writes what its
  // executor reads (a model: all of it; the simulator: the last block). What a simulator of a long
  // trace wants. The tokens are the same either way.
  bool defer_synthetic_prompts = false;

  static sched::SamplingParams greedy_sampling() {
    sched::SamplingParams params;
    params.temperature = 0.0f;
    return params;
  }
};

// What materializing left out or changed, request by request.
struct MaterializeReport {
  std::vector<TraceIssue> rejected;       // one per request left out, naming its line and why
  int64_t num_clipped = 0;                // requests shortened to fit max_model_len
  int64_t num_clipped_prompt_tokens = 0;  // prompt tokens removed by clipping
  int64_t num_clipped_output_tokens = 0;
};

struct MaterializedTrace : MaterializeReport {
  // Requests in arrival order; request.id is the request's index in the trace, so a request keeps
  // its id (and its scripted tokens) whatever was rejected around it.
  std::vector<sched::Request> requests;
};

// Throws std::invalid_argument naming the field when the config is unusable.
void validate(const MaterializeConfig& config);

// `file` names the trace in the issues.
MaterializedTrace materialize_requests(const Trace& trace, const MaterializeConfig& config, const std::string& file);

// One request at a time, for a trace read as it is consumed (core/trace/request_stream.h): the
// same requests materialize_requests makes.
class RequestMaterializer {
 public:
  // `prefix_block_tokens` is the trace header's; throws std::invalid_argument like validate() and
  // for a block size below 1.
  RequestMaterializer(const MaterializeConfig& config, int32_t prefix_block_tokens, std::string file);
  ~RequestMaterializer();
  RequestMaterializer(RequestMaterializer&&) noexcept;
  RequestMaterializer& operator=(RequestMaterializer&&) noexcept;

  // The engine request for the trace's request number `index` (its id, counted from 0 over the
  // requests the reader accepted), or nullopt when it is left out: then report().rejected names it.
  std::optional<sched::Request> materialize(const TraceRequest& entry, size_t index);
  const MaterializeReport& report() const { return report_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  MaterializeReport report_;
};

}  // namespace pagedllm::trace
