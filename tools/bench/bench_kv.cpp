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
// The parts: bench_kv_config.h (sizes), bench_timing.h, bench_cli.h and bench_output.h (shared by the benchmarks),
// bench_kv_tokens.h (inputs), kv_paged.h and kv_baseline.h (the two managers), bench_kv_micro
// (per-operation suite), bench_kv_decode (decode-step workload), bench_kv_report and bench_kv_json
// (output). This file holds the command line and main().

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>

#include "tools/bench/bench_cli.h"
#include "tools/bench/bench_kv_config.h"
#include "tools/bench/bench_kv_decode.h"
#include "tools/bench/bench_kv_json.h"
#include "tools/bench/bench_kv_micro.h"
#include "tools/bench/bench_kv_report.h"

namespace pagedllm::kv_bench {
namespace {

// --- command line ------------------------------------------------------------------------------

BenchCommandLine command_line(BenchConfig& config, std::optional<int32_t>& host_blocks) {
  BenchCommandLine cli("bench_kv");
  const auto count = [](int32_t& field, const char* flag, int64_t minimum) {
    return
        [&field, flag, minimum](std::string_view v) { field = static_cast<int32_t>(parse_integer(flag, v, minimum)); };
  };
  cli.add({"--steps", "N", "timed decode steps per run (default 2000)", count(config.steps, "--steps", 1)});
  cli.add({"--sequences", "N", "running sequences in the decode workload (default 1024)",
           count(config.sequences, "--sequences", 1)});
  cli.add({"--blocks", "N", "device blocks (default 100000; host blocks are a fifth)", [&](std::string_view v) {
             config.device_blocks = static_cast<int32_t>(parse_integer("--blocks", v, 4'096));
             host_blocks = config.device_blocks / 5;
           }});
  cli.add({"--repeats", "N", "interleaved runs of every suite (default 3)", count(config.repeats, "--repeats", 1)});
  cli.add_quick("small sizes for a smoke run (under a second)", [&] {
    config.quick = true;
    config.steps = 100;
    config.warmup_steps = 10;
    config.sequences = 64;
    config.device_blocks = 8'192;
    config.host_blocks = 2'048;
    config.repeats = 1;
    config.micro_batches = 5;
    config.append_cycles = 1;
  });
  cli.add({"--json", "PATH", "also write the figures as JSON to PATH",
           [&](std::string_view v) { config.json_path = std::string(v); }});
  return cli;
}

int bench_main(int argc, char** argv) {
  BenchConfig config;
  std::optional<int32_t> host_blocks;  // --blocks sets it after --quick's pool
  return run_benchmark(command_line(config, host_blocks), argc, argv, [&] {
    if (host_blocks) config.host_blocks = *host_blocks;
    config.warmup_steps = std::min(config.warmup_steps, std::max(1, config.steps / 10));
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
  });
}

}  // namespace
}  // namespace pagedllm::kv_bench

int main(int argc, char** argv) { return pagedllm::kv_bench::bench_main(argc, argv); }
