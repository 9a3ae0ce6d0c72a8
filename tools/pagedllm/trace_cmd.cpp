// `pagedllm trace convert|synth|stats|measured`: traces in pagedllm's JSONL format from public
// formats, from distributions or from a real run's report, and what a trace holds.
#include <boost/program_options.hpp>
#include <cmath>
#include <fstream>
#include <iostream>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "core/frontend/model_bundle.h"
#include "core/trace/trace_jsonl.h"
#include "core/trace/trace_random.h"
#include "core/trace/trace_stats.h"
#include "core/trace/trace_synth.h"
#include "tools/pagedllm/cli_options.h"
#include "tools/pagedllm/default_model.h"
#include "tools/pagedllm/measured_trace.h"
#include "tools/pagedllm/subcommands.h"
#include "tools/pagedllm/trace_input.h"
#include "tools/pagedllm/trace_requests.h"

namespace pagedllm::cli {
namespace {

namespace po = boost::program_options;

std::string command_line(const char* subcommand, const std::vector<std::string>& args) {
  std::string line = std::string("pagedllm trace ") + subcommand;
  for (const std::string& arg : args) line += " " + arg;
  return line;
}

void write_output(const trace::Trace& trace, const std::string& path) {
  if (path == "-") {
    trace::write_trace_jsonl(trace, std::cout);
  } else {
    trace::write_trace_jsonl(trace, path);
    std::cerr << "wrote " << trace.requests.size() << " requests to " << path << '\n';
  }
}

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::stringstream stream(text);
  for (std::string part; std::getline(stream, part, separator);) parts.push_back(part);
  return parts;
}

// fixed:N | uniform:MIN:MAX | lognormal:MEAN:SIGMA (MEAN of the lengths, SIGMA of their log) |
// fit:TRACE (a lognormal fitted to a pagedllm trace's lengths); clipped to [min, max].
trace::LengthDistribution parse_length(const std::string& spec, const std::string& option, bool prompt, int32_t min,
                                       int32_t max) {
  const std::vector<std::string> parts = split(spec, ':');
  const auto number = [&](size_t index) {
    if (index >= parts.size()) throw po::error(option + ": '" + spec + "' lacks a value");
    try {
      return std::stod(parts[index]);
    } catch (const std::exception&) {
      throw po::error(option + ": '" + parts[index] + "' is not a number");
    }
  };
  trace::LengthDistribution length;
  length.min = min;
  length.max = max;
  const std::string kind = parts.empty() ? "" : parts[0];
  if (kind == "fixed" && parts.size() == 2) {
    length.kind = trace::LengthKind::fixed;
    length.value = static_cast<int32_t>(number(1));
  } else if (kind == "uniform" && parts.size() == 3) {
    length.kind = trace::LengthKind::uniform;
    length.min = static_cast<int32_t>(number(1));
    length.max = static_cast<int32_t>(number(2));
  } else if (kind == "lognormal" && parts.size() == 3) {
    const double mean = number(1);
    const double sigma = number(2);
    if (!(mean > 0.0)) throw po::error(option + ": the mean must be positive");
    length.kind = trace::LengthKind::lognormal;
    length.sigma = sigma;
    length.mu = std::log(mean) - sigma * sigma / 2.0;  // E[exp(N(mu, sigma^2))] = mean
  } else if (kind == "fit" && parts.size() >= 2) {
    const std::string path = spec.substr(4);
    const trace::Trace source = trace::read_trace_jsonl(path);
    std::vector<int32_t> lengths;
    for (const trace::TraceRequest& request : source.requests) {
      const int32_t value = prompt ? request.prompt_len : request.output_len;
      if (value > 0) lengths.push_back(value);
    }
    if (lengths.empty()) throw po::error(option + ": " + path + " has no lengths to fit");
    length = trace::fit_lognormal(lengths, min, max);
  } else {
    throw po::error(option + ": expected fixed:N, uniform:MIN:MAX, lognormal:MEAN:SIGMA or fit:TRACE, got '" + spec +
                    "'");
  }
  return length;
}

// ShareGPT holds text: its reader counts tokens with the tokenizer of `tokenizer_model`, which is
// opened for that format only.
trace::Trace read_trace_with_tokenizer(const TraceInputOptions& input, const std::string& tokenizer_model,
                                       trace::ReadReport& report) {
  std::optional<frontend::ModelBundle> bundle;
  if (input.format == "sharegpt") bundle.emplace(frontend::open_model(resolve_model_argument(tokenizer_model)));
  return read_trace_input(input, token_counter(bundle ? &bundle->tokenizer : nullptr), report, std::cerr);
}

int run_convert(const std::vector<std::string>& args) {
  TraceInputOptions input;
  std::string output;
  std::string tokenizer_model = std::string(kDefaultModelName);
  double rate = 0.0;
  double burstiness = 1.0;
  uint64_t seed = 0;
  po::options_description description(
      "pagedllm trace convert: a public trace (ShareGPT, Azure, BurstGPT, Mooncake) to pagedllm's JSONL\n"
      "  pagedllm trace convert --format azure --input AzureLLMInferenceTrace_code.csv --output azure.jsonl");
  // clang-format off
  description.add_options()
      ("help,h", "show this help")
      ("input,i", po::value(&input.path)->required(), "the file to convert")
      ("output,o", po::value(&output)->required(), "the JSONL trace to write ('-' = stdout)")
      ("tokenizer", po::value(&tokenizer_model)->default_value(tokenizer_model),
       "sharegpt: the model whose tokenizer counts tokens ('tiny' = the embedded test model)")
      ("request-rate", po::value(&rate)->default_value(0.0),
       "re-time arrivals: gamma gaps with this mean rate (req/s); 0 = keep the trace's times")
      ("burstiness", po::value(&burstiness)->default_value(1.0), "gamma shape of re-timed arrivals (1 = Poisson)")
      ("seed", po::value(&seed)->default_value(0), "of the re-timed arrivals");
  // clang-format on
  add_trace_input_options(description, input, false);
  po::variables_map values;
  if (!parse_options(args, description, values)) return 0;

  trace::ReadReport report;
  trace::Trace result = read_trace_with_tokenizer(input, tokenizer_model, report);
  if (rate > 0.0) {
    trace::SynthConfig arrivals;
    arrivals.seed = seed;
    arrivals.num_requests = static_cast<int32_t>(result.requests.size());
    arrivals.request_rate = rate;
    arrivals.burstiness = burstiness;
    const trace::Trace timed = trace::synthesize_trace(arrivals);
    for (size_t i = 0; i < result.requests.size(); ++i)
      result.requests[i].arrival_time = timed.requests[i].arrival_time;
  }
  result.header.command = command_line("convert", args);
  std::cerr << "read " << report.lines_read << " records: " << report.requests_accepted << " accepted, "
            << report.lines_skipped << " skipped\n";
  write_output(result, output);
  return 0;
}

int run_synth(const std::vector<std::string>& args) {
  trace::SynthConfig config;
  std::string output;
  std::string prompt_spec = "lognormal:161:1.0";
  std::string output_spec = "lognormal:338:0.8";
  int32_t prompt_min = 4;
  int32_t prompt_max = 1024;
  int32_t output_min = 4;
  int32_t output_max = 1024;
  std::string turns = "1:1";
  po::options_description description(
      "pagedllm trace synth: a trace from distributions (defaults: ShareGPT-like lengths, vLLM paper's means)\n"
      "  pagedllm trace synth --num-requests 1000 --request-rate 4 --output sharegpt_like.jsonl");
  // clang-format off
  description.add_options()
      ("help,h", "show this help")
      ("output,o", po::value(&output)->required(), "the JSONL trace to write ('-' = stdout)")
      ("seed", po::value(&config.seed)->default_value(0), "")
      ("num-requests,n", po::value(&config.num_requests)->default_value(0), "lone requests (or use --sessions)")
      ("request-rate", po::value(&config.request_rate)->default_value(0.0), "mean arrivals per second (0 = all at time 0)")
      ("burstiness", po::value(&config.burstiness)->default_value(1.0),
       "gamma shape of inter-arrival gaps: 1 = Poisson, < 1 burstier, > 1 more regular")
      ("prompt-len", po::value(&prompt_spec)->default_value(prompt_spec),
       "fixed:N, uniform:MIN:MAX, lognormal:MEAN:SIGMA or fit:TRACE.jsonl (user message per turn)")
      ("output-len", po::value(&output_spec)->default_value(output_spec), "as --prompt-len")
      ("prompt-min", po::value(&prompt_min)->default_value(prompt_min), "")
      ("prompt-max", po::value(&prompt_max)->default_value(prompt_max), "")
      ("output-min", po::value(&output_min)->default_value(output_min), "")
      ("output-max", po::value(&output_max)->default_value(output_max), "")
      ("system-prompt-len", po::value(&config.system_prompt_len)->default_value(0),
       "tokens every prompt starts with (shared prefix)")
      ("sessions", po::value(&config.sessions.num_sessions)->default_value(0), "multi-turn conversations, Mooncake style")
      ("turns", po::value(&turns)->default_value(turns), "MIN:MAX turns per session")
      ("think-time", po::value(&config.sessions.mean_think_time)->default_value(0.0), "mean seconds between turns")
      ("parallel-fraction", po::value(&config.mix.parallel_fraction)->default_value(0.0), "requests with n > 1")
      ("parallel-n", po::value(&config.mix.parallel_n)->default_value(2), "")
      ("beam-fraction", po::value(&config.mix.beam_fraction)->default_value(0.0), "requests with beam search")
      ("beam-width", po::value(&config.mix.beam_width)->default_value(2), "")
      ("prefix-block-tokens", po::value(&config.prefix_block_tokens)->default_value(trace::kDefaultPrefixBlockTokens),
       "tokens per prefix block id");
  // clang-format on
  po::variables_map values;
  if (!parse_options(args, description, values)) return 0;
  if (config.request_rate == 0.0) config.request_rate = std::numeric_limits<double>::infinity();
  config.prompt_len = parse_length(prompt_spec, "--prompt-len", true, prompt_min, prompt_max);
  config.output_len = parse_length(output_spec, "--output-len", false, output_min, output_max);
  const std::vector<std::string> turn_range = split(turns, ':');
  if (turn_range.size() != 2) throw po::error("--turns: expected MIN:MAX, got '" + turns + "'");
  try {
    config.sessions.min_turns = std::stoi(turn_range[0]);
    config.sessions.max_turns = std::stoi(turn_range[1]);
  } catch (const std::exception&) {
    throw po::error("--turns: expected MIN:MAX, got '" + turns + "'");
  }
  trace::Trace result = trace::synthesize_trace(config);
  result.header.command = command_line("synth", args);
  write_output(result, output);
  return 0;
}

int run_stats(const std::vector<std::string>& args) {
  TraceInputOptions input;
  std::string tokenizer_model = std::string(kDefaultModelName);
  bool json = false;
  po::options_description description("pagedllm trace stats: counts, rates, length percentiles, prefix sharing");
  // clang-format off
  description.add_options()
      ("help,h", "show this help")
      ("tokenizer", po::value(&tokenizer_model)->default_value(tokenizer_model), "sharegpt: counts tokens")
      ("json", po::bool_switch(&json), "print JSON");
  // clang-format on
  add_trace_input_options(description, input);
  po::positional_options_description positional;
  positional.add("trace", 1);
  po::variables_map values;
  if (!parse_options(args, description, values, &positional)) return 0;
  trace::ReadReport report;
  const trace::Trace result = read_trace_with_tokenizer(input, tokenizer_model, report);
  const trace::TraceStats stats = trace::compute_trace_stats(result);
  if (json) {
    std::cout << trace::to_json(stats).dump(2) << '\n';
  } else {
    std::cout << input.path << " (" << report.lines_read << " records, " << report.lines_skipped << " skipped)\n";
    trace::print_trace_stats(stats, std::cout);
  }
  return 0;
}

int run_measured(const std::vector<std::string>& args) {
  std::string trace_path;
  std::string report_path;
  std::string output;
  po::options_description description(
      "pagedllm trace measured: the trace a replay ran, as it ran: each request's output length is what it\n"
      "generated and, with speculative decoding, its own drafts and acceptance (simulated_speculation), for\n"
      "`replay --executor sim` to replay that run (docs/SIMULATOR.md)\n"
      "  pagedllm replay --trace T.jsonl ... --speculative-config '{...}' -o run.json\n"
      "  pagedllm trace measured --trace T.jsonl --report run.json -o measured.jsonl");
  // clang-format off
  description.add_options()
      ("help,h", "show this help")
      ("trace", po::value(&trace_path)->required(), "the pagedllm JSONL trace the replay ran")
      ("report", po::value(&report_path)->required(), "the replay's JSON report (replay -o)")
      ("output,o", po::value(&output)->required(), "the JSONL trace to write ('-' = stdout)");
  // clang-format on
  po::variables_map values;
  if (!parse_options(args, description, values)) return 0;
  const trace::Trace trace = trace::read_trace_jsonl(trace_path);
  std::ifstream in(report_path);
  if (!in) throw po::error("--report: cannot open " + report_path);
  nlohmann::json report;
  try {
    report = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& error) {
    throw po::error("--report: " + report_path + ": not JSON: " + error.what());
  }
  MeasuredTraceReport counts;
  trace::Trace result = measured_trace(trace, report, report_path, counts);
  result.header.command = command_line("measured", args);
  std::cerr << counts.num_measured << " of " << trace.requests.size() << " requests measured ("
            << counts.num_speculating << " with their speculation); " << counts.num_failed
            << " failed in the run, kept as the trace had them\n";
  write_output(result, output);
  return 0;
}

}  // namespace

int run_trace(const std::vector<std::string>& args) {
  static const char* kUsage =
      "usage: pagedllm trace <convert|synth|stats|measured> [options]   (pagedllm trace <command> --help)\n"
      "  convert  a public trace (ShareGPT, Azure, BurstGPT, Mooncake) to pagedllm's JSONL\n"
      "  synth    a trace from arrival and length distributions, sessions and a sampling mix\n"
      "  stats    counts, rates, length percentiles and prefix sharing of a trace\n"
      "  measured the trace a replay ran, with each request's output length and speculation as measured\n";
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::cout << kUsage;
    return args.empty() ? 2 : 0;
  }
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  if (args[0] == "convert") return run_convert(rest);
  if (args[0] == "synth") return run_synth(rest);
  if (args[0] == "stats") return run_stats(rest);
  if (args[0] == "measured") return run_measured(rest);
  std::cerr << "pagedllm trace: unknown command '" << args[0] << "'\n" << kUsage;
  return 2;
}

}  // namespace pagedllm::cli
