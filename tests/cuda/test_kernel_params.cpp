// Host-side checks that need no GPU: argument validation (which runs before any CUDA call), the
// swap planner, the workspace size, and the tests' own 16-bit conversions.
#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <vector>

#include "cuda/kernels/cache_ops.h"
#include "cuda/kernels/decode_attention.h"
#include "cuda/kernels/prefill_attention.h"
#include "cuda/kernels/rotary.h"
#include "cuda/kernels/swap_plan.h"
#include "tests/cuda/gpu_test_util.h"

namespace cuda = pagedllm::cuda;
namespace kv = pagedllm::kv;
using namespace pagedllm::cuda::testing;

namespace {

cuda::DecodeAttentionParams valid_decode() {
  cuda::DecodeAttentionParams p;
  p.dtype = cuda::DType::bf16;
  p.layout = kv::KvLayout{2, 8, 128, 16, 100};
  p.kv_cache = fake(0x10000);
  p.layer = 1;
  p.num_seqs = 3;
  p.num_heads = 32;
  p.q = fake(0x20000);
  p.out = fake_mut(0x30000);
  p.block_tables = static_cast<const int32_t*>(fake(0x40000));
  p.max_blocks_per_seq = 65;  // 65 * 16 >= 1025
  p.seq_lens = static_cast<const int32_t*>(fake(0x50000));
  p.max_seq_len = 1025;
  p.scale = 0.088f;
  p.workspace = fake_mut(0x60000);
  p.workspace_bytes = cuda::decode_attention_workspace_bytes(p);
  return p;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(kernel_params)

BOOST_AUTO_TEST_CASE(swap_runs_merge_consecutive_blocks_in_source_order) {
  const std::vector<kv::BlockMove> moves{{4, 11}, {9, 0}, {3, 10}, {20, 13}, {5, 12}, {21, 2}, {10, 1}};
  const std::vector<cuda::SwapRun> runs = cuda::plan_swap_runs(moves, 30, 20);
  const std::vector<cuda::SwapRun> expected{{3, 10, 3}, {9, 0, 2}, {20, 13, 1}, {21, 2, 1}};
  BOOST_TEST((runs == expected));
  BOOST_TEST(cuda::plan_swap_runs({}, 30, 20).empty());
}

BOOST_AUTO_TEST_CASE(swap_plans_refuse_out_of_range_blocks_and_doubly_written_destinations) {
  const std::vector<kv::BlockMove> out_of_range_src{{30, 1}};
  const std::vector<kv::BlockMove> negative_dst{{3, -1}};
  const std::vector<kv::BlockMove> twice{{1, 5}, {2, 5}};
  BOOST_CHECK_THROW(cuda::plan_swap_runs(out_of_range_src, 30, 20), cuda::KernelArgumentError);
  BOOST_CHECK_THROW(cuda::plan_swap_runs(negative_dst, 30, 20), cuda::KernelArgumentError);
  BOOST_CHECK_THROW(cuda::plan_swap_runs(twice, 30, 20), cuda::KernelArgumentError);
}

BOOST_AUTO_TEST_CASE(decode_workspace_covers_every_partition) {
  cuda::DecodeAttentionParams p = valid_decode();
  BOOST_TEST(cuda::decode_attention_num_partitions(p) == 3);
  BOOST_TEST(cuda::decode_attention_workspace_bytes(p) == std::size_t{3} * 32 * 3 * (128 + 2) * 4);
  p.max_seq_len = 512;
  BOOST_TEST(cuda::decode_attention_num_partitions(p) == 1);
  BOOST_TEST(cuda::decode_attention_workspace_bytes(p) == 0u);
}

// Each malformed decode call throws before any CUDA call, so these run without a GPU.
BOOST_AUTO_TEST_CASE(decode_attention_refuses_malformed_calls) {
  BOOST_CHECK_NO_THROW(cuda::validate(valid_decode()));
  auto refused = [](auto change) {
    cuda::DecodeAttentionParams p = valid_decode();
    change(p);
    BOOST_CHECK_THROW(cuda::decode_attention(p, nullptr), cuda::KernelArgumentError);
  };
  refused([](cuda::DecodeAttentionParams& p) { p.layout.head_dim = 96; });
  refused([](cuda::DecodeAttentionParams& p) { p.layout.block_size = 48; });  // not a power of two
  refused([](cuda::DecodeAttentionParams& p) { p.layout.block_size = 4; });
  refused([](cuda::DecodeAttentionParams& p) { p.layout.block_size = 8192; });
  refused([](cuda::DecodeAttentionParams& p) { p.num_heads = 30; });
  refused([](cuda::DecodeAttentionParams& p) { p.layer = 2; });
  refused([](cuda::DecodeAttentionParams& p) { p.q = nullptr; });
  refused([](cuda::DecodeAttentionParams& p) { p.q = fake(0x20002); });
  refused([](cuda::DecodeAttentionParams& p) { p.workspace_bytes -= 4; });
  refused([](cuda::DecodeAttentionParams& p) { p.layout.block_size = 8; });  // 65 * 8 < 1025
  refused([](cuda::DecodeAttentionParams& p) { p.scale = 0.0f; });
  refused([](cuda::DecodeAttentionParams& p) { p.max_seq_len = 0; });
  refused([](cuda::DecodeAttentionParams& p) { p.partition_tokens = 32; });
  refused([](cuda::DecodeAttentionParams& p) { p.partition_tokens = 1024; });
  refused([](cuda::DecodeAttentionParams& p) { p.partition_tokens = 384; });
}

// Small batches get smaller partitions (more thread blocks); large ones keep 512.
BOOST_AUTO_TEST_CASE(partition_choice_fills_small_grids_only) {
  BOOST_TEST(cuda::choose_decode_partition_tokens(8, 1, 1024, 132) == 64);     // 8 x 16 = 128 blocks
  BOOST_TEST(cuda::choose_decode_partition_tokens(8, 64, 4096, 132) == 512);   // 4096 blocks already
  BOOST_TEST(cuda::choose_decode_partition_tokens(32, 16, 1024, 132) == 512);  // 1024 blocks
  BOOST_TEST(cuda::choose_decode_partition_tokens(8, 8, 1024, 132) == 128);    // 8 x 8 x 8 = 512 blocks
  BOOST_TEST(cuda::choose_decode_partition_tokens(8, 1, 100, 132) == 64);      // short: 2 partitions
  BOOST_TEST(cuda::choose_decode_partition_tokens(8, 1, 4096, 132) == 64);     // 64 is the floor
  BOOST_TEST(cuda::choose_decode_partition_tokens(8, 1, 40, 132) == 64);
  cuda::DecodeAttentionParams p = valid_decode();
  p.partition_tokens = 64;
  BOOST_TEST(cuda::decode_attention_num_partitions(p) == 17);  // 1025 tokens
}

BOOST_AUTO_TEST_CASE(other_kernels_refuse_malformed_calls) {
  cuda::PrefillAttentionParams prefill;
  prefill.layout = kv::KvLayout{1, 2, 80, 16, 10};
  prefill.num_heads = 2;
  prefill.scale = 0.1f;
  BOOST_CHECK_THROW(cuda::prefill_attention(prefill, nullptr), cuda::KernelArgumentError);

  cuda::WriteKvCacheParams write;
  write.layout = kv::KvLayout{1, 2, 64, 16, 10};
  write.num_tokens = 1;
  write.kv_cache = fake_mut(0x10000);
  write.key = fake(0x20000);
  write.value = fake(0x30000);
  write.slot_mapping = static_cast<const int64_t*>(fake(0x40000));
  write.key_stride = 132;  // not a multiple of 8
  BOOST_CHECK_THROW(cuda::write_kv_cache(write, nullptr), cuda::KernelArgumentError);
  write.key_stride = 0;
  write.layout.head_dim = 60;
  BOOST_CHECK_THROW(cuda::write_kv_cache(write, nullptr), cuda::KernelArgumentError);

  cuda::SwapParams swap;
  swap.device_layout = kv::KvLayout{2, 2, 64, 16, 10};
  swap.host_layout = kv::KvLayout{2, 2, 64, 32, 10};  // block sizes differ
  swap.device_kv = fake_mut(0x10000);
  swap.host_kv = fake_mut(0x20000);
  BOOST_CHECK_THROW(cuda::swap_blocks(swap, {}, nullptr), cuda::KernelArgumentError);

  cuda::RotaryParams rotary;
  rotary.num_tokens = 1;
  rotary.num_heads = 1;
  rotary.head_dim = 63;
  BOOST_CHECK_THROW(cuda::apply_rotary(rotary, nullptr), cuda::KernelArgumentError);
}

// The tests' host conversions: every finite 16-bit pattern survives a round trip through fp32,
// and rounding is to nearest even.
BOOST_AUTO_TEST_CASE(host_16_bit_conversions_round_trip_and_round_to_nearest_even) {
  std::size_t bad = 0;
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const auto h = static_cast<uint16_t>(bits);
    if ((h & 0x7c00u) != 0x7c00u && float_to_fp16(fp16_to_float(h)) != h) ++bad;
    if ((h & 0x7f80u) != 0x7f80u && float_to_bf16(bf16_to_float(h)) != h) ++bad;
  }
  BOOST_TEST(bad == 0u);
  BOOST_TEST(float_to_fp16(1.0f) == 0x3c00u);
  BOOST_TEST(float_to_fp16(65504.0f) == 0x7bffu);
  BOOST_TEST(float_to_fp16(65520.0f) == 0x7c00u);
  BOOST_TEST(float_to_fp16(1.0f + 1.0f / 2048.0f) == 0x3c00u);  // a tie, to even
  BOOST_TEST(float_to_fp16(1.0f + 3.0f / 2048.0f) == 0x3c02u);  // a tie, to even (up)
  BOOST_TEST(float_to_fp16(std::ldexp(1.0f, -24)) == 0x0001u);  // smallest subnormal
  BOOST_TEST(float_to_bf16(1.0f) == 0x3f80u);
  BOOST_TEST(float_to_bf16(1.0f + 1.0f / 256.0f) == 0x3f80u);  // a tie, to even
  BOOST_TEST(fp16_to_float(0x3555u) == 0.333251953125f);
}

BOOST_AUTO_TEST_SUITE_END()
