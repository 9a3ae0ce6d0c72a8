// The engine tests' harness: engine setups, random workloads, and runs checked step by step on a scripted executor.
#include "tests/engine/engine_harness.h"

#include <algorithm>
#include <exception>
#include <random>
#include <string>
#include <utility>

#include "core/engine/clock.h"
#include "core/engine/executor.h"

namespace pagedllm::test {

namespace {

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
    for (const sched::ScheduledSequence& scheduled : plan.sequences)
      record.num_unstored_tokens += scheduled.num_unstored_tokens;
    record.num_batched_tokens = plan.num_batched_tokens;
    record.num_swap_out = static_cast<int32_t>(plan.swap_out.size());
    record.num_swap_in = static_cast<int32_t>(plan.swap_in.size());
    record.num_copies = static_cast<int32_t>(plan.copies.size());
    records_.push_back(std::move(record));
    return inner_.execute(plan);
  }
  std::string name() const override { return "recording"; }
  bool reads_prompt_tokens() const override { return inner_.reads_prompt_tokens(); }
  const std::vector<PlanRecord>& records() const { return records_; }

 private:
  engine::Executor& inner_;
  std::vector<PlanRecord> records_;
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

}  // namespace

// --- configuration -----------------------------------------------------------------------------

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
  config.eos_token_ids = {kEos};
  config.speculative = setup.speculative;
  return config;
}

engine::ScriptedExecutorConfig executor_config(const EngineSetup& setup) {
  engine::ScriptedExecutorConfig config;
  config.vocab_size = setup.vocab_size;
  config.eos_token_id = kEos;
  config.eos_period = setup.eos_period;
  config.seconds_per_step = setup.seconds_per_step;
  config.seconds_per_token = setup.seconds_per_token;
  config.verify_kv = setup.verify_kv;
  if (setup.speculative.simulated) config.accepted_per_position = setup.speculative.simulated->accepted_per_position;
  return config;
}

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
      request.prompt_tokens.assign(prefix.begin(),
                                   prefix.begin() + static_cast<std::ptrdiff_t>(std::min(length, prefix.size())));
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

sched::Request make_request(sched::RequestId id, int32_t prompt_length, int32_t max_tokens) {
  sched::Request request;
  request.id = id;
  for (int32_t i = 0; i < prompt_length; ++i) request.prompt_tokens.push_back(static_cast<TokenId>(100 + 7 * i + id));
  request.params.max_tokens = max_tokens;
  return request;
}

// --- running a workload ------------------------------------------------------------------------

RunResult run_workload(const EngineSetup& setup, const std::vector<sched::Request>& requests,
                       const RunOptions& options) {
  const engine::EngineConfig config = engine_config(setup);
  engine::ScriptedExecutor scripted(executor_config(setup), config.cache);
  RecordingExecutor recording(scripted);
  engine::VirtualClock clock;
  std::optional<spec::DraftModelProposer> draft;
  if (setup.draft) {
    const kv::KvCacheConfig draft_cache = spec::draft_cache_config(config.cache, 0);
    draft.emplace(spec::DraftModelProposerConfig{.cache = draft_cache,
                                                 .max_num_batched_tokens = config.scheduler.max_num_batched_tokens},
                  std::make_unique<engine::ScriptedExecutor>(*setup.draft, draft_cache));
  }
  engine::Engine llm(config, recording, clock, options.event_log, draft ? &*draft : nullptr);
  const bool streaming_checked = !has_beam_search(requests);
  std::map<sched::RequestId, engine::RequestOutput> latest;
  RunResult result;
  size_t next_request = 0;
  while (next_request < requests.size() || llm.has_unfinished()) {
    const size_t batch =
        options.requests_per_step > 0 ? static_cast<size_t>(options.requests_per_step) : requests.size();
    for (size_t added = 0; added < batch && next_request < requests.size(); ++added) {
      sched::Request request = requests[next_request++];
      request.arrival_time = clock.now();
      llm.add_request(std::move(request));
    }
    if (llm.num_steps() >= options.max_steps) {
      BOOST_FAIL("no progress after " << llm.num_steps() << " steps: " << llm.scheduler().num_running() << " running, "
                                      << llm.scheduler().num_waiting() << " waiting, " << llm.scheduler().num_swapped()
                                      << " swapped");
    }
    std::vector<engine::RequestOutput> outputs;
    try {
      outputs = llm.step();
    } catch (const std::exception& error) {
      BOOST_FAIL("step " << llm.num_steps() << " threw: " << error.what());
    }
    for (engine::RequestOutput& output : outputs) {
      BOOST_REQUIRE_MESSAGE(!result.outputs.contains(output.id),
                            "request " << output.id << " reported after it finished");
      if (streaming_checked && latest.contains(output.id)) check_extends(latest[output.id], output);
      if (output.finished) {
        result.outputs.emplace(output.id, std::move(output));
      } else {
        latest[output.id] = std::move(output);
      }
    }
    try {
      llm.scheduler().check_invariants();
      if (draft) draft->kv().check_invariants();
    } catch (const std::exception& error) {
      BOOST_FAIL("after step " << llm.num_steps() - 1 << ": " << error.what());
    }
  }
  BOOST_TEST(result.outputs.size() == requests.size());
  result.kv_stats = llm.kv().stats();
  BOOST_TEST(result.kv_stats.num_sequences == 0);
  BOOST_TEST(result.kv_stats.num_free_device_blocks == setup.num_device_blocks);
  BOOST_TEST(result.kv_stats.num_free_host_blocks == setup.num_host_blocks);
  if (draft) {  // the draft's cache empties as the next round would empty it
    draft->release_gone([&](SeqId seq) { return llm.kv().contains(seq); });
    BOOST_TEST(draft->kv().stats().num_sequences == 0);
    BOOST_TEST(draft->kv().stats().num_free_device_blocks == setup.num_device_blocks);
  }
  result.counters = llm.counters();
  result.step_metrics = llm.step_metrics();
  result.plans = recording.records();
  result.end_time = clock.now();
  result.num_steps = llm.num_steps();
  return result;
}

engine::RequestOutput run_one(const EngineSetup& setup, const sched::Request& request) {
  const RunResult run = run_workload(setup, {request});
  BOOST_REQUIRE_EQUAL(run.outputs.size(), 1u);
  return run.outputs.begin()->second;
}

// --- comparing runs ----------------------------------------------------------------------------

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
    for (const engine::Completion& completion : output.completions)
      tokens += static_cast<int64_t>(completion.tokens.size());
  }
  return tokens;
}

std::ptrdiff_t index_of(const std::vector<TokenId>& tokens, TokenId token) {
  return std::find(tokens.begin(), tokens.end(), token) - tokens.begin();
}

}  // namespace pagedllm::test
