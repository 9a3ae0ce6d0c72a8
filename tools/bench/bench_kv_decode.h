// bench_kv's decode-step workload: the results of the block work of whole engine steps, per variant.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "tools/bench/bench_kv_config.h"

namespace pagedllm::kv_bench {

// Where a step's time goes, summed over the timed steps.
enum Phase : size_t { kFreePhase, kDecodePhase, kAdmitPhase, kNumPhases };
inline constexpr const char* kPhaseNames[kNumPhases] = {"free finished", "append (try_append)",
                                                        "allocate (try_allocate)"};

struct DecodeCounters {
  std::array<double, kNumPhases> phase_ns{};
  int64_t appends = 0;
  int64_t admissions = 0;
  int64_t deferred = 0;     // admissions put off to a later step for lack of blocks
  int64_t preemptions = 0;  // running sequences freed because no block was free for a slot
  int64_t cached_tokens = 0;
};

// The timed steps of one run of one variant.
struct DecodeRun {
  std::vector<double> step_ns;
  DecodeCounters counters;
  int64_t evictions = 0;  // pagedllm only, whole run
  int64_t log_bytes = 0;  // whole run, including the initial admissions and warm-up
};

struct StepSummary {
  double mean_us = kNone;
  double p50_us = kNone;
  double p99_us = kNone;
  double max_us = kNone;
  double ns_per_sequence_step = kNone;
};

// One variant of the decode workload: its runs' step times pooled, counters of the first run (the
// workload is deterministic, so every run has the same ones).
struct DecodeVariant {
  std::string name;
  std::vector<double> step_ns;
  DecodeRun first_run;
  int32_t runs = 0;
  std::array<double, kNumPhases> phase_ns{};  // all runs

  void add(DecodeRun run) {
    step_ns.insert(step_ns.end(), run.step_ns.begin(), run.step_ns.end());
    for (size_t phase = 0; phase < kNumPhases; ++phase) phase_ns[phase] += run.counters.phase_ns[phase];
    if (runs++ == 0) first_run = std::move(run);
  }

  double phase_mean_us(size_t phase) const {
    return step_ns.empty() ? kNone : phase_ns[phase] / static_cast<double>(step_ns.size()) / 1e3;
  }

  StepSummary summary(int32_t sequences) const {
    StepSummary result;
    if (step_ns.empty()) return result;
    std::vector<double> sorted = step_ns;
    std::sort(sorted.begin(), sorted.end());
    double total = 0.0;
    for (const double ns : sorted) total += ns;
    const double mean_ns = total / static_cast<double>(sorted.size());
    result.mean_us = mean_ns / 1e3;
    result.p50_us = percentile(sorted, 0.50) / 1e3;
    result.p99_us = percentile(sorted, 0.99) / 1e3;
    result.max_us = sorted.back() / 1e3;
    result.ns_per_sequence_step = mean_ns / sequences;
    return result;
  }
};

struct DecodeResults {
  DecodeVariant paged{"pagedllm", {}, {}, 0, {}};
  DecodeVariant baseline{kBaselineName, {}, {}, 0, {}};
  DecodeVariant paged_log{"pagedllm + KvEventLog (null ostream)", {}, {}, 0, {}};
};

// The three variants run side by side in chunks of kChunkSteps steps, so that a slow spell of the
// machine (the timings are taken on a shared one) falls on all of them alike.
inline constexpr int32_t kChunkSteps = 100;

// Runs the three variants side by side, config.repeats times.
DecodeResults run_decode_variants(const BenchConfig& config);

}  // namespace pagedllm::kv_bench
