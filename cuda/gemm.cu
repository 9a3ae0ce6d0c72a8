#include "cuda/gemm.h"

#include <cublas_v2.h>

#include "cuda/cublas_check.h"
#include "cuda/cublas_library.h"
#include "cuda/cuda_check.h"

namespace pagedllm::cuda {

GemmRunner::GemmRunner(std::size_t workspace_bytes) : workspace_(workspace_bytes) {
  const CublasLibrary& cublas = cublas_library();  // opens cuBLAS on first use (cublas_library.h)
  PAGEDLLM_CUBLAS_CHECK(cublas.create(&handle_));
  try {
    // Default math (tensor cores for 16-bit inputs) with split-K reductions kept in fp32, no
    // atomics: the same call on the same device gives the same bits every run. (Results may still
    // differ between shapes: cuBLAS picks its algorithm per m, so this is not batch-invariant.)
    PAGEDLLM_CUBLAS_CHECK(cublas.set_math_mode(
        handle_, static_cast<cublasMath_t>(CUBLAS_DEFAULT_MATH | CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)));
    PAGEDLLM_CUBLAS_CHECK(cublas.set_atomics_mode(handle_, CUBLAS_ATOMICS_NOT_ALLOWED));
    PAGEDLLM_CUBLAS_CHECK(cublas.set_pointer_mode(handle_, CUBLAS_POINTER_MODE_HOST));
  } catch (...) {
    cublas.destroy(handle_);
    throw;
  }
}

GemmRunner::~GemmRunner() {
  if (handle_ != nullptr) static_cast<void>(cublas_library().destroy(handle_));
}

void GemmRunner::linear(const LinearParams& p, cudaStream_t stream) {
  validate(p);
  if (p.num_rows == 0) return;
  const int m = static_cast<int>(p.num_rows);
  const int k = static_cast<int>(p.in_features);
  const int n = static_cast<int>(p.out_features);
  const int ldx = static_cast<int>(p.x_stride == 0 ? p.in_features : p.x_stride);
  const int ldy = static_cast<int>(p.y_stride == 0 ? p.out_features : p.y_stride);
  const cudaDataType_t in_type = p.dtype == DType::bf16 ? CUDA_R_16BF : CUDA_R_16F;
  const cudaDataType_t out_type = p.fp32_output ? CUDA_R_32F : in_type;
  const float alpha = 1.0f;
  const float beta = 0.0f;

  const CublasLibrary& cublas = cublas_library();
  PAGEDLLM_CUBLAS_CHECK(cublas.set_stream(handle_, stream));
  // cublasSetStream resets the handle to cuBLAS's own workspace pool: hand ours back every time,
  // or cuBLAS may allocate during graph capture.
  PAGEDLLM_CUBLAS_CHECK(cublas.set_workspace(handle_, workspace_.get(), workspace_.bytes()));
  // Row-major y = x W^T is column-major y^T = W x^T: W is a column-major [k][n] matrix (ld k)
  // used transposed, x^T a column-major [k][m] (ld x_stride), y^T a column-major [n][m] (ld y_stride).
  // Moves: (m*k + n*k) * 2 bytes read, m*n * (2 or 4) bytes written; 2*m*n*k FLOPs
  // (decode, m small: bound by the n*k weight read).
  PAGEDLLM_CUBLAS_CHECK(cublas.gemm_ex(handle_, CUBLAS_OP_T, CUBLAS_OP_N, n, m, k, &alpha, p.weight, in_type, k, p.x,
                                       in_type, ldx, &beta, p.y, out_type, ldy, CUBLAS_COMPUTE_32F,
                                       CUBLAS_GEMM_DEFAULT));
}

}  // namespace pagedllm::cuda
