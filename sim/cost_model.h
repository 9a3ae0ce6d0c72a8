// The simulator's seam: a cost model predicts how long one engine step takes.
#pragma once

#include "core/sched/step_plan.h"

namespace pagedllm::sim {

// One step's predicted time and where it goes. Bytes and FLOPs are per GPU (with tensor
// parallelism, each GPU's share), since that is what sets the time.
struct StepCost {
  double seconds = 0.0;  // the whole step: the sum of the *_seconds parts below

  // The forward pass: each part takes the larger of its compute and memory times (roofline).
  double linear_seconds = 0.0;     // projections, MLP and lm_head
  double attention_seconds = 0.0;  // paged attention over every scheduled sequence's context
  double compute_seconds = 0.0;    // the compute side of both parts (FLOPs / sustained FLOP/s)
  double memory_seconds = 0.0;     // the memory side of both parts (bytes / sustained bandwidth)

  double flops = 0.0;             // linear + attention
  double attention_flops = 0.0;   // the attention part of `flops`
  double weight_bytes = 0.0;      // weights read (once per step)
  double kv_bytes_read = 0.0;     // KV read by attention
  double kv_bytes_written = 0.0;  // KV of the step's new tokens

  double swap_bytes = 0.0;  // KV moved over the host link (swap out + swap in)
  double swap_seconds = 0.0;
  double copy_seconds = 0.0;        // copy-on-write block copies within device memory
  double all_reduce_seconds = 0.0;  // tensor parallelism's activation all-reduces
  double overhead_seconds = 0.0;    // fixed costs: scheduling, kernel launches, sampling

  StepCost& operator+=(const StepCost& other);
};

class CostModel {
 public:
  virtual ~CostModel() = default;
  virtual StepCost step_cost(const sched::StepPlan& plan) const = 0;
};

}  // namespace pagedllm::sim
