// Azure LLM inference trace CSV -> Trace (azure_reader.h).
#include "core/trace/azure_reader.h"

#include <algorithm>
#include <array>
#include <istream>
#include <limits>
#include <vector>

#include "core/trace/csv_reader.h"
#include "core/trace/trace_jsonl.h"

namespace pagedllm::trace {
namespace {

constexpr int64_t kTicksPerSecond = 10'000'000;  // Azure timestamps carry 100 ns digits

bool is_leap(int64_t year) { return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0; }

// Leap years in [1, year).
int64_t leap_years_before(int64_t year) { return (year - 1) / 4 - (year - 1) / 100 + (year - 1) / 400; }

int32_t days_in_month(int32_t year, int32_t month) {
  constexpr std::array<int32_t, 12> kDays{31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return month == 2 && is_leap(year) ? 29 : kDays[static_cast<size_t>(month - 1)];
}

// Reads exactly `num_digits` decimal digits at `pos`, advancing it.
std::optional<int32_t> digits(std::string_view text, size_t& pos, size_t num_digits) {
  if (pos + num_digits > text.size()) return std::nullopt;
  int32_t value = 0;
  for (size_t i = 0; i < num_digits; ++i) {
    const char c = text[pos + i];
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + (c - '0');
  }
  pos += num_digits;
  return value;
}

bool expect(std::string_view text, size_t& pos, std::string_view any_of) {
  if (pos >= text.size() || any_of.find(text[pos]) == std::string_view::npos) return false;
  ++pos;
  return true;
}

}  // namespace

int64_t days_from_civil(int32_t year, int32_t month, int32_t day) {
  int64_t day_of_year = day - 1;
  for (int32_t m = 1; m < month; ++m) day_of_year += days_in_month(year, m);
  return 365 * (int64_t{year} - 1970) + (leap_years_before(year) - leap_years_before(1970)) + day_of_year;
}

std::optional<int64_t> parse_azure_timestamp(std::string_view text) {
  size_t pos = 0;
  const auto year = digits(text, pos, 4);
  if (!year || !expect(text, pos, "-")) return std::nullopt;
  const auto month = digits(text, pos, 2);
  if (!month || !expect(text, pos, "-")) return std::nullopt;
  const auto day = digits(text, pos, 2);
  if (!day || !expect(text, pos, " T")) return std::nullopt;
  const auto hour = digits(text, pos, 2);
  if (!hour || !expect(text, pos, ":")) return std::nullopt;
  const auto minute = digits(text, pos, 2);
  if (!minute || !expect(text, pos, ":")) return std::nullopt;
  const auto second = digits(text, pos, 2);
  if (!second) return std::nullopt;
  if (*year < 1 || *month < 1 || *month > 12 || *day < 1 || *day > days_in_month(*year, *month) || *hour > 23 ||
      *minute > 59 || *second > 59) {
    return std::nullopt;
  }
  int64_t fraction = 0;  // in ticks
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    int64_t scale = kTicksPerSecond;
    size_t num_digits = 0;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
      if (++num_digits > 7) return std::nullopt;  // finer than 100 ns
      scale /= 10;
      fraction += (text[pos++] - '0') * scale;
    }
    if (num_digits == 0) return std::nullopt;
  }
  if (pos != text.size()) return std::nullopt;
  const int64_t seconds = days_from_civil(*year, *month, *day) * 86'400 + *hour * 3'600 + *minute * 60 + *second;
  return seconds * kTicksPerSecond + fraction;
}

Trace read_azure_trace(std::istream& in, const std::string& name, const ReadOptions& options, ReadReport* report) {
  ReadContext context(name, options, report);
  CsvReader reader(in);
  CsvRecord record;
  if (!reader.next(record)) context.fatal(0, "", "empty file: no header row");
  const CsvColumns columns(record, {"TIMESTAMP", "ContextTokens", "GeneratedTokens"}, name);
  const size_t timestamp_at = columns.at("TIMESTAMP");
  const size_t context_at = columns.at("ContextTokens");
  const size_t generated_at = columns.at("GeneratedTokens");

  Trace trace;
  trace.header.source = "azure:" + name;
  std::vector<int64_t> ticks;  // per accepted request, until the origin is known
  int64_t origin = std::numeric_limits<int64_t>::max();
  while (reader.next(record)) {
    context.count_record();
    if (const std::string problem = columns.problem(record); !problem.empty()) {
      context.error(record.line, "", problem);
      continue;
    }
    TraceRequest request;
    int64_t time = 0;
    try {
      const std::string& stamp = record.fields[timestamp_at];
      const auto parsed = parse_azure_timestamp(stamp);
      if (!parsed) throw CsvFieldError{"TIMESTAMP", "expected YYYY-MM-DD HH:MM:SS.fffffff, found '" + stamp + "'"};
      time = *parsed;
      request.prompt_len = csv_token_count(record.fields[context_at], "ContextTokens");
      request.output_len = csv_token_count(record.fields[generated_at], "GeneratedTokens");
    } catch (const CsvFieldError& issue) {
      context.error(record.line, issue.column, issue.message);
      continue;
    }
    origin = std::min(origin, time);
    if (request.prompt_len == 0) {
      context.drop("skipped: ContextTokens is 0 (no prompt to replay)", record.line, "ContextTokens");
      continue;
    }
    if (request.output_len == 0) {
      context.drop("skipped: GeneratedTokens is 0 (no output to replay)", record.line, "GeneratedTokens");
      continue;
    }
    request.prompt_kind = PromptKind::length;
    request.source_line = record.line;
    ticks.push_back(time);
    trace.requests.push_back(std::move(request));
  }
  for (size_t i = 0; i < ticks.size(); ++i) {
    trace.requests[i].arrival_time = static_cast<double>(ticks[i] - origin) / static_cast<double>(kTicksPerSecond);
  }
  context.finish(trace);
  return trace;
}

Trace read_azure_trace(const std::string& path, const ReadOptions& options, ReadReport* report) {
  std::ifstream in = open_trace_input(path);
  return read_azure_trace(in, path, options, report);
}

}  // namespace pagedllm::trace
