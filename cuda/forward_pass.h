// The forward pass of a Llama-family model on the GPU over the paged KV cache: one flat batch of
// token rows (decode rows first, then prompt chunks; step_batch.h) through every layer, then fp32
// logits for the rows asked for. Only enqueues work on a stream, with every buffer at a fixed
// address, so the same call can be captured into a CUDA graph.
//
// Per layer (x: the residual stream, bf16 or fp16; h: [tokens][hidden]):
//   qkv  = normed @ Wqkv^T (+ bias)       one GEMM, [tokens][q_dim + 2 kv_dim]
//   rope(q, k) in place; k, v -> their cache slots
//   attn = decode_attention(decode rows) | prefill_attention(prompt chunks), q read in place
//   h    = attn @ Wo^T;  x += h;  normed = rms_norm(x)              (fused)
//   gu   = normed @ Wgate_up^T;  a = silu(gate) * up;  h = a @ Wdown^T
//   x += h;  normed = rms_norm(x) with the next layer's (or the final) norm weight   (fused)
// then the logits rows of `normed` are gathered and multiplied by the LM head in fp32.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "core/kv/kv_layout.h"
#include "cuda/device_memory.h"
#include "cuda/device_model.h"
#include "cuda/gemm.h"
#include "cuda/step_batch.h"
#include "cuda/step_inputs.h"

namespace pagedllm::cuda {

struct ForwardLimits {
  int32_t max_tokens = 0;       // token rows of a step
  int32_t max_seqs = 0;         // sequences of a step
  int32_t max_logits_rows = 0;  // logits rows of a step (a verify pass has k + 1); 0 = max_seqs
  int32_t max_model_len = 0;    // longest sequence the decode kernel may see
  int32_t block_size = 16;
  int32_t num_sms = 1;  // the device's multiprocessors (decode split-KV partitioning)
};

// One step's shapes, and where its inputs are on the device.
struct ForwardShape {
  StepInputsView inputs;
  int32_t num_tokens = 0;
  int32_t num_decode_seqs = 0;
  int32_t num_prefill_seqs = 0;
  int32_t table_width = 0;
  int32_t max_decode_seq_len = 0;
  int32_t max_query_len = 0;
  int32_t num_logits_rows = 0;
};

ForwardShape forward_shape(const StepBatch& batch, const StepInputsView& inputs);

class ForwardPass {
 public:
  // Allocates every activation for `limits` (and the decode kernel's split-KV workspace for its
  // worst case), so that enqueue() never allocates.
  ForwardPass(const DeviceModel& model, GemmRunner& gemm, const ForwardLimits& limits);

  // Enqueues the pass over `kv_cache` (a device tier of `layout`, 16-bit elements) on `stream`.
  void enqueue(const ForwardShape& shape, const kv::KvLayout& layout, void* kv_cache, cudaStream_t stream);

  // [num_logits_rows][vocab] fp32 of the last enqueued pass (valid once the stream reaches it).
  const float* logits() const noexcept { return logits_.as<float>(); }
  float* logits() noexcept { return logits_.as<float>(); }  // the sampler masks them in place

 private:
  void attention(const ForwardShape& shape, const kv::KvLayout& layout, const void* kv_cache, int32_t layer,
                 cudaStream_t stream);

  const DeviceModel& model_;
  GemmRunner& gemm_;
  ForwardLimits limits_;
  DeviceBuffer residual_;       // [max_tokens][hidden]: the residual stream
  DeviceBuffer hidden_;         // [max_tokens][hidden]: a block's output before the residual add
  DeviceBuffer normed_;         // [max_tokens][hidden]
  DeviceBuffer qkv_;            // [max_tokens][q_dim + 2 kv_dim]
  DeviceBuffer attended_;       // [max_tokens][q_dim]
  DeviceBuffer gate_up_;        // [max_tokens][2 intermediate]
  DeviceBuffer activated_;      // [max_tokens][intermediate]
  DeviceBuffer logits_hidden_;  // [max_logits_rows][hidden]: the rows whose logits are computed
  DeviceBuffer logits_;         // [max_logits_rows][vocab] fp32
  DeviceBuffer decode_workspace_;
};

}  // namespace pagedllm::cuda
