#include <boost/test/unit_test.hpp>

#include <cmath>
#include <random>
#include <sstream>
#include <vector>

#include "cpu_ref/paged_attention.h"
#include "cuda/kernels/decode_attention.h"
#include "tests/cuda/gpu_test_util.h"
#include "tests/cuda/paged_kv_fixture.h"

namespace cuda = pagedllm::cuda;
namespace kv = pagedllm::kv;
using namespace pagedllm::cuda::testing;

namespace {

struct DecodeCase {
  cuda::DType dtype;
  int32_t head_dim;
  int32_t block_size;
  int32_t num_kv_heads;
  int32_t group_size;
  std::vector<int32_t> seq_lens;
  int32_t partition_tokens = cuda::kDecodePartitionTokens;
  int32_t q_row_padding = 0;   // > 0: each q row sits in a wider row (a fused qkv row), NaN after it
  int32_t sliding_window = 0;  // > 0: blocks wholly before the window are released (NaN on the device)
};

std::string describe(const DecodeCase& c) {
  std::ostringstream name;
  name << "decode " << cuda::dtype_name(c.dtype) << " head_dim " << c.head_dim << " block " << c.block_size
       << " kv_heads " << c.num_kv_heads << " group " << c.group_size << " lens";
  for (const int32_t len : c.seq_lens) name << " " << len;
  if (c.partition_tokens != cuda::kDecodePartitionTokens) name << " partition " << c.partition_tokens;
  if (c.q_row_padding > 0) name << " q_stride +" << c.q_row_padding;
  if (c.sliding_window > 0) name << " window " << c.sliding_window;
  return name.str();
}

void run_case(const DecodeCase& c, std::mt19937_64& rng) {
  const int32_t num_seqs = static_cast<int32_t>(c.seq_lens.size());
  const int32_t num_heads = c.num_kv_heads * c.group_size;
  const int32_t layer = 1;  // of 2: the layer offset is exercised
  PagedKv tier = make_paged_kv(c.dtype, 2, c.num_kv_heads, c.head_dim, c.block_size, c.seq_lens, rng);
  if (c.sliding_window > 0) {
    std::vector<int32_t> positions;
    for (const int32_t len : c.seq_lens) positions.push_back(len - 1);
    release_blocks_outside_window(tier, c.dtype, positions, c.sliding_window);
  }
  const std::size_t q_elems = static_cast<std::size_t>(num_seqs) * num_heads * c.head_dim;
  const HalfData q = random_halves(c.dtype, q_elems, rng);
  const int32_t max_seq_len = *std::max_element(c.seq_lens.begin(), c.seq_lens.end());

  DeviceBuffer cache(tier.data.bits);
  DeviceBuffer q_dev(strided_rows(q.bits, num_seqs, num_heads * c.head_dim, c.q_row_padding));
  DeviceBuffer out_dev(q_elems * cuda::kDTypeBytes);
  DeviceBuffer tables_dev(tier.flat_tables);
  DeviceBuffer lens_dev(c.seq_lens);

  cuda::DecodeAttentionParams params;
  params.dtype = c.dtype;
  params.layout = tier.layout;
  params.kv_cache = cache.get();
  params.layer = layer;
  params.num_seqs = num_seqs;
  params.num_heads = num_heads;
  params.q = q_dev.get();
  params.q_stride = c.q_row_padding > 0 ? num_heads * c.head_dim + c.q_row_padding : 0;
  params.out = out_dev.get();
  params.block_tables = tables_dev.as<int32_t>();
  params.max_blocks_per_seq = tier.max_blocks_per_seq;
  params.seq_lens = lens_dev.as<int32_t>();
  params.max_seq_len = max_seq_len;
  params.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(c.head_dim)));
  params.partition_tokens = c.partition_tokens;
  params.sliding_window = c.sliding_window;
  DeviceBuffer workspace(cuda::decode_attention_workspace_bytes(params));
  workspace.poison();
  params.workspace = workspace.get();
  params.workspace_bytes = workspace.bytes();
  out_dev.poison();
  cuda::decode_attention(params, nullptr);
  const std::vector<float> out = to_floats(c.dtype, out_dev.download<uint16_t>());

  std::vector<float> ref(q_elems);
  for (int32_t s = 0; s < num_seqs; ++s) {
    pagedllm::cpu_ref::PagedAttentionArgs args;
    args.layout = tier.layout;
    args.kv_cache = tier.data.values.data();
    args.layer = layer;
    args.num_heads = num_heads;
    args.block_table = tier.tables[static_cast<std::size_t>(s)];
    args.position = c.seq_lens[static_cast<std::size_t>(s)] - 1;
    args.sliding_window = c.sliding_window;
    args.q = q.values.data() + static_cast<std::size_t>(s) * num_heads * c.head_dim;
    args.out = ref.data() + static_cast<std::size_t>(s) * num_heads * c.head_dim;
    pagedllm::cpu_ref::paged_attention(args);
  }
  check_close(describe(c) + (cuda::decode_attention_num_partitions(params) > 1 ? " (split-KV)" : ""), out, ref,
              tolerance_for(c.dtype));
}

}  // namespace

BOOST_AUTO_TEST_SUITE(decode_attention)

// Every supported (dtype, head_dim, block_size) with GQA ratios 1, 4 and 8, once with contexts
// that fit one partition and once across partitions (split-KV and the log-sum-exp merge).
BOOST_AUTO_TEST_CASE(matches_cpu_ref_across_dtypes_head_dims_block_sizes_and_gqa_ratios) {
  if (skip_without_gpu()) return;
  std::mt19937_64 rng(20261122);
  for (const cuda::DType dtype : {cuda::DType::bf16, cuda::DType::fp16}) {
    for (const int32_t head_dim : {64, 128}) {
      for (const int32_t block_size : {16, 32}) {
        for (const int32_t group : {1, 4, 8}) {
          run_case({dtype, head_dim, block_size, 2, group, {1, 5, 100, 333, 512}}, rng);
          run_case({dtype, head_dim, block_size, 2, group, {7, 1, 513, 1500, 2049}}, rng);
        }
      }
    }
  }
}

// Group sizes that do not fill a thread block's group exactly (2 -> 4 slots, 7 -> 8) and one
// larger than a thread block takes (16: two blocks share a KV head).
BOOST_AUTO_TEST_CASE(uneven_and_oversized_query_groups) {
  if (skip_without_gpu()) return;
  std::mt19937_64 rng(7);
  for (const int32_t group : {2, 7, 16}) {
    run_case({cuda::DType::bf16, 128, 16, 2, group, {3, 777, 1025}}, rng);
    run_case({cuda::DType::fp16, 64, 32, 1, group, {513, 9}}, rng);
  }
}

// Long contexts: many partitions and block sizes 8 and 64.
BOOST_AUTO_TEST_CASE(long_contexts_and_other_block_sizes) {
  if (skip_without_gpu()) return;
  std::mt19937_64 rng(11);
  run_case({cuda::DType::bf16, 128, 16, 8, 4, {8191, 4097}}, rng);
  run_case({cuda::DType::bf16, 128, 8, 2, 8, {1031, 17}}, rng);
  run_case({cuda::DType::fp16, 128, 64, 2, 1, {2111, 64}}, rng);
}

// q read in place from wider rows (the forward pass's fused qkv rows): the padding is NaN, so a
// read of it would show.
BOOST_AUTO_TEST_CASE(q_rows_inside_wider_rows) {
  if (skip_without_gpu()) return;
  std::mt19937_64 rng(23);
  DecodeCase fused{cuda::DType::bf16, 128, 16, 2, 4, {1, 77, 600}};
  fused.q_row_padding = 2 * 2 * 128;  // k and v of 2 KV heads
  run_case(fused, rng);
  DecodeCase odd{cuda::DType::fp16, 64, 32, 1, 8, {300, 5}, 64};
  odd.q_row_padding = 8;
  run_case(odd, rng);
}

// Smaller split-KV partitions (what choose_decode_partition_tokens picks for small batches):
// more partials per head for the merge, including partitions of exactly one 64-token block.
BOOST_AUTO_TEST_CASE(smaller_partitions_merge_to_the_same_result) {
  if (skip_without_gpu()) return;
  std::mt19937_64 rng(17);
  run_case({cuda::DType::bf16, 128, 16, 2, 4, {1, 64, 65, 1000}, 64}, rng);
  run_case({cuda::DType::fp16, 64, 32, 2, 8, {129, 300, 7}, 128}, rng);
  run_case({cuda::DType::bf16, 128, 64, 1, 1, {2000}, 64}, rng);
}

// Blocks larger than a partition (the "unpaged" end of the block-size comparison): a partition
// reads part of one block, several partitions share a block; odd lengths end mid-block.
BOOST_AUTO_TEST_CASE(blocks_larger_than_a_partition) {
  if (skip_without_gpu()) return;
  std::mt19937_64 rng(23);
  run_case({cuda::DType::bf16, 128, 2048, 2, 4, {1, 700, 2049, 3000}}, rng);
  run_case({cuda::DType::fp16, 64, 256, 2, 1, {255, 257, 1100}, 64}, rng);
  run_case({cuda::DType::bf16, 128, 1024, 1, 8, {1500}, 128}, rng);
}

// Sliding window: the keys of [len - window, len) only. Windows shorter than, equal to and
// longer than a block and a partition, starting mid-block and mid-partition, sequences shorter
// than the window; with split-KV the partitions wholly before the window write no partials
// (the workspace is poisoned) and the merge skips them. Released blocks hold NaN on the device.
BOOST_AUTO_TEST_CASE(sliding_window_reads_only_the_window) {
  if (skip_without_gpu()) return;
  std::mt19937_64 rng(31);
  for (const cuda::DType dtype : {cuda::DType::bf16, cuda::DType::fp16}) {
    for (const int32_t window : {1, 16, 37, 100, 512, 600}) {
      DecodeCase c{dtype, 128, 16, 2, 4, {1, 15, 16, 17, 99, 101, 700, 1500}};
      c.sliding_window = window;
      run_case(c, rng);
    }
  }
  DecodeCase small_partitions{cuda::DType::bf16, 64, 32, 2, 8, {64, 65, 300, 1000}, 64};
  small_partitions.sliding_window = 130;
  run_case(small_partitions, rng);
  DecodeCase large_blocks{cuda::DType::fp16, 128, 1024, 1, 1, {1500, 2049}, 128};
  large_blocks.sliding_window = 300;
  run_case(large_blocks, rng);
  DecodeCase gqa_one{cuda::DType::bf16, 64, 8, 2, 1, {4097, 33}};
  gqa_one.sliding_window = 4096;
  run_case(gqa_one, rng);
}

BOOST_AUTO_TEST_SUITE_END()
