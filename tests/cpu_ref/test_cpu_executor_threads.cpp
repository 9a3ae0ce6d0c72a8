// The executor's thread count holds on whichever thread runs its steps. OpenMP's thread count is
// a per-thread setting, and a server runs the steps on its engine thread, not on the thread that
// built the executor: counted here as the threads the process gains when a step runs there.
#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <iterator>
#include <memory>
#include <thread>

#include <omp.h>

#include "core/engine/clock.h"
#include "core/engine/engine.h"
#include "cpu_ref/cpu_executor.h"
#include "tests/cpu_ref/tiny_cpu_model.h"

namespace pagedllm::cpu_ref {
namespace {

std::shared_ptr<const LlamaModel> tiny_model() {
  static const std::shared_ptr<const LlamaModel> model =
      write_and_load_tiny_model("pagedllm_test_cpu_executor_threads");
  return model;
}

int64_t num_threads_in_process() {
  return std::distance(std::filesystem::directory_iterator("/proc/self/task"), std::filesystem::directory_iterator{});
}

struct StepsOnAnotherThread {
  int64_t threads_added = -1;  // threads the process gained while the steps ran
  int32_t max_threads = -1;    // omp_get_max_threads() on the steps' thread afterwards
};

// Builds the executor here, runs a request through it on a new thread, and returns what that
// thread's steps did to OpenMP (which keeps a team's threads between steps).
StepsOnAnotherThread run_steps_on_another_thread(int32_t num_threads) {
  engine::EngineConfig config;
  config.cache.block_size = 16;
  config.cache.num_device_blocks = 32;
  config.scheduler.max_model_len = 256;
  CpuExecutor executor(tiny_model(), CpuExecutorConfig{.cache = config.cache, .num_threads = num_threads});
  StepsOnAnotherThread result;
  std::thread engine_thread([&] {
    engine::VirtualClock clock;
    engine::Engine engine(config, executor, clock);
    sched::SamplingParams params;
    params.max_tokens = 4;
    params.ignore_eos = true;
    engine.add_request({.id = 1, .prompt_tokens = {5, 6, 7, 8, 9, 10, 11, 12}, .params = params});
    const int64_t before = num_threads_in_process();
    while (engine.has_unfinished()) engine.step();
    result.threads_added = num_threads_in_process() - before;
    result.max_threads = omp_get_max_threads();
  });
  engine_thread.join();
  return result;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(cpu_executor_threads)

BOOST_AUTO_TEST_CASE(the_thread_count_holds_on_the_thread_that_runs_the_steps) {
  // 1 and 3: at least one of them differs from OpenMP's default on any machine.
  for (const int32_t num_threads : {1, 3}) {
    const StepsOnAnotherThread steps = run_steps_on_another_thread(num_threads);
    BOOST_TEST(steps.max_threads == num_threads, "--threads " << num_threads << ": the steps' thread's setting");
#ifdef KMP_VERSION_MAJOR
    // LLVM's libomp (the clang builds) keeps one pool of helpers for the whole process, so a team
    // may reuse helpers an earlier test started: never more than asked for, maybe fewer new ones.
    BOOST_TEST(steps.threads_added <= num_threads - 1,
               "--threads " << num_threads << ": at most " << num_threads - 1 << " new helpers");
#else
    // libgomp (g++) gives each thread its own team: exactly the helpers asked for are started.
    BOOST_TEST(steps.threads_added == num_threads - 1,
               "--threads " << num_threads << ": the steps' thread and " << num_threads - 1 << " helpers");
#endif
  }
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace pagedllm::cpu_ref
