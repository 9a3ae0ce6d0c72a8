#include "core/tokenizer/json_field.h"

#include "core/model/model_errors.h"

namespace pagedllm::tokenizer {

namespace {

std::string subject(const std::string& path) { return path.empty() ? std::string() : "field '" + path + "'"; }

}  // namespace

void JsonField::fail(const std::string& problem) const {
  throw model::ModelFormatError(*source_, subject(path_), problem);
}

std::string JsonField::child_path(std::string_view key) const {
  return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
}

void JsonField::expect_object() const {
  if (!value_->is_object()) fail(std::string("expected an object, found ") + value_->type_name());
}

void JsonField::expect_array() const {
  if (!value_->is_array()) fail(std::string("expected an array, found ") + value_->type_name());
}

JsonField JsonField::at(std::string_view key) const {
  expect_object();
  const auto it = value_->find(key);
  if (it == value_->end()) throw model::ModelFormatError(*source_, subject(child_path(key)), "missing");
  return JsonField(*it, child_path(key), *source_);
}

std::optional<JsonField> JsonField::find(std::string_view key) const {
  expect_object();
  const auto it = value_->find(key);
  if (it == value_->end() || it->is_null()) return std::nullopt;
  return JsonField(*it, child_path(key), *source_);
}

JsonField JsonField::at(std::size_t index) const {
  expect_array();
  return JsonField((*value_)[index], path_ + "[" + std::to_string(index) + "]", *source_);
}

std::size_t JsonField::size() const {
  expect_array();
  return value_->size();
}

std::string JsonField::string() const {
  if (!value_->is_string()) fail(std::string("expected a string, found ") + value_->type_name());
  return value_->get<std::string>();
}

bool JsonField::boolean() const {
  if (!value_->is_boolean()) fail(std::string("expected true or false, found ") + value_->type_name());
  return value_->get<bool>();
}

std::int64_t JsonField::integer() const {
  if (value_->is_number_unsigned()) {
    const auto value = value_->get<std::uint64_t>();
    if (value > static_cast<std::uint64_t>(INT64_MAX)) fail("integer out of range");
    return static_cast<std::int64_t>(value);
  }
  if (!value_->is_number_integer()) fail(std::string("expected an integer, found ") + value_->type_name());
  return value_->get<std::int64_t>();
}

bool JsonField::flag(std::string_view key, bool fallback) const {
  const auto member = find(key);
  return member ? member->boolean() : fallback;
}

}  // namespace pagedllm::tokenizer
