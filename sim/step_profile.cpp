#include "sim/step_profile.h"

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace pagedllm::sim {
namespace {

using nlohmann::json;

// The JSON names of a grid's axes.
struct GridNames {
  const char* field;
  const char* rows;
  const char* columns;
};
constexpr GridNames kDecodeNames{"decode", "num_sequences", "context_lengths"};
constexpr GridNames kPrefillNames{"prefill", "chunk_tokens", "context_before"};

[[noreturn]] void fail(const std::string& source, const std::string& field, const std::string& message) {
  throw StepProfileError(source + ": " + field + ": " + message);
}

std::string number_text(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

void check_seconds(double value, const std::string& source, const std::string& field) {
  if (!std::isfinite(value) || value < 0.0) {
    fail(source, field, "must be a finite, non-negative time in seconds, got " + number_text(value));
  }
}

void check_axis(const std::vector<double>& axis, const std::string& source, const std::string& field) {
  if (axis.empty()) fail(source, field, "must not be empty");
  for (size_t i = 0; i < axis.size(); ++i) {
    if (!std::isfinite(axis[i]) || axis[i] < 0.0) {
      fail(source, field + "[" + std::to_string(i) + "]", "must be finite and non-negative");
    }
    if (i > 0 && axis[i] <= axis[i - 1]) {
      fail(source, field + "[" + std::to_string(i) + "]", "must be larger than the point before it (ascending)");
    }
  }
}

void check_grid(const ProfileGrid& grid, const GridNames& names, const std::string& source) {
  const std::string field = names.field;
  check_axis(grid.rows, source, field + "." + names.rows);
  check_axis(grid.columns, source, field + "." + names.columns);
  if (grid.seconds.size() != grid.rows.size()) {
    fail(source, field + ".seconds",
         "has " + std::to_string(grid.seconds.size()) + " rows, expected " + std::to_string(grid.rows.size()) +
             " (one per " + names.rows + ")");
  }
  for (size_t i = 0; i < grid.seconds.size(); ++i) {
    const std::string row = field + ".seconds[" + std::to_string(i) + "]";
    if (grid.seconds[i].size() != grid.columns.size()) {
      fail(source, row,
           "has " + std::to_string(grid.seconds[i].size()) + " values, expected " +
               std::to_string(grid.columns.size()) + " (one per " + names.columns + ")");
    }
    for (size_t j = 0; j < grid.seconds[i].size(); ++j) {
      check_seconds(grid.seconds[i][j], source, row + "[" + std::to_string(j) + "]");
    }
  }
  for (const auto& [i, j] : grid.filled_cells) {
    if (i < 0 || j < 0 || static_cast<size_t>(i) >= grid.rows.size() || static_cast<size_t>(j) >= grid.columns.size()) {
      fail(source, field + ".filled_cells",
           "cell [" + std::to_string(i) + ", " + std::to_string(j) + "] is outside the grid");
    }
  }
}

// Reading: every accessor names the field it reads.
class Reader {
 public:
  explicit Reader(std::string source) : source_(std::move(source)) {}

  const json& member(const json& object, const std::string& path, const char* key) const {
    if (!object.is_object()) fail(source_, path, "must be an object");
    const auto found = object.find(key);
    if (found == object.end()) fail(source_, join(path, key), "is missing");
    return *found;
  }
  double number(const json& object, const std::string& path, const char* key) const {
    const json& value = member(object, path, key);
    if (!value.is_number()) fail(source_, join(path, key), "must be a number");
    return value.get<double>();
  }
  int64_t integer(const json& object, const std::string& path, const char* key) const {
    const json& value = member(object, path, key);
    if (!value.is_number_integer()) fail(source_, join(path, key), "must be an integer");
    return value.get<int64_t>();
  }
  int32_t int32(const json& object, const std::string& path, const char* key) const {
    const int64_t value = integer(object, path, key);
    if (value < 0 || value > INT32_MAX) fail(source_, join(path, key), "must be in [0, 2^31)");
    return static_cast<int32_t>(value);
  }
  std::string string(const json& object, const std::string& path, const char* key) const {
    const json& value = member(object, path, key);
    if (!value.is_string()) fail(source_, join(path, key), "must be a string");
    return value.get<std::string>();
  }
  std::vector<double> numbers(const json& value, const std::string& path) const {
    if (!value.is_array()) fail(source_, path, "must be an array of numbers");
    std::vector<double> out;
    for (size_t i = 0; i < value.size(); ++i) {
      if (!value[i].is_number()) fail(source_, path + "[" + std::to_string(i) + "]", "must be a number");
      out.push_back(value[i].get<double>());
    }
    return out;
  }
  std::vector<double> numbers(const json& object, const std::string& path, const char* key) const {
    return numbers(member(object, path, key), join(path, key));
  }

  ProfileGrid grid(const json& root, const GridNames& names) const {
    const json& object = member(root, "", names.field);
    const std::string path = names.field;
    ProfileGrid grid;
    grid.rows = numbers(object, path, names.rows);
    grid.columns = numbers(object, path, names.columns);
    const json& seconds = member(object, path, "seconds");
    if (!seconds.is_array()) fail(source_, path + ".seconds", "must be an array of arrays");
    for (size_t i = 0; i < seconds.size(); ++i) {
      grid.seconds.push_back(numbers(seconds[i], path + ".seconds[" + std::to_string(i) + "]"));
    }
    if (object.contains("filled_cells")) {
      const json& cells = object["filled_cells"];
      const std::string cells_path = path + ".filled_cells";
      if (!cells.is_array()) fail(source_, cells_path, "must be an array of [row, column] pairs");
      for (size_t k = 0; k < cells.size(); ++k) {
        const json& cell = cells[k];
        if (!cell.is_array() || cell.size() != 2 || !cell[0].is_number_integer() || !cell[1].is_number_integer()) {
          fail(source_, cells_path + "[" + std::to_string(k) + "]", "must be a [row, column] pair of integers");
        }
        grid.filled_cells.emplace_back(cell[0].get<int32_t>(), cell[1].get<int32_t>());
      }
    }
    return grid;
  }

 private:
  static std::string join(const std::string& path, const char* key) { return path.empty() ? key : path + "." + key; }
  std::string source_;
};

json grid_json(const ProfileGrid& grid, const GridNames& names) {
  json cells = json::array();
  for (const auto& [i, j] : grid.filled_cells) cells.push_back({i, j});
  return {{names.rows, grid.rows}, {names.columns, grid.columns}, {"seconds", grid.seconds}, {"filled_cells", cells}};
}

}  // namespace

ProfileModel ProfileModel::of(const model::ModelShape& shape) {
  return {.name = shape.name,
          .num_layers = shape.num_layers,
          .hidden_size = shape.hidden_size,
          .num_heads = shape.num_heads,
          .num_kv_heads = shape.num_kv_heads,
          .head_dim = shape.head_dim,
          .intermediate_size = shape.intermediate_size,
          .vocab_size = shape.vocab_size};
}

bool ProfileModel::same_shape(const ProfileModel& other) const {
  return num_layers == other.num_layers && hidden_size == other.hidden_size && num_heads == other.num_heads &&
         num_kv_heads == other.num_kv_heads && head_dim == other.head_dim &&
         intermediate_size == other.intermediate_size && vocab_size == other.vocab_size;
}

void validate(const StepProfile& profile, const std::string& source) {
  if (profile.format != kStepProfileFormat) {
    fail(source, "pagedllm_step_profile",
         "format " + std::to_string(profile.format) + " is not the supported " + std::to_string(kStepProfileFormat));
  }
  if (profile.executor.empty()) fail(source, "executor", "must not be empty");
  if (profile.block_size < 1) fail(source, "block_size", "must be at least 1");
  if (profile.tensor_parallel < 1) fail(source, "tensor_parallel", "must be at least 1");
  check_grid(profile.decode, kDecodeNames, source);
  check_grid(profile.prefill, kPrefillNames, source);
  if (profile.decode.rows.front() < 1.0) fail(source, "decode.num_sequences[0]", "must be at least 1");
  check_seconds(profile.step_overhead_seconds, source, "step_overhead_seconds");
  check_seconds(profile.sample_seconds, source, "sample_seconds");
  // Extras may be slightly negative when sampling costs the same and timing noise decides.
  for (const auto& [value, field] : {std::pair{profile.random_sample_extra_seconds, "random_sample_extra_seconds"},
                                     std::pair{profile.beam_sample_extra_seconds, "beam_sample_extra_seconds"}}) {
    if (!std::isfinite(value)) fail(source, field, "must be finite");
  }
  check_seconds(profile.swap_out_block_seconds, source, "swap_out_block_seconds");
  check_seconds(profile.swap_in_block_seconds, source, "swap_in_block_seconds");
  check_seconds(profile.copy_block_seconds, source, "copy_block_seconds");
  if (!std::isfinite(profile.load_factor) || profile.load_factor <= 0.0) {
    fail(source, "load_factor", "must be a finite, positive ratio, got " + number_text(profile.load_factor));
  }
  const ProfileCurve& overhead = profile.engine_overhead;
  if (!overhead.points.empty() || !overhead.seconds.empty()) {
    check_axis(overhead.points, source, "engine_overhead.num_sequences");
    if (overhead.seconds.size() != overhead.points.size()) {
      fail(source, "engine_overhead.seconds", "must have one value per point of engine_overhead.num_sequences");
    }
    for (size_t i = 0; i < overhead.seconds.size(); ++i) {
      check_seconds(overhead.seconds[i], source, "engine_overhead.seconds[" + std::to_string(i) + "]");
    }
  }
}

std::string to_json_text(const StepProfile& profile) {
  const ProfileModel& model = profile.model;
  json root = {
      {"pagedllm_step_profile", profile.format},
      {"executor", profile.executor},
      {"device", profile.device},
      {"model",
       {{"name", model.name},
        {"num_layers", model.num_layers},
        {"hidden_size", model.hidden_size},
        {"num_heads", model.num_heads},
        {"num_kv_heads", model.num_kv_heads},
        {"head_dim", model.head_dim},
        {"intermediate_size", model.intermediate_size},
        {"vocab_size", model.vocab_size}}},
      {"num_threads", profile.num_threads},
      {"block_size", profile.block_size},
      {"statistic", profile.statistic},
      {"num_repeats", profile.num_repeats},
      {"num_passes", profile.num_passes},
      {"step_overhead_seconds", profile.step_overhead_seconds},
      {"sample_seconds", profile.sample_seconds},
      {"random_sample_extra_seconds", profile.random_sample_extra_seconds},
      {"beam_sample_extra_seconds", profile.beam_sample_extra_seconds},
      {"swap_out_block_seconds", profile.swap_out_block_seconds},
      {"swap_in_block_seconds", profile.swap_in_block_seconds},
      {"copy_block_seconds", profile.copy_block_seconds},
      {"load_factor", profile.load_factor},
      {"decode", grid_json(profile.decode, kDecodeNames)},
      {"prefill", grid_json(profile.prefill, kPrefillNames)},
      {"engine_overhead",
       {{"num_sequences", profile.engine_overhead.points}, {"seconds", profile.engine_overhead.seconds}}},
  };
  if (profile.tensor_parallel != 1) root["tensor_parallel"] = profile.tensor_parallel;  // absent: 1
  return root.dump(1) + "\n";
}

StepProfile step_profile_from_json_text(const std::string& text, const std::string& source) {
  json root;
  try {
    root = json::parse(text);
  } catch (const json::parse_error& error) {
    fail(source, "(document)", std::string("malformed JSON: ") + error.what());
  }
  const Reader read(source);
  StepProfile profile;
  profile.format = read.int32(root, "", "pagedllm_step_profile");
  if (profile.format != kStepProfileFormat) validate(profile, source);  // names the version first
  profile.executor = read.string(root, "", "executor");
  profile.device = read.string(root, "", "device");
  const json& model = read.member(root, "", "model");
  profile.model.name = read.string(model, "model", "name");
  profile.model.num_layers = read.integer(model, "model", "num_layers");
  profile.model.hidden_size = read.integer(model, "model", "hidden_size");
  profile.model.num_heads = read.integer(model, "model", "num_heads");
  profile.model.num_kv_heads = read.integer(model, "model", "num_kv_heads");
  profile.model.head_dim = read.integer(model, "model", "head_dim");
  profile.model.intermediate_size = read.integer(model, "model", "intermediate_size");
  profile.model.vocab_size = read.integer(model, "model", "vocab_size");
  profile.num_threads = read.int32(root, "", "num_threads");
  if (root.contains("tensor_parallel")) profile.tensor_parallel = read.int32(root, "", "tensor_parallel");
  profile.block_size = read.int32(root, "", "block_size");
  profile.statistic = read.string(root, "", "statistic");
  profile.num_repeats = read.int32(root, "", "num_repeats");
  profile.num_passes = read.int32(root, "", "num_passes");
  profile.step_overhead_seconds = read.number(root, "", "step_overhead_seconds");
  profile.sample_seconds = read.number(root, "", "sample_seconds");
  profile.random_sample_extra_seconds = read.number(root, "", "random_sample_extra_seconds");
  profile.beam_sample_extra_seconds = read.number(root, "", "beam_sample_extra_seconds");
  profile.swap_out_block_seconds = read.number(root, "", "swap_out_block_seconds");
  profile.swap_in_block_seconds = read.number(root, "", "swap_in_block_seconds");
  profile.copy_block_seconds = read.number(root, "", "copy_block_seconds");
  profile.load_factor = read.number(root, "", "load_factor");
  profile.decode = read.grid(root, kDecodeNames);
  profile.prefill = read.grid(root, kPrefillNames);
  if (root.contains("engine_overhead")) {
    const json& overhead = root["engine_overhead"];
    profile.engine_overhead.points = read.numbers(overhead, "engine_overhead", "num_sequences");
    profile.engine_overhead.seconds = read.numbers(overhead, "engine_overhead", "seconds");
  }
  validate(profile, source);
  return profile;
}

void write_step_profile(const StepProfile& profile, const std::string& path) {
  validate(profile, path);
  std::ofstream out(path, std::ios::binary);
  if (!out) throw StepProfileError(path + ": cannot open for writing");
  out << to_json_text(profile);
  if (!out) throw StepProfileError(path + ": write failed");
}

StepProfile read_step_profile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw StepProfileError(path + ": cannot open for reading");
  std::ostringstream text;
  text << in.rdbuf();
  return step_profile_from_json_text(text.str(), path);
}

}  // namespace pagedllm::sim
