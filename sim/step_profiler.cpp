#include "sim/step_profiler.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

#include "core/kv/kv_cache_config.h"
#include "sim/profile_grids.h"
#include "sim/profile_scalars.h"
#include "sim/profile_session.h"

namespace pagedllm::sim {
namespace {

using profiling::BlockOperationSeconds;
using profiling::decode_cell_measured;
using profiling::DecodeSamples;
using profiling::LoadTally;
using profiling::progress;
using profiling::SamplingExtras;

void require(bool ok, const std::string& field, const std::string& rule) {
  if (!ok) throw std::invalid_argument("profile grid: " + field + " " + rule);
}

void require_ascending(const std::vector<int32_t>& values, const std::string& field, int32_t min_value) {
  require(!values.empty(), field, "must not be empty");
  for (size_t i = 0; i < values.size(); ++i) {
    require(values[i] >= min_value, field, "values must be at least " + std::to_string(min_value));
    require(i == 0 || values[i] > values[i - 1], field, "must be strictly ascending");
  }
}

}  // namespace

ProfileGridSpec default_profile_grid(int32_t max_model_len, int32_t max_num_seqs, int32_t num_repeats) {
  ProfileGridSpec grid;
  for (int32_t b : {1, 2, 4, 8, 16, 32, 64, 128, 192, 256, 384, 512}) {
    if (b <= max_num_seqs) grid.decode_num_sequences.push_back(b);
  }
  if (grid.decode_num_sequences.back() != max_num_seqs) grid.decode_num_sequences.push_back(max_num_seqs);
  const int32_t last_context = max_model_len - (num_repeats + 1) / 2;
  for (int32_t c : {32, 128, 256, 512, 1024, 1536}) {
    if (c < last_context) grid.decode_context_lengths.push_back(c);
  }
  grid.decode_context_lengths.push_back(last_context);
  for (int32_t n : {1, 16, 32, 64, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048}) {
    if (n < max_model_len) grid.prefill_chunk_tokens.push_back(n);
  }
  for (int32_t c0 : {0, 256, 512, 1024, 1536}) {
    if (c0 < max_model_len) grid.prefill_context_before.push_back(c0);
  }
  grid.mixed_num_decodes = {8, 32, 64};
  grid.mixed_chunk_tokens = {16, 64};
  grid.mixed_context = std::min(256, max_model_len / 4);
  return grid;
}

ProfileGridSpec quick_profile_grid(int32_t max_model_len) {
  ProfileGridSpec grid;
  grid.decode_num_sequences = {1, 4};
  grid.decode_context_lengths = {32, 64};
  grid.prefill_chunk_tokens = {1, 32, 64};
  grid.prefill_context_before = {0, 32};
  grid.mixed_num_decodes = {4};
  grid.mixed_chunk_tokens = {32};
  grid.mixed_context = std::min(32, max_model_len / 4);
  grid.extras_num_sequences = 4;
  grid.num_blocks_per_operation = 4;
  return grid;
}

void validate(const StepProfilerConfig& config) {
  const ProfileGridSpec& grid = config.grid;
  require(config.block_size >= 1, "block_size", "must be at least 1");
  require(config.num_repeats >= 1, "num_repeats", "must be at least 1");
  require(config.num_warmup_steps >= 1, "num_warmup_steps", "must be at least 1");
  require(config.num_passes >= 1, "num_passes", "must be at least 1");
  require(config.token_end > config.token_begin, "token range", "must not be empty");
  require(static_cast<bool>(config.make_executor), "make_executor", "is required");
  require_ascending(grid.decode_num_sequences, "decode_num_sequences", 1);
  const int32_t min_context = config.num_warmup_steps + (config.num_repeats + 1) / 2 + 1;
  require_ascending(grid.decode_context_lengths, "decode_context_lengths", min_context);
  require(grid.decode_context_lengths.back() + (config.num_repeats + 1) / 2 <= config.max_model_len,
          "decode_context_lengths",
          "must leave (num_repeats + 1) / 2 positions of max_model_len for the timed decodes");
  const std::string device_note = config.max_device_blocks > 0
                                      ? " (the device holds " + std::to_string(config.max_device_blocks) +
                                            " KV blocks: raise --gpu-memory-utilization or lower --max-num-seqs)"
                                      : "";
  require(decode_cell_measured(config, grid.decode_num_sequences.back(), grid.decode_context_lengths.front()),
          "max_decode_kv_tokens", "must cover the most decode sequences at the shortest context" + device_note);
  require(grid.decode_num_sequences.size() >= 2 &&
              decode_cell_measured(config, grid.decode_num_sequences[1], grid.decode_context_lengths.back()),
          "max_decode_kv_tokens", "must cover two rows of decode sequences at the longest context" + device_note);
  require_ascending(grid.prefill_chunk_tokens, "prefill_chunk_tokens", 1);
  require_ascending(grid.prefill_context_before, "prefill_context_before", 0);
  require(grid.prefill_context_before.front() == 0, "prefill_context_before", "must start at 0");
  for (const int32_t c0 : grid.prefill_context_before) {
    require(c0 % config.block_size == 0, "prefill_context_before", "values must be multiples of the block size");
    require(c0 + 1 < config.max_model_len, "prefill_context_before", "values must leave room in max_model_len");
  }
  require(grid.prefill_chunk_tokens.back() + 1 <= config.max_model_len, "prefill_chunk_tokens",
          "values must fit max_model_len with their one output token");
  require(!grid.mixed_num_decodes.empty() && !grid.mixed_chunk_tokens.empty(), "mixed_num_decodes / mixed_chunk_tokens",
          "must not be empty");
  require(grid.mixed_context >= 1 &&
              grid.mixed_context + config.num_warmup_steps + 2 * config.num_repeats + 2 <= config.max_model_len,
          "mixed_context", "must leave room for the mixed steps in max_model_len");
  require(grid.extras_num_sequences >= 2 && grid.extras_num_sequences % 2 == 0, "extras_num_sequences",
          "must be even and at least 2 (beams come in pairs)");
  require(grid.num_blocks_per_operation >= 1, "num_blocks_per_operation", "must be at least 1");
  if (config.max_num_batched_tokens > 0) {  // the timed steps run whole, in one executor step each
    const std::string limit = " (the executor takes " + std::to_string(config.max_num_batched_tokens) + " a step)";
    require(grid.prefill_chunk_tokens.back() <= config.max_num_batched_tokens, "prefill_chunk_tokens",
            "values must fit one step" + limit);
    require(*std::max_element(grid.mixed_num_decodes.begin(), grid.mixed_num_decodes.end()) +
                    *std::max_element(grid.mixed_chunk_tokens.begin(), grid.mixed_chunk_tokens.end()) <=
                config.max_num_batched_tokens,
            "mixed_num_decodes / mixed_chunk_tokens", "must fit one step together" + limit);
    require(grid.decode_num_sequences.back() <= config.max_num_batched_tokens, "decode_num_sequences",
            "must fit one step" + limit);
  }
}

StepProfilerConfig fit_to_device(const StepProfilerConfig& config) {
  StepProfilerConfig fitted = config;
  if (config.max_device_blocks <= 0 ||
      std::min<int64_t>(profiling::decode_grid_blocks(config), kv::kMaxBlocksPerTier) <= config.max_device_blocks) {
    return fitted;
  }
  // The cells in order of KV tokens: the cap is just under the first one the device cannot hold
  // (a cell's need grows with both its sequences and its context).
  std::vector<std::pair<int64_t, int64_t>> cells;  // (b x c, blocks it needs)
  for (const int32_t b : config.grid.decode_num_sequences) {
    for (const int32_t c : config.grid.decode_context_lengths) {
      cells.emplace_back(static_cast<int64_t>(b) * c, profiling::decode_cell_blocks(config, b, c));
    }
  }
  std::sort(cells.begin(), cells.end());
  for (const auto& [kv_tokens, blocks] : cells) {
    if (blocks > config.max_device_blocks) {
      fitted.grid.max_decode_kv_tokens = std::min(fitted.grid.max_decode_kv_tokens, kv_tokens - 1);
      break;
    }
  }
  return fitted;
}

StepProfile measure_step_profile(const StepProfilerConfig& requested) {
  validate(requested);
  const StepProfilerConfig config = fit_to_device(requested);
  if (config.grid.max_decode_kv_tokens != requested.grid.max_decode_kv_tokens) {
    progress(config, "decode: the device holds " + std::to_string(config.max_device_blocks) +
                         " KV blocks: cells past " + std::to_string(config.grid.max_decode_kv_tokens) +
                         " KV tokens are extrapolated");
  }
  validate(config);
  const ProfileGridSpec& grid = config.grid;
  const profiling::PromptMaker prompts(config.token_begin, config.token_end);
  StepProfile profile;
  profile.block_size = config.block_size;
  profile.num_repeats = config.num_repeats;
  profile.num_passes = config.num_passes;
  profile.statistic = "lower quartile";

  LoadTally load;
  profile.prefill = profiling::grid_of(grid.prefill_chunk_tokens, grid.prefill_context_before,
                                       profiling::measure_prefill_grid(config, prompts), load);
  profiling::fill_prefill_grid(profile.prefill);

  DecodeSamples decode = profiling::measure_decode_grid(config, prompts);
  profile.decode = profiling::grid_of(grid.decode_num_sequences, grid.decode_context_lengths, decode.seconds, load);
  profile.load_factor = load.sum_table > 0.0 ? load.sum_seconds / load.sum_table : 1.0;
  profiling::fill_decode_grid(profile.decode);
  profile.engine_overhead.points = profile.decode.rows;
  for (std::vector<double>& seconds : decode.engine_seconds) {
    profile.engine_overhead.seconds.push_back(profiling::median(std::move(seconds)));
  }

  progress(config, "sampling: a sampled row, random sampling and beam search");
  profile.sample_seconds = profiling::measure_sample_seconds(config, prompts);
  const SamplingExtras extras = profiling::measure_sampling_extras(config, prompts);
  profile.random_sample_extra_seconds = extras.random;
  profile.beam_sample_extra_seconds = extras.beam;

  progress(config, "block operations: swap out, swap in, copy");
  const BlockOperationSeconds blocks = profiling::measure_block_operations(config);
  profile.swap_out_block_seconds = blocks.swap_out;
  profile.swap_in_block_seconds = blocks.swap_in;
  profile.copy_block_seconds = blocks.copy;

  progress(config, "mixed steps: the step overhead");
  const double smallest_step = std::min(profile.decode.seconds[0][0], profile.prefill.seconds[0][0]);
  profile.step_overhead_seconds =
      std::clamp(profiling::measure_step_overhead(config, prompts, profile.prefill), 0.0, smallest_step);
  return profile;
}

}  // namespace pagedllm::sim
