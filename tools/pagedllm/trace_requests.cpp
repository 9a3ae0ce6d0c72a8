#include "tools/pagedllm/trace_requests.h"

#include <algorithm>
#include <ostream>
#include <vector>

namespace pagedllm::cli {

namespace po = boost::program_options;

namespace {

trace::OverLength parse_over_length(const std::string& text) {
  if (text == "clip") return trace::OverLength::clip;
  if (text == "reject") return trace::OverLength::reject;
  throw po::error("--over-length: expected clip or reject, got '" + text + "'");
}

}  // namespace

void add_trace_request_options(po::options_description& description, TraceRequestOptions& options,
                               bool length_and_eos) {
  po::options_description group("requests from the trace");
  // clang-format off
  group.add_options()
      ("rate-scale", po::value(&options.rate_scale)->default_value(options.rate_scale),
       "multiply the request rate (divide arrival times)")
      ("seed", po::value(&options.seed)->default_value(options.seed), "synthetic prompt content and sampling seeds");
  // clang-format on
  if (length_and_eos) {
    // clang-format off
    group.add_options()
        ("over-length",
         po::value(&options.over_length)->default_value(options.over_length)->notifier([](const std::string& text) {
           parse_over_length(text);
         }),
         "requests beyond max-model-len: clip (keep the prompt's head) or reject (counted as failed)")
        ("respect-eos", po::bool_switch(&options.respect_eos),
         "let requests stop at EOS (default: generate the trace's output length, as --ignore-eos)");
    // clang-format on
  }
  description.add(group);
}

std::function<int32_t(std::string_view)> token_counter(const tokenizer::Tokenizer* tokenizer) {
  if (tokenizer == nullptr) return {};
  return [tokenizer](std::string_view text) { return static_cast<int32_t>(tokenizer->encode(text).size()); };
}

trace::MaterializeConfig materialize_config(const TraceRequestOptions& options, const RequestTarget& target) {
  trace::MaterializeConfig materialize;
  materialize.max_model_len = target.max_model_len;
  materialize.over_length = parse_over_length(options.over_length);
  materialize.vocab_size = target.vocab_size;
  materialize.synthetic_token_end = target.vocab_size;
  if (const tokenizer::Tokenizer* tokenizer = target.tokenizer) {
    // Synthetic tokens: ordinary ones the tokenizer can decode, not its special tokens.
    materialize.synthetic_token_begin = tokenizer::first_ordinary_token(*tokenizer);
    materialize.synthetic_token_end = std::min(tokenizer->num_tokens(), target.vocab_size);
    materialize.encode = [tokenizer](const std::string& text) { return tokenizer->encode(text); };
  }
  materialize.seed = options.seed;
  materialize.rate_scale = options.rate_scale;
  materialize.ignore_eos = !options.respect_eos;
  materialize.defer_synthetic_prompts = target.synthetic_prompts_unwritten;
  return materialize;
}

trace::MaterializedTrace materialize_trace(const trace::Trace& trace, const std::string& path,
                                           const TraceRequestOptions& options, const RequestTarget& target,
                                           std::ostream& log) {
  trace::MaterializedTrace requests = trace::materialize_requests(trace, materialize_config(options, target), path);
  for (const trace::TraceIssue& issue : requests.rejected) log << "rejected: " << issue.to_string() << '\n';
  return requests;
}

trace::MaterializedTrace ModelTrace::requests(const TraceRequestOptions& options, int32_t max_model_len,
                                              std::ostream& log) const {
  return materialize_trace(trace, path, options,
                           {.max_model_len = max_model_len,
                            .vocab_size = static_cast<int32_t>(bundle.config.vocab_size),
                            .tokenizer = &bundle.tokenizer},
                           log);
}

ModelTrace read_model_trace(const ModelTraceOptions& options, std::ostream& log) {
  ModelTrace result{.bundle = frontend::open_model(resolve_model_argument(options.model)),
                    .read_report = {},
                    .trace = {},
                    .path = options.trace.path};
  result.trace = read_trace_input(options.trace, token_counter(&result.bundle.tokenizer), result.read_report, log);
  return result;
}

}  // namespace pagedllm::cli
