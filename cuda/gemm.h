// The linear projections of a Llama layer (qkv, o, gate_up, down, lm_head) through cuBLAS:
//   y[m][n] = sum_k x[m][k] * weight[n][k]
// Row-major views; the weight is [out_features][in_features], as a Hugging Face nn.Linear stores
// it, so checkpoints load without a transpose. 16-bit inputs, fp32 accumulation, y in the input
// dtype or (logits) in fp32.
//
// GemmRunner owns its cuBLAS handle and a device workspace handed to cuBLAS with
// cublasSetWorkspace, so cuBLAS allocates nothing inside linear(): the calls can be captured in
// a CUDA graph. The workspace belongs to the handle, not to a stream, so one runner serves one
// stream at a time (calls on two streams must not overlap; use a runner per stream).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "cuda/device_memory.h"
#include "cuda/kernels/dtype.h"

struct cublasContext;  // cublasHandle_t is cublasContext*; <cublas_v2.h> stays in gemm.cu

namespace pagedllm::cuda {

// Views only; device pointers. y must not overlap x or weight.
struct LinearParams {
  DType dtype = DType::bf16;  // of x and weight
  bool fp32_output = false;   // y in fp32 (logits) instead of dtype
  int64_t num_rows = 0;       // m (tokens); 0 is allowed and does nothing
  int64_t in_features = 0;    // k
  int64_t out_features = 0;   // n
  const void* x = nullptr;    // [m][k], row stride x_stride elements (0 = k)
  int64_t x_stride = 0;
  const void* weight = nullptr;  // [n][k], contiguous
  void* y = nullptr;             // [m][n], row stride y_stride elements (0 = n)
  int64_t y_stride = 0;
};

// Throws KernelArgumentError for a bad dtype, non-positive k or n, negative m, sizes past
// cuBLAS's int range, strides narrower than the row, or (m > 0) null pointers. No CUDA call.
void validate(const LinearParams& params);

class GemmRunner {
 public:
  // 32 MiB: what cuBLAS recommends for Hopper (and more than enough for Ampere).
  explicit GemmRunner(std::size_t workspace_bytes = std::size_t{32} << 20);
  ~GemmRunner();
  GemmRunner(const GemmRunner&) = delete;
  GemmRunner& operator=(const GemmRunner&) = delete;

  // Validates, then enqueues one cublasGemmEx on the stream.
  void linear(const LinearParams& params, cudaStream_t stream);

  std::size_t workspace_bytes() const { return workspace_.bytes(); }

 private:
  cublasContext* handle_ = nullptr;
  DeviceBuffer workspace_;
};

}  // namespace pagedllm::cuda
