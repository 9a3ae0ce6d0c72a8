// Measuring a StepProfile: real steps of an executor, driven through the real engine, with
// requests chosen so that the scheduler produces exactly the step shape wanted (each step's shape
// is checked): the decode and prefill tables (sim/profile_grids.h), then the sampled row, the
// sampling extras, the block operations and the step overhead (sim/profile_scalars.h). Every
// shape is timed num_repeats times in each of num_passes passes; a cell keeps the lower quartile
// of its timed steps (load elsewhere on the machine only adds time), and how much the load added
// overall is kept as the profile's load_factor. Only the executor's reported step time is used
// (what a virtual-time replay advances by); the engine's own wall time around each decode step is
// recorded as engine_overhead.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/common/types.h"
#include "core/engine/executor.h"
#include "core/kv/kv_cache_config.h"
#include "sim/step_profile.h"

namespace pagedllm::sim {

struct ProfileGridSpec {
  std::vector<int32_t> decode_num_sequences;    // ascending
  std::vector<int32_t> decode_context_lengths;  // ascending; each <= max_model_len - (num_repeats + 1) / 2
  std::vector<int32_t> prefill_chunk_tokens;    // ascending
  std::vector<int32_t> prefill_context_before;  // ascending multiples of the block size, from 0
  // The mixed steps that calibrate the step overhead: decodes x chunk tokens (at context 0).
  std::vector<int32_t> mixed_num_decodes;
  std::vector<int32_t> mixed_chunk_tokens;
  int32_t mixed_context = 256;
  // Decode cells with more KV than this (sequences x context, tokens) are not measured.
  int64_t max_decode_kv_tokens = int64_t{1} << 17;
  int32_t extras_num_sequences = 16;  // decodes per step when timing the sampling extras
  int32_t num_blocks_per_operation = 32;
};

// The default grid for a model of `max_model_len` positions and up to `max_num_seqs` sequences
// a step: a few minutes on two cores for the tiny model. `quick`: a few seconds, for tests.
ProfileGridSpec default_profile_grid(int32_t max_model_len, int32_t max_num_seqs, int32_t num_repeats);
ProfileGridSpec quick_profile_grid(int32_t max_model_len);

struct StepProfilerConfig {
  ProfileGridSpec grid;
  int32_t block_size = 16;
  int32_t max_model_len = 2048;  // positions the model accepts: prefill cells past it are filled
  int32_t num_warmup_steps = 2;
  int32_t num_repeats = 7;  // timed steps per shape and pass
  int32_t num_passes = 3;   // passes over the decode and prefill grids
  // Synthetic prompt tokens are drawn from [token_begin, token_end) (ordinary tokens).
  TokenId token_begin = 0;
  TokenId token_end = 0;
  // The most device blocks one executor can hold (0: no limit). The CUDA profile sets it from
  // the device's memory: decode cells whose KV would not fit are extrapolated (fit_to_device),
  // and every session's cache is capped to it.
  int64_t max_device_blocks = 0;
  // The most tokens one step of make_executor's executors takes (0: no limit). The CUDA
  // executor's step inputs are sized once (a 7B profile on an H200 was refused a 16,384-token
  // prefill of the mixed steps' 64 prompts): every session's token budget is capped to it, so
  // set-up prefills take several steps; the timed shapes must fit it whole (validate says which).
  int32_t max_num_batched_tokens = 0;
  // A fresh executor whose KV store has the given tiers (the profiler sizes them per shape).
  std::function<std::unique_ptr<engine::Executor>(const kv::KvCacheConfig&)> make_executor;
  std::function<void(const std::string&)> on_progress;  // one line per phase
};

// Throws std::invalid_argument naming the field of a grid the profiler cannot measure.
void validate(const StepProfilerConfig& config);

// `config` with grid.max_decode_kv_tokens lowered, where max_device_blocks is set, until every
// measured decode cell fits the device (its prompts and its wave's blocks at once); the cells past
// it are extrapolated from the measured rows. Unchanged when nothing binds.
StepProfilerConfig fit_to_device(const StepProfilerConfig& config);

// Every table and constant of the profile; the descriptive fields (executor, device, model,
// threads) are the caller's to fill. Throws std::runtime_error when the engine does not produce
// the step shape asked for (which would be a scheduler change the profiler must follow).
StepProfile measure_step_profile(const StepProfilerConfig& config);

}  // namespace pagedllm::sim
