// The one reader of JSON input: a value with its path in the document ("messages[2].role",
// "pre_tokenizer.pretokenizers[1].type", "rope_scaling.factor"), read with strict types. Every
// complaint is a JsonError naming the path and the problem; each reader turns it into its own
// error at its entry point: the HTTP server a 400 naming the field (tools/server), the model and
// tokenizer readers an error naming the file and the field (core/model, core/tokenizer).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "core/common/types.h"

namespace pagedllm {

class JsonError : public std::runtime_error {
 public:
  JsonError(std::string path, std::string problem)
      : std::runtime_error(path.empty() ? problem : path + ": " + problem),
        path_(std::move(path)),
        problem_(std::move(problem)) {}
  const std::string& path() const noexcept { return path_; }        // "" = the document itself
  const std::string& problem() const noexcept { return problem_; }  // "expected an integer, got string"

 private:
  std::string path_;
  std::string problem_;
};

struct JsonReadOptions {
  // pydantic's leniency, which vLLM's clients rely on: a number with no fractional part (2.0)
  // passes as an integer.
  bool whole_numbers_as_integers = false;
};

// Views `value`: the document must outlive it.
class JsonValue {
 public:
  explicit JsonValue(const nlohmann::json& value, std::string path = "", JsonReadOptions options = {})
      : value_(&value), path_(std::move(path)), options_(options) {}

  const nlohmann::json& json() const noexcept { return *value_; }
  const std::string& path() const noexcept { return path_; }
  bool is_null() const noexcept { return value_->is_null(); }
  [[noreturn]] void fail(const std::string& problem) const { throw JsonError(path_, problem); }
  [[noreturn]] void fail_type(const std::string& expected) const;  // "expected <expected>, got <type>"

  // Members. Absent and null are alike for find: some clients send every optional field, unset
  // ones as null. at() fails with "missing (required)".
  std::optional<JsonValue> find(std::string_view key) const;
  JsonValue at(std::string_view key) const;
  JsonValue at(std::size_t index) const;  // of an array
  std::size_t size() const;               // of an array
  // Another value of the same document under a path of the caller's choosing.
  JsonValue derived(const nlohmann::json& value, std::string path) const {
    return JsonValue(value, std::move(path), options_);
  }

  // Strict types: no string for a number, no number for a boolean.
  std::int64_t integer() const;
  std::int64_t integer_in(std::int64_t min, std::int64_t max) const;  // "must be between a and b, got c"
  double number() const;                                              // finite
  double number_in(double min, double max) const;
  bool boolean() const;
  const std::string& string() const;
  TokenId token_id() const;  // a non-negative 32-bit integer
  void expect_object() const;
  void expect_array() const;
  // An optional boolean member with its default.
  bool flag(std::string_view key, bool fallback) const;

 private:
  std::string child(std::string_view key) const;

  const nlohmann::json* value_;
  std::string path_;
  JsonReadOptions options_;
};

// "null", "boolean", "integer", "number", "string", "array", "object".
std::string json_type_name(const nlohmann::json& value);

// Shortest text that reads back as `value` ("0.1", not "0.10000000000000001").
std::string format_number(double value);

// Where JSON text first nests arrays and objects deeper than max_depth: the 1-based byte offset of
// the bracket that does, or 0 when it never does (strings are skipped; the text need not be valid).
// Checked before nlohmann parses client text: its parser is iterative, but dump, copy and
// comparison recurse once per level.
std::size_t json_nesting_past(std::string_view text, int32_t max_depth);

}  // namespace pagedllm
