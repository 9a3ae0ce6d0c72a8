// Error checking for cuBLAS calls, the counterpart of PAGEDLLM_CUDA_CHECK: every cuBLAS call goes
// through PAGEDLLM_CUBLAS_CHECK, which throws std::runtime_error naming the call, the file, the
// line and cuBLAS's status name.
#pragma once

#include <cublas_v2.h>

#include <stdexcept>
#include <string>

#include "cuda/cublas_library.h"

namespace pagedllm::cuda::detail {

[[noreturn]] inline void cublas_call_failed(cublasStatus_t status, const char* call, const char* file, int line) {
  throw std::runtime_error(std::string("cuBLAS call failed: ") + call + " at " + file + ":" + std::to_string(line) +
                           ": " + cublas_library().get_status_name(status) + ": " +
                           cublas_library().get_status_string(status));
}

}  // namespace pagedllm::cuda::detail

#define PAGEDLLM_CUBLAS_CHECK(call)                                                                     \
  do {                                                                                                  \
    const cublasStatus_t pagedllm_cublas_status_ = (call);                                              \
    if (pagedllm_cublas_status_ != CUBLAS_STATUS_SUCCESS) [[unlikely]]                                  \
      ::pagedllm::cuda::detail::cublas_call_failed(pagedllm_cublas_status_, #call, __FILE__, __LINE__); \
  } while (false)
