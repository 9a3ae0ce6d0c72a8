// RFC 4180 CSV records and header lookup (csv_reader.h).
#include "core/trace/csv_reader.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <istream>
#include <limits>

#include "core/trace/trace.h"

namespace pagedllm::trace {
namespace {

// Spaces and tabs around a field (a CSV line has no newline left in it).
std::string_view trim_blanks(std::string_view text) {
  const auto first = text.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  return text.substr(first, text.find_last_not_of(" \t") - first + 1);
}

}  // namespace

bool CsvReader::next(CsvRecord& record) {
  record = CsvRecord{};
  std::string text;
  do {
    if (!std::getline(in_, text)) return false;
    ++line_;
    if (!text.empty() && text.back() == '\r') text.pop_back();
    if (line_ == 1 && text.starts_with("\xEF\xBB\xBF")) text.erase(0, 3);
  } while (text.empty());
  record.line = line_;

  std::string field;
  bool quoted = false;      // inside a quoted field
  bool was_quoted = false;  // the current field was quoted (only a comma may follow its end)
  size_t i = 0;
  while (true) {
    if (i == text.size()) {
      if (!quoted) break;
      // A line break inside quotes belongs to the field; the record goes on on the next line.
      if (!std::getline(in_, text)) {
        record.error = "unterminated quoted field (opened on this line)";
        break;
      }
      ++line_;
      if (!text.empty() && text.back() == '\r') text.pop_back();
      field += '\n';
      i = 0;
      continue;
    }
    const char c = text[i++];
    if (quoted) {
      if (c != '"') {
        field += c;
      } else if (i < text.size() && text[i] == '"') {
        field += '"';
        ++i;
      } else {
        quoted = false;
      }
    } else if (c == ',') {
      record.fields.push_back(std::move(field));
      field.clear();
      was_quoted = false;
    } else if (was_quoted) {
      record.error = "unexpected character after a closing quote in field " + std::to_string(record.fields.size() + 1);
      break;
    } else if (c == '"') {
      if (!field.empty()) {
        record.error = "quote inside an unquoted field " + std::to_string(record.fields.size() + 1);
        break;
      }
      quoted = true;
      was_quoted = true;
    } else {
      field += c;
    }
  }
  record.fields.push_back(std::move(field));
  return true;
}

CsvColumns::CsvColumns(const CsvRecord& header, const std::vector<std::string>& required, const std::string& file) {
  if (!header.error.empty()) throw TraceError(TraceIssue{file, header.line, "", "header row: " + header.error});
  for (const std::string& name : header.fields) names_.emplace_back(trim_blanks(name));
  for (const std::string& name : required) {
    if (has(name)) continue;
    std::string present;
    for (const std::string& have : names_) present += (present.empty() ? "" : ", ") + have;
    throw TraceError(TraceIssue{file, header.line, name, "missing column (the header has: " + present + ")"});
  }
}

bool CsvColumns::has(std::string_view name) const {
  return std::find(names_.begin(), names_.end(), name) != names_.end();
}

size_t CsvColumns::at(std::string_view name) const {
  const auto found = std::find(names_.begin(), names_.end(), name);
  if (found == names_.end()) throw std::out_of_range("CsvColumns::at: no column " + std::string(name));
  return static_cast<size_t>(found - names_.begin());
}

std::string CsvColumns::problem(const CsvRecord& record) const {
  if (!record.error.empty()) return record.error;
  if (record.fields.size() == names_.size()) return {};
  return "expected " + std::to_string(names_.size()) + " fields (as the header), found " +
         std::to_string(record.fields.size());
}

std::optional<int64_t> parse_csv_integer(std::string_view text) {
  text = trim_blanks(text);
  int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::optional<double> parse_csv_number(std::string_view text) {
  text = trim_blanks(text);
  double value = 0.0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size() || !std::isfinite(value)) {
    return std::nullopt;
  }
  return value;
}

int32_t csv_token_count(std::string_view text, const std::string& column) {
  const auto value = parse_csv_integer(text);
  const std::string shown(text);
  if (!value) throw CsvFieldError{column, "expected a whole number of tokens, found '" + shown + "'"};
  if (*value < 0) throw CsvFieldError{column, "must not be negative, found " + shown};
  if (*value > std::numeric_limits<int32_t>::max()) throw CsvFieldError{column, "out of range: " + shown};
  return static_cast<int32_t>(*value);
}

}  // namespace pagedllm::trace
