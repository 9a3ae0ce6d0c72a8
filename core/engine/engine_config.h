// Everything an engine is built from, in one struct.
#pragma once

#include <cstdint>
#include <optional>

#include "core/common/types.h"
#include "core/kv/kv_cache_config.h"
#include "core/sched/scheduler_config.h"

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
  std::optional<TokenId> eos_token_id;  // the model's end-of-sequence token
  int32_t max_logprobs = 20;
  bool record_step_metrics = true;      // keep one StepMetrics per step
  OutputKind output_kind = OutputKind::cumulative;
};

}  // namespace pagedllm::engine
