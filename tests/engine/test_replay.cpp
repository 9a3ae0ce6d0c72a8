// The replay driver: arrivals admitted when the clock reaches them, idle gaps skipped under a
// virtual clock, waited out under a wall clock, refused requests reported and not lost.
#include <boost/test/unit_test.hpp>

#include <stdexcept>

#include "core/engine/replay.h"
#include "tests/engine/engine_harness.h"

namespace pagedllm::test {
namespace {

struct ReplayFixture {
  explicit ReplayFixture(EngineSetup engine_setup = no_eos())
      : setup(engine_setup), executor(executor_config(setup), engine_config(setup).cache) {}

  static EngineSetup no_eos() {
    EngineSetup setup;
    setup.eos_period = 0;
    return setup;
  }

  sched::Request timed_request(sched::RequestId id, double arrival, int32_t prompt, int32_t max_tokens) const {
    sched::Request request = make_request(id, prompt, max_tokens);
    request.arrival_time = arrival;
    return request;
  }

  EngineSetup setup;
  engine::ScriptedExecutor executor;
};

BOOST_AUTO_TEST_SUITE(replay)

BOOST_AUTO_TEST_CASE(virtual_time_admits_at_arrival_and_skips_idle_gaps) {
  ReplayFixture fixture;
  engine::VirtualClock clock;
  clock.set(100.0);  // arrivals are relative to the replay's start
  engine::Engine engine(engine_config(fixture.setup), fixture.executor, clock);
  std::vector<sched::Request> requests = {fixture.timed_request(0, 0.0, 10, 4), fixture.timed_request(1, 0.001, 10, 4),
                                          fixture.timed_request(2, 5.0, 10, 4)};
  const engine::ReplayResult result = engine::replay_requests(engine, clock, requests, engine::TimeMode::virtual_clock);
  BOOST_TEST(result.start_time == 100.0);
  BOOST_REQUIRE_EQUAL(result.outputs.size(), 3u);
  for (const engine::RequestOutput& output : result.outputs) {
    BOOST_TEST(output.finished);
    BOOST_TEST(output.completions.front().tokens.size() == 4u);
    BOOST_TEST(output.times.arrival == 100.0 + requests[static_cast<size_t>(output.id)].arrival_time);
    BOOST_TEST(output.times.first_scheduled >= output.times.arrival);
  }
  // Request 1 arrives during request 0's first step and waits for the next one.
  BOOST_TEST(result.outputs[1].times.first_scheduled > result.outputs[0].times.first_scheduled);
  // The engine was idle before request 2: the clock jumped straight to its arrival.
  BOOST_TEST(result.outputs[2].times.first_scheduled == 105.0);
  BOOST_TEST(result.end_time == result.outputs[2].times.finished);
  BOOST_TEST(result.refused.empty());
}

BOOST_AUTO_TEST_CASE(fast_time_starts_every_request_at_once) {
  ReplayFixture fixture;
  engine::VirtualClock clock;
  engine::Engine engine(engine_config(fixture.setup), fixture.executor, clock);
  const engine::ReplayResult result = engine::replay_requests(
      engine, clock, {fixture.timed_request(0, 0.0, 8, 3), fixture.timed_request(1, 30.0, 8, 3)},
      engine::TimeMode::fast);
  BOOST_REQUIRE_EQUAL(result.outputs.size(), 2u);
  BOOST_TEST(result.outputs[1].times.arrival == 0.0);
  BOOST_TEST(result.outputs[1].times.first_scheduled == 0.0);
  BOOST_TEST(result.end_time < 1.0);
}

BOOST_AUTO_TEST_CASE(real_time_waits_for_arrivals_on_the_wall_clock) {
  ReplayFixture fixture;
  engine::WallClock clock;
  engine::Engine engine(engine_config(fixture.setup), fixture.executor, clock);
  const engine::ReplayResult result = engine::replay_requests(
      engine, clock, {fixture.timed_request(0, 0.0, 8, 2), fixture.timed_request(1, 0.05, 8, 2)},
      engine::TimeMode::real);
  BOOST_REQUIRE_EQUAL(result.outputs.size(), 2u);
  BOOST_TEST(result.outputs[1].times.arrival >= result.start_time + 0.05);
  BOOST_TEST(result.outputs[1].times.first_scheduled >= result.outputs[1].times.arrival);
  BOOST_TEST(result.end_time - result.start_time >= 0.05);
}

BOOST_AUTO_TEST_CASE(a_refused_request_is_reported_and_the_others_complete) {
  ReplayFixture fixture;
  engine::VirtualClock clock;
  engine::Engine engine(engine_config(fixture.setup), fixture.executor, clock);
  const int32_t too_long = fixture.setup.max_model_len;  // with max_tokens 4 it cannot fit
  const engine::ReplayResult result =
      engine::replay_requests(engine, clock,
                              {fixture.timed_request(0, 0.0, 10, 4), fixture.timed_request(1, 0.5, too_long, 4),
                               fixture.timed_request(2, 1.0, 10, 4)},
                              engine::TimeMode::virtual_clock);
  BOOST_REQUIRE_EQUAL(result.refused.size(), 1u);
  BOOST_TEST(result.refused[0].id == 1);
  BOOST_TEST(result.refused[0].arrival_time == 0.5);
  BOOST_TEST(result.refused[0].num_prompt_tokens == too_long);
  BOOST_TEST(result.refused[0].message.find("maximum context length") != std::string::npos);
  BOOST_REQUIRE_EQUAL(result.outputs.size(), 2u);
  BOOST_TEST(result.outputs[0].id == 0);
  BOOST_TEST(result.outputs[1].id == 2);
}

BOOST_AUTO_TEST_CASE(progress_reports_every_step_and_ends_complete) {
  ReplayFixture fixture;
  engine::VirtualClock clock;
  engine::Engine engine(engine_config(fixture.setup), fixture.executor, clock);
  int64_t calls = 0;
  engine::ReplayProgress last;
  engine::ReplayConfig config;
  config.on_progress = [&](const engine::ReplayProgress& progress) {
    ++calls;
    BOOST_TEST(progress.num_finished <= progress.num_added);
    last = progress;
  };
  engine::replay_requests(engine, clock, {fixture.timed_request(0, 0.0, 8, 5), fixture.timed_request(1, 2.0, 8, 5)},
                          engine::TimeMode::virtual_clock, config);
  BOOST_TEST(calls == engine.num_steps());
  BOOST_TEST(last.num_total == 2);
  BOOST_TEST(last.num_finished == 2);
  BOOST_TEST(last.num_running == 0);
}

BOOST_AUTO_TEST_CASE(unsuitable_clocks_and_unsorted_requests_are_refused) {
  ReplayFixture fixture;
  engine::VirtualClock virtual_clock;
  engine::WallClock wall_clock;
  engine::Engine virtual_engine(engine_config(fixture.setup), fixture.executor, virtual_clock);
  engine::Engine wall_engine(engine_config(fixture.setup), fixture.executor, wall_clock);
  BOOST_CHECK_THROW(engine::replay_requests(virtual_engine, virtual_clock, {}, engine::TimeMode::real),
                    std::invalid_argument);
  BOOST_CHECK_THROW(engine::replay_requests(wall_engine, wall_clock, {}, engine::TimeMode::virtual_clock),
                    std::invalid_argument);
  BOOST_CHECK_THROW(engine::replay_requests(virtual_engine, wall_clock, {}, engine::TimeMode::virtual_clock),
                    std::invalid_argument);
  BOOST_CHECK_THROW(engine::replay_requests(virtual_engine, virtual_clock,
                                            {fixture.timed_request(0, 1.0, 8, 2), fixture.timed_request(1, 0.0, 8, 2)},
                                            engine::TimeMode::virtual_clock),
                    std::invalid_argument);
  BOOST_TEST(engine::to_string(engine::parse_time_mode("virtual")) == std::string("virtual"));
  BOOST_CHECK_THROW(engine::parse_time_mode("wall"), std::invalid_argument);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace pagedllm::test
