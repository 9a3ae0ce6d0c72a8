// Engine tests: a request that can never fit comes back rejected from the next step.
#include <boost/test/unit_test.hpp>

#include <map>
#include <string>
#include <utility>

#include "core/engine/clock.h"
#include "tests/engine/engine_harness.h"

namespace pagedllm::test {

// --- admission -----------------------------------------------------------------------------------

BOOST_AUTO_TEST_SUITE(engine_admission)

// Regression test: a rejected request once came back finished with times.finished = -1 ("not
// yet"): neither add_request() nor step() set it for rejections (abort_request() and apply() did
// for the rest).
BOOST_AUTO_TEST_CASE(a_request_that_can_never_fit_comes_back_rejected_from_the_next_step) {
  EngineSetup setup;
  setup.num_device_blocks = 8;  // 32 slots
  setup.eos_period = 0;
  const engine::EngineConfig config = engine_config(setup);
  engine::ScriptedExecutor scripted(executor_config(setup), config.cache);
  engine::VirtualClock clock;
  clock.set(1.5);
  engine::Engine llm(config, scripted, clock);
  sched::Request huge = make_request(1, 30, 20);  // 50 tokens: 13 blocks
  huge.arrival_time = clock.now();
  llm.add_request(huge);
  sched::Request small = make_request(2, 6, 4);
  small.arrival_time = clock.now();
  llm.add_request(small);
  BOOST_TEST(llm.counters().requests_rejected == 1);

  std::map<sched::RequestId, engine::RequestOutput> outputs;
  for (engine::RequestOutput& output : llm.step()) outputs.emplace(output.id, std::move(output));
  BOOST_REQUIRE(outputs.contains(1));
  const engine::RequestOutput& rejected = outputs.at(1);
  BOOST_TEST(rejected.finished);
  BOOST_TEST(rejected.finish_reason == FinishReason::rejected);
  BOOST_TEST(rejected.message.find("never fit") != std::string::npos, rejected.message);
  BOOST_TEST(rejected.times.first_scheduled < 0.0);
  BOOST_TEST(rejected.times.finished >= rejected.times.arrival,
             "a rejected request finished at " << rejected.times.finished);
  while (llm.has_unfinished()) {
    BOOST_REQUIRE_LT(llm.num_steps(), 100);
    for (engine::RequestOutput& output : llm.step()) {
      BOOST_TEST(output.id == 2);
      if (output.finished) outputs.insert_or_assign(output.id, std::move(output));
    }
  }
  BOOST_TEST(outputs.at(2).finish_reason == FinishReason::length);
  BOOST_TEST(llm.counters().requests_rejected == 1);
  BOOST_TEST(llm.counters().requests_finished == 1);
  BOOST_TEST(llm.kv().stats().num_sequences == 0);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace pagedllm::test
