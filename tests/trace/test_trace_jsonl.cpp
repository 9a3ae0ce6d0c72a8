// The JSONL trace format: round trips, every per-line error with its line and field, the header,
// and the out-of-order rule.
#include <unistd.h>

#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/trace/trace.h"
#include "core/trace/trace_jsonl.h"
#include "tests/trace/trace_columns.h"

namespace pagedllm::trace {
namespace {

namespace fs = std::filesystem;

constexpr const char* kName = "t.jsonl";

Trace read_text(const std::string& text, const ReadOptions& options = {}, ReadReport* report = nullptr) {
  std::istringstream in(text);
  return read_trace_jsonl(in, kName, options, report);
}

std::string write_text(const Trace& trace) {
  std::ostringstream out;
  write_trace_jsonl(trace, out);
  return out.str();
}

// The TraceError a read throws (its issue), or an issue saying none was thrown.
TraceIssue read_error(const std::string& text, const ReadOptions& options = {}) {
  try {
    read_text(text, options);
  } catch (const TraceError& error) {
    BOOST_TEST(std::string(error.what()) == error.issue().to_string());
    return error.issue();
  }
  return TraceIssue{"", 0, "", "(no error)"};
}

using testing::source_lines;

bool same_sampling(const sched::SamplingParams& a, const sched::SamplingParams& b) {
  return a.n == b.n && a.beam_width == b.beam_width && a.temperature == b.temperature && a.top_p == b.top_p &&
         a.top_k == b.top_k && a.min_p == b.min_p && a.repetition_penalty == b.repetition_penalty &&
         a.presence_penalty == b.presence_penalty && a.frequency_penalty == b.frequency_penalty && a.seed == b.seed &&
         a.logprobs == b.logprobs && a.ignore_eos == b.ignore_eos && a.stop_token_ids == b.stop_token_ids;
}

void check_same_request(const TraceRequest& a, const TraceRequest& b) {
  BOOST_TEST(a.arrival_time == b.arrival_time);
  BOOST_TEST((a.prompt_kind == b.prompt_kind));
  BOOST_TEST(a.prompt_text == b.prompt_text);
  BOOST_TEST(a.prompt_tokens == b.prompt_tokens);
  BOOST_TEST(a.prompt_len == b.prompt_len);
  BOOST_TEST(a.output_len == b.output_len);
  BOOST_TEST(a.prefix_block_ids == b.prefix_block_ids);
  BOOST_TEST(a.sampling.has_value() == b.sampling.has_value());
  if (a.sampling && b.sampling) BOOST_TEST(same_sampling(*a.sampling, *b.sampling));
  BOOST_TEST(a.session_id == b.session_id);
  BOOST_TEST(a.priority == b.priority);
  BOOST_TEST(a.simulated_speculation.has_value() == b.simulated_speculation.has_value());
  if (a.simulated_speculation && b.simulated_speculation) {
    BOOST_TEST(a.simulated_speculation->draft_rate == b.simulated_speculation->draft_rate);
    BOOST_TEST(a.simulated_speculation->accepted_per_position == b.simulated_speculation->accepted_per_position,
               boost::test_tools::per_element());
  }
}

Trace sample_trace() {
  Trace trace;
  trace.header.prefix_block_tokens = 16;
  trace.header.source = "azure:/data/x.csv";
  trace.header.command = "pagedllm trace convert --format azure \"x y.csv\"";
  TraceRequest text;
  text.arrival_time = 0.1 + 0.2;  // 0.30000000000000004: needs all 17 digits
  text.prompt_kind = PromptKind::text;
  text.prompt_text = "Hello, \"world\"\n\ttab é 日本";
  text.prompt_len = 9;
  text.output_len = 7;
  text.session_id = "conv-1";
  TraceRequest tokens;
  tokens.arrival_time = 1e-9;
  tokens.prompt_kind = PromptKind::tokens;
  tokens.prompt_tokens = {1, 0, 2147483647, 42};
  tokens.prompt_len = 4;
  tokens.output_len = 1;
  tokens.priority = -3;
  sched::SamplingParams sampling;
  sampling.n = 3;
  sampling.beam_width = 4;
  sampling.temperature = 0.7f;
  sampling.top_p = 0.9f;
  sampling.top_k = -1;
  sampling.min_p = 0.05f;
  sampling.repetition_penalty = 1.1f;
  sampling.presence_penalty = -0.5f;
  sampling.frequency_penalty = 1.0f / 3.0f;
  sampling.seed = 18446744073709551615ULL;
  sampling.logprobs = 0;
  sampling.ignore_eos = true;
  sampling.stop_token_ids = {2, 7};
  tokens.sampling = sampling;
  TraceRequest length;
  length.arrival_time = 12345.678901234567;
  length.prompt_len = 40;
  length.output_len = 2000;
  length.prefix_block_ids = {0, 18446744073709551615ULL, 5};
  length.sampling = sched::SamplingParams{};  // set, all defaults
  length.simulated_speculation =
      spec::SimulatedAcceptance{.draft_rate = 13.0 / 15.0, .accepted_per_position = {1.0, 0.9230769230769231, 0.0}};
  TraceRequest unmeasured_text;  // text with no measured length
  unmeasured_text.arrival_time = 12345.678901234567;
  unmeasured_text.prompt_kind = PromptKind::text;
  unmeasured_text.prompt_text = "";
  unmeasured_text.output_len = 3;
  trace.requests = {tokens, text, length, unmeasured_text};  // in arrival order
  return trace;
}

// A temp file path, removed afterwards.
struct TempPath {
  std::string path;
  explicit TempPath(const std::string& suffix)
      : path((fs::temp_directory_path() / ("pagedllm_trace_" + std::to_string(::getpid()) + "_" + suffix)).string()) {}
  ~TempPath() { fs::remove(path); }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(trace_jsonl)

BOOST_AUTO_TEST_CASE(issues_print_as_file_line_field_message_leaving_out_what_is_unknown) {
  BOOST_TEST((TraceIssue{"a.jsonl", 3, "output_len", "bad"}.to_string() == "a.jsonl:3: output_len: bad"));
  BOOST_TEST((TraceIssue{"a.jsonl", 0, "output_len", "bad"}.to_string() == "a.jsonl: output_len: bad"));
  BOOST_TEST((TraceIssue{"a.jsonl", 3, "", "bad"}.to_string() == "a.jsonl:3: bad"));
  BOOST_TEST((TraceIssue{"", 3, "", "bad"}.to_string() == "line 3: bad"));
  BOOST_TEST((TraceIssue{"", 0, "format", "bad"}.to_string() == "format: bad"));
  BOOST_TEST(std::string(to_string(PromptKind::text)) == "text");
  BOOST_TEST(std::string(to_string(PromptKind::tokens)) == "tokens");
  BOOST_TEST(std::string(to_string(PromptKind::length)) == "length");
}

BOOST_AUTO_TEST_CASE(reading_what_was_written_gives_the_same_trace) {
  const Trace trace = sample_trace();
  const std::string text = write_text(trace);
  ReadReport report;
  const Trace back = read_text(text, {}, &report);
  BOOST_TEST(back.header.version == kTraceFormatVersion);
  BOOST_TEST(back.header.prefix_block_tokens == 16);
  BOOST_TEST(back.header.source == trace.header.source);
  BOOST_TEST(back.header.command == trace.header.command);
  BOOST_TEST_REQUIRE(back.requests.size() == trace.requests.size());
  for (size_t i = 0; i < trace.requests.size(); ++i) {
    BOOST_TEST_CONTEXT("request " << i) {
      check_same_request(back.requests[i], trace.requests[i]);
      BOOST_TEST(back.requests[i].source_line == static_cast<int64_t>(i) + 2);  // after the header
    }
  }
  BOOST_TEST(report.lines_read == 4);
  BOOST_TEST(report.requests_accepted == 4);
  BOOST_TEST(report.lines_skipped == 0);
  BOOST_TEST(report.errors.empty());
  BOOST_TEST(report.warnings.empty());
  BOOST_TEST(!report.reordered);
  BOOST_TEST(write_text(back) == text);  // and writing it again gives the same bytes
}

BOOST_AUTO_TEST_CASE(written_lines_hold_only_what_is_set_and_floats_print_short) {
  Trace trace;
  TraceRequest request;
  request.arrival_time = 0.5;
  request.prompt_len = 10;
  request.output_len = 3;
  trace.requests.push_back(request);
  request.sampling = sched::SamplingParams{};
  request.sampling->temperature = 0.7f;
  trace.requests.push_back(request);
  BOOST_TEST(write_text(trace) ==
             "{\"pagedllm_trace\":1,\"prefix_block_tokens\":512}\n"
             "{\"arrival_time\":0.5,\"prompt_len\":10,\"output_len\":3}\n"
             "{\"arrival_time\":0.5,\"prompt_len\":10,\"output_len\":3,\"sampling\":{\"temperature\":0.7}}\n");
}

BOOST_AUTO_TEST_CASE(every_float_and_double_survives_the_round_trip_exactly) {
  std::mt19937_64 random(7);
  Trace trace;
  double time = 0.0;
  for (int i = 0; i < 2000; ++i) {
    TraceRequest request;
    time += std::uniform_real_distribution<double>(0.0, 1e3)(random);
    request.arrival_time = time;
    request.prompt_len = 1;
    request.output_len = 1;
    request.sampling = sched::SamplingParams{};
    // Arbitrary bit patterns of finite floats, small and large.
    uint32_t bits = static_cast<uint32_t>(random());
    float value = 0.0f;
    do {
      bits = static_cast<uint32_t>(random());
      std::memcpy(&value, &bits, sizeof value);
    } while (!std::isfinite(value));
    request.sampling->temperature = value;
    request.sampling->top_p = std::uniform_real_distribution<float>(0.0f, 1.0f)(random);
    trace.requests.push_back(request);
  }
  ReadReport report;
  const Trace back = read_text(write_text(trace), {}, &report);
  BOOST_TEST_REQUIRE(back.requests.size() == trace.requests.size());
  int num_different = 0;
  for (size_t i = 0; i < trace.requests.size(); ++i) {
    const TraceRequest& a = trace.requests[i];
    const TraceRequest& b = back.requests[i];
    if (a.arrival_time != b.arrival_time || a.sampling->temperature != b.sampling->temperature ||
        a.sampling->top_p != b.sampling->top_p) {
      ++num_different;
    }
  }
  BOOST_TEST(num_different == 0);
}

BOOST_AUTO_TEST_CASE(blank_lines_comments_and_crlf_are_ignored_but_keep_line_numbers) {
  ReadReport report;
  const Trace trace = read_text(
      "# made by hand\r\n"
      "\n"
      "{\"pagedllm_trace\": 1, \"prefix_block_tokens\": 4}\r\n"
      "   \n"
      "  # indented comment\n"
      "{\"arrival_time\": 0, \"prompt_len\": 3, \"output_len\": 1}\r\n"
      "\n"
      "{\"arrival_time\": 1, \"prompt\": \"hi\", \"output_len\": 2}",
      {}, &report);
  BOOST_TEST(trace.header.prefix_block_tokens == 4);
  BOOST_TEST(trace.header.source == "pagedllm:t.jsonl");  // no source in the header: the file
  BOOST_TEST(source_lines(trace) == (std::vector<int64_t>{6, 8}));
  BOOST_TEST(report.lines_read == 2);
  BOOST_TEST(report.requests_accepted == 2);
  BOOST_TEST((trace.requests[1].prompt_kind == PromptKind::text));
  BOOST_TEST(trace.requests[1].prompt_len == 0);  // not measured
}

BOOST_AUTO_TEST_CASE(a_header_of_an_unknown_version_is_refused_even_when_skipping) {
  const TraceIssue issue =
      read_error("# c\n{\"pagedllm_trace\": 2}\n{\"arrival_time\": 0, \"prompt_len\": 3, \"output_len\": 1}\n");
  BOOST_TEST(issue.file == kName);
  BOOST_TEST(issue.line == 2);
  BOOST_TEST(issue.field == "pagedllm_trace");
  BOOST_TEST(issue.message.find("unknown trace format version 2") != std::string::npos);
  BOOST_TEST(read_error("{\"pagedllm_trace\": \"1\"}").field == "pagedllm_trace");
  BOOST_TEST(read_error("{\"pagedllm_trace\": 1, \"prefix_block_tokens\": 0}").field == "prefix_block_tokens");
  BOOST_TEST(read_error("{\"pagedllm_trace\": 1, \"sorce\": \"x\"}").field == "sorce");
  BOOST_TEST(read_error("{\"pagedllm_trace\": 1, \"command\": 3}").field == "command");
}

BOOST_AUTO_TEST_CASE(a_header_after_the_first_line_is_a_bad_line) {
  ReadReport report;
  const Trace trace = read_text(
      "{\"arrival_time\": 0, \"prompt_len\": 3, \"output_len\": 1}\n"
      "{\"pagedllm_trace\": 1}\n"
      "{\"arrival_time\": 1, \"prompt_len\": 3, \"output_len\": 1}\n",
      {}, &report);
  BOOST_TEST(source_lines(trace) == (std::vector<int64_t>{1, 3}));
  BOOST_TEST_REQUIRE(report.errors.size() == 1u);
  BOOST_TEST(report.errors[0].line == 2);
  BOOST_TEST(report.errors[0].field == "pagedllm_trace");
}

// Each case: a bad line between two good ones; the bad one is reported with its line (3: a
// comment comes first) and field, and both good ones are kept.
BOOST_AUTO_TEST_CASE(each_bad_line_is_reported_with_its_line_and_field_and_the_rest_is_kept) {
  struct Case {
    std::string line;
    std::string field;
    std::string message;  // a part of it
  };
  const std::vector<Case> cases{
      {R"({"arrival_time": 1, "prompt_len": 3, "output_len": )", "", "malformed JSON"},
      {R"(not json)", "", "malformed JSON"},
      {R"([1, 2])", "", "expected a JSON object"},
      {R"({"prompt_len": 3, "output_len": 1})", "arrival_time", "missing"},
      {R"({"arrival_time": 1, "prompt_len": 3})", "output_len", "missing"},
      {R"({"arrival_time": 1, "output_len": 1})", "prompt", "missing"},
      {R"({"arrival_time": 1, "prompt": "a", "prompt_token_ids": [1], "output_len": 1})", "prompt_token_ids",
       "not both"},
      {R"({"arrival_time": "1", "prompt_len": 3, "output_len": 1})", "arrival_time", "expected a number, found string"},
      {R"({"arrival_time": null, "prompt_len": 3, "output_len": 1})", "arrival_time", "expected a number, found null"},
      {R"({"arrival_time": 1, "prompt_len": "3", "output_len": 1})", "prompt_len", "expected a non-negative integer"},
      {R"({"arrival_time": 1, "prompt_len": 3, "output_len": 1.5})", "output_len", "expected a positive integer"},
      {R"({"arrival_time": 1, "prompt": 7, "output_len": 1})", "prompt", "expected a string"},
      {R"({"arrival_time": -0.5, "prompt_len": 3, "output_len": 1})", "arrival_time", "must not be negative"},
      {R"({"arrival_time": 1, "prompt_len": -3, "output_len": 1})", "prompt_len", "must not be negative"},
      {R"({"arrival_time": 1, "prompt": "x", "prompt_len": -3, "output_len": 1})", "prompt_len",
       "must not be negative"},
      {R"({"arrival_time": 1, "prompt_len": 0, "output_len": 1})", "prompt_len", "at least 1 token"},
      {R"({"arrival_time": 1, "prompt_len": 3, "output_len": 0})", "output_len", "must be at least 1"},
      {R"({"arrival_time": 1, "prompt_len": 3, "output_len": -2})", "output_len", "must be at least 1"},
      {R"({"arrival_time": 1, "prompt_len": 3, "output_len": 2147483648})", "output_len", "out of range"},
      {R"({"arrival_time": 1e999, "prompt_len": 3, "output_len": 1})", "arrival_time", "must be finite"},
      {R"({"arrival_time": 1, "prompt_len": 3, "output_len": 1, "sampling": {"top_p": -1e400}})", "sampling.top_p",
       "must be finite"},
      {R"({"arrival_time": 1, "prompt_len": 3, "output_len": 1, "simulated_speculation": [0.5]})",
       "simulated_speculation", "expected an object"},
      {R"({"arrival_time": 1, "prompt_len": 3, "output_len": 1, "simulated_speculation": {"acceptance": [0.5]}})",
       "simulated_speculation.draft_rate", "missing"},
      {R"({"arrival_time": 1, "prompt_len": 3, "output_len": 1, "simulated_speculation": {"draft_rate": 0.5}})",
       "simulated_speculation.acceptance", "missing"},
      {R"({"arrival_time": 1, "prompt_len": 3, "output_len": 1, "simulated_speculation": )"
       R"({"draft_rate": 1.5, "acceptance": [0.5]}})",
       "simulated_speculation.draft_rate", "must be in [0, 1]"},
      {R"({"arrival_time": 1, "prompt_len": 3, "output_len": 1, "simulated_speculation": )"
       R"({"draft_rate": 0.5, "acceptance": [0.5, 0.7]}})",
       "simulated_speculation.acceptance[1]", "the entry before"},
      {R"({"arrival_time": 1, "prompt_len": 3, "output_len": 1, "simulated_speculation": )"
       R"({"draft_rate": 0.5, "acceptance": [0.5], "rate": 1}})",
       "simulated_speculation.rate", "unknown key"},
      {R"({"arrival_time": 1, "prompt_len": 3, "output_len": 1, "sampling": {"temperature": 1e300}})",
       "sampling.temperature", "out of range for a 32-bit float"},
      {R"({"arival_time": 1, "prompt_len": 3, "output_len": 1})", "arival_time", "unknown key"},
      {R"({"arrival_time": 1, "prompt_len": 3, "output_len": 1, "sampling": {"temprature": 0}})", "sampling.temprature",
       "unknown key"},
      {R"({"arrival_time": 1, "prompt_len": 3, "output_len": 1, "sampling": [1]})", "sampling",
       "expected an object, found array"},
      {R"({"arrival_time": 1, "prompt_len": 3, "output_len": 1, "sampling": {"temperature": "hot"}})",
       "sampling.temperature", "expected a number, found string"},
      {R"({"arrival_time": 1, "prompt_len": 3, "output_len": 1, "sampling": {"n": 2.5}})", "sampling.n",
       "expected an integer, found number 2.5"},
      {R"({"arrival_time": 1, "prompt_len": 3, "output_len": 1, "sampling": {"seed": -1}})", "sampling.seed",
       "expected a non-negative integer"},
      {R"({"arrival_time": 1, "prompt_len": 3, "output_len": 1, "sampling": {"ignore_eos": 1}})", "sampling.ignore_eos",
       "expected true or false"},
      {R"({"arrival_time": 1, "prompt_len": 3, "output_len": 1, "sampling": {"stop_token_ids": [1, "2"]}})",
       "sampling.stop_token_ids[1]", "expected a token id"},
      {R"({"arrival_time": 1, "prompt_token_ids": [5, -1], "output_len": 1})", "prompt_token_ids[1]",
       "must not be negative"},
      {R"({"arrival_time": 1, "prompt_token_ids": [], "output_len": 1})", "prompt_token_ids", "must not be empty"},
      {R"({"arrival_time": 1, "prompt_token_ids": 5, "output_len": 1})", "prompt_token_ids", "expected an array"},
      {R"({"arrival_time": 1, "prompt_token_ids": [5, 6], "prompt_len": 3, "output_len": 1})", "prompt_len",
       "disagrees"},
      {R"({"arrival_time": 1, "prompt_len": 512, "output_len": 1, "prefix_block_ids": [1, 2]})", "prefix_block_ids",
       "2 ids, more than one per 512-token block of the 512-token prompt (at most 1)"},
      {R"({"arrival_time": 1, "prompt_len": 3, "output_len": 1, "prefix_block_ids": {"a": 1}})", "prefix_block_ids",
       "expected an array"},
      {R"({"arrival_time": 1, "prompt_len": 3, "output_len": 1, "prefix_block_ids": [-1]})", "prefix_block_ids[0]",
       "expected a non-negative integer"},
      {R"({"arrival_time": 1, "prompt_len": 3, "output_len": 1, "session_id": 12})", "session_id", "expected a string"},
      {R"({"arrival_time": 1, "prompt_len": 3, "output_len": 1, "priority": "high"})", "priority",
       "expected an integer"},
  };
  for (const Case& c : cases) {
    BOOST_TEST_CONTEXT(c.line) {
      ReadReport report;
      const Trace trace = read_text(
          "# comment\n"
          "{\"arrival_time\": 0, \"prompt_len\": 3, \"output_len\": 1}\n" +
              c.line +
              "\n"
              "{\"arrival_time\": 2, \"prompt_len\": 3, \"output_len\": 1}\n",
          {}, &report);
      BOOST_TEST(source_lines(trace) == (std::vector<int64_t>{2, 4}));
      BOOST_TEST(report.lines_read == 3);
      BOOST_TEST(report.requests_accepted == 2);
      BOOST_TEST(report.lines_skipped == 1);
      BOOST_TEST_REQUIRE(report.errors.size() == 1u);
      const TraceIssue& issue = report.errors[0];
      BOOST_TEST(issue.file == kName);
      BOOST_TEST(issue.line == 3);
      BOOST_TEST(issue.field == c.field);
      BOOST_TEST(issue.message.find(c.message) != std::string::npos, "message: " << issue.message);
      // Under OnError::fail the same line stops the read.
      const TraceIssue thrown =
          read_error("{\"arrival_time\": 0, \"prompt_len\": 3, \"output_len\": 1}\n" + c.line + "\n",
                     ReadOptions{OnError::fail, OutOfOrder::sort});
      BOOST_TEST(thrown.line == 2);
      BOOST_TEST(thrown.field == c.field);
    }
  }
}

BOOST_AUTO_TEST_CASE(prefix_block_ids_are_checked_against_the_header_block_size) {
  ReadReport report;
  const Trace trace = read_text(
      "{\"pagedllm_trace\": 1, \"prefix_block_tokens\": 4}\n"
      "{\"arrival_time\": 0, \"prompt_len\": 9, \"output_len\": 1, \"prefix_block_ids\": [1, 2, 3]}\n"
      "{\"arrival_time\": 0, \"prompt_len\": 9, \"output_len\": 1, \"prefix_block_ids\": [1, 2, 3, 4]}\n"
      "{\"arrival_time\": 0, \"prompt_len\": 9, \"output_len\": 1, \"prefix_block_ids\": [1]}\n"
      "{\"arrival_time\": 0, \"prompt\": \"unmeasured\", \"output_len\": 1, \"prefix_block_ids\": [1, 2, 3, 4]}\n",
      {}, &report);
  BOOST_TEST(source_lines(trace) == (std::vector<int64_t>{2, 4, 5}));
  BOOST_TEST_REQUIRE(report.errors.size() == 1u);
  BOOST_TEST(report.errors[0].line == 3);
  BOOST_TEST(report.errors[0].field == "prefix_block_ids");
}

BOOST_AUTO_TEST_CASE(fail_mode_throws_at_the_first_bad_line_with_file_line_and_field) {
  try {
    read_text(
        "{\"arrival_time\": 0, \"prompt_len\": 3, \"output_len\": 1}\n"
        "{\"arrival_time\": 0, \"prompt_len\": 3, \"output_len\": 0}\n"
        "{\"arrival_time\": 0, \"prompt_len\": -1, \"output_len\": 1}\n",
        ReadOptions{OnError::fail, OutOfOrder::sort});
    BOOST_FAIL("no error");
  } catch (const TraceError& error) {
    BOOST_TEST(std::string(error.what()).starts_with("t.jsonl:2: output_len: "), error.what());
  }
}

BOOST_AUTO_TEST_CASE(out_of_order_arrivals_are_sorted_stably_with_one_warning) {
  ReadReport report;
  const Trace trace = read_text(
      "{\"arrival_time\": 1, \"prompt_len\": 1, \"output_len\": 1}\n"
      "{\"arrival_time\": 2, \"prompt_len\": 2, \"output_len\": 1}\n"
      "{\"arrival_time\": 0.5, \"prompt_len\": 3, \"output_len\": 1}\n"
      "{\"arrival_time\": 1, \"prompt_len\": 4, \"output_len\": 1}\n"
      "{\"arrival_time\": 0.5, \"prompt_len\": 5, \"output_len\": 1}\n",
      {}, &report);
  BOOST_TEST(source_lines(trace) == (std::vector<int64_t>{3, 5, 1, 4, 2}));
  BOOST_TEST(report.reordered);
  BOOST_TEST_REQUIRE(report.warnings.size() == 1u);
  BOOST_TEST(report.warnings[0].line == 3);
  BOOST_TEST(report.warnings[0].field == "arrival_time");
  BOOST_TEST(report.requests_accepted == 5);
}

BOOST_AUTO_TEST_CASE(out_of_order_arrivals_are_refused_naming_the_first_late_line) {
  const std::string text =
      "{\"arrival_time\": 1, \"prompt_len\": 1, \"output_len\": 1}\n"
      "{\"arrival_time\": 1, \"prompt_len\": 1, \"output_len\": 1}\n"
      "# equal times are in order\n"
      "{\"arrival_time\": 3, \"prompt_len\": 1, \"output_len\": 1}\n"
      "{\"arrival_time\": 2.5, \"prompt_len\": 1, \"output_len\": 1}\n"
      "{\"arrival_time\": 0, \"prompt_len\": 1, \"output_len\": 1}\n";
  const TraceIssue issue = read_error(text, ReadOptions{OnError::skip, OutOfOrder::refuse});
  BOOST_TEST(issue.file == kName);
  BOOST_TEST(issue.line == 5);
  BOOST_TEST(issue.field == "arrival_time");
  // Arrivals in order (ties included) pass under refuse.
  ReadReport report;
  read_text(text.substr(0, text.find("{\"arrival_time\": 2.5")), ReadOptions{OnError::skip, OutOfOrder::refuse},
            &report);
  BOOST_TEST(report.requests_accepted == 3);
  BOOST_TEST(!report.reordered);
}

BOOST_AUTO_TEST_CASE(files_are_written_and_read_by_path_and_failures_name_the_path) {
  const TempPath file("round_trip.jsonl");
  const Trace trace = sample_trace();
  write_trace_jsonl(trace, file.path);
  const Trace back = read_trace_jsonl(file.path);
  BOOST_TEST_REQUIRE(back.requests.size() == trace.requests.size());
  for (size_t i = 0; i < trace.requests.size(); ++i) check_same_request(back.requests[i], trace.requests[i]);

  const std::string missing = file.path + ".missing";
  try {
    read_trace_jsonl(missing);
    BOOST_FAIL("no error");
  } catch (const TraceError& error) {
    BOOST_TEST(error.issue().file == missing);
    BOOST_TEST(error.issue().message.find("cannot open") != std::string::npos);
  }
  const std::string unwritable = file.path + ".no_such_dir/out.jsonl";
  try {
    write_trace_jsonl(trace, unwritable);
    BOOST_FAIL("no error");
  } catch (const TraceError& error) {
    BOOST_TEST(error.issue().file == unwritable);
  }
}

BOOST_AUTO_TEST_CASE(a_prompt_that_is_not_utf8_cannot_be_written) {
  Trace trace;
  TraceRequest request;
  request.prompt_kind = PromptKind::text;
  request.prompt_text = "bad \xff byte";
  request.output_len = 1;
  trace.requests.push_back(request);
  std::ostringstream out;
  BOOST_CHECK_THROW(write_trace_jsonl(trace, out), TraceError);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace pagedllm::trace
