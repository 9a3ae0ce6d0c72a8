#include "sim/profile_scalars.h"

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>

#include "core/kv/kv_cache_config.h"
#include "sim/profile_interpolation.h"

namespace pagedllm::sim::profiling {

double measure_sample_seconds(const StepProfilerConfig& config, const PromptMaker& prompts) {
  const int32_t bs = config.block_size;
  const int32_t n = 4 * bs;
  Session session(config, engine_config(config, 4 * blocks_for(2 * n, bs) + 16, 4, n));
  std::vector<double> sampled;
  std::vector<double> unsampled;
  const int32_t reps = config.num_warmup_steps + 3 * config.num_repeats;
  for (int32_t rep = 0; rep < reps; ++rep) {
    for (const bool sample : {true, false}) {
      // A prompt of n tokens is one chunk that samples; of n + bs, with a budget of n, its first
      // chunk is [0, n) and does not.
      const uint64_t key = 0x6000000000ULL + 2ULL * static_cast<uint64_t>(rep) + (sample ? 1 : 0);
      session.add(prompts.tokens(key, sample ? n : n + bs), params_for(Sampling::greedy, 1, 0));
      const StepRecord record = session.step();
      const StepShape& shape = record.shape;
      if (shape.chunks.size() != 1 || shape.chunks[0].start != 0 || shape.chunks[0].end != n ||
          shape.chunks[0].sample != sample) {
        throw std::runtime_error("profile: expected one chunk [0, " + std::to_string(n) + ")" +
                                 (sample ? " that samples" : " that does not sample"));
      }
      if (rep >= config.num_warmup_steps) (sample ? sampled : unsampled).push_back(record.seconds);
      session.run_until_idle();
    }
  }
  return std::max(0.0, quantile(sampled, kQuantile) - quantile(unsampled, kQuantile));
}

SamplingExtras measure_sampling_extras(const StepProfilerConfig& config, const PromptMaker& prompts) {
  const int32_t b = config.grid.extras_num_sequences;
  const int32_t bs = config.block_size;
  const int32_t w = config.num_warmup_steps;
  const int32_t r = config.num_repeats;
  const int32_t prompt_len = 4 * bs;
  const int32_t max_tokens = w + r + 2;
  const int32_t num_blocks = 4 * b * (blocks_for(prompt_len + max_tokens, bs) + 1) + 16;
  Session session(config, engine_config(config, num_blocks, b, std::max(2048, b * prompt_len)));
  std::vector<double> times[3];
  constexpr int kCycles = 3;  // the three kinds alternate, so that drift hits them alike
  for (int cycle = 0; cycle < kCycles; ++cycle) {
    for (const Sampling sampling : {Sampling::greedy, Sampling::random, Sampling::beam}) {
      const int32_t num_requests = sampling == Sampling::beam ? b / 2 : b;
      std::vector<sched::RequestId> wave;
      for (int32_t k = 0; k < num_requests; ++k) {
        const uint64_t key = 0x4000000000ULL + 0x10000ULL * static_cast<uint64_t>(cycle) + static_cast<uint64_t>(k);
        wave.push_back(session.add(prompts.tokens(key, prompt_len), params_for(sampling, max_tokens, key)));
      }
      session.step_until([&](const StepRecord& record) { return record.shape.decodes_only(b); },
                         std::to_string(b) + " decodes for the sampling extras");
      for (int32_t j = 1; j < w; ++j) session.step();
      for (int32_t j = 0; j < r; ++j) {
        const StepRecord record = session.step();
        if (record.shape.decodes_only(b)) times[static_cast<int>(sampling)].push_back(record.seconds);
      }
      for (const sched::RequestId id : wave) session.abort(id);
      session.run_until_idle();
    }
  }
  for (const auto& kind : times) {
    if (kind.empty()) throw std::runtime_error("profile: no decode step of the sampling extras kept its shape");
  }
  const double greedy = quantile(times[0], kQuantile);
  return {.random = (quantile(times[1], kQuantile) - greedy) / b, .beam = (quantile(times[2], kQuantile) - greedy) / b};
}

BlockOperationSeconds measure_block_operations(const StepProfilerConfig& config) {
  const int32_t k = config.grid.num_blocks_per_operation;
  kv::KvCacheConfig cache;
  cache.block_size = config.block_size;
  cache.num_device_blocks = 3 * k;
  cache.num_host_blocks = k;
  const std::unique_ptr<engine::Executor> executor = config.make_executor(cache);
  std::vector<double> times[3];
  for (int32_t rep = 0; rep < config.num_warmup_steps + 3 * config.num_repeats; ++rep) {
    for (int kind = 0; kind < 3; ++kind) {
      sched::StepPlan plan;
      plan.step = rep;
      for (int32_t i = 0; i < k; ++i) {
        if (kind == 0) plan.swap_out.push_back({i, i});
        if (kind == 1) plan.swap_in.push_back({i, k + i});
        if (kind == 2) plan.copies.push_back({i, 2 * k + i});
      }
      const double seconds = executor->execute(plan).elapsed_seconds;
      if (rep >= config.num_warmup_steps) times[kind].push_back(seconds / k);
    }
  }
  return {quantile(times[0], kQuantile), quantile(times[1], kQuantile), quantile(times[2], kQuantile)};
}

double measure_step_overhead(const StepProfilerConfig& config, const PromptMaker& prompts, const ProfileGrid& prefill) {
  const ProfileGridSpec& grid = config.grid;
  const int32_t bs = config.block_size;
  const int32_t w = config.num_warmup_steps;
  const int32_t r = 2 * config.num_repeats;
  const int32_t prompt_len = grid.mixed_context;
  const int32_t max_tokens = w + 2 * r + 2;
  const int32_t b_max = *std::max_element(grid.mixed_num_decodes.begin(), grid.mixed_num_decodes.end());
  const int32_t n_max = *std::max_element(grid.mixed_chunk_tokens.begin(), grid.mixed_chunk_tokens.end());
  const int32_t num_blocks =
      2 * (b_max * (blocks_for(prompt_len + max_tokens, bs) + 1) + r * (blocks_for(n_max, bs) + 1)) + 16;
  std::vector<double> estimates;
  uint64_t key = 0x5000000000ULL;
  for (const int32_t b : grid.mixed_num_decodes) {
    for (const int32_t n : grid.mixed_chunk_tokens) {
      Session session(config, engine_config(config, num_blocks, b + 1, std::max(2048, b * prompt_len + n)));
      for (int32_t k = 0; k < b; ++k) {
        session.add(prompts.tokens(++key, prompt_len), params_for(Sampling::greedy, max_tokens, 0));
      }
      session.step_until([&](const StepRecord& record) { return record.shape.decodes_only(b); },
                         std::to_string(b) + " decodes for the mixed steps");
      for (int32_t j = 1; j < w; ++j) session.step();
      std::vector<double> mixed_seconds;
      std::vector<double> decode_seconds;
      for (int32_t j = 0; j < r; ++j) {
        session.add(prompts.tokens(++key, n), params_for(Sampling::greedy, 1, 0));
        const StepRecord mixed = session.step();
        const StepRecord decodes = session.step();
        const bool shapes_hold = mixed.shape.num_decodes == b && mixed.shape.chunks.size() == 1 &&
                                 mixed.shape.chunks[0].end - mixed.shape.chunks[0].start == n &&
                                 decodes.shape.decodes_only(b);
        if (!shapes_hold) {
          throw std::runtime_error("profile: expected a mixed step of " + std::to_string(b) +
                                   " decodes and a chunk of " + std::to_string(n) + " tokens");
        }
        mixed_seconds.push_back(mixed.seconds);
        decode_seconds.push_back(decodes.seconds);
      }
      const double decodes = quantile(decode_seconds, kQuantile);
      const double chunk = interpolate(prefill, n, 0.0);
      const double mixed = quantile(mixed_seconds, kQuantile);
      estimates.push_back(decodes + chunk - mixed);
      progress(config, "mixed steps: " + std::to_string(b) + " decodes (" + microseconds(decodes) + ") + a chunk of " +
                           std::to_string(n) + " tokens (" + microseconds(chunk) + ") = " + microseconds(mixed) +
                           " together: overhead " + microseconds(estimates.back()));
    }
  }
  return median(std::move(estimates));
}

}  // namespace pagedllm::sim::profiling
