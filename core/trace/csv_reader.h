// A small RFC 4180 CSV reader: fields separated by commas, quoted fields may hold commas, line
// breaks and doubled quotes (""), lines may end in CRLF. The header row names the columns.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pagedllm::trace {

struct CsvRecord {
  int64_t line = 0;  // 1-based line the record starts on
  std::vector<std::string> fields;
  std::string error;  // non-empty: the record is malformed (fields are then partial)
};

class CsvReader {
 public:
  explicit CsvReader(std::istream& in) : in_(in) {}
  // The next record, or false at the end of the input. Empty lines are skipped; a UTF-8 byte
  // order mark before the first record is dropped.
  bool next(CsvRecord& record);

 private:
  std::istream& in_;
  int64_t line_ = 0;  // lines consumed so far
};

// Column positions by name, from the header row.
class CsvColumns {
 public:
  // Throws TraceError naming `file`, the header's line and the first name of `required` that the
  // header lacks (with the columns it has). Names are compared exactly, spaces around them trimmed.
  CsvColumns(const CsvRecord& header, const std::vector<std::string>& required, const std::string& file);
  // Position of `name` (which must have been required, or be present).
  size_t at(std::string_view name) const;
  bool has(std::string_view name) const;
  size_t num_columns() const { return names_.size(); }
  // Why a data record cannot be read (its own error, or a field count unlike the header's);
  // empty when it can.
  std::string problem(const CsvRecord& record) const;

 private:
  std::vector<std::string> names_;
};

// Whole-field numbers (spaces around them allowed); nullopt when the text is not one.
std::optional<int64_t> parse_csv_integer(std::string_view text);
std::optional<double> parse_csv_number(std::string_view text);  // finite only

// A field that does not hold what its column should; a reader reports it for the row.
struct CsvFieldError {
  std::string column;
  std::string message;
};
// A token count: a whole number in [0, 2^31). Throws CsvFieldError naming `column` otherwise.
int32_t csv_token_count(std::string_view text, const std::string& column);

}  // namespace pagedllm::trace
