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

// cudaMalloc'd memory (256-byte aligned), uninitialized.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes) {
    if (bytes > 0) {
      PAGEDLLM_CUDA_CHECK(cudaMalloc(&pointer_, bytes));
      bytes_ = bytes;
    }
  }
  ~DeviceBuffer() { reset(); }

  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : pointer_(std::exchange(other.pointer_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    if (this != &other) {
      reset();
      pointer_ = std::exchange(other.pointer_, nullptr);
      bytes_ = std::exchange(other.bytes_, 0);
    }
    return *this;
  }

  void* get() const { return pointer_; }
  template <class T>
  T* as() const { return static_cast<T*>(pointer_); }
  std::size_t bytes() const { return bytes_; }

  // Frees the allocation now (the caller must know no enqueued work still uses it: cudaFree
  // synchronizes with the device, but not with work enqueued later by others).
  void reset() noexcept {
    if (pointer_ != nullptr) static_cast<void>(cudaFree(pointer_));
    pointer_ = nullptr;
    bytes_ = 0;
  }

 private:
  void* pointer_ = nullptr;
  std::size_t bytes_ = 0;
};

// Page-locked host memory (cudaHostAlloc, default flags): the staging side of asynchronous
// cudaMemcpyAsync transfers (KV swap, logits download). Uninitialized.
class PinnedHostBuffer {
 public:
  PinnedHostBuffer() = default;
  explicit PinnedHostBuffer(std::size_t bytes) {
    if (bytes > 0) {
      PAGEDLLM_CUDA_CHECK(cudaHostAlloc(&pointer_, bytes, cudaHostAllocDefault));
      bytes_ = bytes;
    }
  }
  ~PinnedHostBuffer() { reset(); }

  PinnedHostBuffer(const PinnedHostBuffer&) = delete;
  PinnedHostBuffer& operator=(const PinnedHostBuffer&) = delete;
  PinnedHostBuffer(PinnedHostBuffer&& other) noexcept
      : pointer_(std::exchange(other.pointer_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}
  PinnedHostBuffer& operator=(PinnedHostBuffer&& other) noexcept {
    if (this != &other) {
      reset();
      pointer_ = std::exchange(other.pointer_, nullptr);
      bytes_ = std::exchange(other.bytes_, 0);
    }
    return *this;
  }

  void* get() const { return pointer_; }
  template <class T>
  T* as() const { return static_cast<T*>(pointer_); }
  std::size_t bytes() const { return bytes_; }

  // Frees the allocation now; no copy into or out of it may still be in flight.
  void reset() noexcept {
    if (pointer_ != nullptr) static_cast<void>(cudaFreeHost(pointer_));
    pointer_ = nullptr;
    bytes_ = 0;
  }

 private:
  void* pointer_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace pagedllm::cuda
