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

}  // namespace pagedllm::sched
