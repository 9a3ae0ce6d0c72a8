#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <ostream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "core/engine/clock.h"
#include "core/engine/engine.h"
#include "core/engine/offline.h"
#include "core/engine/scripted_executor.h"
#include "core/kv/kv_event_log.h"

namespace engine = pagedllm::engine;
namespace sched = pagedllm::sched;
namespace kv = pagedllm::kv;
using pagedllm::TokenId;

// Boost.Test prints finish reasons by name.
namespace boost::test_tools::tt_detail {
template <>
struct print_log_value<pagedllm::sched::FinishReason> {
  void operator()(std::ostream& out, pagedllm::sched::FinishReason reason) { out << pagedllm::sched::to_string(reason); }
};
}  // namespace boost::test_tools::tt_detail

using sched::FinishReason;
using sched::PreemptionMode;

namespace {

constexpr TokenId kEos = 2;
constexpr TokenId kFirstPromptToken = 3;  // prompts never hold EOS

// --- configuration -----------------------------------------------------------------------------

struct EngineSetup {
  int32_t block_size = 4;
  int32_t num_device_blocks = 1024;
  int32_t num_host_blocks = 512;
  int32_t max_num_batched_tokens = 128;
  int32_t max_num_seqs = 64;
  int32_t max_model_len = 128;
  double watermark = 0.01;
  bool enable_prefix_caching = true;
  bool enable_chunked_prefill = true;
  std::optional<PreemptionMode> preemption_mode;  // absent: auto
  int32_t eos_period = 16;                        // 0: the executor never samples EOS
  double seconds_per_step = 0.010;
  double seconds_per_token = 1e-4;
};

engine::EngineConfig engine_config(const EngineSetup& setup) {
  engine::EngineConfig config;
  config.cache.block_size = setup.block_size;
  config.cache.num_device_blocks = setup.num_device_blocks;
  config.cache.num_host_blocks = setup.num_host_blocks;
  config.cache.watermark = setup.watermark;
  config.cache.enable_prefix_caching = setup.enable_prefix_caching;
  config.scheduler.max_num_batched_tokens = setup.max_num_batched_tokens;
  config.scheduler.max_num_seqs = setup.max_num_seqs;
  config.scheduler.max_model_len = setup.max_model_len;
  config.scheduler.enable_chunked_prefill = setup.enable_chunked_prefill;
  config.scheduler.preemption_mode = setup.preemption_mode;
  config.eos_token_id = kEos;
  return config;
}

engine::ScriptedExecutorConfig executor_config(const EngineSetup& setup) {
  engine::ScriptedExecutorConfig config;
  config.vocab_size = 1000;
  config.eos_token_id = kEos;
  config.eos_period = setup.eos_period;
  config.seconds_per_step = setup.seconds_per_step;
  config.seconds_per_token = setup.seconds_per_token;
  config.verify_kv = true;
  return config;
}

// A pool far too small for the workload below: every request fits alone, few fit together.
EngineSetup small_pool(std::optional<PreemptionMode> mode, bool chunked_prefill) {
  EngineSetup setup;
  setup.num_device_blocks = 56;
  setup.num_host_blocks = 160;
  setup.preemption_mode = mode;
  setup.enable_chunked_prefill = chunked_prefill;
  setup.max_num_batched_tokens = chunked_prefill ? 48 : 128;
  return setup;
}

// --- workloads ---------------------------------------------------------------------------------

struct WorkloadSpec {
  uint64_t seed = 7;
  int32_t num_requests = 40;
  int32_t min_prompt = 5;
  int32_t max_prompt = 60;
  int32_t min_max_tokens = 5;
  int32_t max_max_tokens = 40;
  int32_t num_shared_prefixes = 3;  // some prompts start with one of these
  int32_t percent_parallel = 20;    // n = 2..3
  int32_t percent_beam = 10;        // beam_width 2..3
  int32_t percent_min_tokens = 15;
  int32_t percent_ignore_eos = 10;
};

std::vector<sched::Request> make_workload(const WorkloadSpec& spec) {
  std::mt19937_64 random(spec.seed);
  const auto uniform = [&random](int32_t low, int32_t high) {
    return std::uniform_int_distribution<int32_t>(low, high)(random);
  };
  const auto token = [&] { return static_cast<TokenId>(uniform(kFirstPromptToken, 999)); };
  std::vector<std::vector<TokenId>> prefixes(static_cast<size_t>(spec.num_shared_prefixes));
  for (std::vector<TokenId>& prefix : prefixes) {
    prefix.resize(static_cast<size_t>(uniform(8, 24)));
    for (TokenId& t : prefix) t = token();
  }
  std::vector<sched::Request> requests;
  for (int32_t i = 0; i < spec.num_requests; ++i) {
    sched::Request request;
    request.id = i;
    const auto length = static_cast<size_t>(uniform(spec.min_prompt, spec.max_prompt));
    if (!prefixes.empty() && uniform(0, 1) == 1) {
      const std::vector<TokenId>& prefix = prefixes[static_cast<size_t>(uniform(0, spec.num_shared_prefixes - 1))];
      request.prompt_tokens.assign(prefix.begin(), prefix.begin() + static_cast<std::ptrdiff_t>(std::min(length, prefix.size())));
    }
    while (request.prompt_tokens.size() < length) request.prompt_tokens.push_back(token());
    sched::SamplingParams& params = request.params;
    params.max_tokens = uniform(spec.min_max_tokens, spec.max_max_tokens);
    const int32_t kind = uniform(0, 99);
    if (kind < spec.percent_beam) {
      params.beam_width = uniform(2, 3);
      params.n = uniform(1, params.beam_width);
      params.temperature = 0.0f;
    } else if (kind < spec.percent_beam + spec.percent_parallel) {
      params.n = uniform(2, 3);
    }
    if (uniform(0, 99) < spec.percent_min_tokens) params.min_tokens = uniform(1, params.max_tokens);
    if (uniform(0, 99) < spec.percent_ignore_eos) params.ignore_eos = true;
    requests.push_back(std::move(request));
  }
  return requests;
}

bool has_beam_search(const std::vector<sched::Request>& requests) {
  return std::any_of(requests.begin(), requests.end(),
                     [](const sched::Request& request) { return request.params.use_beam_search(); });
}

// --- executors ---------------------------------------------------------------------------------

// What a test needs to know of one executed plan.
struct PlanRecord {
  int64_t step = 0;
  std::vector<sched::RequestId> scheduled;  // distinct requests with a sequence in the plan
  std::vector<sched::RequestId> sampled;    // distinct requests with a sampled sequence
  int32_t num_sequences = 0;
  int32_t num_batched_tokens = 0;
  int32_t num_swap_out = 0;
  int32_t num_swap_in = 0;
  int32_t num_copies = 0;
};

void add_distinct(std::vector<sched::RequestId>& ids, sched::RequestId id) {
  if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
}

class RecordingExecutor final : public engine::Executor {
 public:
  explicit RecordingExecutor(engine::Executor& inner) : inner_(inner) {}

  sched::StepResult execute(const sched::StepPlan& plan) override {
    PlanRecord record;
    record.step = plan.step;
    for (const sched::ScheduledSequence& scheduled : plan.sequences) {
      add_distinct(record.scheduled, scheduled.request);
      if (scheduled.sample) add_distinct(record.sampled, scheduled.request);
    }
    record.num_sequences = static_cast<int32_t>(plan.sequences.size());
    record.num_batched_tokens = plan.num_batched_tokens;
    record.num_swap_out = static_cast<int32_t>(plan.swap_out.size());
    record.num_swap_in = static_cast<int32_t>(plan.swap_in.size());
    record.num_copies = static_cast<int32_t>(plan.copies.size());
    records_.push_back(std::move(record));
    return inner_.execute(plan);
  }
  std::string name() const override { return "recording"; }
  const std::vector<PlanRecord>& records() const { return records_; }

 private:
  engine::Executor& inner_;
  std::vector<PlanRecord> records_;
};

enum class Misbehaviour { swap_first_two, drop_last, add_one, drop_a_sample };

// Returns the scripted executor's outputs, spoiled in one way.
class MisbehavingExecutor final : public engine::Executor {
 public:
  MisbehavingExecutor(engine::Executor& inner, Misbehaviour misbehaviour) : inner_(inner), misbehaviour_(misbehaviour) {}

  sched::StepResult execute(const sched::StepPlan& plan) override {
    sched::StepResult result = inner_.execute(plan);
    BOOST_REQUIRE_GE(result.outputs.size(), 2u);
    switch (misbehaviour_) {
      case Misbehaviour::swap_first_two: std::swap(result.outputs[0], result.outputs[1]); break;
      case Misbehaviour::drop_last: result.outputs.pop_back(); break;
      case Misbehaviour::add_one: result.outputs.push_back(result.outputs.back()); break;
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

// --- running a workload ------------------------------------------------------------------------

struct RunOptions {
  int32_t requests_per_step = 0;  // 0: every request arrives before the first step
  kv::KvEventLog* event_log = nullptr;
  int64_t max_steps = 20000;
};

struct RunResult {
  std::map<sched::RequestId, engine::RequestOutput> outputs;  // the final output of each request
  engine::EngineCounters counters;
  std::vector<engine::StepMetrics> step_metrics;
  std::vector<PlanRecord> plans;
  kv::KvStats kv_stats;
  double end_time = 0.0;
  int64_t num_steps = 0;
};

// Outputs are cumulative: a later output of a request extends each completion of the earlier one.
void check_extends(const engine::RequestOutput& earlier, const engine::RequestOutput& later) {
  BOOST_REQUIRE_LE(earlier.completions.size(), later.completions.size());
  for (size_t i = 0; i < earlier.completions.size(); ++i) {
    const std::vector<TokenId>& before = earlier.completions[i].tokens;
    const std::vector<TokenId>& after = later.completions[i].tokens;
    BOOST_REQUIRE_LE(before.size(), after.size());
    BOOST_REQUIRE(std::equal(before.begin(), before.end(), after.begin()));
  }
}

// Runs the requests to completion on a scripted executor that verifies every KV read, checking
// the scheduler's invariants after every step and that the KV cache ends empty.
RunResult run_workload(const EngineSetup& setup, const std::vector<sched::Request>& requests,
                       const RunOptions& options = {}) {
  const engine::EngineConfig config = engine_config(setup);
  engine::ScriptedExecutor scripted(executor_config(setup), config.cache);
  RecordingExecutor recording(scripted);
  engine::VirtualClock clock;
  engine::Engine llm(config, recording, clock, options.event_log);
  const bool streaming_checked = !has_beam_search(requests);
  std::map<sched::RequestId, engine::RequestOutput> latest;
  RunResult result;
  size_t next_request = 0;
  while (next_request < requests.size() || llm.has_unfinished()) {
    const size_t batch = options.requests_per_step > 0 ? static_cast<size_t>(options.requests_per_step) : requests.size();
    for (size_t added = 0; added < batch && next_request < requests.size(); ++added) {
      sched::Request request = requests[next_request++];
      request.arrival_time = clock.now();
      llm.add_request(std::move(request));
    }
    if (llm.num_steps() >= options.max_steps) {
      BOOST_FAIL("no progress after " << llm.num_steps() << " steps: " << llm.scheduler().num_running()
                                      << " running, " << llm.scheduler().num_waiting() << " waiting, "
                                      << llm.scheduler().num_swapped() << " swapped");
    }
    std::vector<engine::RequestOutput> outputs;
    try {
      outputs = llm.step();
    } catch (const std::exception& error) {
      BOOST_FAIL("step " << llm.num_steps() << " threw: " << error.what());
    }
    for (engine::RequestOutput& output : outputs) {
      BOOST_REQUIRE_MESSAGE(!result.outputs.contains(output.id), "request " << output.id << " reported after it finished");
      if (streaming_checked && latest.contains(output.id)) check_extends(latest[output.id], output);
      if (output.finished) {
        result.outputs.emplace(output.id, std::move(output));
      } else {
        latest[output.id] = std::move(output);
      }
    }
    try {
      llm.scheduler().check_invariants();
    } catch (const std::exception& error) {
      BOOST_FAIL("after step " << llm.num_steps() - 1 << ": " << error.what());
    }
  }
  BOOST_TEST(result.outputs.size() == requests.size());
  result.kv_stats = llm.kv().stats();
  BOOST_TEST(result.kv_stats.num_sequences == 0);
  BOOST_TEST(result.kv_stats.device_blocks_free == setup.num_device_blocks);
  BOOST_TEST(result.kv_stats.host_blocks_free == setup.num_host_blocks);
  result.counters = llm.counters();
  result.step_metrics = llm.step_metrics();
  result.plans = recording.records();
  result.end_time = clock.now();
  result.num_steps = llm.num_steps();
  return result;
}

// The same finished completions, token for token, for every request.
void check_same_tokens(const RunResult& expected, const RunResult& actual) {
  BOOST_REQUIRE_EQUAL(expected.outputs.size(), actual.outputs.size());
  for (const auto& [id, want] : expected.outputs) {
    const auto found = actual.outputs.find(id);
    BOOST_REQUIRE(found != actual.outputs.end());
    const engine::RequestOutput& got = found->second;
    BOOST_TEST_CONTEXT("request " << id) {
      BOOST_TEST(got.finished);
      BOOST_TEST(got.finish_reason == want.finish_reason);
      BOOST_REQUIRE_EQUAL(got.completions.size(), want.completions.size());
      for (size_t i = 0; i < want.completions.size(); ++i) {
        BOOST_TEST_CONTEXT("completion " << i) {
          BOOST_TEST(got.completions[i].tokens == want.completions[i].tokens, boost::test_tools::per_element());
          BOOST_TEST(got.completions[i].finish_reason == want.completions[i].finish_reason);
          BOOST_TEST(got.completions[i].cumulative_logprob == want.completions[i].cumulative_logprob,
                     boost::test_tools::tolerance(1e-9));
        }
      }
    }
  }
}

int64_t num_output_tokens(const RunResult& run) {
  int64_t tokens = 0;
  for (const auto& [id, output] : run.outputs) {
    for (const engine::Completion& completion : output.completions) tokens += static_cast<int64_t>(completion.tokens.size());
  }
  return tokens;
}

// Runs one request alone and returns its final output.
engine::RequestOutput run_one(const EngineSetup& setup, const sched::Request& request) {
  const RunResult run = run_workload(setup, {request});
  BOOST_REQUIRE_EQUAL(run.outputs.size(), 1u);
  return run.outputs.begin()->second;
}

sched::Request make_request(sched::RequestId id, int32_t prompt_length, int32_t max_tokens) {
  sched::Request request;
  request.id = id;
  for (int32_t i = 0; i < prompt_length; ++i) request.prompt_tokens.push_back(static_cast<TokenId>(100 + 7 * i + id));
  request.params.max_tokens = max_tokens;
  return request;
}

std::ptrdiff_t index_of(const std::vector<TokenId>& tokens, TokenId token) {
  return std::find(tokens.begin(), tokens.end(), token) - tokens.begin();
}

struct PreemptionCase {
  std::optional<PreemptionMode> mode;
  bool chunked_prefill = true;
};

std::string describe(const PreemptionCase& preemption) {
  const std::string mode = !preemption.mode                             ? "auto"
                           : *preemption.mode == PreemptionMode::swap ? "swap"
                                                                        : "recompute";
  return mode + (preemption.chunked_prefill ? ", chunked prefill" : ", no chunked prefill");
}

}  // namespace

// --- 1, 2: outputs do not depend on the schedule ---------------------------------------------

BOOST_AUTO_TEST_SUITE(engine_schedule_independence)

// Each preemption case runs the same workload on a pool far too small and must return exactly
// the tokens of the run on an ample pool.
void check_nothing_is_lost(const PreemptionCase& preemption) {
  for (const uint64_t seed : {7, 8, 9, 10}) {
    BOOST_TEST_CONTEXT(describe(preemption) << ", workload seed " << seed) {
      const std::vector<sched::Request> requests = make_workload({.seed = seed});
      BOOST_REQUIRE(has_beam_search(requests));
      const RunResult ample = run_workload(EngineSetup{}, requests);
      BOOST_TEST(ample.counters.preemptions_recompute + ample.counters.preemptions_swap == 0);
      const RunResult small = run_workload(small_pool(preemption.mode, preemption.chunked_prefill), requests);
      const engine::EngineCounters& counters = small.counters;
      BOOST_TEST_MESSAGE(describe(preemption) << ", seed " << seed << ": " << small.num_steps << " steps, "
                                              << counters.preemptions_recompute << " recompute, "
                                              << counters.preemptions_swap << " swap preemptions");
      BOOST_TEST(counters.requests_finished == static_cast<int64_t>(requests.size()));
      if (preemption.mode == PreemptionMode::recompute) {
        BOOST_TEST(counters.preemptions_recompute >= 10);
        BOOST_TEST(counters.preemptions_swap == 0);
        BOOST_TEST(counters.blocks_swapped_out == 0);
      } else if (preemption.mode == PreemptionMode::swap) {
        BOOST_TEST(counters.preemptions_swap >= 10);
        BOOST_TEST(counters.blocks_swapped_out > 0);
        BOOST_TEST(counters.blocks_swapped_in > 0);
      } else {
        BOOST_TEST(counters.preemptions_recompute > 0);
        BOOST_TEST(counters.preemptions_swap > 0);
      }
      check_same_tokens(ample, small);
    }
  }
}

// Recompute of forked groups once failed here; engine_recompute_of_forked_groups below keeps the
// minimal reproductions (stale prefix-cache blocks after a rolled-back admission, chunks with
// start > end, beams dropped mid-recompute).
BOOST_AUTO_TEST_CASE(nothing_is_lost_to_recompute_with_chunked_prefill) {
  check_nothing_is_lost({PreemptionMode::recompute, true});
}

BOOST_AUTO_TEST_CASE(nothing_is_lost_to_recompute_without_chunked_prefill) {
  check_nothing_is_lost({PreemptionMode::recompute, false});
}

BOOST_AUTO_TEST_CASE(nothing_is_lost_to_swap_with_chunked_prefill) { check_nothing_is_lost({PreemptionMode::swap, true}); }

BOOST_AUTO_TEST_CASE(nothing_is_lost_to_swap_without_chunked_prefill) {
  check_nothing_is_lost({PreemptionMode::swap, false});
}

BOOST_AUTO_TEST_CASE(nothing_is_lost_to_automatic_preemption_with_chunked_prefill) {
  check_nothing_is_lost({std::nullopt, true});
}

BOOST_AUTO_TEST_CASE(nothing_is_lost_to_automatic_preemption_without_chunked_prefill) {
  check_nothing_is_lost({std::nullopt, false});
}

BOOST_AUTO_TEST_CASE(tokens_do_not_depend_on_arrival_interleaving) {
  const std::vector<sched::Request> requests = make_workload({.seed = 11, .num_requests = 30});
  for (const EngineSetup& setup : {EngineSetup{}, small_pool(std::nullopt, true)}) {
    const RunResult at_once = run_workload(setup, requests);
    const RunResult trickled = run_workload(setup, requests, {.requests_per_step = 3});
    const RunResult one_by_one = run_workload(setup, requests, {.requests_per_step = 1});
    check_same_tokens(at_once, trickled);
    check_same_tokens(at_once, one_by_one);
  }
}

BOOST_AUTO_TEST_SUITE_END()

// --- recompute of groups with several sequences ------------------------------------------------
//
// Minimal reproductions of what the randomized runs above find in recompute mode: request 0
// decodes on a tiny pool while request 1 (n = 2 samples, or 2 beams) is preempted by recompute
// after its sequences diverged and must come back with the same tokens as on an ample pool.

BOOST_AUTO_TEST_SUITE(engine_recompute_of_forked_groups)

EngineSetup tiny_recompute_pool(int32_t num_device_blocks, int32_t max_num_batched_tokens) {
  EngineSetup setup;
  setup.block_size = 2;
  setup.num_device_blocks = num_device_blocks;
  setup.num_host_blocks = 0;
  setup.watermark = 0.0;
  setup.max_num_batched_tokens = max_num_batched_tokens;
  setup.max_model_len = 64;
  setup.preemption_mode = PreemptionMode::recompute;
  setup.eos_period = 0;
  return setup;
}

sched::Request request_with(sched::RequestId id, std::vector<TokenId> prompt, int32_t max_tokens) {
  sched::Request request;
  request.id = id;
  request.prompt_tokens = std::move(prompt);
  request.params.max_tokens = max_tokens;
  request.params.ignore_eos = true;
  return request;
}

sched::Request forked_request(std::vector<TokenId> prompt, int32_t max_tokens, int32_t n) {
  sched::Request request = request_with(1, std::move(prompt), max_tokens);
  request.params.n = n;
  return request;
}

sched::Request beam_request(std::vector<TokenId> prompt, int32_t max_tokens, int32_t beam_width) {
  sched::Request request = request_with(1, std::move(prompt), max_tokens);
  request.params.beam_width = beam_width;
  request.params.temperature = 0.0f;
  return request;
}

void check_recovers_from_recompute(const EngineSetup& setup, const std::vector<sched::Request>& requests) {
  EngineSetup ample = setup;
  ample.num_device_blocks = 512;
  ample.max_num_batched_tokens = 64;
  const RunResult expected = run_workload(ample, requests);
  const RunResult small = run_workload(setup, requests, {.max_steps = 200});
  BOOST_TEST(small.counters.preemptions_recompute > 0);
  check_same_tokens(expected, small);
}

// Regression test (found by nothing_is_lost_to_recompute_with_chunked_prefill):
// Scheduler::admit allocates a forked group's sequences one at a time and, when a later one
// throws KvCacheFullError, frees the ones already allocated. allocate() had registered the blocks
// they filled in the prefix cache (their KV was to be computed in this step) and free() leaves
// them cached, so the prefix cache advertises KV that was never written: at the next admission
// sample 0 hits a block that still holds sample 1's KV ("reads the wrong KV" at step 8).
BOOST_AUTO_TEST_CASE(a_rolled_back_admission_leaves_no_uncomputed_block_in_the_prefix_cache) {
  check_recovers_from_recompute(tiny_recompute_pool(8, 64),
                                {request_with(0, {10}, 8), forked_request({500, 501}, 6, 2)});
}

// Regression test, fixed: Scheduler::admit plans every sequence's first chunk before allocating any; a later
// sequence's allocate() then also matches the blocks the earlier ones filled in the same call and
// returns more cached tokens than its planned chunk: the plan holds [start, end) = [2, 1) (a
// negative token count) and after the step the sequence has 2 KV slots for 1 computed token.
BOOST_AUTO_TEST_CASE(a_forked_group_readmitted_in_chunks_plans_no_negative_chunk) {
  check_recovers_from_recompute(tiny_recompute_pool(4, 4),
                                {request_with(0, {10, 11}, 6), forked_request({500, 501}, 2, 2)});
}

// Regression test, fixed: a beam group preempted by recompute comes back with chunked prefill one sequence at a time
// within the token budget: one beam finishes its recompute and is sampled while the other is
// still mid-prompt. apply_beam_step then ranks only the sampled beam's candidates and drops the
// beam that had none, so the search returns [127 664 331 325] instead of [127 793 440 326].
BOOST_AUTO_TEST_CASE(a_beam_group_recomputed_in_chunks_keeps_every_beam) {
  check_recovers_from_recompute(tiny_recompute_pool(5, 4), {request_with(0, {10}, 4), beam_request({500, 501}, 4, 2)});
}

// Regression test (this case once spun forever): preempted by recompute, a forked group's
// samples were readmitted together, each with blocks of its own without a prefix cache to share
// through: 2 samples of 6 tokens need 6 blocks of the 4. Now the first sample is readmitted alone
// and the other rejoins when there is room, so the group finishes with an ample pool's tokens.
BOOST_AUTO_TEST_CASE(a_forked_group_preempted_by_recompute_without_prefix_caching_finishes) {
  EngineSetup setup = tiny_recompute_pool(4, 64);
  setup.enable_prefix_caching = false;
  check_recovers_from_recompute(setup, {request_with(0, {10}, 2), forked_request({500, 501, 502, 503}, 2, 2)});
}

BOOST_AUTO_TEST_SUITE_END()

// --- admission -----------------------------------------------------------------------------------

BOOST_AUTO_TEST_SUITE(engine_admission)

// Regression test, fixed: a rejected request comes back finished with times.finished = -1 ("not yet"): neither
// add_request() nor step() sets it for rejections (abort_request() and apply() do for the rest).
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
  BOOST_TEST(rejected.times.finished >= rejected.times.arrival, "a rejected request finished at "
                                                                     << rejected.times.finished);
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

// --- 3: stop conditions ------------------------------------------------------------------------

BOOST_AUTO_TEST_SUITE(engine_stop_conditions)

BOOST_AUTO_TEST_CASE(eos_stops_a_sequence_unless_ignore_eos) {
  EngineSetup setup;
  setup.eos_period = 4;
  sched::Request request = make_request(1, 9, 60);
  const engine::RequestOutput stopped = run_one(setup, request);
  BOOST_REQUIRE_EQUAL(stopped.completions.size(), 1u);
  const std::vector<TokenId>& tokens = stopped.completions[0].tokens;
  BOOST_REQUIRE(!tokens.empty());
  BOOST_TEST(tokens.back() == kEos);
  BOOST_TEST(index_of(tokens, kEos) == static_cast<std::ptrdiff_t>(tokens.size()) - 1);
  BOOST_TEST(tokens.size() < 60u);
  BOOST_TEST(stopped.finish_reason == FinishReason::stop);
  BOOST_TEST(stopped.completions[0].finish_reason == FinishReason::stop);

  request.params.ignore_eos = true;
  const engine::RequestOutput ignored = run_one(setup, request);
  const std::vector<TokenId>& all = ignored.completions.at(0).tokens;
  BOOST_TEST(all.size() == 60u);
  BOOST_TEST(ignored.finish_reason == FinishReason::length);
  BOOST_TEST(std::equal(tokens.begin(), tokens.end(), all.begin()));
  BOOST_TEST(std::count(all.begin(), all.end(), kEos) > 1);
}

BOOST_AUTO_TEST_CASE(each_parallel_sample_stops_on_its_own) {
  EngineSetup setup;
  setup.eos_period = 5;
  sched::Request request = make_request(2, 12, 50);
  request.params.n = 3;
  const engine::RequestOutput output = run_one(setup, request);
  BOOST_REQUIRE_EQUAL(output.completions.size(), 3u);
  for (const engine::Completion& completion : output.completions) {
    const auto first_eos = index_of(completion.tokens, kEos);
    if (completion.finish_reason == FinishReason::stop) {
      BOOST_TEST(first_eos == static_cast<std::ptrdiff_t>(completion.tokens.size()) - 1);
    } else {
      BOOST_TEST(completion.finish_reason == FinishReason::length);
      BOOST_TEST(completion.tokens.size() == 50u);
      BOOST_TEST(first_eos == static_cast<std::ptrdiff_t>(completion.tokens.size()));
    }
  }
  BOOST_TEST(output.completions[0].tokens != output.completions[1].tokens);
}

BOOST_AUTO_TEST_CASE(min_tokens_suppresses_eos_until_reached) {
  EngineSetup setup;
  setup.eos_period = 4;
  sched::Request request = make_request(3, 10, 60);
  const engine::RequestOutput free_run = run_one(setup, request);
  const auto first_eos = static_cast<int32_t>(index_of(free_run.completions.at(0).tokens, kEos));
  BOOST_REQUIRE_LT(first_eos, 40);  // the EOS that would stop it
  request.params.min_tokens = first_eos + 2;
  const engine::RequestOutput held = run_one(setup, request);
  const std::vector<TokenId>& tokens = held.completions.at(0).tokens;
  BOOST_TEST(static_cast<int32_t>(tokens.size()) >= first_eos + 2);
  BOOST_TEST(tokens.at(static_cast<size_t>(first_eos)) == kEos);
  if (held.finish_reason == FinishReason::stop) BOOST_TEST(tokens.back() == kEos);
}

BOOST_AUTO_TEST_CASE(stop_token_ids_stop_but_not_before_min_tokens) {
  EngineSetup setup;
  setup.eos_period = 0;
  sched::Request request = make_request(4, 7, 30);
  const std::vector<TokenId> tokens = run_one(setup, request).completions.at(0).tokens;
  BOOST_REQUIRE_EQUAL(tokens.size(), 30u);
  // A token whose first appearance is at output position 3 or later.
  size_t position = 3;
  while (index_of(tokens, tokens[position]) != static_cast<std::ptrdiff_t>(position)) ++position;
  const TokenId stop_token = tokens[position];
  request.params.stop_token_ids = {stop_token, 999999};
  const engine::RequestOutput stopped = run_one(setup, request);
  const std::vector<TokenId> expected(tokens.begin(), tokens.begin() + static_cast<std::ptrdiff_t>(position) + 1);
  BOOST_TEST(stopped.completions.at(0).tokens == expected, boost::test_tools::per_element());
  BOOST_TEST(stopped.finish_reason == FinishReason::stop);

  request.params.min_tokens = static_cast<int32_t>(position) + 2;
  const engine::RequestOutput held = run_one(setup, request);
  BOOST_TEST(held.completions.at(0).tokens.size() >= position + 2);
  BOOST_TEST(held.completions.at(0).tokens.at(position) == stop_token);
}

BOOST_AUTO_TEST_CASE(max_tokens_ends_with_length) {
  EngineSetup setup;
  setup.eos_period = 0;
  for (const int32_t max_tokens : {1, 2, 17}) {
    sched::Request request = make_request(5, 6, max_tokens);
    request.params.n = 2;
    const engine::RequestOutput output = run_one(setup, request);
    BOOST_TEST(output.finish_reason == FinishReason::length);
    BOOST_REQUIRE_EQUAL(output.completions.size(), 2u);
    for (const engine::Completion& completion : output.completions) {
      BOOST_TEST(completion.tokens.size() == static_cast<size_t>(max_tokens));
      BOOST_TEST(completion.finish_reason == FinishReason::length);
    }
  }
}

BOOST_AUTO_TEST_CASE(max_model_len_bounds_a_sequence) {
  EngineSetup setup;
  setup.eos_period = 0;
  setup.max_model_len = 40;
  const sched::Request request = make_request(6, 25, 15);  // exactly max_model_len in all
  const engine::RequestOutput output = run_one(setup, request);
  BOOST_TEST(output.finish_reason == FinishReason::length);
  BOOST_TEST(output.num_prompt_tokens + static_cast<int32_t>(output.completions.at(0).tokens.size()) == 40);

  const engine::EngineConfig config = engine_config(setup);
  engine::ScriptedExecutor scripted(executor_config(setup), config.cache);
  engine::VirtualClock clock;
  engine::Engine llm(config, scripted, clock);
  BOOST_CHECK_THROW(llm.add_request(make_request(7, 25, 16)), sched::InvalidRequestError);
  BOOST_CHECK_THROW(llm.add_request(make_request(8, 41, 1)), sched::InvalidRequestError);
  BOOST_TEST(!llm.has_unfinished());
}

BOOST_AUTO_TEST_SUITE_END()

// --- 4: metrics --------------------------------------------------------------------------------

BOOST_AUTO_TEST_SUITE(engine_metrics)

double step_seconds(const EngineSetup& setup, int32_t num_batched_tokens) {
  return setup.seconds_per_step + setup.seconds_per_token * num_batched_tokens;
}

BOOST_AUTO_TEST_CASE(step_metrics_follow_the_plans_and_the_clock_follows_the_executor) {
  WorkloadSpec spec;
  spec.seed = 21;
  spec.num_requests = 30;
  const std::vector<sched::Request> requests = make_workload(spec);
  const EngineSetup setup = small_pool(std::nullopt, true);
  const RunResult run = run_workload(setup, requests, {.requests_per_step = 4});
  BOOST_REQUIRE_EQUAL(run.step_metrics.size(), static_cast<size_t>(run.num_steps));
  std::map<int64_t, const PlanRecord*> plans;
  for (const PlanRecord& plan : run.plans) plans[plan.step] = &plan;
  double now = 0.0;
  engine::StepMetrics totals;
  for (size_t i = 0; i < run.step_metrics.size(); ++i) {
    const engine::StepMetrics& step = run.step_metrics[i];
    BOOST_TEST_CONTEXT("step " << i) {
      BOOST_TEST(step.step == static_cast<int64_t>(i));
      BOOST_TEST(step.start_time == now);
      BOOST_TEST(step.num_batched_tokens == step.num_prefill_tokens + step.num_decode_tokens);
      BOOST_TEST(step.kv_usage >= 0.0);
      BOOST_TEST(step.kv_usage <= 1.0);
      const auto plan = plans.find(step.step);
      if (plan == plans.end()) {
        BOOST_TEST(step.num_batched_tokens == 0);
        BOOST_TEST(step.end_time == step.start_time);
      } else {
        const PlanRecord& record = *plan->second;
        BOOST_TEST(step.num_batched_tokens == record.num_batched_tokens);
        BOOST_TEST(step.num_scheduled_seqs == record.num_sequences);
        BOOST_TEST(step.blocks_swapped_out == record.num_swap_out);
        BOOST_TEST(step.blocks_swapped_in == record.num_swap_in);
        BOOST_TEST(step.blocks_copied == record.num_copies);
        BOOST_TEST(step.end_time - step.start_time == step_seconds(setup, step.num_batched_tokens),
                   boost::test_tools::tolerance(1e-9));
      }
      now = step.end_time;
    }
    totals.num_prefill_tokens += step.num_prefill_tokens;
    totals.num_decode_tokens += step.num_decode_tokens;
    totals.blocks_swapped_out += step.blocks_swapped_out;
    totals.blocks_swapped_in += step.blocks_swapped_in;
    totals.blocks_copied += step.blocks_copied;
    totals.preemptions_recompute += step.preemptions_recompute;
    totals.preemptions_swap += step.preemptions_swap;
  }
  BOOST_TEST(run.end_time == now);
  const engine::EngineCounters& counters = run.counters;
  BOOST_TEST(counters.prompt_tokens == totals.num_prefill_tokens);
  BOOST_TEST(counters.preemptions_recompute == totals.preemptions_recompute);
  BOOST_TEST(counters.preemptions_swap == totals.preemptions_swap);
  BOOST_TEST(counters.blocks_swapped_out == totals.blocks_swapped_out);
  BOOST_TEST(counters.blocks_swapped_in == totals.blocks_swapped_in);
  BOOST_TEST(counters.preemptions_recompute > 0);
  BOOST_TEST(counters.preemptions_swap > 0);
  BOOST_TEST(totals.blocks_copied > 0);
  int64_t request_recomputes = 0;
  int64_t request_swaps = 0;
  for (const auto& [id, output] : run.outputs) {
    request_recomputes += output.times.num_preemptions_recompute;
    request_swaps += output.times.num_preemptions_swap;
  }
  BOOST_TEST(request_recomputes == counters.preemptions_recompute);
  BOOST_TEST(request_swaps == counters.preemptions_swap);
}

BOOST_AUTO_TEST_CASE(request_times_record_each_step_that_sampled) {
  WorkloadSpec spec;
  spec.seed = 22;
  spec.num_requests = 30;
  const std::vector<sched::Request> requests = make_workload(spec);
  const EngineSetup setup = small_pool(std::nullopt, true);
  const RunResult run = run_workload(setup, requests, {.requests_per_step = 2});
  std::map<int64_t, const engine::StepMetrics*> steps;
  for (const engine::StepMetrics& step : run.step_metrics) steps[step.step] = &step;
  for (const auto& [id, output] : run.outputs) {
    BOOST_TEST_CONTEXT("request " << id) {
      const sched::RequestTimes& times = output.times;
      std::vector<double> expected_token_times;
      double first_scheduled = -1.0;
      for (const PlanRecord& plan : run.plans) {
        const bool scheduled = std::find(plan.scheduled.begin(), plan.scheduled.end(), id) != plan.scheduled.end();
        if (scheduled && first_scheduled < 0) first_scheduled = steps.at(plan.step)->start_time;
        if (std::find(plan.sampled.begin(), plan.sampled.end(), id) != plan.sampled.end()) {
          expected_token_times.push_back(steps.at(plan.step)->end_time);
        }
      }
      BOOST_TEST(times.arrival <= times.first_scheduled);
      BOOST_TEST(times.first_scheduled == first_scheduled);
      BOOST_TEST(times.first_scheduled < times.first_token);
      BOOST_TEST(times.first_token <= times.finished);
      BOOST_TEST(std::is_sorted(times.token_times.begin(), times.token_times.end()));
      BOOST_TEST(times.token_times == expected_token_times, boost::test_tools::per_element());
      BOOST_REQUIRE(!times.token_times.empty());
      BOOST_TEST(times.first_token == times.token_times.front());
      BOOST_TEST(times.finished == times.token_times.back());
      if (output.completions.size() == 1 && !requests[static_cast<size_t>(id)].params.use_beam_search()) {
        BOOST_TEST(times.token_times.size() == output.completions[0].tokens.size());
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(counters_count_prompt_and_generated_tokens) {
  WorkloadSpec spec;
  spec.seed = 23;
  spec.num_requests = 25;
  spec.percent_beam = 0;
  const std::vector<sched::Request> requests = make_workload(spec);
  int64_t prompt_tokens = 0;
  for (const sched::Request& request : requests) prompt_tokens += static_cast<int64_t>(request.prompt_tokens.size());

  // Ample pool: every prompt token is computed once or served from the prefix cache.
  const RunResult ample = run_workload(EngineSetup{}, requests);
  BOOST_TEST(ample.counters.generation_tokens == num_output_tokens(ample));
  BOOST_TEST(ample.counters.prompt_tokens + ample.kv_stats.prefix_hit_tokens == prompt_tokens);
  BOOST_TEST(ample.kv_stats.prefix_hit_tokens > 0);
  BOOST_TEST(ample.counters.preemptions_recompute + ample.counters.preemptions_swap == 0);
  BOOST_TEST(ample.counters.requests_finished == static_cast<int64_t>(requests.size()));

  // Recompute computes prompts again; swap does not; both return every generated token.
  for (const PreemptionMode mode : {PreemptionMode::recompute, PreemptionMode::swap}) {
    const RunResult small = run_workload(small_pool(mode, true), requests);
    BOOST_TEST(small.counters.generation_tokens == num_output_tokens(small));
    if (mode == PreemptionMode::recompute) {
      BOOST_TEST(small.counters.preemptions_recompute > 0);
      BOOST_TEST(small.counters.preemptions_swap == 0);
      BOOST_TEST(small.counters.prompt_tokens > ample.counters.prompt_tokens);
    } else {
      BOOST_TEST(small.counters.preemptions_swap > 0);
      BOOST_TEST(small.counters.preemptions_recompute == 0);
      BOOST_TEST(small.counters.blocks_swapped_in > 0);
      BOOST_TEST(small.counters.blocks_swapped_out >= small.counters.blocks_swapped_in);
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()

// --- 5: logprobs -------------------------------------------------------------------------------

BOOST_AUTO_TEST_SUITE(engine_logprobs)

BOOST_AUTO_TEST_CASE(each_token_carries_k_top_logprobs_led_by_the_sampled_token) {
  EngineSetup setup;
  setup.eos_period = 6;
  std::vector<sched::Request> requests;
  for (const int32_t k : {1, 3, 5}) {
    for (const int32_t n : {1, 2}) {
      sched::Request request = make_request(static_cast<sched::RequestId>(requests.size()), 9, 20);
      request.params.n = n;
      request.params.logprobs = k;
      requests.push_back(std::move(request));
    }
  }
  requests.push_back(make_request(static_cast<sched::RequestId>(requests.size()), 9, 20));
  const RunResult run = run_workload(setup, requests);
  for (const sched::Request& request : requests) {
    const engine::RequestOutput& output = run.outputs.at(request.id);
    BOOST_REQUIRE_EQUAL(output.completions.size(), static_cast<size_t>(request.params.n));
    for (const engine::Completion& completion : output.completions) {
      BOOST_TEST_CONTEXT("request " << request.id << " completion " << completion.index) {
        if (!request.params.logprobs) {
          BOOST_TEST(completion.top_logprobs.empty());
          continue;
        }
        BOOST_REQUIRE_EQUAL(completion.top_logprobs.size(), completion.tokens.size());
        double sum = 0.0;
        for (size_t i = 0; i < completion.tokens.size(); ++i) {
          const auto& top = completion.top_logprobs[i];
          BOOST_REQUIRE_EQUAL(top.size(), static_cast<size_t>(*request.params.logprobs));
          BOOST_TEST(top.front().first == completion.tokens[i]);
          sum += top.front().second;
        }
        BOOST_TEST(completion.cumulative_logprob == sum, boost::test_tools::tolerance(1e-6));
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(logprobs_above_max_logprobs_are_refused) {
  const EngineSetup setup;
  const engine::EngineConfig config = engine_config(setup);
  engine::ScriptedExecutor scripted(executor_config(setup), config.cache);
  engine::VirtualClock clock;
  engine::Engine llm(config, scripted, clock);
  sched::Request request = make_request(1, 5, 5);
  request.params.logprobs = config.max_logprobs + 1;
  BOOST_CHECK_THROW(llm.add_request(request), sched::InvalidRequestError);
  request.params.logprobs = config.max_logprobs;
  BOOST_CHECK_NO_THROW(llm.add_request(request));
}

BOOST_AUTO_TEST_SUITE_END()

// --- 6: the offline API ------------------------------------------------------------------------

BOOST_AUTO_TEST_SUITE(offline_generate)

std::vector<engine::GenerateRequest> to_generate_requests(const std::vector<sched::Request>& requests) {
  std::vector<engine::GenerateRequest> generate_requests;
  for (const sched::Request& request : requests) generate_requests.push_back({request.prompt_tokens, request.params, 0});
  return generate_requests;
}

BOOST_AUTO_TEST_CASE(returns_finished_outputs_in_input_order) {
  const std::vector<sched::Request> requests = make_workload({.seed = 31, .num_requests = 20});
  const EngineSetup setup = small_pool(std::nullopt, true);
  const engine::EngineConfig config = engine_config(setup);
  engine::ScriptedExecutor scripted(executor_config(setup), config.cache);
  const std::vector<engine::RequestOutput> outputs =
      engine::generate(to_generate_requests(requests), scripted, config);
  BOOST_REQUIRE_EQUAL(outputs.size(), requests.size());
  for (size_t i = 0; i < outputs.size(); ++i) {
    BOOST_TEST(outputs[i].id == static_cast<sched::RequestId>(i));
    BOOST_TEST(outputs[i].finished);
    BOOST_TEST(outputs[i].num_prompt_tokens == static_cast<int32_t>(requests[i].prompt_tokens.size()));
  }
  // The same tokens as the engine driven step by step.
  const RunResult stepped = run_workload(setup, requests);
  for (const auto& [id, want] : stepped.outputs) {
    const engine::RequestOutput& got = outputs[static_cast<size_t>(id)];
    BOOST_REQUIRE_EQUAL(got.completions.size(), want.completions.size());
    for (size_t i = 0; i < want.completions.size(); ++i) {
      BOOST_TEST(got.completions[i].tokens == want.completions[i].tokens, boost::test_tools::per_element());
    }
  }
}

BOOST_AUTO_TEST_CASE(an_invalid_request_throws_before_anything_runs) {
  std::vector<sched::Request> requests = make_workload({.seed = 32, .num_requests = 6});
  requests[3].params.max_tokens = 0;
  const EngineSetup setup;
  const engine::EngineConfig config = engine_config(setup);
  engine::ScriptedExecutor scripted(executor_config(setup), config.cache);
  BOOST_CHECK_THROW(engine::generate(to_generate_requests(requests), scripted, config), sched::InvalidRequestError);
  BOOST_TEST(scripted.num_steps() == 0);
  requests[3].params.max_tokens = 4;
  requests[5].prompt_tokens.clear();
  BOOST_CHECK_THROW(engine::generate(to_generate_requests(requests), scripted, config), sched::InvalidRequestError);
  BOOST_TEST(scripted.num_steps() == 0);
}

BOOST_AUTO_TEST_CASE(no_requests_give_no_outputs) {
  const EngineSetup setup;
  const engine::EngineConfig config = engine_config(setup);
  engine::ScriptedExecutor scripted(executor_config(setup), config.cache);
  BOOST_TEST(engine::generate({}, scripted, config).empty());
}

BOOST_AUTO_TEST_SUITE_END()

// --- 7: abort ----------------------------------------------------------------------------------

BOOST_AUTO_TEST_SUITE(engine_abort)

struct AbortFixture {
  EngineSetup setup;
  engine::EngineConfig config;
  engine::ScriptedExecutor scripted;
  engine::VirtualClock clock;
  engine::Engine llm;

  explicit AbortFixture(const EngineSetup& engine_setup)
      : setup(engine_setup),
        config(engine_config(engine_setup)),
        scripted(executor_config(engine_setup), config.cache),
        llm(config, scripted, clock) {}

  // Steps once, checks the invariants and returns the outputs by request.
  std::map<sched::RequestId, engine::RequestOutput> step() {
    std::map<sched::RequestId, engine::RequestOutput> outputs;
    for (engine::RequestOutput& output : llm.step()) outputs.emplace(output.id, std::move(output));
    llm.scheduler().check_invariants();
    return outputs;
  }
};

BOOST_AUTO_TEST_CASE(an_aborted_running_request_comes_back_finished_and_frees_its_blocks) {
  EngineSetup setup;
  setup.eos_period = 0;
  AbortFixture fixture(setup);
  for (sched::RequestId id = 0; id < 3; ++id) {
    sched::Request request = make_request(id, 10, 40);
    request.params.n = 2;
    fixture.llm.add_request(request);
  }
  for (int32_t i = 0; i < 4; ++i) fixture.step();
  BOOST_REQUIRE_EQUAL(fixture.llm.kv().stats().num_sequences, 6);
  const int32_t free_before = fixture.llm.kv().stats().device_blocks_free;
  const double abort_time = fixture.clock.now();
  BOOST_TEST(fixture.llm.abort_request(1));
  BOOST_TEST(!fixture.llm.abort_request(1));
  BOOST_TEST(!fixture.llm.abort_request(77));
  BOOST_TEST(fixture.llm.kv().stats().num_sequences == 4);
  BOOST_TEST(fixture.llm.kv().stats().device_blocks_free > free_before);
  fixture.llm.scheduler().check_invariants();
  BOOST_TEST(fixture.llm.counters().requests_aborted == 1);

  const auto outputs = fixture.step();
  BOOST_REQUIRE(outputs.contains(1));
  const engine::RequestOutput& aborted = outputs.at(1);
  BOOST_TEST(aborted.finished);
  BOOST_TEST(aborted.finish_reason == FinishReason::abort);
  BOOST_TEST(aborted.times.finished == abort_time);
  BOOST_REQUIRE_EQUAL(aborted.completions.size(), 2u);
  for (const engine::Completion& completion : aborted.completions) {
    BOOST_TEST(completion.finish_reason == FinishReason::abort);
    BOOST_TEST(completion.tokens.size() == 4u);
  }
  BOOST_TEST(!fixture.llm.abort_request(1));
  while (fixture.llm.has_unfinished()) {
    BOOST_REQUIRE_LT(fixture.llm.num_steps(), 200);
    const auto later = fixture.step();
    BOOST_TEST(!later.contains(1));
  }
  BOOST_TEST(fixture.llm.counters().requests_finished == 2);
  BOOST_TEST(fixture.llm.kv().stats().num_sequences == 0);
  BOOST_TEST(fixture.llm.kv().stats().device_blocks_free == setup.num_device_blocks);
}

BOOST_AUTO_TEST_CASE(aborting_everything_frees_both_tiers_and_reports_each_request_once) {
  EngineSetup setup = small_pool(PreemptionMode::swap, true);
  setup.eos_period = 0;
  AbortFixture fixture(setup);
  const std::vector<sched::Request> requests = make_workload({.seed = 41, .num_requests = 16, .percent_beam = 0});
  for (const sched::Request& request : requests) fixture.llm.add_request(request);
  std::map<sched::RequestId, engine::RequestOutput> finished;
  while (fixture.llm.scheduler().num_swapped() == 0) {
    BOOST_REQUIRE_LT(fixture.llm.num_steps(), 500);
    for (auto& [id, output] : fixture.step()) {
      if (output.finished) finished.emplace(id, std::move(output));
    }
  }
  BOOST_TEST(fixture.llm.kv().stats().host_blocks_free < setup.num_host_blocks);
  int32_t num_aborted = 0;
  for (const sched::Request& request : requests) num_aborted += fixture.llm.abort_request(request.id) ? 1 : 0;
  BOOST_TEST(num_aborted + static_cast<int32_t>(finished.size()) == static_cast<int32_t>(requests.size()));
  BOOST_TEST(fixture.llm.kv().stats().num_sequences == 0);
  BOOST_TEST(fixture.llm.kv().stats().host_blocks_free == setup.num_host_blocks);
  BOOST_TEST(fixture.llm.kv().stats().device_blocks_free == setup.num_device_blocks);
  const auto outputs = fixture.step();
  BOOST_TEST(static_cast<int32_t>(outputs.size()) == num_aborted);
  for (const auto& [id, output] : outputs) {
    BOOST_TEST(!finished.contains(id));
    BOOST_TEST(output.finish_reason == FinishReason::abort);
  }
  BOOST_TEST(!fixture.llm.has_unfinished());
}

BOOST_AUTO_TEST_CASE(a_waiting_request_can_be_aborted_before_it_runs) {
  AbortFixture fixture(EngineSetup{});
  fixture.llm.add_request(make_request(5, 8, 8));
  BOOST_TEST(fixture.llm.abort_request(5));
  const auto outputs = fixture.step();
  BOOST_REQUIRE(outputs.contains(5));
  BOOST_TEST(outputs.at(5).finish_reason == FinishReason::abort);
  BOOST_TEST(outputs.at(5).times.first_scheduled < 0.0);
  BOOST_TEST(!fixture.llm.has_unfinished());
  BOOST_TEST(fixture.scripted.num_steps() == 0);
}

BOOST_AUTO_TEST_SUITE_END()

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
