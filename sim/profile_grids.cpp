#include "sim/profile_grids.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <stdexcept>

#include "core/kv/kv_cache_config.h"

namespace pagedllm::sim::profiling {
namespace {

// Steps longer than this are timed kLongStepRepeats times a pass: a scheduler tick (the usual
// disturbance, a few milliseconds) is under 1% of them.
constexpr double kLongStepSeconds = 0.05;
constexpr int32_t kLongStepRepeats = 3;

std::vector<double> as_doubles(const std::vector<int32_t>& values) { return {values.begin(), values.end()}; }

}  // namespace

bool decode_cell_measured(const StepProfilerConfig& config, int32_t b, int32_t c) {
  return static_cast<int64_t>(b) * c <= config.grid.max_decode_kv_tokens;
}

namespace {

// Decode j (1-based) after the prompt ends at prompt_len + j; the timed ones are w+1 .. w+r,
// whose ends average c.
int32_t decode_prompt_len(const StepProfilerConfig& config, int32_t c) {
  return c - config.num_warmup_steps - (config.num_repeats + 1) / 2;
}
int32_t decode_max_tokens(const StepProfilerConfig& config) { return config.num_warmup_steps + config.num_repeats + 1; }

}  // namespace

int64_t decode_grid_blocks(const StepProfilerConfig& config) {
  const std::vector<int32_t>& rows = config.grid.decode_num_sequences;
  const std::vector<int32_t>& columns = config.grid.decode_context_lengths;
  const int32_t bs = config.block_size;
  // Every prompt at its longest, cached for the whole run, and every wave's own blocks (freed
  // full blocks queue behind the cached ones, so nothing cached is evicted).
  int64_t num_blocks = 64;
  for (int32_t k = 0; k < rows.back(); ++k) {
    int32_t longest = 0;
    for (const int32_t c : columns) {
      for (const int32_t b : rows) {
        if (b > k && decode_cell_measured(config, b, c)) longest = std::max(longest, decode_prompt_len(config, c));
      }
    }
    num_blocks += blocks_for(longest, bs) + 1;
  }
  for (const int32_t c : columns) {
    for (const int32_t b : rows) {
      if (decode_cell_measured(config, b, c)) {
        num_blocks +=
            static_cast<int64_t>(config.num_passes) * b * (blocks_for(decode_max_tokens(config) + bs, bs) + 2);
      }
    }
  }
  return num_blocks;
}

int64_t decode_cell_blocks(const StepProfilerConfig& config, int32_t b, int32_t c) {
  const int32_t bs = config.block_size;
  // Admission leaves the scheduler's watermark (1% of the device blocks) free.
  const int64_t watermark = config.max_device_blocks / 100 + 1;
  return 64 + watermark +
         static_cast<int64_t>(b) *
             (blocks_for(decode_prompt_len(config, c), bs) + 1 + blocks_for(decode_max_tokens(config) + bs, bs) + 2);
}

// By waves in one engine. Prompt k is the same token sequence at every context (a longer context
// extends it), so each level only computes what the previous one lacked, and every wave finds
// its prompts in the prefix cache. Where the device cannot hold every prompt at once
// (max_device_blocks), each wave's prompts are read again just before it: the blocks evicted are
// then older waves' and other contexts' prompts, never this wave's.
DecodeSamples measure_decode_grid(const StepProfilerConfig& config, const PromptMaker& prompts) {
  const std::vector<int32_t>& rows = config.grid.decode_num_sequences;
  const std::vector<int32_t>& columns = config.grid.decode_context_lengths;
  const int32_t w = config.num_warmup_steps;
  const int32_t r = config.num_repeats;
  const auto prompt_len = [&](int32_t c) { return decode_prompt_len(config, c); };
  const int32_t max_tokens = decode_max_tokens(config);
  const int32_t b_max = rows.back();
  const int32_t bs = config.block_size;

  const int64_t wanted = std::min<int64_t>(decode_grid_blocks(config), kv::kMaxBlocksPerTier);
  const bool tight = config.max_device_blocks > 0 && wanted > config.max_device_blocks;
  const int64_t num_blocks = tight ? config.max_device_blocks : wanted;
  Session session(config,
                  engine_config(config, static_cast<int32_t>(num_blocks), b_max, std::max(2048, b_max * 2 * bs)));

  DecodeSamples samples;
  samples.seconds.assign(rows.size(), std::vector<CellSamples>(columns.size(), CellSamples(config.num_passes)));
  samples.engine_seconds.assign(rows.size(), {});
  for (int32_t pass = 0; pass < config.num_passes; ++pass) {
    for (size_t step = 0; step < columns.size(); ++step) {
      const size_t j = pass % 2 == 0 ? step : columns.size() - 1 - step;
      const int32_t c = columns[j];
      const int32_t len = prompt_len(c);
      progress(config, "decode: pass " + std::to_string(pass + 1) + "/" + std::to_string(config.num_passes) +
                           ", context " + std::to_string(c));
      if (pass == 0) {  // the prompts this context needs into the prefix cache
        int32_t b_needed = 0;
        for (const int32_t b : rows) {
          if (decode_cell_measured(config, b, c)) b_needed = b;
        }
        for (int32_t k = 0; k < b_needed; ++k) {
          session.add(prompts.tokens(static_cast<uint64_t>(k) + 1, len), params_for(Sampling::greedy, 1, 0));
        }
        session.run_until_idle();
      }
      for (size_t i = 0; i < rows.size(); ++i) {
        const int32_t b = rows[i];
        if (!decode_cell_measured(config, b, c)) continue;
        if (tight) {  // this wave's prompts become the most recently used blocks
          for (int32_t k = 0; k < b; ++k) {
            session.add(prompts.tokens(static_cast<uint64_t>(k) + 1, len), params_for(Sampling::greedy, 1, 0));
          }
          session.run_until_idle();
        }
        // The wave: each request computes at most its last block, all in one step, then all decode.
        std::vector<sched::RequestId> wave;
        for (int32_t k = 0; k < b; ++k) {
          wave.push_back(session.add(prompts.tokens(static_cast<uint64_t>(k) + 1, len),
                                     params_for(Sampling::greedy, max_tokens, 0)));
        }
        const std::string what = std::to_string(b) + " decodes in lockstep at context " + std::to_string(c);
        // Its first step: every prompt found cached, so each computes at most its last block. A
        // prompt evicted would be recomputed over several chunked steps, out of lockstep.
        const StepRecord first = session.step();
        const bool all_cached = first.shape.num_decodes == 0 && std::ssize(first.shape.chunks) == b &&
                                std::all_of(first.shape.chunks.begin(), first.shape.chunks.end(),
                                            [&](const Chunk& chunk) { return chunk.end - chunk.start <= bs; });
        if (!all_cached) {
          throw std::runtime_error("profile: " + what + ": the wave's prompts were not all in the prefix cache (" +
                                   std::to_string(first.shape.chunks.size()) + " chunks, " +
                                   std::to_string(first.shape.num_decodes) + " decodes in its first step)");
        }
        session.step_until([&](const StepRecord& record) { return record.shape.decodes_only(b); }, what);
        for (int32_t jw = 1; jw < w; ++jw) session.step();
        for (int32_t jr = 0; jr < r; ++jr) {
          const StepRecord record = session.step();
          const int32_t expected_end = len + w + 1 + jr;
          if (!record.shape.decodes_only(b) || !record.shape.lockstep() ||
              record.shape.min_decode_end != expected_end) {
            throw std::runtime_error("profile: expected " + what + " (end " + std::to_string(expected_end) + "), got " +
                                     std::to_string(record.shape.num_decodes) + " decodes and " +
                                     std::to_string(record.shape.chunks.size()) + " chunks");
          }
          samples.seconds[i][j][pass].push_back(record.seconds);
          samples.engine_seconds[i].push_back(record.engine_seconds);
        }
        for (const sched::RequestId id : wave) session.abort(id);
        session.run_until_idle();
      }
    }
  }
  return samples;
}

void fill_decode_grid(ProfileGrid& grid) {
  for (size_t j = 0; j < grid.columns.size(); ++j) {
    std::vector<size_t> measured;
    for (size_t i = 0; i < grid.rows.size(); ++i) {
      if (!std::isnan(grid.seconds[i][j])) measured.push_back(i);
    }
    if (measured.size() == grid.rows.size()) continue;
    if (measured.size() < 2) {
      throw std::runtime_error("profile: decode context " + std::to_string(grid.columns[j]) +
                               " has fewer than two measured rows (raise max_decode_kv_tokens)");
    }
    const size_t a = measured[measured.size() - 2];
    const size_t b = measured.back();
    const double slope = (grid.seconds[b][j] - grid.seconds[a][j]) / (grid.rows[b] - grid.rows[a]);
    for (size_t i = b + 1; i < grid.rows.size(); ++i) {
      grid.seconds[i][j] = grid.seconds[b][j] + slope * (grid.rows[i] - grid.rows[b]);
      grid.filled_cells.emplace_back(static_cast<int32_t>(i), static_cast<int32_t>(j));
    }
  }
}

// One engine: the cached bases are prefixes of one base prompt, so one prefill serves every
// column.
GridSamples measure_prefill_grid(const StepProfilerConfig& config, const PromptMaker& prompts) {
  const std::vector<int32_t>& rows = config.grid.prefill_chunk_tokens;
  const std::vector<int32_t>& columns = config.grid.prefill_context_before;
  const int32_t bs = config.block_size;
  const int32_t n_max = rows.back();
  const int32_t c0_max = columns.back();
  int64_t num_blocks = 64 + blocks_for(c0_max + bs, bs);
  for (const int32_t n : rows) {
    num_blocks += static_cast<int64_t>(config.num_passes) * static_cast<int64_t>(columns.size()) *
                  (config.num_warmup_steps + config.num_repeats) * (blocks_for(n, bs) + 2);
  }
  num_blocks = std::min<int64_t>(num_blocks, kv::kMaxBlocksPerTier);
  // Where the device holds fewer, the base is read again before each column, so that the blocks
  // evicted are older requests' fresh ones: the base, then one request at a time, must fit.
  const bool tight = config.max_device_blocks > 0 && num_blocks > config.max_device_blocks;
  if (tight) {
    const int64_t least = 64 + blocks_for(c0_max + bs, bs) + blocks_for(n_max, bs) + 2;
    if (least > config.max_device_blocks) {
      throw std::runtime_error("profile: the prefill grid needs " + std::to_string(least) +
                               " KV blocks at once (a cached context of " + std::to_string(c0_max) +
                               " and a chunk of " + std::to_string(n_max) + " tokens); the device holds " +
                               std::to_string(config.max_device_blocks) + " (raise --gpu-memory-utilization)");
    }
    num_blocks = config.max_device_blocks;
  }
  Session session(config, engine_config(config, static_cast<int32_t>(num_blocks), 4, std::max(n_max, bs)));
  const std::vector<TokenId> base = prompts.tokens(0x2000000000ULL, std::min(c0_max + bs, config.max_model_len));
  const auto read_base = [&] {
    session.add(base, params_for(Sampling::greedy, 1, 0));
    session.run_until_idle();
  };
  if (c0_max > 0) read_base();

  GridSamples samples(rows.size(), std::vector<CellSamples>(columns.size(), CellSamples(config.num_passes)));
  uint64_t key = 0x3000000000ULL;
  for (int32_t pass = 0; pass < config.num_passes; ++pass) {
    for (size_t step = 0; step < columns.size(); ++step) {
      const size_t j = pass % 2 == 0 ? step : columns.size() - 1 - step;
      const int32_t c0 = columns[j];
      progress(config, "prefill: pass " + std::to_string(pass + 1) + "/" + std::to_string(config.num_passes) +
                           ", chunks after " + std::to_string(c0) + " cached tokens");
      if (tight && c0 > 0) read_base();
      for (size_t i = 0; i < rows.size(); ++i) {
        const int32_t n = rows[i];
        if (c0 + n + 1 > config.max_model_len) continue;  // the prompt and its one output token must fit
        int32_t num_timed = config.num_repeats;
        for (int32_t rep = 0; rep < config.num_warmup_steps + num_timed; ++rep) {
          std::vector<TokenId> prompt(base.begin(), base.begin() + c0);
          const std::vector<TokenId> fresh = prompts.tokens(++key, n);
          prompt.insert(prompt.end(), fresh.begin(), fresh.end());
          session.add(std::move(prompt), params_for(Sampling::greedy, 1, 0));
          const StepRecord record = session.step();
          const StepShape& shape = record.shape;
          if (!record.executed || shape.num_decodes != 0 || shape.chunks.size() != 1 || shape.chunks[0].start != c0 ||
              shape.chunks[0].end != c0 + n || !shape.chunks[0].sample) {
            throw std::runtime_error("profile: expected one chunk [" + std::to_string(c0) + ", " +
                                     std::to_string(c0 + n) + ") after a prefix-cache hit of " + std::to_string(c0) +
                                     " tokens");
          }
          if (rep >= config.num_warmup_steps) samples[i][j][pass].push_back(record.seconds);
          if (rep + 1 == config.num_warmup_steps && record.seconds > kLongStepSeconds) {
            num_timed = std::min(num_timed, kLongStepRepeats);
          }
          session.run_until_idle();
        }
      }
    }
  }
  return samples;
}

void fill_prefill_grid(ProfileGrid& grid) {
  const auto measured = [&](size_t i) {
    std::vector<size_t> cells;
    for (size_t j = 0; j < grid.columns.size(); ++j) {
      if (!std::isnan(grid.seconds[i][j])) cells.push_back(j);
    }
    return cells;
  };
  const auto slope_of = [&](size_t i) -> std::optional<double> {
    const std::vector<size_t> cells = measured(i);
    if (cells.size() < 2) return std::nullopt;
    const size_t a = cells[cells.size() - 2];
    const size_t b = cells.back();
    return (grid.seconds[i][b] - grid.seconds[i][a]) / (grid.columns[b] - grid.columns[a]);
  };
  for (size_t i = 0; i < grid.rows.size(); ++i) {
    const std::vector<size_t> cells = measured(i);
    if (cells.size() == grid.columns.size()) continue;
    if (cells.empty()) {
      throw std::runtime_error("profile: prefill row " + std::to_string(grid.rows[i]) + " has no measured cell");
    }
    double slope = 0.0;
    if (const std::optional<double> own = slope_of(i)) {
      slope = *own;
    } else {
      for (size_t k = i; k-- > 0;) {
        if (const std::optional<double> other = slope_of(k)) {
          slope = *other * grid.rows[i] / grid.rows[k];
          break;
        }
      }
    }
    const size_t last = cells.back();
    for (size_t j = last + 1; j < grid.columns.size(); ++j) {
      grid.seconds[i][j] = grid.seconds[i][last] + slope * (grid.columns[j] - grid.columns[last]);
      grid.filled_cells.emplace_back(static_cast<int32_t>(i), static_cast<int32_t>(j));
    }
  }
}

ProfileGrid grid_of(const std::vector<int32_t>& rows, const std::vector<int32_t>& columns, const GridSamples& samples,
                    LoadTally& load) {
  ProfileGrid grid;
  grid.rows = as_doubles(rows);
  grid.columns = as_doubles(columns);
  for (const std::vector<CellSamples>& row : samples) {
    std::vector<double>& out = grid.seconds.emplace_back();
    for (const CellSamples& cell : row) {
      std::vector<double> pooled;
      for (const std::vector<double>& pass : cell) pooled.insert(pooled.end(), pass.begin(), pass.end());
      if (pooled.empty()) {
        out.push_back(std::numeric_limits<double>::quiet_NaN());
        continue;
      }
      out.push_back(quantile(pooled, kQuantile));
      for (const double seconds : pooled) load.sum_seconds += seconds;
      load.sum_table += out.back() * static_cast<double>(pooled.size());
    }
  }
  return grid;
}

}  // namespace pagedllm::sim::profiling
