#include "sim/profile_session.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>

namespace pagedllm::sim::profiling {
namespace {

uint64_t mix64(uint64_t x) {  // splitmix64's finalizer
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

StepShape shape_of(const sched::StepPlan& plan) {
  StepShape shape;
  for (const sched::ScheduledSequence& scheduled : plan.sequences) {
    if (scheduled.is_prefill()) {
      shape.chunks.push_back({scheduled.start, scheduled.end, scheduled.sample});
      continue;
    }
    ++shape.num_decodes;
    shape.min_decode_end = std::min(shape.min_decode_end, scheduled.end);
    shape.max_decode_end = std::max(shape.max_decode_end, scheduled.end);
  }
  return shape;
}

sched::StepResult RecordingExecutor::execute(const sched::StepPlan& plan) {
  sched::StepResult result = inner_->execute(plan);
  last_.executed = true;
  last_.shape = shape_of(plan);
  last_.seconds = result.elapsed_seconds;
  return result;
}

StepRecord RecordingExecutor::take() { return std::exchange(last_, StepRecord{}); }

PromptMaker::PromptMaker(TokenId begin, TokenId end) : begin_(begin), range_(static_cast<uint64_t>(end - begin)) {}

std::vector<TokenId> PromptMaker::tokens(uint64_t key, int32_t length) const {
  std::vector<TokenId> out(static_cast<size_t>(length));
  for (int32_t i = 0; i < length; ++i) {
    const uint64_t draw = mix64(key * 0x100000001b3ULL + static_cast<uint64_t>(i));
    out[static_cast<size_t>(i)] = begin_ + static_cast<TokenId>(draw % range_);
  }
  return out;
}

sched::SamplingParams params_for(Sampling sampling, int32_t max_tokens, uint64_t seed) {
  sched::SamplingParams params;
  params.max_tokens = max_tokens;
  params.ignore_eos = true;
  params.temperature = sampling == Sampling::random ? 1.0f : 0.0f;
  if (sampling == Sampling::random) params.seed = seed;
  if (sampling == Sampling::beam) params.beam_width = 2;
  return params;
}

Session::Session(const StepProfilerConfig& config, const engine::EngineConfig& engine_config)
    : executor_(config.make_executor(engine_config.cache)), engine_(engine_config, executor_, clock_) {}

sched::RequestId Session::add(std::vector<TokenId> prompt, const sched::SamplingParams& params) {
  const sched::RequestId id = next_id_++;
  sched::Request request;
  request.id = id;
  request.prompt_tokens = std::move(prompt);
  request.params = params;
  request.arrival_time = clock_.now();
  engine_.add_request(std::move(request));
  return id;
}

StepRecord Session::step() {
  const auto start = std::chrono::steady_clock::now();
  engine_.step();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  StepRecord record = executor_.take();
  record.engine_seconds = std::max(0.0, wall - record.seconds);
  return record;
}

void Session::run_until_idle() {
  for (int i = 0; i < kMaxSetupSteps && engine_.has_unfinished(); ++i) step();
  if (engine_.has_unfinished()) throw std::runtime_error("profile: requests did not finish");
}

engine::EngineConfig engine_config(const StepProfilerConfig& config, int32_t num_device_blocks, int32_t max_num_seqs,
                                   int32_t max_num_batched_tokens) {
  if (config.max_device_blocks > 0 && num_device_blocks > config.max_device_blocks) {
    throw std::runtime_error("profile: a measurement needs " + std::to_string(num_device_blocks) +
                             " KV blocks at once; the device holds " + std::to_string(config.max_device_blocks) +
                             " (raise --gpu-memory-utilization)");
  }
  engine::EngineConfig engine;
  engine.cache.block_size = config.block_size;
  engine.cache.num_device_blocks = num_device_blocks;
  engine.cache.num_host_blocks = 0;
  engine.cache.enable_prefix_caching = true;
  engine.scheduler.max_num_seqs = max_num_seqs;
  engine.scheduler.max_num_batched_tokens = config.max_num_batched_tokens > 0
                                                ? std::min(max_num_batched_tokens, config.max_num_batched_tokens)
                                                : max_num_batched_tokens;
  engine.scheduler.max_model_len = config.max_model_len;
  engine.scheduler.enable_chunked_prefill = true;
  engine.record_step_metrics = false;
  return engine;
}

double quantile(std::vector<double> values, double q) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  const double at = q * static_cast<double>(values.size() - 1);
  const auto below = static_cast<size_t>(at);
  const size_t above = std::min(below + 1, values.size() - 1);
  return values[below] + (values[above] - values[below]) * (at - static_cast<double>(below));
}

double median(std::vector<double> values) { return quantile(std::move(values), 0.5); }

std::string microseconds(double seconds) {
  return std::to_string(static_cast<int64_t>(std::lround(seconds * 1e6))) + " us";
}

void progress(const StepProfilerConfig& config, const std::string& line) {
  if (config.on_progress) config.on_progress(line);
}

}  // namespace pagedllm::sim::profiling
