#include "core/sched/policy.h"

#include <algorithm>
#include <tuple>

namespace pagedllm::sched {

bool runs_before(SchedulingPolicy policy, const SequenceGroup& a, const SequenceGroup& b) {
  const Request& x = a.request;
  const Request& y = b.request;
  if (policy == SchedulingPolicy::priority) {
    return std::tie(x.priority, x.arrival_time, x.id) < std::tie(y.priority, y.arrival_time, y.id);
  }
  return std::tie(x.arrival_time, x.id) < std::tie(y.arrival_time, y.id);
}

PreemptionMode choose_preemption_mode(const SchedulerConfig& config, const SequenceGroup& victim) {
  if (config.preemption_mode) return *config.preemption_mode;
  return victim.num_unfinished_seqs() > 1 ? PreemptionMode::swap : PreemptionMode::recompute;
}

int32_t plan_chunk(const ChunkRequest& request) {
  const int32_t remaining = request.end - request.start;
  if (remaining <= request.token_budget) return std::max(remaining, 0);
  if (!request.allow_chunking || request.token_budget <= 0) return 0;
  const int32_t end = request.start + request.token_budget;
  const int32_t aligned_end = end / request.block_size * request.block_size;
  return aligned_end > request.start ? aligned_end - request.start : request.token_budget;
}

}  // namespace pagedllm::sched
