// The profile's two tables, measured through the engine (sim/profile_session.h):
//   decode (b, c)    b requests whose prompts are already in the prefix cache are added at once:
//                    they compute their last partial block in one step and then decode in
//                    lockstep; after warm-up steps, the timed steps have b decodes that all end
//                    at c on average (each step checked). Every sequence has its own KV, as in
//                    a real workload (shared KV would stay in cache and time too fast);
//   prefill (n, c0)  a base prompt is cached; then, one at a time, requests of its first c0
//                    tokens plus n fresh ones compute exactly the chunk [c0, c0 + n) (checked).
// Each runs num_passes passes over its grid, contexts ascending, then descending, and so on (a
// burst of load elsewhere on the machine hits different cells in each pass); a cell pools its
// timed steps over the passes.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/profile_session.h"
#include "sim/step_profile.h"
#include "sim/step_profiler.h"

namespace pagedllm::sim::profiling {

using CellSamples = std::vector<std::vector<double>>;       // [pass] -> timed steps of one shape
using GridSamples = std::vector<std::vector<CellSamples>>;  // [row][column]

// Whether the decode cell (b, c) is measured: its KV (b x c tokens) within max_decode_kv_tokens.
bool decode_cell_measured(const StepProfilerConfig& config, int32_t b, int32_t c);

// Device blocks the decode grid asks for so that nothing cached is ever evicted (each prompt at
// its longest, every wave's blocks), before any max_device_blocks cap.
int64_t decode_grid_blocks(const StepProfilerConfig& config);
// Device blocks one decode cell needs at once when the cap binds: its b prompts, cached, and the
// wave's own blocks (the profiler re-reads the prompts just before each wave, so that older waves'
// blocks are the ones evicted).
int64_t decode_cell_blocks(const StepProfilerConfig& config, int32_t b, int32_t c);

struct DecodeSamples {
  GridSamples seconds;
  std::vector<std::vector<double>> engine_seconds;  // [row] -> the engine's own time per timed step
};
DecodeSamples measure_decode_grid(const StepProfilerConfig& config, const PromptMaker& prompts);

// No samples where c0 + n (and its one output token) passes the model's length.
GridSamples measure_prefill_grid(const StepProfilerConfig& config, const PromptMaker& prompts);

// Every timed step against its cell's value (lower quartile): their ratio is the profile's load
// factor, the mean a replay's clock sums over the undisturbed time the tables hold.
struct LoadTally {
  double sum_seconds = 0.0;
  double sum_table = 0.0;  // the cell's value, once per timed step
};

// Each cell's lower quartile (kQuantile) of its pooled steps; NaN for a cell without samples.
ProfileGrid grid_of(const std::vector<int32_t>& rows, const std::vector<int32_t>& columns, const GridSamples& samples,
                    LoadTally& load);

// Decode cells past the KV cap (NaN) extend their column along the rows, from the column's two
// largest measured rows (past the caches, each more sequence costs the same). Throws when a
// column has fewer than two.
void fill_decode_grid(ProfileGrid& grid);

// Prefill cells past the model's length (NaN) extend their row along the context axis: from the
// row's last two measured cells, or, with fewer, at the per-token slope of the nearest row above
// that has two (attention to the cached context costs the same per (query, key) pair at any
// chunk size).
void fill_prefill_grid(ProfileGrid& grid);

}  // namespace pagedllm::sim::profiling
