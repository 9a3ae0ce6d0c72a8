// A measured step profile: the step times of one executor, on one machine, for one model, over
// grids of step shapes. `pagedllm profile` writes it; ProfileCostModel interpolates it. The JSON
// format is documented in docs/SIMULATOR.md ("Measured profiles").
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "core/model/model_shape.h"

namespace pagedllm::sim {

inline constexpr int32_t kStepProfileFormat = 1;

// Seconds over a rectilinear 2-D grid: seconds[i][j] at (rows[i], columns[j]). Both axes are
// strictly ascending.
struct ProfileGrid {
  std::vector<double> rows;
  std::vector<double> columns;
  std::vector<std::vector<double>> seconds;  // [rows.size()][columns.size()]
  // Cells the model cannot reach (context past its length), filled by extending their row
  // linearly along the columns from measured cells; informational.
  std::vector<std::pair<int32_t, int32_t>> filled_cells;
};

// Seconds over one ascending axis.
struct ProfileCurve {
  std::vector<double> points;
  std::vector<double> seconds;
};

// The model the profile was measured on, enough to tell it from another.
struct ProfileModel {
  std::string name;  // the path or name it was given as
  int64_t num_layers = 0;
  int64_t hidden_size = 0;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t intermediate_size = 0;
  int64_t vocab_size = 0;

  bool same_shape(const ProfileModel& other) const;
  static ProfileModel of(const model::ModelShape& shape);
};

struct StepProfile {
  int32_t format = kStepProfileFormat;
  std::string executor;  // the executor's name(): "cpu_ref" (later "cuda")
  std::string device;    // what it ran on, in words (CPU model, GPU name)
  ProfileModel model;
  int32_t num_threads = 0;      // cpu_ref's OpenMP threads (0 = all cores)
  int32_t tensor_parallel = 1;  // GPUs one replica's steps ran on (an imported multi-GPU profile)
  int32_t block_size = 16;      // tokens per KV block
  // How repeated timings of one shape were reduced ("lower quartile", pooled over the passes).
  std::string statistic = "lower quartile";
  int32_t num_repeats = 0;  // timed steps per shape and pass
  int32_t num_passes = 0;   // passes over the grids (samples of a shape are pooled)

  // Steps of decodes only, every sequence greedy and at the same context: rows are the number
  // of decode sequences, columns the tokens each one attends to (its `end`: position + 1).
  ProfileGrid decode;
  // Steps of one prompt chunk only, which samples at its end: rows are the chunk's tokens,
  // columns the tokens already in the cache before it (a prefix-cache hit or earlier chunks).
  ProfileGrid prefill;

  // The fixed part of a step with a forward pass: what a mixed step pays once, not once per
  // table it is made of (the intercept of the decode table's first column over its rows).
  double step_overhead_seconds = 0.0;
  // One sampled row (the lm_head row and a greedy draw); a chunk that does not end its prompt
  // does not pay it.
  double sample_seconds = 0.0;
  // A sampled row's extra cost over a greedy one: random sampling (temperature > 0), and beam
  // search (candidates with logprobs).
  double random_sample_extra_seconds = 0.0;
  double beam_sample_extra_seconds = 0.0;
  // Block operations, per block.
  double swap_out_block_seconds = 0.0;
  double swap_in_block_seconds = 0.0;
  double copy_block_seconds = 0.0;
  // The mean step over an undisturbed one while profiling: every timed step of the tables over
  // its shape's lower quartile, pooled (time-weighted). 1.03 to 1.1 on a quiet machine, where it
  // is the spread of step times; more while other work deschedules the engine or shares its
  // caches. The tables hold lower quartiles; a replay's clock sums every step, stalls included.
  double load_factor = 1.0;
  // Wall time of an engine step outside the executor (scheduling, applying results, outputs)
  // over the number of scheduled sequences: what a wall-clock replay adds to every step.
  ProfileCurve engine_overhead;
};

// A profile file that cannot be read or is inconsistent: the message names the file and field.
class StepProfileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Throws StepProfileError naming `source` (a file name, or "profile") and the field at fault:
// a grid that is empty, not ascending, ragged, or with a negative or non-finite time.
void validate(const StepProfile& profile, const std::string& source = "profile");

std::string to_json_text(const StepProfile& profile);  // pretty-printed JSON
StepProfile step_profile_from_json_text(const std::string& text, const std::string& source);

void write_step_profile(const StepProfile& profile, const std::string& path);
StepProfile read_step_profile(const std::string& path);

}  // namespace pagedllm::sim
