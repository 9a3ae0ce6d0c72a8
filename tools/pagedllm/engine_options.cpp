#include "tools/pagedllm/engine_options.h"

#include <algorithm>
#include <stdexcept>

namespace pagedllm::cli {

namespace po = boost::program_options;

void add_engine_options(po::options_description& description, EngineOptions& options) {
  po::options_description engine("engine (vLLM's names and defaults)");
  // clang-format off
  engine.add_options()
      ("block-size", po::value(&options.block_size)->default_value(options.block_size), "tokens per KV block")
      ("num-gpu-blocks-override", po::value(&options.num_gpu_blocks_override)->default_value(0),
       "device KV blocks, instead of sizing them from memory")
      ("max-model-len", po::value(&options.max_model_len)->default_value(0), "prompt + output tokens per request (0 = the model's)")
      ("max-num-seqs", po::value(&options.max_num_seqs)->default_value(options.max_num_seqs), "sequences running at once")
      ("max-num-batched-tokens", po::value(&options.max_num_batched_tokens)->default_value(options.max_num_batched_tokens),
       "token budget of one step")
      ("enable-chunked-prefill", po::bool_switch(&options.enable_chunked_prefill),
       "split prompts across steps to fit the token budget (the default)")
      ("no-enable-chunked-prefill", po::bool_switch(&options.disable_chunked_prefill), "schedule whole prompts only")
      ("no-chunked-prefill", po::bool_switch(&options.disable_chunked_prefill_alias), "the same (an older spelling)")
      ("enable-prefix-caching", po::bool_switch(&options.enable_prefix_caching),
       "share the KV blocks of common prompt prefixes between requests (the default)")
      ("no-enable-prefix-caching", po::bool_switch(&options.disable_prefix_caching),
       "never share KV blocks between requests")
      ("no-prefix-caching", po::bool_switch(&options.disable_prefix_caching_alias), "the same (an older spelling)")
      ("preemption-mode", po::value(&options.preemption_mode)->default_value(options.preemption_mode),
       "auto (swap for n > 1 / beams, recompute otherwise), swap or recompute")
      ("scheduling-policy", po::value(&options.scheduling_policy)->default_value(options.scheduling_policy), "fcfs or priority")
      ("watermark", po::value(&options.watermark)->default_value(options.watermark),
       "fraction of device blocks admissions leave free")
      ("speculative-config", po::value(&options.speculative_config),
       "speculative decoding, as vLLM's JSON, e.g. '{\"method\": \"ngram\", \"num_speculative_tokens\": 4, "
       "\"prompt_lookup_max\": 4, \"prompt_lookup_min\": 2}' (cpu executor)");
  // clang-format on
  description.add(engine);
}

engine::EngineConfig engine_config_from(const EngineOptions& options, int32_t model_max_len) {
  const bool no_chunked_prefill = options.disable_chunked_prefill || options.disable_chunked_prefill_alias;
  const bool no_prefix_caching = options.disable_prefix_caching || options.disable_prefix_caching_alias;
  if (options.enable_chunked_prefill && no_chunked_prefill) {
    throw po::error("--enable-chunked-prefill and --no-enable-chunked-prefill contradict each other");
  }
  if (options.enable_prefix_caching && no_prefix_caching) {
    throw po::error("--enable-prefix-caching and --no-enable-prefix-caching contradict each other");
  }
  engine::EngineConfig config;
  config.cache.block_size = options.block_size;
  config.cache.watermark = options.watermark;
  config.cache.enable_prefix_caching = !no_prefix_caching;
  config.scheduler.max_num_seqs = options.max_num_seqs;
  config.scheduler.max_num_batched_tokens = options.max_num_batched_tokens;
  config.scheduler.enable_chunked_prefill = !no_chunked_prefill;
  config.scheduler.max_model_len = options.max_model_len > 0 ? options.max_model_len : model_max_len;
  if (options.max_model_len > model_max_len) {
    throw po::error("--max-model-len " + std::to_string(options.max_model_len) +
                    " exceeds the model's context length " + std::to_string(model_max_len));
  }
  if (options.preemption_mode == "swap") {
    config.scheduler.preemption_mode = sched::PreemptionMode::swap;
  } else if (options.preemption_mode == "recompute") {
    config.scheduler.preemption_mode = sched::PreemptionMode::recompute;
  } else if (options.preemption_mode != "auto") {
    throw po::error("--preemption-mode: expected auto, swap or recompute, got '" + options.preemption_mode + "'");
  }
  if (!options.speculative_config.empty()) {
    try {
      config.speculative = spec::parse_speculative_config(options.speculative_config);
      spec::validate(config.speculative, config.scheduler.max_num_batched_tokens);
    } catch (const std::invalid_argument& error) {
      throw po::error(error.what());
    }
  }
  if (options.scheduling_policy == "priority") {
    config.scheduler.policy = sched::SchedulingPolicy::priority;
  } else if (options.scheduling_policy != "fcfs") {
    throw po::error("--scheduling-policy: expected fcfs or priority, got '" + options.scheduling_policy + "'");
  }
  return config;
}

}  // namespace pagedllm::cli
