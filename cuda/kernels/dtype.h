// The 16-bit element types of activations and of the device KV cache. Host code passes device
// buffers as void pointers plus a DType; each .cu file dispatches to its templated kernels.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace pagedllm::cuda {

enum class DType : int32_t { bf16 = 0, fp16 = 1 };

inline constexpr std::size_t kDTypeBytes = 2;  // both types are 16 bits

inline const char* dtype_name(DType dtype) { return dtype == DType::bf16 ? "bf16" : "fp16"; }

// Caller mistakes (shapes, unsupported sizes, null pointers) throw this before any CUDA call, so
// the checks are testable on a machine without a GPU.
class KernelArgumentError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

namespace detail {
inline void require(bool condition, const std::string& what) {
  if (!condition) throw KernelArgumentError(what);
}
}  // namespace detail

}  // namespace pagedllm::cuda
