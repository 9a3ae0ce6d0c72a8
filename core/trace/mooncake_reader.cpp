// Mooncake JSONL -> Trace (mooncake_reader.h).
#include "core/trace/mooncake_reader.h"

#include <algorithm>
#include <cmath>
#include <istream>
#include <limits>
#include <nlohmann/json.hpp>
#include <vector>

#include "core/trace/field_error.h"
#include "core/trace/trace_jsonl.h"

namespace pagedllm::trace {
namespace {

using nlohmann::json;

const json& required(const json& line, const char* key) {
  const auto found = line.find(key);
  if (found == line.end()) throw FieldError{key, "missing"};
  return *found;
}

int32_t token_count(const json& value, const char* field) {
  if (value.is_number_integer() && !value.is_number_unsigned()) {
    throw FieldError{field, "must not be negative, found " + value.dump()};
  }
  if (!value.is_number_unsigned()) {
    throw FieldError{field, std::string("expected a token count, found ") + value.type_name()};
  }
  if (value.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int32_t>::max())) {
    throw FieldError{field, "out of range: " + value.dump()};
  }
  return value.get<int32_t>();
}

double milliseconds(const json& value) {
  if (!value.is_number()) {
    throw FieldError{"timestamp", std::string("expected milliseconds, found ") + value.type_name()};
  }
  const double ms = value.get<double>();
  if (!std::isfinite(ms)) throw FieldError{"timestamp", "must be finite, found " + value.dump()};
  return ms;
}

std::vector<uint64_t> hash_ids(const json& value) {
  if (!value.is_array()) {
    throw FieldError{"hash_ids", std::string("expected an array of ids, found ") + value.type_name()};
  }
  std::vector<uint64_t> ids;
  ids.reserve(value.size());
  for (size_t i = 0; i < value.size(); ++i) {
    if (!value[i].is_number_unsigned()) {
      throw FieldError{"hash_ids[" + std::to_string(i) + "]",
                       "expected a non-negative integer, found " + value[i].dump()};
    }
    ids.push_back(value[i].get<uint64_t>());
  }
  return ids;
}

}  // namespace

Trace read_mooncake_trace(std::istream& in, const std::string& name, const MooncakeOptions& mooncake,
                          const ReadOptions& options, ReadReport* report) {
  ReadContext context(name, options, report);
  if (mooncake.block_tokens < 1) {
    context.fatal(0, "block_tokens", "must be at least 1, found " + std::to_string(mooncake.block_tokens));
  }
  Trace trace;
  trace.header.source = "mooncake:" + name;
  trace.header.prefix_block_tokens = mooncake.block_tokens;
  std::vector<double> times_ms;  // per accepted request, until the origin is known
  double origin = std::numeric_limits<double>::infinity();
  std::string text;
  for (int64_t line_number = 1; std::getline(in, text); ++line_number) {
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    context.count_record();
    TraceRequest request;
    double time_ms = 0.0;
    try {
      json line;
      try {
        line = json::parse(text);
      } catch (const json::exception& error) {
        throw FieldError{"", "malformed JSON: " + json_error_message(error.what())};
      }
      if (!line.is_object()) throw FieldError{"", std::string("expected a JSON object, found ") + line.type_name()};
      time_ms = milliseconds(required(line, "timestamp"));
      request.prompt_len = token_count(required(line, "input_length"), "input_length");
      request.output_len = token_count(required(line, "output_length"), "output_length");
      request.prefix_block_ids = hash_ids(required(line, "hash_ids"));
      const int64_t num_blocks = (int64_t{request.prompt_len} + mooncake.block_tokens - 1) / mooncake.block_tokens;
      if (static_cast<int64_t>(request.prefix_block_ids.size()) > num_blocks) {
        throw FieldError{"hash_ids", std::to_string(request.prefix_block_ids.size()) + " ids, more than one per " +
                                         std::to_string(mooncake.block_tokens) + "-token block of input_length " +
                                         std::to_string(request.prompt_len) + " (at most " +
                                         std::to_string(num_blocks) + ")"};
      }
    } catch (const FieldError& error) {
      context.error(line_number, error.field, error.message);
      continue;
    }
    origin = std::min(origin, time_ms);
    if (request.prompt_len == 0) {
      context.drop("skipped: input_length is 0 (no prompt to replay)", line_number, "input_length");
      continue;
    }
    if (request.output_len == 0) {
      context.drop("skipped: output_length is 0 (no output to replay)", line_number, "output_length");
      continue;
    }
    const int64_t num_blocks = (int64_t{request.prompt_len} + mooncake.block_tokens - 1) / mooncake.block_tokens;
    if (static_cast<int64_t>(request.prefix_block_ids.size()) < num_blocks) {
      context.remark("accepted with fewer hash_ids than prompt blocks (the blocks without an id are not shared)",
                     line_number, "hash_ids");
    }
    request.prompt_kind = PromptKind::length;
    request.source_line = line_number;
    times_ms.push_back(time_ms);
    trace.requests.push_back(std::move(request));
  }
  if (in.bad()) context.fatal(0, "", "read error");
  for (size_t i = 0; i < times_ms.size(); ++i) trace.requests[i].arrival_time = (times_ms[i] - origin) / 1000.0;
  context.finish(trace);
  return trace;
}

Trace read_mooncake_trace(const std::string& path, const MooncakeOptions& mooncake, const ReadOptions& options,
                          ReadReport* report) {
  std::ifstream in = open_trace_input(path);
  return read_mooncake_trace(in, path, mooncake, options, report);
}

}  // namespace pagedllm::trace
