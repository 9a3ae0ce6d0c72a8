// The converters (CSV, Azure, BurstGPT, Mooncake, ShareGPT) on small hand-made samples, with the
// line of every malformed record and the counts of every documented filter asserted.
#include <unistd.h>

#include <boost/test/unit_test.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/trace/azure_reader.h"
#include "core/trace/burstgpt_reader.h"
#include "core/trace/csv_reader.h"
#include "core/trace/mooncake_reader.h"
#include "core/trace/sharegpt_reader.h"
#include "core/trace/trace_formats.h"
#include "core/trace/trace_jsonl.h"
#include "tests/trace/trace_columns.h"

namespace pagedllm::trace {
namespace {

namespace fs = std::filesystem;

// A file in the temp directory with the given text, removed afterwards.
struct TempFile {
  std::string path;
  TempFile(const std::string& name, const std::string& text)
      : path((fs::temp_directory_path() / ("pagedllm_readers_" + std::to_string(::getpid()) + "_" + name)).string()) {
    std::ofstream(path, std::ios::binary) << text;
  }
  ~TempFile() { fs::remove(path); }
};

using testing::source_lines;

std::vector<double> arrivals(const Trace& trace) {
  std::vector<double> times;
  for (const TraceRequest& request : trace.requests) times.push_back(request.arrival_time);
  return times;
}

// (line, field) of each issue, for comparing against a hand-made list.
std::vector<std::pair<int64_t, std::string>> where(const std::vector<TraceIssue>& issues) {
  std::vector<std::pair<int64_t, std::string>> out;
  for (const TraceIssue& issue : issues) out.emplace_back(issue.line, issue.field);
  return out;
}

using Where = std::vector<std::pair<int64_t, std::string>>;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::vector<CsvRecord> read_csv(const std::string& text) {
  std::istringstream in(text);
  CsvReader reader(in);
  std::vector<CsvRecord> records;
  CsvRecord record;
  while (reader.next(record)) records.push_back(record);
  return records;
}

int32_t count_words(std::string_view text) {
  int32_t count = 0;
  bool in_word = false;
  for (const char c : text) {
    const bool space = c == ' ' || c == '\n' || c == '\t';
    if (!space && !in_word) ++count;
    in_word = !space;
  }
  return count;
}

std::string words(int32_t count) {
  std::string text;
  for (int32_t i = 0; i < count; ++i) text += (i == 0 ? "w" : " w");
  return text;
}

std::string conversation(const std::string& id, const std::string& prompt, const std::string& answer) {
  return R"({"id": ")" + id + R"(", "conversations": [{"from": "human", "value": ")" + prompt +
         R"("}, {"from": "gpt", "value": ")" + answer + R"("}]})";
}

}  // namespace

BOOST_AUTO_TEST_SUITE(trace_readers)

// --- CSV -----------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(csv_records_follow_rfc_4180_with_quotes_crlf_and_line_breaks) {
  const auto records = read_csv(
      "\xEF\xBB\xBF"
      "a,b,c\r\n"
      "\"x, y\",\"he said \"\"hi\"\"\",\r\n"
      "\"multi\nline\",2,3\n"
      "\n"
      "last,,\"\"");
  BOOST_TEST_REQUIRE(records.size() == 4u);
  BOOST_TEST(records[0].fields == (std::vector<std::string>{"a", "b", "c"}));
  BOOST_TEST(records[0].line == 1);
  BOOST_TEST(records[1].fields == (std::vector<std::string>{"x, y", "he said \"hi\"", ""}));
  BOOST_TEST(records[1].line == 2);
  BOOST_TEST(records[2].fields == (std::vector<std::string>{"multi\nline", "2", "3"}));
  BOOST_TEST(records[2].line == 3);
  BOOST_TEST(records[3].fields == (std::vector<std::string>{"last", "", ""}));
  BOOST_TEST(records[3].line == 6);
  for (const CsvRecord& record : records) BOOST_TEST(record.error.empty());
}

BOOST_AUTO_TEST_CASE(malformed_csv_quoting_is_an_error_for_that_record_only) {
  const auto records = read_csv("a,b\"c,d\n\"a\"b,c\nok,1\nx,\"never closed\ny,2\n");
  BOOST_TEST_REQUIRE(records.size() == 4u);
  BOOST_TEST(records[0].line == 1);
  BOOST_TEST(contains(records[0].error, "quote inside an unquoted field 2"));
  BOOST_TEST(records[1].line == 2);
  BOOST_TEST(contains(records[1].error, "after a closing quote"));
  BOOST_TEST(records[2].error.empty());
  BOOST_TEST(records[2].fields == (std::vector<std::string>{"ok", "1"}));
  BOOST_TEST(records[3].line == 4);
  BOOST_TEST(contains(records[3].error, "unterminated quoted field"));
}

BOOST_AUTO_TEST_CASE(csv_columns_are_found_by_name_and_a_missing_one_is_named_with_the_file) {
  const auto records = read_csv(" TIMESTAMP , ContextTokens,Extra\n");
  const CsvColumns columns(records[0], {"TIMESTAMP", "ContextTokens"}, "f.csv");
  BOOST_TEST(columns.at("ContextTokens") == 1u);
  BOOST_TEST(columns.has("Extra"));
  BOOST_TEST(!columns.has("GeneratedTokens"));
  try {
    const CsvColumns missing(records[0], {"TIMESTAMP", "GeneratedTokens"}, "f.csv");
    BOOST_FAIL("no error");
  } catch (const TraceError& error) {
    BOOST_TEST(error.issue().file == "f.csv");
    BOOST_TEST(error.issue().line == 1);
    BOOST_TEST(error.issue().field == "GeneratedTokens");
    BOOST_TEST(contains(error.what(), "missing column (the header has: TIMESTAMP, ContextTokens, Extra)"));
  }
  BOOST_TEST(parse_csv_integer(" 42 ").value() == 42);
  BOOST_TEST(!parse_csv_integer("4x").has_value());
  BOOST_TEST(!parse_csv_integer("").has_value());
  BOOST_TEST(parse_csv_number("1.5").value() == 1.5);
  BOOST_TEST(!parse_csv_number("nan").has_value());
}

// --- Azure ---------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(civil_dates_count_days_from_1970_as_std_chrono_does) {
  BOOST_TEST(days_from_civil(1970, 1, 1) == 0);
  BOOST_TEST(days_from_civil(1969, 12, 31) == -1);
  BOOST_TEST(days_from_civil(2000, 3, 1) == 11017);
  BOOST_TEST(days_from_civil(2023, 11, 16) == 19677);
  using namespace std::chrono;
  int num_wrong = 0;
  for (sys_days day = sys_days(year{1890} / 1 / 1); day < sys_days(year{2110} / 1 / 1); day += days{1}) {
    const year_month_day date(day);
    const int64_t expected = day.time_since_epoch().count();
    if (days_from_civil(int32_t{date.year()}, static_cast<int32_t>(unsigned{date.month()}),
                        static_cast<int32_t>(unsigned{date.day()})) != expected) {
      ++num_wrong;
    }
  }
  BOOST_TEST(num_wrong == 0);
}

BOOST_AUTO_TEST_CASE(azure_timestamps_are_read_exactly_in_100_ns_ticks) {
  const int64_t day = days_from_civil(2023, 11, 16) * 86'400 * 10'000'000;
  BOOST_TEST(parse_azure_timestamp("2023-11-16 18:17:03.9799600").value() ==
             day + (18 * 3600 + 17 * 60 + 3) * 10'000'000LL + 9'799'600);
  BOOST_TEST(parse_azure_timestamp("2023-11-16 00:00:00.5").value() == day + 5'000'000);
  BOOST_TEST(parse_azure_timestamp("2023-11-16T00:00:01").value() == day + 10'000'000);
  BOOST_TEST(parse_azure_timestamp("2024-02-29 00:00:00").has_value());
  for (const char* bad : {"2023-02-29 00:00:00", "2023-11-16 24:00:00", "2023-11-16 18:60:00", "2023-13-01 00:00:00",
                          "2023-11-16 18:17:03.12345678", "2023-11-16 18:17:03.", "2023-11-16 18:17:03 ", "2023-11-16",
                          "23-11-16 18:17:03", "2023/11/16 18:17:03", ""}) {
    BOOST_TEST(!parse_azure_timestamp(bad).has_value(), bad);
  }
}

BOOST_AUTO_TEST_CASE(azure_rows_become_length_requests_timed_from_the_first_row) {
  const std::string csv =
      "TIMESTAMP,ContextTokens,GeneratedTokens\n"  // 1
      "2023-11-16 23:59:59.5000000,100,10\n"       // 2
      "2023-11-17 00:00:00.0000001,200,20\n"       // 3 across midnight
      "2023-11-16 23:59:59.75,0,5\n"               // 4 no prompt: skipped
      "not-a-time,10,10\n"                         // 5 error
      "2023-11-17 00:01:00.25,300,0\n"             // 6 no output: skipped
      "2023-11-17 00:01:00.25,300\n"               // 7 error: 2 fields
      "2023-11-17 00:01:01.25,-4,3\n"              // 8 error
      "2023-11-17 00:01:01.25,4,x\n"               // 9 error
      "2023-11-17 00:01:00.5,400,40\r\n"           // 10
      "\n"                                         // 11 blank
      "2023-11-17 00:01:01.25,500,1";              // 12
  std::istringstream in(csv);
  ReadReport report;
  const Trace trace = read_azure_trace(in, "code.csv", {}, &report);
  BOOST_TEST(trace.header.source == "azure:code.csv");
  BOOST_TEST(source_lines(trace) == (std::vector<int64_t>{2, 3, 10, 12}));
  BOOST_TEST(arrivals(trace) == (std::vector<double>{0.0, 0.5000001, 61.0, 61.75}));
  BOOST_TEST(trace.requests[2].prompt_len == 400);
  BOOST_TEST(trace.requests[2].output_len == 40);
  BOOST_TEST((trace.requests[2].prompt_kind == PromptKind::length));
  BOOST_TEST(report.lines_read == 10);
  BOOST_TEST(report.requests_accepted == 4);
  BOOST_TEST(report.lines_skipped == 6);
  BOOST_TEST(where(report.errors) == (Where{{5, "TIMESTAMP"}, {7, ""}, {8, "ContextTokens"}, {9, "GeneratedTokens"}}));
  BOOST_TEST(where(report.warnings) == (Where{{4, "ContextTokens"}, {6, "GeneratedTokens"}}));
  BOOST_TEST(contains(report.warnings[1].message, "GeneratedTokens is 0"));
  BOOST_TEST(contains(report.warnings[1].message, "(1 record;"));
  BOOST_TEST(contains(report.errors[1].message, "expected 3 fields"));
  BOOST_TEST(!report.reordered);
}

BOOST_AUTO_TEST_CASE(an_azure_file_without_a_needed_column_is_refused_naming_it) {
  std::istringstream in("TIMESTAMP,ContextTokens,Generated\n2023-11-16 00:00:00,1,1\n");
  try {
    read_azure_trace(in, "x.csv");
    BOOST_FAIL("no error");
  } catch (const TraceError& error) {
    BOOST_TEST(std::string(error.what()).starts_with("x.csv:1: GeneratedTokens: missing column"), error.what());
  }
  std::istringstream empty("");
  BOOST_CHECK_THROW(read_azure_trace(empty, "empty.csv"), TraceError);
}

BOOST_AUTO_TEST_CASE(azure_errors_stop_the_read_under_fail) {
  std::istringstream in("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 00:00:00,1,1\n2023-11-16 00:00:00,1,y\n");
  try {
    read_azure_trace(in, "x.csv", ReadOptions{OnError::fail, OutOfOrder::sort});
    BOOST_FAIL("no error");
  } catch (const TraceError& error) {
    BOOST_TEST(error.issue().line == 3);
    BOOST_TEST(error.issue().field == "GeneratedTokens");
  }
}

// --- BurstGPT ------------------------------------------------------------------------------

const std::string kBurstGpt =
    "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"  // 1
    "5,ChatGPT,472,18,490,Conversation log\n"                                 // 2
    "45,ChatGPT,1087,0,1087,Conversation log\n"                               // 3 failed
    "118,GPT-4,417,217,634,API log\n"                                         // 4
    "100,GPT-4,20,30,50,Conversation log\n"                                   // 5 earlier than 4
    "abc,ChatGPT,1,1,2,API log\n"                                             // 6 error
    "130,ChatGPT,0,5,5,API log\n"                                             // 7 no prompt
    "131,\"GPT-4\",12,\"7\",19,\"API log\"\n";                                // 8 quoted

BOOST_AUTO_TEST_CASE(burstgpt_rows_are_timed_from_the_first_and_failures_are_counted) {
  std::istringstream in(kBurstGpt);
  ReadReport report;
  const Trace trace = read_burstgpt_trace(in, "burst.csv", {}, {}, &report);
  BOOST_TEST(trace.header.source == "burstgpt:burst.csv");
  BOOST_TEST(source_lines(trace) == (std::vector<int64_t>{2, 5, 4, 8}));
  BOOST_TEST(arrivals(trace) == (std::vector<double>{0.0, 95.0, 113.0, 126.0}));
  BOOST_TEST(trace.requests[3].prompt_len == 12);
  BOOST_TEST(trace.requests[3].output_len == 7);
  BOOST_TEST(report.reordered);
  BOOST_TEST(report.lines_read == 7);
  BOOST_TEST(report.lines_skipped == 3);
  BOOST_TEST(where(report.errors) == (Where{{6, "Timestamp"}}));
  BOOST_TEST(where(report.warnings) == (Where{{3, "Response tokens"}, {7, "Request tokens"}, {5, "arrival_time"}}));
}

BOOST_AUTO_TEST_CASE(burstgpt_rows_are_filtered_by_model_and_log_type) {
  {
    std::istringstream in(kBurstGpt);
    ReadReport report;
    const Trace trace = read_burstgpt_trace(in, "burst.csv", BurstGptOptions{"GPT-4", ""}, {}, &report);
    BOOST_TEST(source_lines(trace) == (std::vector<int64_t>{5, 4, 8}));
    BOOST_TEST(arrivals(trace) == (std::vector<double>{95.0, 113.0, 126.0}));  // the file's clock
    BOOST_TEST(report.lines_skipped == 4);
    BOOST_TEST_REQUIRE(report.warnings.size() == 2u);
    BOOST_TEST(report.warnings[0].field == "Model");
    BOOST_TEST(report.warnings[0].line == 2);
    BOOST_TEST(contains(report.warnings[0].message, "(3 records;"));
  }
  {
    std::istringstream in(kBurstGpt);
    ReadReport report;
    const Trace trace = read_burstgpt_trace(in, "burst.csv", BurstGptOptions{"", "Conversation log"}, {}, &report);
    BOOST_TEST(source_lines(trace) == (std::vector<int64_t>{2, 5}));
    BOOST_TEST(where(report.warnings) == (Where{{3, "Response tokens"}, {4, "Log Type"}}));
    BOOST_TEST(contains(report.warnings[1].message, "(3 records;"));
  }
  {
    std::istringstream in(kBurstGpt);
    const Trace trace = read_burstgpt_trace(in, "burst.csv", BurstGptOptions{"GPT-4", "Conversation log"});
    BOOST_TEST(source_lines(trace) == (std::vector<int64_t>{5}));
  }
  // The Model column is needed only to filter by it.
  std::istringstream no_model("Timestamp,Request tokens,Response tokens\n1,2,3\n");
  BOOST_TEST(read_burstgpt_trace(no_model, "b.csv").requests.size() == 1u);
  std::istringstream no_model_again("Timestamp,Request tokens,Response tokens\n1,2,3\n");
  try {
    read_burstgpt_trace(no_model_again, "b.csv", BurstGptOptions{"GPT-4", ""});
    BOOST_FAIL("no error");
  } catch (const TraceError& error) {
    BOOST_TEST(error.issue().field == "Model");
  }
}

// --- Mooncake ------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(mooncake_lines_keep_their_hash_ids_and_are_timed_in_seconds) {
  const std::vector<std::string> lines{
      R"({"timestamp": 1000, "input_length": 1024, "output_length": 10, "hash_ids": [0, 1]})",         // 1
      R"({"timestamp": 1500, "input_length": 1025, "output_length": 5, "hash_ids": [0, 1, 2]})",       // 2
      "",                                                                                              // 3
      R"({"timestamp": 2000, "input_length": 600, "output_length": 3, "hash_ids": [7]})",              // 4 fewer ids
      R"({"timestamp": 2500, "input_length": 512, "output_length": 3, "hash_ids": [1, 2]})",           // 5 more ids
      R"({"timestamp": 2600, "input_length": 10, "output_length": 0, "hash_ids": [3]})",               // 6 no output
      R"({"timestamp": "x", "input_length": 10, "output_length": 1, "hash_ids": [3]})",                // 7
      R"({"timestamp": 3000, "input_length": -1, "output_length": 1, "hash_ids": []})",                // 8
      R"({"timestamp": 3000, "output_length": 1, "hash_ids": []})",                                    // 9
      R"({"timestamp": 3000, "input_length": 5)",                                                      // 10
      R"({"timestamp": 3000, "input_length": 5, "output_length": 1, "hash_ids": [1, -2]})",            // 11
      R"({"timestamp": 4250, "input_length": 100, "output_length": 7, "hash_ids": [9], "extra": 1})",  // 12
  };
  std::string jsonl;
  for (const std::string& line : lines) jsonl += line + "\n";
  std::istringstream in(jsonl);
  ReadReport report;
  const Trace trace = read_mooncake_trace(in, "mc.jsonl", {}, {}, &report);
  BOOST_TEST(trace.header.source == "mooncake:mc.jsonl");
  BOOST_TEST(trace.header.prefix_block_tokens == 512);
  BOOST_TEST(source_lines(trace) == (std::vector<int64_t>{1, 2, 4, 12}));
  BOOST_TEST(arrivals(trace) == (std::vector<double>{0.0, 0.5, 1.0, 3.25}));
  BOOST_TEST(trace.requests[1].prefix_block_ids == (std::vector<uint64_t>{0, 1, 2}));
  BOOST_TEST(trace.requests[1].prompt_len == 1025);
  BOOST_TEST(trace.requests[1].output_len == 5);
  BOOST_TEST(report.lines_read == 11);
  BOOST_TEST(report.lines_skipped == 7);
  BOOST_TEST(
      where(report.errors) ==
      (Where{
          {5, "hash_ids"}, {7, "timestamp"}, {8, "input_length"}, {9, "input_length"}, {10, ""}, {11, "hash_ids[1]"}}));
  BOOST_TEST(where(report.warnings) == (Where{{4, "hash_ids"}, {6, "output_length"}}));
}

BOOST_AUTO_TEST_CASE(mooncake_block_size_can_be_overridden) {
  std::istringstream in(R"({"timestamp": 0, "input_length": 1025, "output_length": 5, "hash_ids": [0, 1]})"
                        "\n"
                        R"({"timestamp": 0, "input_length": 1025, "output_length": 5, "hash_ids": [0, 1, 2]})"
                        "\n");
  ReadReport report;
  const Trace trace = read_mooncake_trace(in, "mc.jsonl", MooncakeOptions{1024}, {}, &report);
  BOOST_TEST(trace.header.prefix_block_tokens == 1024);
  BOOST_TEST(source_lines(trace) == (std::vector<int64_t>{1}));
  BOOST_TEST(where(report.errors) == (Where{{2, "hash_ids"}}));
}

// --- ShareGPT ------------------------------------------------------------------------------

// Entries, with whitespace token counts: 1 ok (5, 6); 2 one turn; 3 prompt of 3; 4 output of 2;
// 5 prompt of 1025; 6 1000 + 1049 = 2049; 7 conversations not an array; 8 an answer that is a
// number; 9 not an object; 10 ok (4, 4; a third turn ignored); 11 empty answer; 12 ok without id
// or "from"; 13 id not a string; 14 ok at both bounds (1024 + 1024 = 2048).
std::string sharegpt_sample() {
  return "[" + conversation("a", "one two three four five", "a b c d e f") + ",\n" +
         R"({"id": "b", "conversations": [{"from": "human", "value": "only one turn here"}]})" + ",\n" +
         conversation("c", "too short now", "w w w w") + ",\n" + conversation("d", "p p p p", "o o") + ",\n" +
         conversation("e", words(1025), "o o o o") + ",\n" + conversation("f", words(1000), words(1049)) + ",\n" +
         R"({"id": "g", "conversations": "oops"})" + ",\n" +
         R"({"id": "h", "conversations": [{"from": "human", "value": "x y z w"}, {"from": "gpt", "value": 5}]})" +
         ",\n42,\n" +
         R"({"id": "j", "conversations": [{"from": "human", "value": "a b c d"}, {"from": "gpt", "value": "e f g h"},)" +
         R"( {"from": "human", "value": "more"}]})" + ",\n" + conversation("k", "p q r s t", "") + ",\n" +
         R"({"conversations": [{"value": "1 2 3 4"}, {"value": "5 6 7 8"}]})" + ",\n" +
         R"({"id": 5, "conversations": [{"value": "1 2 3 4"}, {"value": "5 6 7 8"}]})" + ",\n" +
         conversation("n", words(1024), words(1024)) + "]";
}

ShareGptOptions word_counting() {
  ShareGptOptions options;
  options.count_tokens = count_words;
  return options;
}

BOOST_AUTO_TEST_CASE(sharegpt_applies_vllm_filters_with_one_counted_warning_per_rule) {
  std::istringstream in(sharegpt_sample());
  ReadReport report;
  const Trace trace = read_sharegpt_trace(in, "sg.json", word_counting(), {}, &report);
  BOOST_TEST(trace.header.source == "sharegpt:sg.json");
  BOOST_TEST(source_lines(trace) == (std::vector<int64_t>{1, 10, 12, 14}));
  BOOST_TEST_REQUIRE(trace.requests.size() == 4u);
  const TraceRequest& first = trace.requests[0];
  BOOST_TEST((first.prompt_kind == PromptKind::text));
  BOOST_TEST(first.prompt_text == "one two three four five");
  BOOST_TEST(first.prompt_len == 5);
  BOOST_TEST(first.output_len == 6);
  BOOST_TEST(first.session_id == "a");
  BOOST_TEST(first.arrival_time == 0.0);
  BOOST_TEST(trace.requests[2].session_id.empty());
  BOOST_TEST(trace.requests[3].prompt_len == 1024);
  BOOST_TEST(trace.requests[3].output_len == 1024);
  BOOST_TEST(report.lines_read == 14);
  BOOST_TEST(report.requests_accepted == 4);
  BOOST_TEST(report.lines_skipped == 10);
  BOOST_TEST(where(report.errors) == (Where{{7, "conversations"}, {8, "conversations[1].value"}, {9, ""}, {13, "id"}}));
  BOOST_TEST(contains(report.errors[0].message, "entry 7: "));
  BOOST_TEST(contains(report.errors[2].message, "entry 9: expected an object"));
  BOOST_TEST_REQUIRE(report.warnings.size() == 4u);
  BOOST_TEST(report.warnings[0].line == 2);
  BOOST_TEST(contains(report.warnings[0].message, "fewer than 2 turns (1 record;"));
  BOOST_TEST(report.warnings[1].line == 3);
  BOOST_TEST(contains(report.warnings[1].message, "under 4 tokens (vLLM's filter) (3 records;"));
  BOOST_TEST(report.warnings[2].line == 5);
  BOOST_TEST(contains(report.warnings[2].message, "prompt over 1024 tokens (vLLM's filter) (1 record;"));
  BOOST_TEST(report.warnings[3].line == 6);
  BOOST_TEST(contains(report.warnings[3].message, "prompt + output over 2048 tokens (vLLM's filter) (1 record;"));
}

BOOST_AUTO_TEST_CASE(sharegpt_filters_can_be_switched_off_but_empty_outputs_stay_out) {
  std::istringstream in(sharegpt_sample());
  ReadReport report;
  ShareGptOptions options = word_counting();
  options.filter = false;
  const Trace trace = read_sharegpt_trace(in, "sg.json", options, {}, &report);
  BOOST_TEST(source_lines(trace) == (std::vector<int64_t>{1, 3, 4, 5, 6, 10, 12, 14}));
  BOOST_TEST(report.lines_skipped == 6);
  BOOST_TEST(where(report.warnings) == (Where{{2, "conversations"}, {11, "conversations[1].value"}}));
}

BOOST_AUTO_TEST_CASE(sharegpt_stops_after_max_requests) {
  std::istringstream in(sharegpt_sample());
  ReadReport report;
  ShareGptOptions options = word_counting();
  options.max_requests = 2;
  const Trace trace = read_sharegpt_trace(in, "sg.json", options, {}, &report);
  BOOST_TEST(source_lines(trace) == (std::vector<int64_t>{1, 10}));
  BOOST_TEST(report.lines_read == 10);
  BOOST_TEST(report.requests_accepted == 2);
}

BOOST_AUTO_TEST_CASE(sharegpt_refuses_a_file_that_is_not_an_array_or_a_missing_counter) {
  std::istringstream object(R"({"id": "a", "conversations": []})");
  BOOST_CHECK_THROW(read_sharegpt_trace(object, "sg.json", word_counting()), TraceError);
  std::istringstream broken(R"([{"id": "a", "conversations": [})");
  BOOST_CHECK_THROW(read_sharegpt_trace(broken, "sg.json", word_counting()), TraceError);
  std::istringstream fine("[]");
  try {
    read_sharegpt_trace(fine, "sg.json", ShareGptOptions{});
    BOOST_FAIL("no error");
  } catch (const TraceError& error) {
    BOOST_TEST(error.issue().field == "count_tokens");
  }
  std::istringstream bad_entry(sharegpt_sample());
  try {
    read_sharegpt_trace(bad_entry, "sg.json", word_counting(), ReadOptions{OnError::fail, OutOfOrder::sort});
    BOOST_FAIL("no error");
  } catch (const TraceError& error) {
    BOOST_TEST(std::string(error.what()).starts_with("sg.json:7: conversations: entry 7: "), error.what());
  }
}

// --- Formats by name -----------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(trace_formats_are_named_and_an_unknown_name_lists_the_valid_ones) {
  for (const TraceFormat format : {TraceFormat::pagedllm, TraceFormat::sharegpt, TraceFormat::azure,
                                   TraceFormat::burstgpt, TraceFormat::mooncake}) {
    BOOST_TEST((parse_trace_format(to_string(format)) == format));
  }
  try {
    parse_trace_format("csv");
    BOOST_FAIL("no error");
  } catch (const TraceError& error) {
    BOOST_TEST(error.issue().field == "format");
    BOOST_TEST(contains(error.what(), "'csv' (valid: pagedllm, sharegpt, azure, burstgpt, mooncake)"));
  }
}

BOOST_AUTO_TEST_CASE(read_any_trace_reads_each_format_from_its_path) {
  const TempFile azure("a.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 00:00:00,5,6\n");
  const TempFile burst("b.csv", kBurstGpt);
  const TempFile mooncake("m.jsonl", R"({"timestamp": 0, "input_length": 5, "output_length": 1, "hash_ids": [4]})");
  const TempFile sharegpt("s.json", sharegpt_sample());
  const TempFile ours("p.jsonl", R"({"arrival_time": 0, "prompt_len": 5, "output_len": 1})");
  ConverterOptions converters;
  converters.sharegpt = word_counting();
  converters.burstgpt.model = "GPT-4";
  BOOST_TEST(read_any_trace(azure.path, TraceFormat::azure).header.source == "azure:" + azure.path);
  BOOST_TEST(read_any_trace(burst.path, TraceFormat::burstgpt, {}, nullptr, converters).requests.size() == 3u);
  BOOST_TEST(read_any_trace(mooncake.path, TraceFormat::mooncake).requests.at(0).prefix_block_ids ==
             (std::vector<uint64_t>{4}));
  BOOST_TEST(read_any_trace(sharegpt.path, TraceFormat::sharegpt, {}, nullptr, converters).requests.size() == 4u);
  BOOST_TEST(read_any_trace(ours.path, TraceFormat::pagedllm).requests.at(0).prompt_len == 5);
  try {
    read_any_trace(azure.path + ".missing", TraceFormat::azure);
    BOOST_FAIL("no error");
  } catch (const TraceError& error) {
    BOOST_TEST(error.issue().file == azure.path + ".missing");
  }
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace pagedllm::trace
