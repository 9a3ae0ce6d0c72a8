// The engine options every engine-running subcommand shares (replay, simulate, check, serve),
// under vLLM's names: block size, KV sizing overrides, scheduler budgets and policies.
#pragma once

#include <boost/program_options.hpp>
#include <cstdint>
#include <string>

#include "core/engine/engine_config.h"

namespace pagedllm::cli {

struct EngineOptions {
  int32_t block_size = 16;
  int32_t num_gpu_blocks_override = 0;  // 0: sized from memory by the executor
  int32_t max_model_len = 0;            // 0: the model's context length
  int32_t max_num_seqs = 256;
  int32_t max_num_batched_tokens = 2048;
  // Both on by default. vLLM's spellings turn them on or off (--enable-prefix-caching,
  // --no-enable-prefix-caching, likewise chunked prefill); --no-prefix-caching and
  // --no-chunked-prefill are kept as aliases of the "off" ones. Asking for both is an error.
  // (One field per spelling: program_options stores every switch's default, so two spellings
  // cannot share a field.)
  bool enable_chunked_prefill = false;
  bool disable_chunked_prefill = false;
  bool disable_chunked_prefill_alias = false;
  bool enable_prefix_caching = false;
  bool disable_prefix_caching = false;
  bool disable_prefix_caching_alias = false;
  std::string preemption_mode = "auto";    // auto | swap | recompute
  std::string scheduling_policy = "fcfs";  // fcfs | priority
  double watermark = 0.01;
  std::string speculative_config;  // JSON, as vLLM's --speculative-config; empty = off
};

void add_engine_options(boost::program_options::options_description& description, EngineOptions& options);

// The engine config without KV block counts (the executor sizes those): throws
// boost::program_options::error naming an option with a bad value.
engine::EngineConfig engine_config_from(const EngineOptions& options, int32_t model_max_len);

}  // namespace pagedllm::cli
