// Integer mixing shared by the hashes of the core.
#pragma once

#include <cstdint>

#include "core/common/host_device.h"

namespace pagedllm {

// The 64-bit finalizer of MurmurHash3: a bijection with full avalanche.
PAGEDLLM_HOST_DEVICE constexpr uint64_t mix64(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

}  // namespace pagedllm
