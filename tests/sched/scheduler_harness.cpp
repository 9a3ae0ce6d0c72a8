// The scheduler table tests' harness: the recording executor and the Harness that steps the engine.
#include "tests/sched/scheduler_harness.h"

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <exception>
#include <stdexcept>
#include <utility>

namespace pagedllm::test {

namespace {

StepRecord record_of(const sched::StepPlan& plan) {
  StepRecord record;
  record.step = plan.step;
  record.executed = true;
  for (const sched::ScheduledSequence& scheduled : plan.sequences) {
    record.ran.push_back({scheduled.request,
                          scheduled.seq,
                          scheduled.start,
                          scheduled.end,
                          scheduled.sample,
                          scheduled.is_prefill(),
                          {scheduled.block_table.begin(), scheduled.block_table.end()}});
  }
  record.preempted = plan.preempted;
  for (const sched::RejectedGroup& rejected : plan.rejected) record.rejected.push_back(rejected.request);
  record.swap_out = plan.swap_out;
  record.swap_in = plan.swap_in;
  record.copies = plan.copies;
  record.num_batched_tokens = plan.num_batched_tokens;
  return record;
}

engine::EngineConfig engine_config(const HarnessConfig& config) {
  engine::EngineConfig result;
  result.cache.block_size = kBlockSize;
  result.cache.num_device_blocks = config.num_device_blocks;
  result.cache.num_host_blocks = config.num_host_blocks;
  result.cache.watermark = 0.0;  // block counts in the tables are exact
  result.cache.enable_prefix_caching = config.enable_prefix_caching;
  result.cache.sliding_window = config.sliding_window;
  result.scheduler.max_num_batched_tokens = config.max_num_batched_tokens;
  result.scheduler.max_num_seqs = config.max_num_seqs;
  result.scheduler.max_model_len = config.max_model_len;
  result.scheduler.enable_chunked_prefill = config.enable_chunked_prefill;
  result.scheduler.policy = config.policy;
  result.scheduler.preemption_mode = config.preemption_mode;
  return result;
}

engine::ScriptedExecutorConfig scripted_config() {
  engine::ScriptedExecutorConfig config;
  config.verify_kv = true;
  return config;
}

// Distinct prompts per request: no prefix-cache sharing between requests.
std::vector<TokenId> prompt_of(RequestId id, int32_t num_tokens) {
  std::vector<TokenId> tokens;
  for (int32_t i = 0; i < num_tokens; ++i) tokens.push_back(static_cast<TokenId>(1000 * (id + 1) + i));
  return tokens;
}

sched::Request make_request(const RequestSpec& spec, double now) {
  sched::Request request;
  request.id = spec.id;
  request.prompt_tokens = prompt_of(spec.id, spec.num_prompt_tokens);
  request.params.max_tokens = spec.max_tokens;
  request.params.n = spec.n;
  request.params.beam_width = spec.beam_width;
  request.priority = spec.priority;
  request.arrival_time = spec.arrival.value_or(now);
  return request;
}

}  // namespace

// --- RecordingExecutor -------------------------------------------------------------------------

sched::StepResult RecordingExecutor::execute(const sched::StepPlan& plan) {
  records_.push_back(record_of(plan));
  return inner_.execute(plan);
}

// --- Harness -----------------------------------------------------------------------------------

Harness::Harness(const HarnessConfig& config)
    : config_(engine_config(config)),
      scripted_(scripted_config(), config_.cache),
      recorder_(scripted_),
      engine_(config_, recorder_, clock_) {}

void Harness::add(const RequestSpec& spec) { engine_.add_request(make_request(spec, clock_.now())); }

const StepRecord& Harness::step() {
  const std::string error = try_step();
  if (!error.empty()) BOOST_FAIL(error);
  return steps_.back();
}

std::string Harness::try_step() {
  const int64_t index = engine_.num_steps();
  const size_t num_recorded = recorder_.records().size();
  std::string error;
  try {
    last_outputs_ = engine_.step();
  } catch (const std::exception& thrown) {
    error = "step " + std::to_string(index) + " threw: " + thrown.what();
  }
  StepRecord record = recorder_.records().size() > num_recorded ? recorder_.records().back() : StepRecord{};
  record.step = index;
  steps_.push_back(std::move(record));
  if (!error.empty()) return error;
  for (const engine::RequestOutput& output : last_outputs_) outputs_[output.id] = output;
  try {
    engine_.scheduler().check_invariants();
  } catch (const std::exception& broken) {
    return "after step " + std::to_string(index) + ": " + broken.what();
  }
  return {};
}

void Harness::step_to(int64_t num_steps) {
  while (engine_.num_steps() < num_steps) step();
}

void Harness::run_to_completion(int64_t max_steps) {
  while (engine_.has_unfinished() && engine_.num_steps() < max_steps) step();
  BOOST_REQUIRE_MESSAGE(!engine_.has_unfinished(), "requests still unfinished after " << max_steps << " steps");
}

std::string Harness::run_checked(int64_t max_steps) {
  while (engine_.has_unfinished()) {
    if (engine_.num_idle_steps() > 2) {
      return "stalled: " + std::to_string(engine_.num_idle_steps()) + " steps in a row scheduled nothing, " +
             std::to_string(engine_.scheduler().num_waiting()) + " request(s) waiting";
    }
    if (engine_.num_steps() >= max_steps) return "unfinished after " + std::to_string(max_steps) + " steps";
    std::string error = try_step();
    if (!error.empty()) return error;
  }
  return {};
}

const engine::RequestOutput* Harness::last_output(RequestId id) const {
  for (const engine::RequestOutput& output : last_outputs_) {
    if (output.id == id) return &output;
  }
  return nullptr;
}

const engine::RequestOutput& Harness::output(RequestId id) const {
  const auto it = outputs_.find(id);
  if (it == outputs_.end()) throw std::logic_error("no output for request " + std::to_string(id));
  return it->second;
}

std::vector<SeqId> Harness::seqs_of(RequestId request) const {
  std::vector<SeqId> seqs;
  for (const StepRecord& record : steps_) {
    for (const RanSequence& ran : record.ran) {
      if (ran.request == request && std::find(seqs.begin(), seqs.end(), ran.seq) == seqs.end()) {
        seqs.push_back(ran.seq);
      }
    }
  }
  return seqs;
}

void Harness::expect_drained() const {
  const kv::KvStats stats = kv().stats();
  BOOST_TEST(stats.num_sequences == 0);
  BOOST_TEST(stats.num_free_device_blocks == stats.num_device_blocks);
  BOOST_TEST(stats.num_free_host_blocks == stats.num_host_blocks);
  BOOST_CHECK_NO_THROW(kv().check_invariants());
}

}  // namespace pagedllm::test
