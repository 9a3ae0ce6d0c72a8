#include "sim/cost_model.h"

namespace pagedllm::sim {

StepCost& StepCost::operator+=(const StepCost& other) {
  seconds += other.seconds;
  linear_seconds += other.linear_seconds;
  attention_seconds += other.attention_seconds;
  compute_seconds += other.compute_seconds;
  memory_seconds += other.memory_seconds;
  flops += other.flops;
  attention_flops += other.attention_flops;
  weight_bytes += other.weight_bytes;
  kv_bytes_read += other.kv_bytes_read;
  kv_bytes_written += other.kv_bytes_written;
  swap_bytes += other.swap_bytes;
  swap_seconds += other.swap_seconds;
  copy_seconds += other.copy_seconds;
  all_reduce_seconds += other.all_reduce_seconds;
  overhead_seconds += other.overhead_seconds;
  return *this;
}

}  // namespace pagedllm::sim
