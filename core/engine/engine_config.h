// Everything an engine is built from, in one struct.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "core/common/types.h"
#include "core/kv/kv_cache_config.h"
#include "core/sched/sampling_params.h"
#include "core/sched/scheduler_config.h"
#include "core/spec/speculative_config.h"

namespace pagedllm::engine {

// What step() reports about a request, as vLLM's RequestOutputKind.
enum class OutputKind : uint8_t {
  cumulative,  // every output so far, each step it progresses
  delta,       // only the tokens new since its last report (times without token_times)
  final_only,  // nothing until it finishes, then everything
};

struct EngineConfig {
  kv::KvCacheConfig cache;
  sched::SchedulerConfig scheduler;
  // The model's end-of-sequence tokens (a generation config may list several): each ends a
  // request unless it asks for ignore_eos. Frontends pass them all here and nowhere else.
  std::vector<TokenId> eos_token_ids;
  int32_t vocab_size = 0;  // > 0: token ids a request names are checked against it
  int32_t max_logprobs = 20;
  // Keep one StepMetrics per step (tests, benchmarks): memory grows with the run. The summary's
  // totals and a thinned timeline are kept either way (step_history.h).
  bool record_step_metrics = true;
  size_t timeline_capacity = 16384;  // points the engine's timeline keeps (StepTimeline)
  OutputKind output_kind = OutputKind::cumulative;
  // Speculative decoding (off by default): the engine proposes, the scheduler makes room for the
  // proposals, the executor verifies them in the step's forward pass.
  spec::SpeculativeConfig speculative;
};

// The one validation of a request's sampling parameters against an engine's limits (context
// length, logprobs bound, vocabulary). Throws sched::InvalidRequestError naming the field.
void validate_request(const EngineConfig& config, const sched::SamplingParams& params, int32_t num_prompt_tokens);

}  // namespace pagedllm::engine
