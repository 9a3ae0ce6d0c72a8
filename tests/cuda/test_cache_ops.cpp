#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "cuda/kernels/cache_ops.h"
#include "cuda/kernels/swap_plan.h"
#include "tests/cuda/gpu_test_util.h"

namespace cuda = pagedllm::cuda;
namespace kv = pagedllm::kv;
using namespace pagedllm::cuda::testing;

namespace {

std::vector<uint16_t> random_bits(std::size_t n, std::mt19937_64& rng) {
  // Arbitrary 16-bit patterns (NaN payloads included): copies must move bits, not values.
  std::uniform_int_distribution<uint32_t> dist(0, 0xffff);
  std::vector<uint16_t> bits(n);
  for (uint16_t& b : bits) b = static_cast<uint16_t>(dist(rng));
  return bits;
}

// Copies one (layer, kind, block) chunk between two host images of tiers.
void copy_chunk(const kv::KvLayout& src_layout, const std::vector<uint16_t>& src, kv::BlockId src_block,
                const kv::KvLayout& dst_layout, std::vector<uint16_t>& dst, kv::BlockId dst_block) {
  for (int32_t layer = 0; layer < src_layout.num_layers; ++layer) {
    for (const kv::KvKind kind : {kv::KvKind::key, kv::KvKind::value}) {
      std::copy_n(src.begin() + static_cast<std::ptrdiff_t>(src_layout.chunk_offset(layer, kind, src_block)),
                  src_layout.chunk_elements(),
                  dst.begin() + static_cast<std::ptrdiff_t>(dst_layout.chunk_offset(layer, kind, dst_block)));
    }
  }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(cache_ops)

// New tokens land in their slots, bit for bit, through strided (fused-QKV) inputs; padding slots
// (-1) are skipped; every other element of the tier is untouched.
BOOST_AUTO_TEST_CASE(write_kv_cache_fills_exactly_the_mapped_slots) {
  if (skip_without_gpu()) return;
  std::mt19937_64 rng(3);
  for (const int32_t head_dim : {64, 128}) {
    for (const int32_t block_size : {16, 32}) {
      const kv::KvLayout layout{3, 4, head_dim, block_size, 23};
      const int32_t layer = 2;
      const int32_t num_tokens = 37;
      const int32_t num_heads = 16;  // the fused row is [q (16 heads) | k (4) | v (4)]
      const int64_t row = static_cast<int64_t>(num_heads + 2 * layout.num_kv_heads) * head_dim;
      std::vector<uint16_t> cache = random_bits(layout.total_elements(), rng);
      const std::vector<uint16_t> qkv = random_bits(static_cast<std::size_t>(num_tokens * row), rng);
      std::vector<int64_t> slots(static_cast<std::size_t>(layout.num_blocks) * block_size);
      std::iota(slots.begin(), slots.end(), 0);
      std::shuffle(slots.begin(), slots.end(), rng);
      slots.resize(static_cast<std::size_t>(num_tokens));
      slots[4] = -1;
      slots[30] = -1;

      DeviceBuffer cache_dev(cache);
      DeviceBuffer qkv_dev(qkv);
      DeviceBuffer slots_dev(slots);
      cuda::WriteKvCacheParams params;
      params.dtype = cuda::DType::bf16;
      params.layout = layout;
      params.kv_cache = cache_dev.get();
      params.layer = layer;
      params.num_tokens = num_tokens;
      params.key = qkv_dev.as<uint16_t>() + static_cast<int64_t>(num_heads) * head_dim;
      params.value = qkv_dev.as<uint16_t>() + static_cast<int64_t>(num_heads + layout.num_kv_heads) * head_dim;
      params.key_stride = row;
      params.value_stride = row;
      params.slot_mapping = slots_dev.as<int64_t>();
      cuda::write_kv_cache(params, nullptr);
      const std::vector<uint16_t> got = cache_dev.download<uint16_t>();

      for (int32_t t = 0; t < num_tokens; ++t) {
        const int64_t slot = slots[static_cast<std::size_t>(t)];
        if (slot < 0) continue;
        const auto block = static_cast<kv::BlockId>(slot / block_size);
        const auto offset = static_cast<int32_t>(slot % block_size);
        for (int32_t kind = 0; kind < 2; ++kind) {
          for (int32_t h = 0; h < layout.num_kv_heads; ++h) {
            const std::size_t src =
                static_cast<std::size_t>(t * row + (num_heads + kind * layout.num_kv_heads + h) * head_dim);
            std::copy_n(qkv.begin() + static_cast<std::ptrdiff_t>(src), head_dim,
                        cache.begin() + static_cast<std::ptrdiff_t>(layout.element_offset(
                                            layer, static_cast<kv::KvKind>(kind), block, h, offset)));
          }
        }
      }
      BOOST_TEST((got == cache), "write_kv_cache head_dim " << head_dim << " block " << block_size);
    }
  }
}

// Copy-on-write: every layer's K and V chunk of each src lands in its dst in one launch.
BOOST_AUTO_TEST_CASE(copy_blocks_copies_all_layers_bit_exactly) {
  if (skip_without_gpu()) return;
  std::mt19937_64 rng(5);
  const kv::KvLayout layout{4, 2, 128, 16, 40};
  std::vector<uint16_t> cache = random_bits(layout.total_elements(), rng);
  std::vector<kv::BlockId> ids(static_cast<std::size_t>(layout.num_blocks));
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), rng);
  // srcs from the first half of the shuffled ids (one repeated: two children of one parent),
  // dsts from the second: no dst is a src.
  std::vector<int32_t> pairs{ids[0], ids[20], ids[1], ids[21], ids[0], ids[22], ids[5], ids[30], ids[6], ids[39]};
  DeviceBuffer cache_dev(cache);
  DeviceBuffer pairs_dev(pairs);
  cuda::CopyBlocksParams params;
  params.dtype = cuda::DType::fp16;
  params.layout = layout;
  params.kv_cache = cache_dev.get();
  params.pairs = pairs_dev.as<int32_t>();
  params.num_pairs = static_cast<int32_t>(pairs.size() / 2);
  cuda::copy_blocks(params, nullptr);
  const std::vector<uint16_t> got = cache_dev.download<uint16_t>();
  const std::vector<uint16_t> before = cache;
  for (std::size_t i = 0; i < pairs.size(); i += 2) copy_chunk(layout, before, pairs[i], layout, cache, pairs[i + 1]);
  BOOST_TEST((got == cache));
}

// Swap out to a pinned host pool and back in to other device blocks: bit-exact, one copy per
// run of consecutive blocks per (layer, kind), nothing else written.
BOOST_AUTO_TEST_CASE(swap_out_and_in_round_trips_bit_exactly_in_runs) {
  if (skip_without_gpu()) return;
  std::mt19937_64 rng(13);
  const kv::KvLayout device_layout{3, 2, 64, 32, 30};
  kv::KvLayout host_layout = device_layout;
  host_layout.num_blocks = 20;
  std::vector<uint16_t> device = random_bits(device_layout.total_elements(), rng);
  DeviceBuffer device_dev(device);

  void* pinned = nullptr;
  const std::size_t host_bytes = host_layout.total_elements() * cuda::kDTypeBytes;
  PAGEDLLM_CUDA_CHECK(cudaHostAlloc(&pinned, host_bytes, cudaHostAllocDefault));
  std::memset(pinned, 0xff, host_bytes);
  struct PinnedFree {
    void* p;
    ~PinnedFree() { cudaFreeHost(p); }
  } free_pinned{pinned};

  cuda::SwapParams params;
  params.dtype = cuda::DType::bf16;
  params.device_layout = device_layout;
  params.host_layout = host_layout;
  params.device_kv = device_dev.get();
  params.host_kv = pinned;
  params.direction = cuda::SwapDirection::device_to_host;
  // Runs: 3..5 -> 10..12 (given out of order), 9 -> 0, 20 -> 13, 21 -> 2 (not consecutive in dst).
  const std::vector<kv::BlockMove> out_moves{{4, 11}, {9, 0}, {3, 10}, {20, 13}, {5, 12}, {21, 2}};
  const int32_t out_calls = cuda::swap_blocks(params, out_moves, nullptr);
  device_sync();
  BOOST_TEST(out_calls == 4 * 2 * device_layout.num_layers);
  std::vector<uint16_t> expected_host(host_layout.total_elements(), 0xffff);
  for (const kv::BlockMove& m : out_moves) copy_chunk(device_layout, device, m.src, host_layout, expected_host, m.dst);
  std::vector<uint16_t> host(host_layout.total_elements());
  std::memcpy(host.data(), pinned, host_bytes);
  BOOST_TEST((host == expected_host));

  // Back in, to different device blocks.
  params.direction = cuda::SwapDirection::host_to_device;
  const std::vector<kv::BlockMove> in_moves{{10, 25}, {11, 26}, {12, 27}, {0, 1}, {13, 7}, {2, 8}};
  cuda::swap_blocks(params, in_moves, nullptr);
  const std::vector<uint16_t> got = device_dev.download<uint16_t>();
  for (const kv::BlockMove& m : in_moves) copy_chunk(host_layout, expected_host, m.src, device_layout, device, m.dst);
  BOOST_TEST((got == device));
}

BOOST_AUTO_TEST_SUITE_END()
