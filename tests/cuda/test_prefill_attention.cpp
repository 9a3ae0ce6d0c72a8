#include <boost/test/unit_test.hpp>

#include <cmath>
#include <random>
#include <sstream>
#include <vector>

#include "cpu_ref/paged_attention.h"
#include "cuda/kernels/prefill_attention.h"
#include "tests/cuda/gpu_test_util.h"
#include "tests/cuda/paged_kv_fixture.h"

namespace cuda = pagedllm::cuda;
using namespace pagedllm::cuda::testing;

namespace {

struct Chunk {
  int32_t start;   // tokens already in the cache (prefix-cached or earlier chunks)
  int32_t length;  // queries computed now
};

struct PrefillCase {
  cuda::DType dtype;
  int32_t head_dim;
  int32_t block_size;
  int32_t num_kv_heads;
  int32_t group_size;
  std::vector<Chunk> chunks;
  int32_t q_row_padding = 0;   // > 0: each token's q sits in a wider row (a fused qkv row), NaN after it
  int32_t sliding_window = 0;  // > 0: blocks wholly before the window are released (NaN on the device)
};

// The tensor-core kernel rounds the probabilities to the element type before P V, as
// FlashAttention-2 does: in bf16 each p carries up to 2^-9 of relative error, so an output (a
// p-weighted mean of values in [-1, 1]) may move by up to 2^-9 ~ 2e-3 where the simt kernel's fp32
// probabilities move it by nothing; atol 4e-3 covers that plus the output's own rounding. fp16's
// probabilities (2^-11) stay within the simt tolerance.
cuda::testing::Tolerance tolerance(cuda::PrefillKernel kernel, cuda::DType dtype) {
  if (kernel == cuda::PrefillKernel::tensor_core && dtype == cuda::DType::bf16) return {4e-3, 1.6e-2};
  return tolerance_for(dtype);
}

void run_case(const PrefillCase& c, std::mt19937_64& rng) {
  const int32_t num_seqs = static_cast<int32_t>(c.chunks.size());
  const int32_t num_heads = c.num_kv_heads * c.group_size;
  const int32_t layer = 0;
  std::vector<int32_t> ends;
  std::vector<int32_t> query_starts{0};
  std::vector<int32_t> context_starts;
  int32_t max_query_len = 0;
  for (const Chunk& chunk : c.chunks) {
    ends.push_back(chunk.start + chunk.length);
    query_starts.push_back(query_starts.back() + chunk.length);
    context_starts.push_back(chunk.start);
    max_query_len = std::max(max_query_len, chunk.length);
  }
  const int32_t num_tokens = query_starts.back();
  PagedKv tier = make_paged_kv(c.dtype, 1, c.num_kv_heads, c.head_dim, c.block_size, ends, rng);
  if (c.sliding_window > 0) release_blocks_outside_window(tier, c.dtype, context_starts, c.sliding_window);
  const std::size_t q_elems = static_cast<std::size_t>(num_tokens) * num_heads * c.head_dim;
  const HalfData q = random_halves(c.dtype, q_elems, rng);

  DeviceBuffer cache(tier.data.bits);
  DeviceBuffer q_dev(strided_rows(q.bits, num_tokens, num_heads * c.head_dim, c.q_row_padding));
  DeviceBuffer out_dev(q_elems * cuda::kDTypeBytes);
  DeviceBuffer tables_dev(tier.flat_tables);
  DeviceBuffer query_starts_dev(query_starts);
  DeviceBuffer context_starts_dev(context_starts);

  cuda::PrefillAttentionParams params;
  params.dtype = c.dtype;
  params.layout = tier.layout;
  params.kv_cache = cache.get();
  params.layer = layer;
  params.num_seqs = num_seqs;
  params.num_heads = num_heads;
  params.q = q_dev.get();
  params.q_stride = c.q_row_padding > 0 ? num_heads * c.head_dim + c.q_row_padding : 0;
  params.out = out_dev.get();
  params.query_starts = query_starts_dev.as<int32_t>();
  params.context_starts = context_starts_dev.as<int32_t>();
  params.block_tables = tables_dev.as<int32_t>();
  params.max_blocks_per_seq = tier.max_blocks_per_seq;
  params.max_query_len = max_query_len;
  params.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(c.head_dim)));
  params.sliding_window = c.sliding_window;

  // Causal prefill is, token by token, decode attention at that token's position.
  std::vector<float> ref(q_elems);
  for (int32_t s = 0; s < num_seqs; ++s) {
    const Chunk& chunk = c.chunks[static_cast<std::size_t>(s)];
    for (int32_t i = 0; i < chunk.length; ++i) {
      const std::size_t row = static_cast<std::size_t>(query_starts[static_cast<std::size_t>(s)] + i);
      pagedllm::cpu_ref::PagedAttentionArgs args;
      args.layout = tier.layout;
      args.kv_cache = tier.data.values.data();
      args.layer = layer;
      args.num_heads = num_heads;
      args.block_table = tier.tables[static_cast<std::size_t>(s)];
      args.position = chunk.start + i;
      args.sliding_window = c.sliding_window;
      args.q = q.values.data() + row * num_heads * c.head_dim;
      args.out = ref.data() + row * num_heads * c.head_dim;
      pagedllm::cpu_ref::paged_attention(args);
    }
  }
  // Both kernels, each on a poisoned output: every row they own must be written.
  for (const cuda::PrefillKernel kernel : {cuda::PrefillKernel::tensor_core, cuda::PrefillKernel::simt}) {
    params.kernel = kernel;
    out_dev.poison();
    cuda::prefill_attention(params, nullptr);
    const std::vector<float> out = to_floats(c.dtype, out_dev.download<uint16_t>());
    std::ostringstream name;
    name << "prefill (" << (kernel == cuda::PrefillKernel::tensor_core ? "tensor cores" : "simt") << ") "
         << cuda::dtype_name(c.dtype) << " head_dim " << c.head_dim << " block " << c.block_size << " group "
         << c.group_size;
    if (c.q_row_padding > 0) name << " q_stride +" << c.q_row_padding;
    if (c.sliding_window > 0) name << " window " << c.sliding_window;
    check_close(name.str(), out, ref, tolerance(kernel, c.dtype));
  }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(prefill_attention)

// Chunks with and without a cached prefix, odd lengths, a one-token chunk, a chunk longer than a
// query tile and a prefix that ends mid-block.
BOOST_AUTO_TEST_CASE(matches_cpu_ref_with_prefixes_and_odd_chunks) {
  if (skip_without_gpu()) return;
  std::mt19937_64 rng(99);
  const std::vector<Chunk> chunks{{0, 1}, {0, 37}, {5, 16}, {17, 33}, {100, 71}, {0, 129}, {48, 3}};
  for (const cuda::DType dtype : {cuda::DType::bf16, cuda::DType::fp16}) {
    for (const int32_t head_dim : {64, 128}) {
      for (const int32_t block_size : {16, 32}) {
        for (const int32_t group : {1, 4, 8}) run_case({dtype, head_dim, block_size, 2, group, chunks}, rng);
      }
    }
  }
}

// A tile holds 64 (token, group head) rows: with groups of 3, 7 or 16 heads a tile ends inside a
// token's heads or holds few tokens, and long chunks span many tiles.
BOOST_AUTO_TEST_CASE(groups_that_split_tokens_across_row_tiles) {
  if (skip_without_gpu()) return;
  std::mt19937_64 rng(41);
  const std::vector<Chunk> chunks{{0, 23}, {9, 50}, {0, 1}, {31, 5}};
  for (const int32_t group : {3, 7, 16}) {
    run_case({cuda::DType::bf16, 128, 16, 2, group, chunks}, rng);
    run_case({cuda::DType::fp16, 64, 32, 1, group, chunks}, rng);
  }
}

// q read in place from wider rows (the forward pass's fused qkv rows): the padding is NaN, so a
// read of it would show.
BOOST_AUTO_TEST_CASE(q_rows_inside_wider_rows) {
  if (skip_without_gpu()) return;
  std::mt19937_64 rng(29);
  const std::vector<Chunk> chunks{{0, 19}, {7, 40}, {0, 1}};
  PrefillCase fused{cuda::DType::bf16, 128, 16, 2, 4, chunks};
  fused.q_row_padding = 2 * 2 * 128;  // k and v of 2 KV heads
  run_case(fused, rng);
  PrefillCase odd{cuda::DType::fp16, 64, 32, 1, 8, chunks};
  odd.q_row_padding = 8;
  run_case(odd, rng);
}

// Sliding window: each query sees [p - window + 1, p]. Chunks shorter and longer than the
// window, chunks after a prefix longer than the window (its early blocks released, NaN on the
// device), windows shorter than a key tile and not a multiple of a block, one-token chunks, and
// group sizes whose row tiles end inside a token's heads.
BOOST_AUTO_TEST_CASE(sliding_window_reads_only_the_window) {
  if (skip_without_gpu()) return;
  std::mt19937_64 rng(53);
  const std::vector<Chunk> chunks{{0, 1}, {0, 40}, {0, 129}, {50, 30}, {100, 71}, {200, 1}, {33, 64}};
  for (const cuda::DType dtype : {cuda::DType::bf16, cuda::DType::fp16}) {
    for (const int32_t window : {1, 5, 16, 37, 64}) {
      PrefillCase c{dtype, 128, 16, 2, 4, chunks};
      c.sliding_window = window;
      run_case(c, rng);
    }
  }
  for (const int32_t group : {1, 3, 8}) {
    PrefillCase c{cuda::DType::bf16, 64, 32, 1, group, chunks};
    c.sliding_window = 45;
    run_case(c, rng);
  }
}

BOOST_AUTO_TEST_SUITE_END()
