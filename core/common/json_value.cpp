#include "core/common/json_value.h"

#include <charconv>
#include <cmath>
#include <limits>

namespace pagedllm {

std::string json_type_name(const nlohmann::json& value) {
  switch (value.type()) {
    case nlohmann::json::value_t::null:
      return "null";
    case nlohmann::json::value_t::boolean:
      return "boolean";
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned:
      return "integer";
    case nlohmann::json::value_t::number_float:
      return "number";
    case nlohmann::json::value_t::string:
      return "string";
    case nlohmann::json::value_t::array:
      return "array";
    case nlohmann::json::value_t::object:
      return "object";
    default:
      return "binary";
  }
}

std::string format_number(double value) {
  char buffer[64];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  return ec == std::errc() ? std::string(buffer, end) : std::string("?");
}

void JsonValue::fail_type(const std::string& expected) const {
  std::string problem = "expected " + expected + ", got " + json_type_name(*value_);
  if (value_->is_primitive() && !value_->is_null()) {
    // The value too, cut short at a character boundary: it is usually what makes the error obvious.
    constexpr size_t kMaxShown = 40;
    std::string shown = value_->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    if (shown.size() > kMaxShown) {
      size_t cut = kMaxShown;
      while (cut > 0 && (static_cast<unsigned char>(shown[cut]) & 0xC0) == 0x80) --cut;
      shown.resize(cut);
      shown += "...";
    }
    problem += " " + shown;
  }
  fail(problem);
}

std::string JsonValue::child(std::string_view key) const {
  return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
}

void JsonValue::expect_object() const {
  if (!value_->is_object()) fail_type("an object");
}

void JsonValue::expect_array() const {
  if (!value_->is_array()) fail_type("an array");
}

std::optional<JsonValue> JsonValue::find(std::string_view key) const {
  expect_object();
  const auto it = value_->find(key);
  if (it == value_->end() || it->is_null()) return std::nullopt;
  return JsonValue(*it, child(key), options_);
}

JsonValue JsonValue::at(std::string_view key) const {
  expect_object();
  const auto it = value_->find(key);
  if (it == value_->end()) throw JsonError(child(key), "missing (required)");
  return JsonValue(*it, child(key), options_);
}

JsonValue JsonValue::at(std::size_t index) const {
  expect_array();
  return JsonValue((*value_)[index], path_ + "[" + std::to_string(index) + "]", options_);
}

std::size_t JsonValue::size() const {
  expect_array();
  return value_->size();
}

std::int64_t JsonValue::integer() const {
  constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  const auto out_of_range = [&](const std::string& got) {
    fail("must be between " + std::to_string(kMin) + " and " + std::to_string(kMax) + ", got " + got);
  };
  switch (value_->type()) {
    case nlohmann::json::value_t::number_integer:
      return value_->get<std::int64_t>();
    case nlohmann::json::value_t::number_unsigned: {
      const auto v = value_->get<std::uint64_t>();
      if (v > static_cast<std::uint64_t>(kMax)) out_of_range(std::to_string(v));
      return static_cast<std::int64_t>(v);
    }
    case nlohmann::json::value_t::number_float: {
      const double v = value_->get<double>();
      if (!options_.whole_numbers_as_integers || !std::isfinite(v) || std::trunc(v) != v) fail_type("an integer");
      // 2^63 is exactly representable; everything below it converts without overflow.
      if (v < -9223372036854775808.0 || v >= 9223372036854775808.0) out_of_range(format_number(v));
      return static_cast<std::int64_t>(v);
    }
    default:
      fail_type("an integer");
  }
}

std::int64_t JsonValue::integer_in(std::int64_t min, std::int64_t max) const {
  const std::int64_t v = integer();
  if (v >= min && v <= max) return v;
  // A bound that is only the storage type's reads better alone.
  constexpr std::int64_t kInt32Max = std::numeric_limits<std::int32_t>::max();
  if (max == kInt32Max) {
    fail((v < min ? "must be at least " + std::to_string(min) : "must be at most " + std::to_string(max)) + ", got " +
         std::to_string(v));
  }
  fail("must be between " + std::to_string(min) + " and " + std::to_string(max) + ", got " + std::to_string(v));
}

double JsonValue::number() const {
  if (!value_->is_number()) fail_type("a number");
  const double v = value_->get<double>();
  if (!std::isfinite(v)) fail("must be a finite number");  // nlohmann reads 1e999 as infinity
  return v;
}

double JsonValue::number_in(double min, double max) const {
  const double v = number();
  if (v < min || v > max) {
    fail("must be between " + format_number(min) + " and " + format_number(max) + ", got " + format_number(v));
  }
  return v;
}

bool JsonValue::boolean() const {
  if (!value_->is_boolean()) fail_type("a boolean");
  return value_->get<bool>();
}

const std::string& JsonValue::string() const {
  if (!value_->is_string()) fail_type("a string");
  return value_->get_ref<const std::string&>();
}

TokenId JsonValue::token_id() const {
  if (!value_->is_number()) fail_type("a token id (integer)");
  const std::int64_t v = integer();
  if (v < 0) fail("token ids must be non-negative, got " + std::to_string(v));
  if (v > std::numeric_limits<TokenId>::max()) fail("token id " + std::to_string(v) + " is out of range");
  return static_cast<TokenId>(v);
}

bool JsonValue::flag(std::string_view key, bool fallback) const {
  const std::optional<JsonValue> member = find(key);
  return member ? member->boolean() : fallback;
}

std::size_t json_nesting_past(std::string_view text, int32_t max_depth) {
  int32_t depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return i + 1;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return 0;
}

}  // namespace pagedllm
