#include "tests/sim/plan_builder.h"

#include <algorithm>

namespace pagedllm::test {

PlanBuilder& PlanBuilder::add(const SequenceSpec& spec) {
  const int32_t num_prompt = spec.num_prompt_tokens > 0 ? spec.num_prompt_tokens : spec.end;
  const int32_t num_tokens = spec.sample ? spec.end : std::max(spec.end, num_prompt);
  std::vector<TokenId>& tokens = tokens_.emplace_back();
  for (int32_t i = 0; i < num_tokens; ++i) tokens.push_back(3 + i % 1000);
  std::vector<kv::BlockId>& table = block_tables_.emplace_back();
  for (int32_t i = 0; i < (spec.end + block_size_ - 1) / block_size_; ++i) table.push_back(next_block_++);

  sched::ScheduledSequence scheduled;
  scheduled.request = static_cast<sched::RequestId>(plan_.sequences.size());
  scheduled.seq = static_cast<SeqId>(plan_.sequences.size() + 1);
  scheduled.tokens = tokens;
  scheduled.start = spec.start;
  scheduled.end = spec.end;
  scheduled.num_prompt_tokens = num_prompt;
  scheduled.block_table = table;
  scheduled.sample = spec.sample;
  plan_.sequences.push_back(scheduled);

  const int32_t num_new = spec.end - spec.start;
  plan_.num_batched_tokens += num_new;
  if (scheduled.is_prefill()) {
    plan_.num_prefill_tokens += num_new;
  } else {
    plan_.num_decode_tokens += num_new;
  }
  return *this;
}

PlanBuilder& PlanBuilder::swap_out(int32_t num_blocks) {
  for (int32_t i = 0; i < num_blocks; ++i) plan_.swap_out.push_back({i, i});
  return *this;
}

PlanBuilder& PlanBuilder::swap_in(int32_t num_blocks) {
  for (int32_t i = 0; i < num_blocks; ++i) plan_.swap_in.push_back({i, i});
  return *this;
}

PlanBuilder& PlanBuilder::copy(int32_t num_blocks) {
  for (int32_t i = 0; i < num_blocks; ++i) plan_.copies.push_back({i, i + num_blocks});
  return *this;
}

}  // namespace pagedllm::test
