// bench_kv's JSON output, written by hand.
#pragma once

#include "tools/bench/bench_kv_config.h"
#include "tools/bench/bench_kv_decode.h"
#include "tools/bench/bench_kv_micro.h"

namespace pagedllm::kv_bench {

// Writes every figure as JSON to config.json_path. Throws std::runtime_error when it cannot.
void write_json(const BenchConfig& config, const MicroResults& micro, const DecodeResults& decode);

}  // namespace pagedllm::kv_bench
