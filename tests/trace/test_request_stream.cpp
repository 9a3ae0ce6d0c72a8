// A trace read as it is consumed (TraceRequestStream) gives exactly the requests of the whole-file
// path (read_trace_jsonl + materialize_requests), on the committed traces and on synthesized ones
// with every kind of prompt; a file out of order is found by the scan and refused by the stream.
#include <unistd.h>

#include <boost/test/unit_test.hpp>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/trace/materialize.h"
#include "core/trace/request_stream.h"
#include "core/trace/trace_jsonl.h"
#include "core/trace/trace_synth.h"

namespace pagedllm::trace {
namespace {

namespace fs = std::filesystem;

MaterializeConfig config_for(int32_t max_model_len) {
  MaterializeConfig config;
  config.max_model_len = max_model_len;
  config.synthetic_token_begin = 3;
  config.synthetic_token_end = 32000;
  config.vocab_size = 32000;
  config.seed = 9;
  config.rate_scale = 1.5;
  return config;
}

std::vector<sched::Request> drain(TraceRequestStream& stream) {
  std::vector<sched::Request> requests;
  while (std::optional<sched::Request> request = stream.next()) requests.push_back(std::move(*request));
  return requests;
}

void check_same_requests(const std::vector<sched::Request>& streamed, const std::vector<sched::Request>& whole) {
  BOOST_REQUIRE_EQUAL(streamed.size(), whole.size());
  for (size_t i = 0; i < whole.size(); ++i) {
    const sched::Request& a = streamed[i];
    const sched::Request& b = whole[i];
    BOOST_TEST_CONTEXT("request " << i) {
      BOOST_TEST(a.id == b.id);
      BOOST_TEST(a.arrival_time == b.arrival_time);
      BOOST_TEST(a.prompt_tokens == b.prompt_tokens);
      BOOST_TEST(a.params.max_tokens == b.params.max_tokens);
      BOOST_TEST(a.params.temperature == b.params.temperature);
      BOOST_TEST((a.params.seed == b.params.seed));
      BOOST_TEST(a.priority == b.priority);
      BOOST_TEST(a.content_ids.ids == b.content_ids.ids);
      BOOST_TEST(a.content_ids.num_tokens == b.content_ids.num_tokens);
      BOOST_TEST(a.content_ids.seed == b.content_ids.seed);
    }
  }
}

// Streams `path` and reads it whole, both under `config`, and compares requests and reports.
void check_stream_equals_whole_read(const std::string& path, const MaterializeConfig& config,
                                    int64_t max_requests = 0) {
  ReadReport whole_report;
  Trace trace = read_trace_jsonl(path, {}, &whole_report);
  if (max_requests > 0 && static_cast<int64_t>(trace.requests.size()) > max_requests) {
    trace.requests.resize(static_cast<size_t>(max_requests));
  }
  const MaterializedTrace whole = materialize_requests(trace, config, path);

  const TraceScan scan = scan_trace_jsonl(path, {});
  BOOST_TEST(scan.first_out_of_order_line == 0);
  BOOST_TEST(scan.report.requests_accepted == whole_report.requests_accepted);
  BOOST_TEST(scan.report.lines_read == whole_report.lines_read);
  BOOST_TEST(scan.report.lines_skipped == whole_report.lines_skipped);

  TraceRequestStream stream(
      {.path = path, .read = {}, .materialize = config, .max_requests = max_requests, .expected_count = 0});
  check_same_requests(drain(stream), whole.requests);
  BOOST_TEST(stream.materialize_report().rejected.size() == whole.rejected.size());
  BOOST_TEST(stream.materialize_report().num_clipped == whole.num_clipped);
  BOOST_TEST(stream.materialize_report().num_clipped_prompt_tokens == whole.num_clipped_prompt_tokens);
  if (max_requests == 0) BOOST_TEST(stream.read_report().requests_accepted == whole_report.requests_accepted);
}

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("pagedllm_stream_" + std::to_string(::getpid()));
  TempDir() { fs::create_directories(path); }
  ~TempDir() { fs::remove_all(path); }
  std::string file(const std::string& name, const std::string& text) const {
    std::ofstream(path / name) << text;
    return (path / name).string();
  }
};

BOOST_AUTO_TEST_SUITE(trace_request_stream)

BOOST_AUTO_TEST_CASE(committed_traces_stream_as_they_read_whole) {
  for (const char* name : {"sharegpt_like.jsonl", "mooncake_like.jsonl", "grounded_edits.jsonl"}) {
    const std::string path = (fs::path(PAGEDLLM_SOURCE_DIR) / "traces" / name).string();
    BOOST_TEST_CONTEXT(name) {
      check_stream_equals_whole_read(path, config_for(4096));
      check_stream_equals_whole_read(path, config_for(300));  // clipping
      MaterializeConfig reject = config_for(300);
      reject.over_length = OverLength::reject;
      check_stream_equals_whole_read(path, reject);
      check_stream_equals_whole_read(path, config_for(4096), 17);
    }
  }
}

BOOST_AUTO_TEST_CASE(every_prompt_kind_and_bad_lines_stream_as_they_read_whole) {
  const TempDir dir;
  const std::string path = dir.file("mixed.jsonl",
                                    "# a comment before the header\n"
                                    "{\"pagedllm_trace\": 1, \"prefix_block_tokens\": 4}\n"
                                    "{\"arrival_time\": 0.0, \"prompt_len\": 9, \"output_len\": 3, "
                                    "\"prefix_block_ids\": [1, 2]}\n"
                                    "not json\n"
                                    "{\"arrival_time\": 0.5, \"prompt_token_ids\": [5, 6, 7], \"output_len\": 2, "
                                    "\"sampling\": {\"temperature\": 0.8}, \"priority\": 2}\n"
                                    "{\"arrival_time\": 0.6, \"prompt_token_ids\": [5, 99999], \"output_len\": 2}\n"
                                    "{\"arrival_time\": 0.7, \"output_len\": 2}\n"
                                    "\n"
                                    "{\"arrival_time\": 0.7, \"prompt_len\": 6, \"output_len\": 1, "
                                    "\"prefix_block_ids\": [1]}\n");
  check_stream_equals_whole_read(path, config_for(64));
  const TraceScan scan = scan_trace_jsonl(path, {});
  BOOST_TEST(scan.report.lines_skipped == 2);  // the malformed line and the one without a prompt
  BOOST_TEST(scan.report.requests_accepted == 4);
  TraceRequestStream stream({.path = path, .read = {}, .materialize = config_for(64), .expected_count = 4});
  const std::vector<sched::Request> requests = drain(stream);
  BOOST_TEST(requests.size() == 3U);  // the out-of-vocabulary token is left out, naming its line
  BOOST_REQUIRE_EQUAL(stream.materialize_report().rejected.size(), 1U);
  BOOST_TEST(stream.materialize_report().rejected[0].line == 6);
  BOOST_TEST(requests[2].id == 3);  // ids count the accepted lines, the rejected one included
}

BOOST_AUTO_TEST_CASE(a_synthesized_trace_streams_as_it_reads_whole) {
  const TempDir dir;
  SynthConfig lone;
  lone.num_requests = 500;
  lone.request_rate = 20.0;
  lone.seed = 4;
  lone.mix = {.parallel_fraction = 0.2, .parallel_n = 3, .beam_fraction = 0.1, .beam_width = 2};
  const std::string lone_path = (dir.path / "lone.jsonl").string();
  write_trace_jsonl(synthesize_trace(lone), lone_path);
  check_stream_equals_whole_read(lone_path, config_for(2048));
  // Conversations: shared system prompt and previous turns, as prefix block ids.
  SynthConfig sessions;
  sessions.seed = 5;
  sessions.request_rate = 2.0;
  sessions.system_prompt_len = 300;
  sessions.prefix_block_tokens = 64;
  sessions.sessions = {.num_sessions = 60, .min_turns = 1, .max_turns = 5, .mean_think_time = 3.0};
  const std::string sessions_path = (dir.path / "sessions.jsonl").string();
  write_trace_jsonl(synthesize_trace(sessions), sessions_path);
  check_stream_equals_whole_read(sessions_path, config_for(2048));
}

BOOST_AUTO_TEST_CASE(arrivals_out_of_order_are_found_by_the_scan_and_refused_by_the_stream) {
  const TempDir dir;
  const std::string path = dir.file("late.jsonl",
                                    "{\"arrival_time\": 0.0, \"prompt_len\": 4, \"output_len\": 2}\n"
                                    "{\"arrival_time\": 2.0, \"prompt_len\": 4, \"output_len\": 2}\n"
                                    "{\"arrival_time\": 1.0, \"prompt_len\": 4, \"output_len\": 2}\n");
  BOOST_TEST(scan_trace_jsonl(path, {}).first_out_of_order_line == 3);
  TraceRequestStream stream({.path = path, .read = {}, .materialize = config_for(64)});
  BOOST_TEST(stream.next().has_value());
  BOOST_TEST(stream.next().has_value());
  try {
    stream.next();
    BOOST_FAIL("an arrival out of order was streamed");
  } catch (const TraceError& error) {
    BOOST_TEST(error.issue().line == 3);
    BOOST_TEST(error.issue().field == "arrival_time");
  }
}

BOOST_AUTO_TEST_CASE(arrivals_at_zero_and_a_missing_file) {
  const std::string path = (fs::path(PAGEDLLM_SOURCE_DIR) / "traces" / "sharegpt_like.jsonl").string();
  TraceRequestStream stream(
      {.path = path, .read = {}, .materialize = config_for(4096), .max_requests = 5, .arrivals_at_zero = true});
  const std::vector<sched::Request> requests = drain(stream);
  BOOST_TEST(requests.size() == 5U);
  for (const sched::Request& request : requests) BOOST_TEST(request.arrival_time == 0.0);
  BOOST_CHECK_THROW(TraceRequestStream({.path = "/nonexistent/trace.jsonl", .materialize = config_for(64)}),
                    TraceError);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace pagedllm::trace
