// Owning handles of device and pinned host allocations for host code (the executor, benches).
// Both are move-only RAII: the object that holds the pointer frees it, exactly once; a moved-from
// object is empty (null, 0 bytes) and frees nothing. Allocation failures throw through
// PAGEDLLM_CUDA_CHECK; the destructors never throw (a failed free is ignored: there is no one to
// report it to, and a sticky error surfaces at the next checked call anyway).
// Compiles with g++ (runtime API only).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <utility>

#include "cuda/cuda_check.h"

namespace pagedllm::cuda {

// One owned allocation of `Memory` (DeviceMemory or PinnedMemory below: how to allocate and
// free), move-only.
template <class Memory>
class CudaBuffer {
 public:
  CudaBuffer() = default;
  explicit CudaBuffer(std::size_t bytes) {
    if (bytes > 0) {
      pointer_ = Memory::allocate(bytes);
      bytes_ = bytes;
    }
  }
  ~CudaBuffer() { reset(); }

  CudaBuffer(const CudaBuffer&) = delete;
  CudaBuffer& operator=(const CudaBuffer&) = delete;
  CudaBuffer(CudaBuffer&& other) noexcept
      : pointer_(std::exchange(other.pointer_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}
  CudaBuffer& operator=(CudaBuffer&& other) noexcept {
    if (this != &other) {
      reset();
      pointer_ = std::exchange(other.pointer_, nullptr);
      bytes_ = std::exchange(other.bytes_, 0);
    }
    return *this;
  }

  void* get() const { return pointer_; }
  template <class T>
  T* as() const {
    return static_cast<T*>(pointer_);
  }
  std::size_t bytes() const { return bytes_; }

  // Frees the allocation now. The caller must know that no enqueued work still uses it (cudaFree
  // synchronizes with the device, but not with work enqueued later by others; for pinned memory,
  // no copy into or out of it may still be in flight).
  void reset() noexcept {
    if (pointer_ != nullptr) Memory::free(pointer_);
    pointer_ = nullptr;
    bytes_ = 0;
  }

 private:
  void* pointer_ = nullptr;
  std::size_t bytes_ = 0;
};

// cudaMalloc'd memory (256-byte aligned), uninitialized.
struct DeviceMemory {
  static void* allocate(std::size_t bytes) {
    void* pointer = nullptr;
    PAGEDLLM_CUDA_CHECK(cudaMalloc(&pointer, bytes));
    return pointer;
  }
  static void free(void* pointer) noexcept { static_cast<void>(cudaFree(pointer)); }
};

// Page-locked host memory (cudaHostAlloc, default flags): the staging side of asynchronous
// cudaMemcpyAsync transfers (KV swap, step inputs, logits download). Uninitialized.
struct PinnedMemory {
  static void* allocate(std::size_t bytes) {
    void* pointer = nullptr;
    PAGEDLLM_CUDA_CHECK(cudaHostAlloc(&pointer, bytes, cudaHostAllocDefault));
    return pointer;
  }
  static void free(void* pointer) noexcept { static_cast<void>(cudaFreeHost(pointer)); }
};

using DeviceBuffer = CudaBuffer<DeviceMemory>;
using PinnedHostBuffer = CudaBuffer<PinnedMemory>;

}  // namespace pagedllm::cuda
