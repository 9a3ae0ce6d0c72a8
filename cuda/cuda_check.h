// Error checking for CUDA runtime calls: every call goes through PAGEDLLM_CUDA_CHECK, which throws
// std::runtime_error naming the call, the file, the line and CUDA's message. Kernel launches are
// followed by PAGEDLLM_CUDA_CHECK(cudaGetLastError()) (launch configuration errors; faults inside
// a kernel surface at the next synchronizing call).
#pragma once

#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>

namespace pagedllm::cuda::detail {

[[noreturn]] inline void cuda_call_failed(cudaError_t status, const char* call, const char* file, int line) {
  throw std::runtime_error(std::string("CUDA call failed: ") + call + " at " + file + ":" + std::to_string(line) +
                           ": " + cudaGetErrorName(status) + ": " + cudaGetErrorString(status));
}

}  // namespace pagedllm::cuda::detail

#define PAGEDLLM_CUDA_CHECK(call)                                                                   \
  do {                                                                                              \
    const cudaError_t pagedllm_cuda_status_ = (call);                                               \
    if (pagedllm_cuda_status_ != cudaSuccess) [[unlikely]]                                          \
      ::pagedllm::cuda::detail::cuda_call_failed(pagedllm_cuda_status_, #call, __FILE__, __LINE__); \
  } while (false)
