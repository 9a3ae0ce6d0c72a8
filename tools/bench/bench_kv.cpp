// bench_kv: what the paged KV cache manager (core/kv) costs on the CPU, against the issue's
// targets (at most 50 ns per append; at most 50 us for the block work of one engine step with
// 1,024 running sequences over 100k device blocks) and against a nano-vllm-style baseline block
// manager measured in the same run, so that every figure comes with ratios taken side by side.
//
//   bench_kv [--steps N] [--sequences N] [--blocks N] [--repeats N] [--quick] [--json PATH]
//
// Per-operation figures are medians over timed batches (std::chrono::steady_clock around a batch
// of calls), so a batch that lost the CPU does not move them. The decode-step figures time every
// step on its own. The workload is deterministic (fixed-seed std::mt19937_64), and all tokens and
// prompts are produced outside the timed regions.
//
// The parts: bench_kv_config.h (sizes), bench_timing.h (clock, sink, statistics; shared with bench_scheduler),
// bench_kv_tokens.h (inputs), kv_paged.h and kv_baseline.h (the two managers), bench_kv_micro
// (per-operation suite), bench_kv_decode (decode-step workload), bench_kv_report and bench_kv_json
// (output). This file holds the command line and main().

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "tools/bench/bench_kv_config.h"
#include "tools/bench/bench_kv_decode.h"
#include "tools/bench/bench_kv_json.h"
#include "tools/bench/bench_kv_micro.h"
#include "tools/bench/bench_kv_report.h"
#include "tools/bench/bench_kv_config.h"

namespace pagedllm::kv_bench {
namespace {

// --- command line ------------------------------------------------------------------------------

constexpr const char* kUsage =
    "usage: bench_kv [--steps N] [--sequences N] [--blocks N] [--repeats N] [--quick] [--json PATH]\n"
    "  --steps N      timed decode steps per run (default 2000)\n"
    "  --sequences N  running sequences in the decode workload (default 1024)\n"
    "  --blocks N     device blocks (default 100000; host blocks are a fifth)\n"
    "  --repeats N    interleaved runs of every suite (default 3)\n"
    "  --quick        small sizes for a smoke run (under a second)\n"
    "  --json PATH    also write the figures as JSON to PATH\n";

int32_t parse_count(std::string_view flag, std::string_view text, int32_t min_value) {
  int32_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc{} || end != text.data() + text.size() || value < min_value) {
    throw std::invalid_argument(std::string(flag) + " needs an integer >= " + std::to_string(min_value) +
                                ", got '" + std::string(text) + "'");
  }
  return value;
}

void apply_quick(BenchConfig& config) {
  config.quick = true;
  config.steps = 100;
  config.warmup_steps = 10;
  config.sequences = 64;
  config.device_blocks = 8'192;
  config.host_blocks = 2'048;
  config.repeats = 1;
  config.micro_batches = 5;
  config.append_cycles = 1;
}

// --quick sets small sizes first; explicit sizes then override it, in any order.
BenchConfig parse_args(int argc, char** argv) {
  const std::vector<std::string_view> args(argv + 1, argv + argc);
  BenchConfig config;
  if (std::find(args.begin(), args.end(), "--quick") != args.end()) apply_quick(config);
  std::optional<int32_t> host_blocks;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string_view flag = args[i];
    if (flag == "--quick") continue;
    if (flag == "--help" || flag == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    }
    if (i + 1 >= args.size()) throw std::invalid_argument("unknown flag or missing value: " + std::string(flag));
    const std::string_view value = args[++i];
    if (flag == "--steps") {
      config.steps = parse_count(flag, value, 1);
    } else if (flag == "--sequences") {
      config.sequences = parse_count(flag, value, 1);
    } else if (flag == "--blocks") {
      config.device_blocks = parse_count(flag, value, 4'096);
      host_blocks = config.device_blocks / 5;
    } else if (flag == "--repeats") {
      config.repeats = parse_count(flag, value, 1);
    } else if (flag == "--json") {
      config.json_path = std::string(value);
    } else {
      throw std::invalid_argument("unknown flag: " + std::string(flag));
    }
  }
  if (host_blocks) config.host_blocks = *host_blocks;
  config.warmup_steps = std::min(config.warmup_steps, std::max(1, config.steps / 10));
  return config;
}

int bench_main(int argc, char** argv) {
  try {
    const BenchConfig config = parse_args(argc, argv);
    const auto start = Clock::now();
    print_header(config);
    const MicroResults micro = run_micro(config);
    print_micro(config, micro);
    const DecodeResults decode = run_decode_variants(config);
    print_decode(config, decode);
    if (!config.json_path.empty()) {
      write_json(config, micro, decode);
      std::printf("\nJSON written to %s\n", config.json_path.c_str());
    }
    std::printf("\ntotal wall time %.2f s (sink %llu)\n", elapsed_ns(start, Clock::now()) / 1e9,
                static_cast<unsigned long long>(g_sink));
    return 0;
  } catch (const std::invalid_argument& error) {
    std::fprintf(stderr, "bench_kv: %s\n%s", error.what(), kUsage);
    return 2;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "bench_kv: %s\n", error.what());
    return 1;
  }
}

}  // namespace
}  // namespace pagedllm::kv_bench

int main(int argc, char** argv) { return pagedllm::kv_bench::bench_main(argc, argv); }
