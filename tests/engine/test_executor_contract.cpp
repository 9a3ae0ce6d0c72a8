// Engine tests: an executor whose outputs do not follow the plan makes step() throw, naming the executor.
#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>

#include "core/engine/clock.h"
#include "core/engine/executor.h"
#include "tests/engine/engine_harness.h"

namespace pagedllm::test {

namespace {

enum class Misbehaviour { swap_first_two, drop_last, add_one, drop_a_sample };

// Returns the scripted executor's outputs, spoiled in one way.
class MisbehavingExecutor final : public engine::Executor {
 public:
  MisbehavingExecutor(engine::Executor& inner, Misbehaviour misbehaviour)
      : inner_(inner), misbehaviour_(misbehaviour) {}

  sched::StepResult execute(const sched::StepPlan& plan) override {
    sched::StepResult result = inner_.execute(plan);
    BOOST_REQUIRE_GE(result.outputs.size(), 2u);
    switch (misbehaviour_) {
      case Misbehaviour::swap_first_two:
        std::swap(result.outputs[0], result.outputs[1]);
        break;
      case Misbehaviour::drop_last:
        result.outputs.pop_back();
        break;
      case Misbehaviour::add_one:
        result.outputs.push_back(result.outputs.back());
        break;
      case Misbehaviour::drop_a_sample:
        for (sched::SequenceOutput& output : result.outputs) {
          if (output.samples.size() > 1) output.samples.pop_back();
        }
        break;
    }
    return result;
  }
  std::string name() const override { return "misbehaving"; }

 private:
  engine::Executor& inner_;
  Misbehaviour misbehaviour_;
};

}  // namespace

// --- 8: executors that break the seam ------------------------------------------------------------

BOOST_AUTO_TEST_SUITE(engine_executor_contract)

void check_step_throws_naming_the_executor(Misbehaviour misbehaviour, int32_t n) {
  const EngineSetup setup;
  const engine::EngineConfig config = engine_config(setup);
  engine::ScriptedExecutor scripted(executor_config(setup), config.cache);
  MisbehavingExecutor misbehaving(scripted, misbehaviour);
  engine::VirtualClock clock;
  engine::Engine llm(config, misbehaving, clock);
  for (sched::RequestId id = 0; id < 3; ++id) {
    sched::Request request = make_request(id, 6, 5);
    request.params.n = n;
    llm.add_request(request);
  }
  try {
    llm.step();
    BOOST_ERROR("step() accepted outputs that do not follow the plan");
  } catch (const std::logic_error& error) {
    BOOST_TEST_MESSAGE(error.what());
    BOOST_TEST(std::string(error.what()).find("executor misbehaving") != std::string::npos, error.what());
  }
}

BOOST_AUTO_TEST_CASE(outputs_out_of_plan_order_throw_naming_the_executor) {
  check_step_throws_naming_the_executor(Misbehaviour::swap_first_two, 1);
}

BOOST_AUTO_TEST_CASE(a_missing_output_throws_naming_the_executor) {
  check_step_throws_naming_the_executor(Misbehaviour::drop_last, 1);
}

BOOST_AUTO_TEST_CASE(an_extra_output_throws_naming_the_executor) {
  check_step_throws_naming_the_executor(Misbehaviour::add_one, 1);
}

BOOST_AUTO_TEST_CASE(too_few_parallel_samples_throw_naming_the_executor) {
  check_step_throws_naming_the_executor(Misbehaviour::drop_a_sample, 3);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace pagedllm::test
