// Step plans built by hand for the cost-model tests: the builder owns the tokens and block tables
// that a plan's spans point into.
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "core/sched/step_plan.h"

namespace pagedllm::test {

struct SequenceSpec {
  int32_t start = 0;              // first position computed this step
  int32_t end = 0;                // one past the last
  int32_t num_prompt_tokens = 0;  // 0: the prompt is [0, end)
  bool sample = false;            // the sequence's tokens end at `end` and it samples
};

class PlanBuilder {
 public:
  explicit PlanBuilder(int32_t block_size) : block_size_(block_size) {}

  // A sequence of its own (fresh tokens and block ids).
  PlanBuilder& add(const SequenceSpec& spec);
  PlanBuilder& swap_out(int32_t num_blocks);
  PlanBuilder& swap_in(int32_t num_blocks);
  PlanBuilder& copy(int32_t num_blocks);

  // Valid as long as the builder lives.
  const sched::StepPlan& plan() const { return plan_; }

 private:
  int32_t block_size_;
  int32_t next_block_ = 0;
  std::deque<std::vector<TokenId>> tokens_;  // a deque: spans into it stay valid
  std::deque<std::vector<kv::BlockId>> block_tables_;
  sched::StepPlan plan_;
};

}  // namespace pagedllm::test
