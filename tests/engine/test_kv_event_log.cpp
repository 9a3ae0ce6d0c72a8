// Engine tests: the KV event log is deterministic and records swaps and frees.
#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "tests/engine/engine_harness.h"

namespace pagedllm::test {

// --- 9: the KV event log -------------------------------------------------------------------------

BOOST_AUTO_TEST_SUITE(engine_kv_event_log)

std::string event_log_of(const EngineSetup& setup, const std::vector<sched::Request>& requests) {
  std::ostringstream text;
  kv::KvEventLog log(text);
  run_workload(setup, requests, {.requests_per_step = 5, .event_log = &log});
  return text.str();
}

int64_t count_lines_with(const std::string& log, const std::string& needle) {
  int64_t count = 0;
  for (size_t at = log.find(needle); at != std::string::npos; at = log.find(needle, at + 1)) ++count;
  return count;
}

BOOST_AUTO_TEST_CASE(the_same_workload_writes_the_same_log) {
  const std::vector<sched::Request> requests = make_workload({.seed = 51, .num_requests = 20});
  const std::vector<sched::Request> other = make_workload({.seed = 52, .num_requests = 20});
  const EngineSetup swap = small_pool(PreemptionMode::swap, true);
  const std::string first = event_log_of(swap, requests);
  const std::string second = event_log_of(swap, requests);
  BOOST_TEST(!first.empty());
  BOOST_TEST((first == second), "two runs of one workload wrote different KV event logs");
  BOOST_TEST((first != event_log_of(swap, other)), "two workloads wrote the same KV event log");
  BOOST_TEST(count_lines_with(first, "\"op\":\"swap_out\"") > 0);
  BOOST_TEST(count_lines_with(first, "\"op\":\"swap_in\"") > 0);
  BOOST_TEST(count_lines_with(first, "\n") == count_lines_with(first, "{\"step\":"));

  // Recompute: a preempted sequence frees its blocks, so the small pool writes more free lines.
  const std::string recompute = event_log_of(small_pool(PreemptionMode::recompute, true), requests);
  const std::string ample = event_log_of(EngineSetup{}, requests);
  BOOST_TEST(recompute == event_log_of(small_pool(PreemptionMode::recompute, true), requests));
  BOOST_TEST(count_lines_with(recompute, "\"op\":\"swap_out\"") == 0);
  BOOST_TEST(count_lines_with(ample, "\"op\":\"swap_out\"") == 0);
  BOOST_TEST(count_lines_with(recompute, "\"op\":\"free\"") > count_lines_with(ample, "\"op\":\"free\""));
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace pagedllm::test
