// StepInputs: the device copy of a StepBatch's arrays, in one fixed arena uploaded with one copy
// per step from a pinned staging arena of the same layout.
//
// The arena is sized once for the largest step (max tokens, max sequences, the widest block
// table) and its regions never move, so a CUDA graph captured against these addresses reads the
// next step's inputs after the next upload. Only the used prefix is copied: the block tables come
// last, so one copy covers the small per-token and per-sequence arrays and the used rows of the
// tables (bytes: at most 16 per token + 20 per sequence + 4 per block-table entry).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "cuda/device_memory.h"
#include "cuda/step_batch.h"

namespace pagedllm::cuda {

struct StepInputLimits {
  int32_t max_tokens = 0;       // token rows of a step
  int32_t max_seqs = 0;         // sequences of a step
  int32_t max_logits_rows = 0;  // logits rows of a step (a verify pass has k + 1); 0 = max_seqs
  int32_t max_table_width = 0;  // block-table entries per sequence (max_model_len / block_size, rounded up)
};

// Device pointers into the arena, valid for the StepInputs' lifetime.
struct StepInputsView {
  const int64_t* slot_mapping = nullptr;    // [max_tokens]
  const int32_t* token_ids = nullptr;       // [max_tokens]
  const int32_t* positions = nullptr;       // [max_tokens]
  const int32_t* seq_lens = nullptr;        // [max_seqs]
  const int32_t* query_starts = nullptr;    // [max_seqs + 1] (prefill part)
  const int32_t* context_starts = nullptr;  // [max_seqs] (prefill part)
  const int32_t* logits_rows = nullptr;     // [max_logits_rows]
  const int32_t* block_tables = nullptr;    // [max_seqs][table width of the step]
};

// Byte offsets of the arena's regions (host arithmetic, tested without a GPU).
struct StepInputLayout {
  std::size_t slot_mapping = 0;
  std::size_t token_ids = 0;
  std::size_t positions = 0;
  std::size_t seq_lens = 0;
  std::size_t query_starts = 0;
  std::size_t context_starts = 0;
  std::size_t logits_rows = 0;
  std::size_t block_tables = 0;  // last
  std::size_t total_bytes = 0;
};

StepInputLayout plan_step_inputs(const StepInputLimits& limits);

// Writes `batch` into a host arena of `layout` (at least `layout.total_bytes`); returns the bytes
// to copy (the used prefix). Throws std::invalid_argument when the batch exceeds the limits.
std::size_t stage_step_inputs(const StepBatch& batch, const StepInputLimits& limits, const StepInputLayout& layout,
                              void* host_arena);

class StepInputs {
 public:
  explicit StepInputs(const StepInputLimits& limits);

  // Stages `batch` and enqueues its upload on `stream`. The staging arena is reused: the previous
  // upload must have completed (the executor synchronizes at the end of every step).
  void upload(const StepBatch& batch, cudaStream_t stream);
  StepInputsView device_view() const;

 private:
  StepInputLimits limits_;
  StepInputLayout layout_;
  DeviceBuffer device_;
  PinnedHostBuffer host_;
};

}  // namespace pagedllm::cuda
