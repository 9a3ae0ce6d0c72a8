#include "tools/pagedllm/trace_input.h"

#include <ostream>
#include <vector>

#include "core/trace/trace_formats.h"

namespace pagedllm::cli {

namespace po = boost::program_options;

void add_trace_input_options(po::options_description& description, TraceInputOptions& options, bool path_option) {
  po::options_description input("trace input");
  // clang-format off
  if (path_option) input.add_options()("trace", po::value(&options.path)->required(), "the trace file");
  // clang-format on
  // clang-format off
  input.add_options()
      ("format", po::value(&options.format)->default_value(options.format),
       "pagedllm (JSONL, docs/TRACE_FORMAT.md), sharegpt, azure, burstgpt or mooncake")
      ("strict", po::bool_switch(&options.strict), "stop at the first malformed line instead of skipping it")
      ("refuse-out-of-order", po::bool_switch(&options.refuse_out_of_order),
       "fail on arrivals out of order instead of sorting them")
      ("max-requests", po::value(&options.max_requests)->default_value(0), "keep the first N requests (0 = all)")
      ("sharegpt-no-filter", po::bool_switch(&options.sharegpt_no_filter),
       "sharegpt: keep pairs vLLM's length filters drop (< 4 tokens, prompt > 1024, total > 2048)")
      ("burstgpt-model", po::value(&options.burstgpt_model), "burstgpt: keep only this Model (ChatGPT, GPT-4)")
      ("burstgpt-log-type", po::value(&options.burstgpt_log_type), "burstgpt: keep only this Log Type")
      ("mooncake-block-tokens", po::value(&options.mooncake_block_tokens)->default_value(options.mooncake_block_tokens),
       "mooncake: prompt tokens per hash id");
  // clang-format on
  description.add(input);
}

namespace {

void print_issues(const std::vector<trace::TraceIssue>& issues, const char* kind, std::ostream& log,
                  size_t max_issues) {
  for (size_t i = 0; i < issues.size() && i < max_issues; ++i) log << kind << ": " << issues[i].to_string() << '\n';
  if (issues.size() > max_issues) log << kind << ": ... and " << issues.size() - max_issues << " more\n";
}

}  // namespace

trace::ReadOptions read_options(const TraceInputOptions& options) {
  trace::ReadOptions read;
  read.on_error = options.strict ? trace::OnError::fail : trace::OnError::skip;
  read.out_of_order = options.refuse_out_of_order ? trace::OutOfOrder::refuse : trace::OutOfOrder::sort;
  return read;
}

void print_read_report(const trace::ReadReport& report, std::ostream& log, size_t max_issues) {
  print_issues(report.errors, "skipped", log, max_issues);
  print_issues(report.warnings, "warning", log, max_issues);
}

trace::Trace read_trace_input(const TraceInputOptions& options, std::function<int32_t(std::string_view)> count_tokens,
                              trace::ReadReport& report, std::ostream& log, size_t max_issues) {
  const trace::TraceFormat format = trace::parse_trace_format(options.format);
  const trace::ReadOptions read = read_options(options);
  trace::ConverterOptions converters;
  converters.sharegpt.count_tokens = std::move(count_tokens);
  converters.sharegpt.filter = !options.sharegpt_no_filter;
  converters.burstgpt.model = options.burstgpt_model;
  converters.burstgpt.log_type = options.burstgpt_log_type;
  converters.mooncake.block_tokens = options.mooncake_block_tokens;
  if (format == trace::TraceFormat::sharegpt && !converters.sharegpt.count_tokens) {
    throw po::error("--format sharegpt needs a tokenizer to count tokens (give --tokenizer or --model)");
  }
  trace::Trace result = trace::read_any_trace(options.path, format, read, &report, converters);
  print_read_report(report, log, max_issues);
  if (options.max_requests > 0 && static_cast<int64_t>(result.requests.size()) > options.max_requests) {
    result.requests.resize(static_cast<size_t>(options.max_requests));
  }
  return result;
}

}  // namespace pagedllm::cli
