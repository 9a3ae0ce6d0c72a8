// bench_kv's text report (and the per-operation figures the JSON shares).
#pragma once

#include <cstddef>
#include <string>

#include "tools/bench/bench_kv_config.h"
#include "tools/bench/bench_kv_decode.h"
#include "tools/bench/bench_kv_micro.h"

namespace pagedllm::kv_bench {

// The figures of one operation, from both managers' samples.
struct OpFigures {
  double paged_ns = kNone;
  double baseline_ns = kNone;
  double target_ns = kNone;
  size_t samples = 0;
};

OpFigures op_figures(const OpSpec& op, const MicroResults& micro);

// The text report: the run's header, then the two suites' tables.
void print_header(const BenchConfig& config);
void print_micro(const BenchConfig& config, const MicroResults& micro);
void print_decode(const BenchConfig& config, const DecodeResults& decode);

}  // namespace pagedllm::kv_bench
