// The random number behind every sampled token, on the host and on the GPU alike: a counter-based
// function (mix64 chains) of the request's stream seed, the sample's stream and the output
// position. No generator state, so a request's draws depend on nothing else in the batch, and a
// request that moves between the device sampler and the host one (a min_tokens window ending,
// say) keeps its stream.
#pragma once

#include <cstdint>

#include "core/common/host_device.h"
#include "core/common/mix.h"

namespace pagedllm::sampling {

// The uniform number in [0, 1) of (seed, stream, position): 53 random bits.
PAGEDLLM_HOST_DEVICE inline double uniform_draw(uint64_t seed, int32_t stream_index, int32_t position) {
  // Each step is a bijection of the previous value for a fixed argument, so distinct streams (and
  // distinct positions of one stream) never share a value.
  uint64_t h = mix64(seed + 0x9e3779b97f4a7c15ULL);
  h = mix64(
      h ^ (static_cast<uint64_t>(static_cast<uint32_t>(stream_index)) * 0xbf58476d1ce4e5b9ULL + 0x94d049bb133111ebULL));
  h = mix64(h ^
            (static_cast<uint64_t>(static_cast<uint32_t>(position)) * 0xd6e8feb86659fd93ULL + 0x632be59bd9b4e019ULL));
  return static_cast<double>(h >> 11) * 0x1.0p-53;
}

}  // namespace pagedllm::sampling
