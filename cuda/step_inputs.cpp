#include "cuda/step_inputs.h"

#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "cuda/cuda_check.h"

namespace pagedllm::cuda {

namespace {

constexpr std::size_t kRegionAlignment = 16;

std::size_t align_up(std::size_t value) { return (value + kRegionAlignment - 1) / kRegionAlignment * kRegionAlignment; }

template <typename T>
void put(void* arena, std::size_t offset, const std::vector<T>& values) {
  if (!values.empty()) std::memcpy(static_cast<char*>(arena) + offset, values.data(), values.size() * sizeof(T));
}

int32_t max_logits_rows(const StepInputLimits& limits) {
  return limits.max_logits_rows > 0 ? limits.max_logits_rows : limits.max_seqs;
}

void require(bool condition, const std::string& what) {
  if (!condition) throw std::invalid_argument("step inputs: " + what);
}

}  // namespace

StepInputLayout plan_step_inputs(const StepInputLimits& limits) {
  const auto tokens = static_cast<std::size_t>(limits.max_tokens);
  const auto seqs = static_cast<std::size_t>(limits.max_seqs);
  StepInputLayout layout;
  std::size_t cursor = 0;
  const auto region = [&cursor](std::size_t bytes) {
    const std::size_t offset = cursor;
    cursor = align_up(cursor + bytes);
    return offset;
  };
  layout.slot_mapping = region(tokens * sizeof(int64_t));
  layout.token_ids = region(tokens * sizeof(int32_t));
  layout.positions = region(tokens * sizeof(int32_t));
  layout.seq_lens = region(seqs * sizeof(int32_t));
  layout.query_starts = region((seqs + 1) * sizeof(int32_t));
  layout.context_starts = region(seqs * sizeof(int32_t));
  layout.logits_rows = region(static_cast<std::size_t>(max_logits_rows(limits)) * sizeof(int32_t));
  layout.block_tables = region(seqs * static_cast<std::size_t>(limits.max_table_width) * sizeof(int32_t));
  layout.total_bytes = cursor;
  return layout;
}

std::size_t stage_step_inputs(const StepBatch& batch, const StepInputLimits& limits, const StepInputLayout& layout,
                              void* host_arena) {
  require(batch.num_tokens() <= limits.max_tokens,
          std::to_string(batch.num_tokens()) + " tokens, the limit is " + std::to_string(limits.max_tokens));
  require(batch.num_seqs() <= limits.max_seqs,
          std::to_string(batch.num_seqs()) + " sequences, the limit is " + std::to_string(limits.max_seqs));
  require(static_cast<int32_t>(batch.logits_rows.size()) <= max_logits_rows(limits),
          std::to_string(batch.logits_rows.size()) + " logits rows, the limit is " +
              std::to_string(max_logits_rows(limits)));
  require(batch.table_width <= limits.max_table_width,
          "a block table of " + std::to_string(batch.table_width) + " entries, the limit is " +
              std::to_string(limits.max_table_width) + " (max_model_len / block_size)");
  put(host_arena, layout.slot_mapping, batch.slot_mapping);
  put(host_arena, layout.token_ids, batch.token_ids);
  put(host_arena, layout.positions, batch.positions);
  put(host_arena, layout.seq_lens, batch.seq_lens);
  put(host_arena, layout.query_starts, batch.query_starts);
  put(host_arena, layout.context_starts, batch.context_starts);
  put(host_arena, layout.logits_rows, batch.logits_rows);
  put(host_arena, layout.block_tables, batch.block_tables);
  return layout.block_tables + batch.block_tables.size() * sizeof(int32_t);
}

StepInputs::StepInputs(const StepInputLimits& limits)
    : limits_(limits), layout_(plan_step_inputs(limits)), device_(layout_.total_bytes), host_(layout_.total_bytes) {}

void StepInputs::upload(const StepBatch& batch, cudaStream_t stream) {
  const std::size_t bytes = stage_step_inputs(batch, limits_, layout_, host_.get());
  // Host -> device: the used prefix of the arena (see the top of step_inputs.h).
  PAGEDLLM_CUDA_CHECK(cudaMemcpyAsync(device_.get(), host_.get(), bytes, cudaMemcpyHostToDevice, stream));
}

StepInputsView StepInputs::device_view() const {
  const auto* base = static_cast<const char*>(device_.get());
  const auto at = [base](std::size_t offset) { return reinterpret_cast<const int32_t*>(base + offset); };
  return StepInputsView{.slot_mapping = reinterpret_cast<const int64_t*>(base + layout_.slot_mapping),
                        .token_ids = at(layout_.token_ids),
                        .positions = at(layout_.positions),
                        .seq_lens = at(layout_.seq_lens),
                        .query_starts = at(layout_.query_starts),
                        .context_starts = at(layout_.context_starts),
                        .logits_rows = at(layout_.logits_rows),
                        .block_tables = at(layout_.block_tables)};
}

}  // namespace pagedllm::cuda
