// A trace turned into engine requests for a model, shared by `replay`, `simulate` and `check`:
// the rate scale, the seed of synthetic content, prompts over max-model-len, EOS; text prompts
// encoded with the model's tokenizer and length-only prompts drawn from its ordinary tokens.
#pragma once

#include <boost/program_options.hpp>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>
#include <string_view>

#include "core/frontend/model_bundle.h"
#include "core/tokenizer/tokenizer.h"
#include "core/trace/materialize.h"
#include "core/trace/trace.h"
#include "tools/pagedllm/default_model.h"
#include "tools/pagedllm/trace_input.h"

namespace pagedllm::cli {

struct TraceRequestOptions {
  double rate_scale = 1.0;           // 2 = twice the trace's request rate
  uint64_t seed = 0;                 // synthetic prompt content, and seeds of sampled requests without one
  std::string over_length = "clip";  // prompts beyond max-model-len: clip | reject
  bool respect_eos = false;          // off: every request generates its trace's output length
};

// --rate-scale and --seed; with `length_and_eos`, --over-length and --respect-eos too.
void add_trace_request_options(boost::program_options::options_description& description, TraceRequestOptions& options,
                               bool length_and_eos = true);

// What the requests are for: the engine's context limit and the model's vocabulary, and its
// tokenizer where there is one (a shape preset has none: then a text prompt is an error).
struct RequestTarget {
  int32_t max_model_len = 0;
  int32_t vocab_size = 0;
  const tokenizer::Tokenizer* tokenizer = nullptr;
  // Synthetic prompts stay unwritten (Request::prompt_synthesis): for a consumer whose engines
  // write what their executors read, the simulator.
  bool synthetic_prompts_unwritten = false;
};

// ShareGPT's reader counts tokens with this: the tokenizer's encoding, or nothing (null tokenizer).
std::function<int32_t(std::string_view)> token_counter(const tokenizer::Tokenizer* tokenizer);

// The materializer's settings for these options and this target.
trace::MaterializeConfig materialize_config(const TraceRequestOptions& options, const RequestTarget& target);

// Materializes `trace` (read from `path`, named in errors); each request left out is printed to
// `log` with its line and why. Throws boost::program_options::error for a bad --over-length.
trace::MaterializedTrace materialize_trace(const trace::Trace& trace, const std::string& path,
                                           const TraceRequestOptions& options, const RequestTarget& target,
                                           std::ostream& log);

// A trace on a model, as `replay` and `check` take it.
struct ModelTraceOptions {
  std::string model = std::string(kDefaultModelName);  // 'tiny' = the embedded one
  TraceInputOptions trace;
  TraceRequestOptions requests;
};

// A trace read for a model (`replay` and `check`): ShareGPT's text counted with its tokenizer.
struct ModelTrace {
  frontend::ModelBundle bundle;
  trace::ReadReport read_report;
  trace::Trace trace;
  std::string path;  // the trace file, named in errors

  // The requests for an engine with this context limit; the model gives the vocabulary and the
  // tokenizer.
  trace::MaterializedTrace requests(const TraceRequestOptions& options, int32_t max_model_len, std::ostream& log) const;
};

// Opens the model and reads the trace; the reader's report goes to `log`.
ModelTrace read_model_trace(const ModelTraceOptions& options, std::ostream& log);

}  // namespace pagedllm::cli
