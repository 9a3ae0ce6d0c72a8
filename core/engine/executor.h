// The seam between the core and the backends (cuda, cpu_ref, sim, tests).
#pragma once

#include <string>

#include "core/sched/step_plan.h"

namespace pagedllm::engine {

// Executors own KV memory and nothing else: every state transition lives in the core.
class Executor {
 public:
  virtual ~Executor() = default;

  // Applies the plan's block operations first, in order (swap_out, swap_in, copies), then runs
  // one forward pass over plan.sequences and samples for those with `sample` set. Returns one
  // SequenceOutput per sampled sequence, in plan order.
  virtual sched::StepResult execute(const sched::StepPlan& plan) = 0;

  // The engine hands each result back once it has applied it, so that an executor may reuse its
  // buffers (one sample vector per sampled sequence) in the next step. Optional.
  virtual void recycle(sched::StepResult&& /*result*/) {}

  virtual std::string name() const = 0;

  // Whether the forward pass reads the prompt's tokens (a model does). An executor that does not
  // (the simulator's) lets the engine leave a synthetic prompt unwritten but for its last block
  // (sched::Sequence::num_unstored_tokens): its plans may then carry unstored tokens.
  virtual bool reads_prompt_tokens() const { return true; }
};

}  // namespace pagedllm::engine
