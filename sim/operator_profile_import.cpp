#include "sim/operator_profile_import.h"

#include <algorithm>
#include <functional>
#include <istream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/trace/csv_reader.h"
#include "core/trace/trace.h"
#include "sim/profile_interpolation.h"

namespace pagedllm::sim {
namespace {

constexpr double kSecondsPerMillisecond = 1e-3;  // the files' times are in ms
constexpr std::string_view kTimePrefix = "time_stats.";
constexpr std::string_view kEmbeddingOp = "emb";

[[noreturn]] void fail(const std::string& file, int64_t line, const std::string& column, const std::string& message) {
  throw StepProfileError(file + ":" + std::to_string(line) + ": " + (column.empty() ? "" : column + ": ") + message);
}

// One operator's column for the chosen statistic: "time_stats.<op>.<statistic>".
struct TimeColumn {
  std::string op;
  std::string name;
  size_t index = 0;
};

// A CSV file read whole: its header's columns and its records.
struct CsvTable {
  std::string file;
  int64_t header_line = 0;
  std::optional<trace::CsvColumns> columns;
  std::vector<TimeColumn> times;
  std::vector<trace::CsvRecord> records;

  int64_t integer(const trace::CsvRecord& record, const std::string& column) const {
    const std::optional<int64_t> value = trace::parse_csv_integer(record.fields[columns->at(column)]);
    if (!value)
      fail(file, record.line, column, "expected a whole number, got '" + record.fields[columns->at(column)] + "'");
    return *value;
  }
  // Seconds, or nullopt for an empty field (an operator the row's kind does not run).
  std::optional<double> seconds(const trace::CsvRecord& record, const TimeColumn& column) const {
    const std::string& text = record.fields[column.index];
    if (text.find_first_not_of(" ") == std::string::npos) return std::nullopt;
    const std::optional<double> ms = trace::parse_csv_number(text);
    if (!ms || *ms < 0.0) fail(file, record.line, column.name, "expected a time in ms (>= 0), got '" + text + "'");
    return *ms * kSecondsPerMillisecond;
  }
  bool flag(const trace::CsvRecord& record, const std::string& column) const {
    const std::string& text = record.fields[columns->at(column)];
    if (text == "True" || text == "true" || text == "1") return true;
    if (text == "False" || text == "false" || text == "0") return false;
    fail(file, record.line, column, "expected True or False, got '" + text + "'");
  }
};

CsvTable read_table(std::istream& in, const std::string& file, const std::vector<std::string>& required,
                    const std::string& statistic) {
  CsvTable table;
  table.file = file;
  trace::CsvReader reader(in);
  trace::CsvRecord header;
  if (!reader.next(header)) fail(file, 0, "", "empty file (expected a header row)");
  table.header_line = header.line;
  try {
    table.columns.emplace(header, required, file);
  } catch (const trace::TraceError& error) {
    throw StepProfileError(error.what());
  }
  const std::string suffix = "." + statistic;
  for (size_t i = 0; i < header.fields.size(); ++i) {
    const std::string& name = header.fields[i];
    if (name.starts_with(kTimePrefix) && name.ends_with(suffix) && name.size() > kTimePrefix.size() + suffix.size()) {
      table.times.push_back({.op = name.substr(kTimePrefix.size(), name.size() - kTimePrefix.size() - suffix.size()),
                             .name = name,
                             .index = i});
    }
  }
  if (table.times.empty()) {
    fail(file, header.line, "", "no operator columns (time_stats.<op>." + statistic + ")");
  }
  for (trace::CsvRecord record; reader.next(record);) {
    if (const std::string problem = table.columns->problem(record); !problem.empty())
      fail(file, record.line, "", problem);
    table.records.push_back(std::move(record));
  }
  return table;
}

std::string list(const std::set<int64_t>& values) {
  std::string text;
  for (const int64_t value : values) text += (text.empty() ? "" : ", ") + std::to_string(value);
  return text.empty() ? "none" : text;
}

// mlp.csv: per token count, the time of one layer's operators (the embedding aside) and of the
// embedding, for the model's shape at the tensor parallel size.
struct LayerTimes {
  std::vector<double> tokens;             // ascending
  std::vector<double> layer_seconds;      // every operator but the embedding, once
  std::vector<double> embedding_seconds;  // 0 when the file has no embedding column
};

void check_shape_field(const CsvTable& table, const trace::CsvRecord& record, const std::string& column,
                       int64_t expected, const model::ModelShape& shape) {
  const int64_t value = table.integer(record, column);
  if (value != expected) {
    fail(table.file, record.line, column,
         std::to_string(value) + " here, but the model simulated (" + shape.name + ") has " + std::to_string(expected) +
             ": a profile of another model");
  }
}

LayerTimes read_layer_times(const OperatorProfileImport& config, std::istream& in, const std::string& file) {
  const OperatorTable table = read_operator_table(in, file, config.statistic, config.tensor_parallel, &config.shape);
  LayerTimes times;
  for (const auto& [tokens, ops] : table) {
    double layer = 0.0;
    double embedding = 0.0;
    for (const auto& [op, seconds] : ops) (op == kEmbeddingOp ? embedding : layer) += seconds;
    times.tokens.push_back(static_cast<double>(tokens));
    times.layer_seconds.push_back(layer);
    times.embedding_seconds.push_back(embedding);
  }
  return times;
}

// attention.csv: one layer's attention time per (rows, kv_cache_size), decode and prefill apart;
// rows of other models, tensor parallel sizes or block sizes are left out (one file may hold many).
struct AttentionTimes {
  std::map<std::pair<int64_t, int64_t>, double> decode;   // (batch_size, kv_cache_size)
  std::map<std::pair<int64_t, int64_t>, double> prefill;  // (prefill_chunk_size, kv_cache_size)
};

AttentionTimes read_attention_times(const OperatorProfileImport& config, std::istream& in, const std::string& file) {
  const CsvTable table = read_table(in, file,
                                    {"n_q_head", "n_kv_head", "n_embd", "num_tensor_parallel_workers", "block_size",
                                     "batch_size", "prefill_chunk_size", "kv_cache_size", "is_prefill"},
                                    config.statistic);
  AttentionTimes times;
  for (const trace::CsvRecord& record : table.records) {
    const model::ModelShape& shape = config.shape;
    if (table.integer(record, "n_q_head") != shape.num_heads ||
        table.integer(record, "n_kv_head") != shape.num_kv_heads ||
        table.integer(record, "n_embd") != shape.hidden_size ||
        table.integer(record, "num_tensor_parallel_workers") != config.tensor_parallel ||
        table.integer(record, "block_size") != config.block_size) {
      continue;
    }
    double seconds = 0.0;
    bool any = false;
    for (const TimeColumn& column : table.times) {
      if (const std::optional<double> value = table.seconds(record, column)) {
        seconds += *value;
        any = true;
      }
    }
    if (!any) fail(file, record.line, "", "no operator time in this row");
    const int64_t cached = table.integer(record, "kv_cache_size");
    if (cached < 0) fail(file, record.line, "kv_cache_size", "must not be negative");
    if (table.flag(record, "is_prefill")) {
      const int64_t chunk = table.integer(record, "prefill_chunk_size");
      if (chunk < 1) fail(file, record.line, "prefill_chunk_size", "a prefill row needs at least 1 token");
      times.prefill.emplace(std::pair{chunk, cached}, seconds);
    } else {
      const int64_t batch = table.integer(record, "batch_size");
      if (batch < 1) fail(file, record.line, "batch_size", "a decode row needs at least 1 sequence");
      times.decode.emplace(std::pair{batch, cached}, seconds);
    }
  }
  const std::string wanted = "n_q_head " + std::to_string(config.shape.num_heads) + ", n_kv_head " +
                             std::to_string(config.shape.num_kv_heads) + ", n_embd " +
                             std::to_string(config.shape.hidden_size) + ", tensor parallel " +
                             std::to_string(config.tensor_parallel) + ", block size " +
                             std::to_string(config.block_size);
  if (times.decode.empty()) fail(file, table.header_line, "is_prefill", "no decode rows with " + wanted);
  if (times.prefill.empty()) fail(file, table.header_line, "is_prefill", "no prefill rows with " + wanted);
  return times;
}

// A step table over the attention rows' (rows, kv_cache_size) pairs: measured cells are
// step(rows, attention); a pair the file lacks is extended linearly along its row from the
// measured cells (ProfileGrid::filled_cells), as the profiler fills contexts it cannot reach.
ProfileGrid step_grid(const std::map<std::pair<int64_t, int64_t>, double>& attention, int64_t column_offset,
                      const std::function<double(double rows, double attention_seconds)>& step) {
  std::set<int64_t> rows;
  std::set<int64_t> columns;
  for (const auto& [key, seconds] : attention) {
    rows.insert(key.first);
    columns.insert(key.second + column_offset);
  }
  ProfileGrid grid;
  for (const int64_t row : rows) grid.rows.push_back(static_cast<double>(row));
  for (const int64_t column : columns) grid.columns.push_back(static_cast<double>(column));
  for (size_t i = 0; i < grid.rows.size(); ++i) {
    std::vector<double> measured_columns;
    std::vector<double> measured_seconds;
    for (const int64_t column : columns) {
      const auto found = attention.find({static_cast<int64_t>(grid.rows[i]), column - column_offset});
      if (found == attention.end()) continue;
      measured_columns.push_back(static_cast<double>(column));
      measured_seconds.push_back(step(grid.rows[i], found->second));
    }
    std::vector<double> row_seconds;
    for (size_t j = 0; j < grid.columns.size(); ++j) {
      const auto at = std::find(measured_columns.begin(), measured_columns.end(), grid.columns[j]);
      if (at != measured_columns.end()) {
        row_seconds.push_back(measured_seconds[static_cast<size_t>(at - measured_columns.begin())]);
        continue;
      }
      row_seconds.push_back(std::max(0.0, interpolate(measured_columns, measured_seconds, grid.columns[j])));
      grid.filled_cells.emplace_back(static_cast<int32_t>(i), static_cast<int32_t>(j));
    }
    grid.seconds.push_back(std::move(row_seconds));
  }
  return grid;
}

}  // namespace

OperatorTable read_operator_table(std::istream& in, const std::string& file, const std::string& statistic,
                                  int32_t tensor_parallel, const model::ModelShape* shape) {
  const CsvTable table = read_table(
      in, file, {"num_tokens", "num_tensor_parallel_workers", "n_head", "n_kv_head", "n_embd", "n_expanded_embd"},
      statistic);
  OperatorTable operators;
  std::set<int64_t> parallel_sizes;
  for (const trace::CsvRecord& record : table.records) {
    const int64_t parallel = table.integer(record, "num_tensor_parallel_workers");
    parallel_sizes.insert(parallel);
    if (parallel != tensor_parallel) continue;
    if (shape != nullptr) {
      check_shape_field(table, record, "n_head", shape->num_heads, *shape);
      check_shape_field(table, record, "n_kv_head", shape->num_kv_heads, *shape);
      check_shape_field(table, record, "n_embd", shape->hidden_size, *shape);
      check_shape_field(table, record, "n_expanded_embd", shape->intermediate_size, *shape);
    }
    const int64_t tokens = table.integer(record, "num_tokens");
    if (tokens < 1) fail(file, record.line, "num_tokens", "must be at least 1");
    if (operators.contains(tokens)) continue;
    std::map<std::string, double>& ops = operators[tokens];
    for (const TimeColumn& column : table.times) {
      const std::optional<double> seconds = table.seconds(record, column);
      if (!seconds) fail(file, record.line, column.name, "missing");
      ops[column.op] = *seconds;
    }
  }
  if (operators.empty()) {
    fail(file, table.header_line, "num_tensor_parallel_workers",
         "no rows for tensor parallel size " + std::to_string(tensor_parallel) + " (the file has " +
             list(parallel_sizes) + ")");
  }
  return operators;
}

StepProfile import_operator_profile(const OperatorProfileImport& config, const OperatorProfileFiles& files) {
  const std::string& statistic = config.statistic;
  if (statistic != "min" && statistic != "max" && statistic != "mean" && statistic != "median") {
    throw StepProfileError("statistic: expected min, max, mean or median, got '" + statistic + "'");
  }
  if (config.tensor_parallel < 1) throw StepProfileError("tensor_parallel: must be at least 1");
  const LayerTimes layers = read_layer_times(config, files.mlp, files.mlp_name);
  const AttentionTimes attention = read_attention_times(config, files.attention, files.attention_name);
  const auto num_layers = static_cast<double>(config.shape.num_layers);
  // A step of `tokens` new tokens whose attention takes `attention_seconds` per layer.
  const auto step = [&](double tokens, double attention_seconds) {
    return config.step_overhead_seconds + std::max(0.0, interpolate(layers.tokens, layers.embedding_seconds, tokens)) +
           num_layers * (std::max(0.0, interpolate(layers.tokens, layers.layer_seconds, tokens)) + attention_seconds) +
           (config.all_reduce_seconds ? config.all_reduce_seconds(tokens) : 0.0);
  };
  StepProfile profile;
  profile.executor = "imported operator profile (" + files.mlp_name + ", " + files.attention_name + ")";
  profile.device = config.device;
  profile.model = ProfileModel::of(config.shape);
  profile.block_size = config.block_size;
  profile.tensor_parallel = config.tensor_parallel;
  profile.statistic = statistic + " of each operator (imported)";
  // Our decode column is the tokens a decode attends to: its cached tokens and itself.
  profile.decode = step_grid(attention.decode, 1, step);
  profile.prefill = step_grid(attention.prefill, 0, step);
  profile.step_overhead_seconds = config.step_overhead_seconds;
  profile.swap_out_block_seconds = config.swap_block_seconds;
  profile.swap_in_block_seconds = config.swap_block_seconds;
  profile.copy_block_seconds = config.copy_block_seconds;
  validate(profile, files.mlp_name);
  return profile;
}

}  // namespace pagedllm::sim
