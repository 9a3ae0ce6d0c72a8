// Limits and policies of the scheduler, as the engine options set them (vLLM's names).
#pragma once

#include <cstdint>
#include <optional>

#include "core/sched/sequence.h"

namespace pagedllm::sched {

enum class SchedulingPolicy : uint8_t { fcfs, priority };

struct SchedulerConfig {
  int32_t max_num_batched_tokens = 2048;  // token budget of one step
  int32_t max_num_seqs = 256;             // sequences running at once
  int32_t max_model_len = 2048;           // prompt + output tokens per sequence
  bool enable_chunked_prefill = true;     // split prompts across steps to fit the budget
  SchedulingPolicy policy = SchedulingPolicy::fcfs;
  // Absent: swap for groups with more than one running sequence, recompute otherwise (vLLM v0).
  std::optional<PreemptionMode> preemption_mode;
};

// Throws std::invalid_argument naming the field.
void validate(const SchedulerConfig& config);

}  // namespace pagedllm::sched
