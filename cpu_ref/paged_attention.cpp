#include "cpu_ref/paged_attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/common/check.h"
#include "core/kv/attention_window.h"
#include "cpu_ref/dot.h"

namespace pagedllm::cpu_ref {
namespace {

// 8 floats, a GCC vector: two SSE registers in the baseline clone, one AVX register in the AVX2 one.
using Float8 = float __attribute__((vector_size(8 * sizeof(float))));

// Tokens ahead whose K or V rows are fetched while this one is computed: a decode step's KV is
// read from DRAM (the weights streamed through the step have evicted it from cache), and a
// token's row is a few cache lines, too few for the hardware prefetcher to run ahead of.
constexpr std::int32_t kPrefetchTokens = 8;

// Asks for the `floats` values at `row` (one token's vector of a head) to be brought into cache.
inline void prefetch_row(const float* row, std::int32_t floats) {
  for (std::int32_t i = 0; i < floats; i += 64 / static_cast<std::int32_t>(sizeof(float))) __builtin_prefetch(row + i);
}

// out[d0, d0 + 8 * kVectors) = sum over t ascending of p[t] * values[t][d0, ...), each element
// its own sum: the sums stay in vector registers across t (a sum kept in `out` would make each t
// wait on the previous one's store).
template <int kVectors>
[[gnu::always_inline]] inline void weighted_sum(const float* p, const float* const* values, std::int32_t num_tokens,
                                                std::int32_t d0, float* out) {
  Float8 sum[kVectors] = {};
  for (std::int32_t t = 0; t < num_tokens; ++t) {
    if (t + kPrefetchTokens < num_tokens) prefetch_row(values[t + kPrefetchTokens] + d0, 8 * kVectors);
    const Float8 weight = Float8{} + p[t];  // p[t] in every lane
    for (int i = 0; i < kVectors; ++i) {
      Float8 v;
      std::memcpy(&v, values[t] + d0 + 8 * i, sizeof v);
      sum[i] += weight * v;  // p[t] * v, rounded, then added
    }
  }
  std::memcpy(out + d0, sum, sizeof sum);
}

}  // namespace

// Compiled twice, for AVX2 and for baseline x86-64, picked at load time: the loops are the same
// fp32 operations per lane either way (dot.h's fixed lanes, one output element per lane, no FMA),
// so the results are too; only the vector width differs.
__attribute__((target_clones("avx2", "default"))) void paged_attention(const PagedAttentionArgs& args) {
  const kv::KvLayout& layout = args.layout;
  const std::int32_t head_dim = layout.head_dim;
  // Causal, and within the sliding window if there is one: positions [first, position].
  const std::int32_t first = kv::first_visible_position(args.position, args.sliding_window);
  const std::int32_t num_tokens = args.position + 1 - first;
  PAGEDLLM_ASSERT(args.kv_cache != nullptr && args.q != nullptr && args.out != nullptr,
                  "paged_attention: null pointer");
  PAGEDLLM_ASSERT(args.layer >= 0 && args.layer < layout.num_layers, "paged_attention: layer out of range");
  PAGEDLLM_ASSERT(args.num_heads > 0 && layout.num_kv_heads > 0 && args.num_heads % layout.num_kv_heads == 0,
                  "paged_attention: query heads must be a multiple of KV heads");
  PAGEDLLM_ASSERT(args.position >= 0, "paged_attention: negative position");
  PAGEDLLM_ASSERT(args.sliding_window >= 0, "paged_attention: negative sliding window");
  PAGEDLLM_ASSERT(static_cast<std::int64_t>(args.block_table.size()) * layout.block_size > args.position,
                  "paged_attention: block table shorter than the sequence");
  const std::int32_t head_end = args.head_end < 0 ? args.num_heads : args.head_end;
  PAGEDLLM_ASSERT(args.head_begin >= 0 && args.head_begin <= head_end && head_end <= args.num_heads,
                  "paged_attention: head range out of range");
  const std::int32_t group_size = args.num_heads / layout.num_kv_heads;
  // HF: self.scaling = head_dim ** -0.5 (a Python double), applied to the fp32 scores.
  const float scale = static_cast<float>(std::pow(static_cast<double>(head_dim), -0.5));

  // Where the vector of the i-th attended token (position first + i) of one KV head lives: block
  // table lookup, then slot. A block released outside the window (kNoBlock) fails the assert.
  auto token_vector = [&](kv::KvKind kind, std::int32_t kv_head, std::int32_t i) {
    const std::int32_t t = first + i;
    const kv::BlockId block = args.block_table[static_cast<std::size_t>(t / layout.block_size)];
    PAGEDLLM_ASSERT(block >= 0 && block < layout.num_blocks, "paged_attention: block id out of range");
    return args.kv_cache + layout.element_offset(args.layer, kind, block, kv_head, t % layout.block_size);
  };

  // Scores, then probabilities: this thread's buffer, kept across calls (one call per token and
  // layer would otherwise allocate each time).
  thread_local std::vector<float> p;
  thread_local std::vector<const float*> keys;    // each attended token's K vector of the head
  thread_local std::vector<const float*> values;  // and its V vector
  if (p.size() < static_cast<std::size_t>(num_tokens)) {
    p.resize(static_cast<std::size_t>(num_tokens));
    keys.resize(static_cast<std::size_t>(num_tokens));
    values.resize(static_cast<std::size_t>(num_tokens));
  }
  for (std::int32_t h = args.head_begin; h < head_end; ++h) {
    const std::int32_t kv_head = h / group_size;
    const float* q = args.q + static_cast<std::size_t>(h) * head_dim;
    float* out = args.out + static_cast<std::size_t>(h) * head_dim;

    if (h == args.head_begin || kv_head != (h - 1) / group_size) {  // a new KV head: its rows
      for (std::int32_t t = 0; t < num_tokens; ++t) {
        keys[t] = token_vector(kv::KvKind::key, kv_head, t);
        values[t] = token_vector(kv::KvKind::value, kv_head, t);
      }
    }

    // Scores, and their maximum.
    float max_score = -INFINITY;
    for (std::int32_t t = 0; t < num_tokens; ++t) {
      if (t + kPrefetchTokens < num_tokens) prefetch_row(keys[t + kPrefetchTokens], head_dim);
      p[t] = dot(q, keys[t], head_dim) * scale;
      max_score = std::max(max_score, p[t]);
    }
    // Softmax: exp(score - max), summed in order of t, then normalized.
    float sum = 0.0f;
    for (std::int32_t t = 0; t < num_tokens; ++t) {
      p[t] = std::exp(p[t] - max_score);
      sum += p[t];
    }
    for (std::int32_t t = 0; t < num_tokens; ++t) p[t] = p[t] / sum;

    // Weighted sum of the values, t ascending for every element.
    std::int32_t d = 0;
    for (; d + 64 <= head_dim; d += 64) weighted_sum<8>(p.data(), values.data(), num_tokens, d, out);
    for (; d + 8 <= head_dim; d += 8) weighted_sum<1>(p.data(), values.data(), num_tokens, d, out);
    for (; d < head_dim; ++d) {
      float element = 0.0f;
      for (std::int32_t t = 0; t < num_tokens; ++t) element += p[t] * values[t][d];
      out[d] = element;
    }
  }
}

}  // namespace pagedllm::cpu_ref
