#include "core/sched/scheduler_config.h"

#include <stdexcept>
#include <string>

namespace pagedllm::sched {

void validate(const SchedulerConfig& config) {
  const auto refuse = [](const std::string& message) { throw std::invalid_argument("scheduler config: " + message); };
  if (config.max_num_batched_tokens < 1) refuse("max_num_batched_tokens must be at least 1");
  if (config.max_num_seqs < 1) refuse("max_num_seqs must be at least 1");
  if (config.max_model_len < 1) refuse("max_model_len must be at least 1");
  if (!config.enable_chunked_prefill && config.max_num_batched_tokens < config.max_model_len) {
    refuse("without chunked prefill, max_num_batched_tokens (" + std::to_string(config.max_num_batched_tokens) +
           ") must be at least max_model_len (" + std::to_string(config.max_model_len) +
           ") or long prompts could never be scheduled");
  }
}

}  // namespace pagedllm::sched
