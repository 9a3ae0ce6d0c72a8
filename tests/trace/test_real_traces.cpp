// The converters on the real public traces in ../shared/traces (never copied into the
// repository), checked against the facts in that folder's README.
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <unordered_set>

#include "core/trace/azure_reader.h"
#include "core/trace/csv_reader.h"
#include "core/trace/mooncake_reader.h"

namespace pagedllm::trace {
namespace {

namespace fs = std::filesystem;

// The path of a shared trace, or empty (with a message saying why the test does not run).
std::string shared_trace(const std::string& name) {
  const fs::path path = fs::path(PAGEDLLM_SHARED_TRACES_DIR) / name;
  if (fs::exists(path)) return path.string();
  BOOST_TEST_MESSAGE("skipping: " << path.string() << " is absent (real traces live in ../shared/traces)");
  return {};
}

double mean_prompt_len(const Trace& trace) {
  double sum = 0.0;
  for (const TraceRequest& request : trace.requests) sum += request.prompt_len;
  return sum / static_cast<double>(trace.requests.size());
}

double mean_output_len(const Trace& trace) {
  double sum = 0.0;
  for (const TraceRequest& request : trace.requests) sum += request.output_len;
  return sum / static_cast<double>(trace.requests.size());
}

}  // namespace

BOOST_AUTO_TEST_SUITE(trace_real_traces)

BOOST_AUTO_TEST_CASE(azure_code_trace_reads_as_its_readme_describes) {
  const std::string path = shared_trace("azure_llm_2023_code.csv");
  if (path.empty()) {
    BOOST_TEST(true);
    return;
  }
  // Rows with a 0 token count, counted independently of the reader.
  int64_t num_rows = 0;
  int64_t num_zero_rows = 0;
  {
    std::ifstream in(path, std::ios::binary);
    CsvReader csv(in);
    CsvRecord record;
    BOOST_TEST_REQUIRE(csv.next(record));  // header
    while (csv.next(record)) {
      ++num_rows;
      if (parse_csv_integer(record.fields.at(1)) == 0 || parse_csv_integer(record.fields.at(2)) == 0) ++num_zero_rows;
    }
  }
  BOOST_TEST(num_rows == 8819);

  ReadReport report;
  const Trace trace = read_azure_trace(path, ReadOptions{OnError::fail, OutOfOrder::refuse}, &report);
  BOOST_TEST(trace.header.source == "azure:" + path);
  BOOST_TEST(report.lines_read == 8819);
  BOOST_TEST(report.errors.empty());
  BOOST_TEST(report.lines_skipped == num_zero_rows);
  BOOST_TEST(report.requests_accepted == 8819 - num_zero_rows);
  BOOST_TEST(static_cast<int64_t>(trace.requests.size()) == report.requests_accepted);
  BOOST_TEST(!report.reordered);
  BOOST_TEST(trace.requests.front().arrival_time == 0.0);
  // 2023-11-16 18:17:03.9799600 to 19:14:19.9280160.
  BOOST_TEST(trace.requests.back().arrival_time == 3435.948056, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(std::abs(trace.requests.back().arrival_time - 3436.0) < 1.0);
  BOOST_TEST(std::abs(mean_prompt_len(trace) - 2048.0) < 1.0);
  BOOST_TEST(std::abs(mean_output_len(trace) - 27.9) < 0.1);
  BOOST_TEST(trace.requests.front().prompt_len == 4808);
  BOOST_TEST(trace.requests.front().output_len == 10);
  BOOST_TEST(trace.requests.front().source_line == 2);
}

BOOST_AUTO_TEST_CASE(mooncake_synthetic_trace_reads_as_its_readme_describes) {
  const std::string path = shared_trace("mooncake_synthetic.jsonl");
  if (path.empty()) {
    BOOST_TEST(true);
    return;
  }
  ReadReport report;
  const Trace trace = read_mooncake_trace(path, {}, ReadOptions{OnError::fail, OutOfOrder::refuse}, &report);
  BOOST_TEST(trace.header.source == "mooncake:" + path);
  BOOST_TEST(trace.header.prefix_block_tokens == 512);
  BOOST_TEST(report.lines_read == 3993);
  BOOST_TEST(report.requests_accepted == 3993);
  BOOST_TEST(report.errors.empty());
  BOOST_TEST(report.warnings.empty());  // every request has one hash id per 512-token block
  BOOST_TEST(std::abs(mean_prompt_len(trace) - 15325.0) < 1.0);
  BOOST_TEST(std::abs(mean_output_len(trace) - 149.0) < 1.0);
  BOOST_TEST(trace.requests.back().arrival_time == 1022.025, boost::test_tools::tolerance(1e-12));
  int64_t num_ids = 0;
  int64_t num_repeated = 0;
  std::unordered_set<uint64_t> seen;
  bool every_request_has_ids = true;
  for (const TraceRequest& request : trace.requests) {
    every_request_has_ids = every_request_has_ids && !request.prefix_block_ids.empty();
    for (const uint64_t id : request.prefix_block_ids) {
      ++num_ids;
      if (!seen.insert(id).second) ++num_repeated;
    }
  }
  BOOST_TEST(every_request_has_ids);
  // "64% of hash ids repeat an earlier one".
  BOOST_TEST(std::abs(static_cast<double>(num_repeated) / static_cast<double>(num_ids) - 0.64) < 0.005);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace pagedllm::trace
