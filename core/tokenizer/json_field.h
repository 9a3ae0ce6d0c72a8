// A JSON value with its path in the document ("pre_tokenizer.pretokenizers[1].type"), so every
// complaint about it names the file and the field (model::ModelFormatError with the subject
// "field 'pre_tokenizer.pretokenizers[1].type'").
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace pagedllm::tokenizer {

class JsonField {
 public:
  JsonField(const nlohmann::json& value, std::string path, const std::string& source)
      : value_(&value), path_(std::move(path)), source_(&source) {}

  const nlohmann::json& value() const noexcept { return *value_; }
  const std::string& path() const noexcept { return path_; }
  bool is_null() const noexcept { return value_->is_null(); }

  [[noreturn]] void fail(const std::string& problem) const;

  // A member that must be present (null counts as present).
  JsonField at(std::string_view key) const;
  // A member that may be absent; absent and null both give nullopt.
  std::optional<JsonField> find(std::string_view key) const;
  JsonField at(std::size_t index) const;
  // Another value of the same document, under a path of the caller's choosing.
  JsonField derived(const nlohmann::json& value, std::string path) const { return JsonField(value, std::move(path), *source_); }
  std::size_t size() const;  // of an array (fails for anything else)

  std::string string() const;
  bool boolean() const;
  std::int64_t integer() const;
  // An optional boolean member with its default.
  bool flag(std::string_view key, bool fallback) const;

  void expect_object() const;
  void expect_array() const;

 private:
  std::string child_path(std::string_view key) const;

  const nlohmann::json* value_;
  std::string path_;
  const std::string* source_;
};

}  // namespace pagedllm::tokenizer
