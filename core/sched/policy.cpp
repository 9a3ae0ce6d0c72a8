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

SequenceGroup* choose_victim(const GroupQueue& running, int64_t step) {
  for (auto it = running.rbegin(); it != running.rend(); ++it) {
    if ((*it)->last_scheduled_step != step) return *it;
  }
  return nullptr;
}

std::optional<PreemptionMode> priority_preemption(const SequenceGroup& waiting_head, const SequenceGroup& running_tail,
                                                  kv::AllocStatus head_admission) {
  if (waiting_head.request.priority >= running_tail.request.priority) return std::nullopt;
  if (head_admission != kv::AllocStatus::later) return std::nullopt;  // it fits, or it never will
  return PreemptionMode::recompute;
}

kv::Headroom admission_headroom(int32_t watermark_blocks) {
  return {.reserve_blocks = watermark_blocks, .min_free_after = watermark_blocks};
}

kv::Headroom swap_in_headroom(int32_t watermark_blocks, int32_t num_seqs, bool others_running) {
  return {.reserve_blocks = watermark_blocks,
          .min_free_after = others_running ? std::max(watermark_blocks, num_seqs) : watermark_blocks};
}

}  // namespace pagedllm::sched
