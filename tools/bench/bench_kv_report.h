// bench_kv's text report (and the machine description and per-operation figures the JSON shares).
#pragma once

#include <cstddef>
#include <string>

#include "tools/bench/bench_kv_config.h"
#include "tools/bench/bench_kv_decode.h"
#include "tools/bench/bench_kv_micro.h"

namespace pagedllm::kv_bench {

// The compiler, the build and whether it is optimized, for the header and the JSON.
const char* compiler_name();
bool ndebug();
const char* build_type();
bool optimized();

// A figure as printf's `format` writes it, or "-" when there is none (NaN).
std::string format_value(double value, const char* format);
std::string format_ratio(double value);

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
