#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "core/kv/kv_layout.h"
#include "cpu_ref/dot.h"
#include "cpu_ref/host_kv_store.h"
#include "cpu_ref/paged_attention.h"

namespace cpu_ref = pagedllm::cpu_ref;
namespace kv = pagedllm::kv;

namespace {

std::vector<float> random_floats(std::size_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// One sequence's keys and values, contiguous: [num_tokens][num_kv_heads][head_dim] each.
struct Sequence {
  std::int32_t num_tokens = 0;
  std::int32_t num_kv_heads = 0;
  std::int32_t head_dim = 0;
  std::vector<float> k;
  std::vector<float> v;

  const float* key(std::int32_t t, std::int32_t h) const {
    return k.data() + (static_cast<std::size_t>(t) * num_kv_heads + h) * head_dim;
  }
  const float* value(std::int32_t t, std::int32_t h) const {
    return v.data() + (static_cast<std::size_t>(t) * num_kv_heads + h) * head_dim;
  }
};

// Attention over contiguous K/V in double: the textbook formula, no paging. With a sliding
// window (> 0) as a mask over every causal key: a key t is hidden when position - t >= window
// (llama.cpp's is_masked_swa, written here independently of kv/attention_window.h).
std::vector<double> naive_double(const Sequence& s, std::int32_t num_heads, std::int32_t position,
                                 const std::vector<float>& q, std::int32_t window = 0) {
  const std::int32_t group = num_heads / s.num_kv_heads;
  std::vector<double> out(static_cast<std::size_t>(num_heads) * s.head_dim, 0.0);
  for (std::int32_t h = 0; h < num_heads; ++h) {
    const std::int32_t kvh = h / group;
    std::vector<double> p(static_cast<std::size_t>(position) + 1);
    double max_score = -std::numeric_limits<double>::infinity();
    for (std::int32_t t = 0; t <= position; ++t) {
      double score = 0.0;
      for (std::int32_t d = 0; d < s.head_dim; ++d) score += double(q[h * s.head_dim + d]) * s.key(t, kvh)[d];
      const bool masked = window > 0 && position - t >= window;
      p[t] = masked ? -std::numeric_limits<double>::infinity() : score / std::sqrt(double(s.head_dim));
      max_score = std::max(max_score, p[t]);
    }
    double sum = 0.0;
    for (double& x : p) sum += (x = std::exp(x - max_score));
    for (std::int32_t t = 0; t <= position; ++t)
      for (std::int32_t d = 0; d < s.head_dim; ++d) out[h * s.head_dim + d] += p[t] / sum * s.value(t, kvh)[d];
  }
  return out;
}

// The same in fp32 in the reference's order, over contiguous K/V (the window's keys only, in
// ascending order): equal bit for bit when the gather through the block table is right.
std::vector<float> naive_float(const Sequence& s, std::int32_t num_heads, std::int32_t position,
                               const std::vector<float>& q, std::int32_t window = 0) {
  const std::int32_t group = num_heads / s.num_kv_heads;
  const float scale = static_cast<float>(std::pow(double(s.head_dim), -0.5));
  const std::int32_t first = window > 0 ? std::max(0, position - window + 1) : 0;
  std::vector<float> out(static_cast<std::size_t>(num_heads) * s.head_dim, 0.0f);
  for (std::int32_t h = 0; h < num_heads; ++h) {
    const std::int32_t kvh = h / group;
    std::vector<float> p(static_cast<std::size_t>(position - first) + 1);
    float max_score = -std::numeric_limits<float>::infinity();
    for (std::int32_t t = first; t <= position; ++t) {
      p[t - first] = cpu_ref::dot(q.data() + h * s.head_dim, s.key(t, kvh), s.head_dim) * scale;
      max_score = std::max(max_score, p[t - first]);
    }
    float sum = 0.0f;
    for (float& x : p) sum += (x = std::exp(x - max_score));
    for (float& x : p) x = x / sum;
    for (std::int32_t t = first; t <= position; ++t)
      for (std::int32_t d = 0; d < s.head_dim; ++d) out[h * s.head_dim + d] += p[t - first] * s.value(t, kvh)[d];
  }
  return out;
}

// A paged cache holding one sequence in a scattered, non-monotonic block table; every other
// block (and every other layer) is filled with NaN, so reading anything else shows.
struct Fixture {
  static constexpr std::int32_t kNumHeads = 9;
  static constexpr std::int32_t kNumKvHeads = 3;
  static constexpr std::int32_t kHeadDim = 64;
  static constexpr std::int32_t kBlockSize = 4;
  static constexpr std::int32_t kLayer = 1;

  std::int32_t head_dim;
  kv::KvLayout layout;
  std::vector<kv::BlockId> block_table = {7, 2, 11, 0, 15, 5, 9};  // 28 slots
  Sequence seq;
  cpu_ref::HostKvStore store{layout, 0};
  std::mt19937 rng{42};

  explicit Fixture(std::int32_t num_tokens, std::int32_t head_dim_ = kHeadDim)
      : head_dim(head_dim_),
        layout{.num_layers = 2,
               .num_kv_heads = kNumKvHeads,
               .head_dim = head_dim_,
               .block_size = kBlockSize,
               .num_blocks = 16} {
    seq = {num_tokens, kNumKvHeads, head_dim, {}, {}};
    seq.k = random_floats(static_cast<std::size_t>(num_tokens) * kNumKvHeads * head_dim, rng);
    seq.v = random_floats(seq.k.size(), rng);
    const std::vector<float> nan(static_cast<std::size_t>(kNumKvHeads) * head_dim,
                                 std::numeric_limits<float>::quiet_NaN());
    for (std::int32_t layer = 0; layer < layout.num_layers; ++layer)
      for (kv::BlockId b = 0; b < layout.num_blocks; ++b)
        for (std::int32_t slot = 0; slot < kBlockSize; ++slot) store.write(layer, b, slot, nan.data(), nan.data());
    for (std::int32_t t = 0; t < num_tokens; ++t) {
      store.write(kLayer, block_table[t / kBlockSize], t % kBlockSize, seq.key(t, 0), seq.value(t, 0));
    }
  }

  // With a window, the table entries wholly before it are released first (kNoBlock), as the
  // block manager does: the attention must not read them (it asserts).
  std::vector<float> attend(std::int32_t position, const std::vector<float>& q, std::int32_t window = 0,
                            std::int32_t head_begin = 0, std::int32_t head_end = -1) const {
    std::vector<kv::BlockId> table = block_table;
    if (window > 0) {
      for (std::int32_t b = 0; (b + 1) * kBlockSize <= position - window + 1; ++b) table[b] = kv::kNoBlock;
    }
    std::vector<float> out(q.size(), -7.0f);
    cpu_ref::paged_attention({.layout = layout,
                              .kv_cache = store.device_data(),
                              .layer = kLayer,
                              .num_heads = kNumHeads,
                              .block_table = table,
                              .position = position,
                              .sliding_window = window,
                              .q = q.data(),
                              .out = out.data(),
                              .head_begin = head_begin,
                              .head_end = head_end});
    return out;
  }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(paged_attention)

BOOST_AUTO_TEST_CASE(matches_naive_attention_on_contiguous_kv_at_every_position) {
  Fixture f(27);  // the last block is partly filled
  for (std::int32_t position = 0; position < 27; ++position) {
    const std::vector<float> q = random_floats(static_cast<std::size_t>(Fixture::kNumHeads) * Fixture::kHeadDim, f.rng);
    const std::vector<float> out = f.attend(position, q);
    const std::vector<double> exact = naive_double(f.seq, Fixture::kNumHeads, position, q);
    const std::vector<float> same_order = naive_float(f.seq, Fixture::kNumHeads, position, q);
    BOOST_TEST(std::memcmp(out.data(), same_order.data(), out.size() * sizeof(float)) == 0, "position " << position);
    for (std::int32_t h = 0; h < Fixture::kNumHeads; ++h) {
      // Relative to the head's output scale (an output element may cancel to near zero).
      double norm = 0.0;
      for (std::int32_t d = 0; d < Fixture::kHeadDim; ++d)
        norm = std::max(norm, std::abs(exact[h * Fixture::kHeadDim + d]));
      for (std::int32_t d = 0; d < Fixture::kHeadDim; ++d) {
        const std::size_t i = static_cast<std::size_t>(h) * Fixture::kHeadDim + d;
        BOOST_TEST(std::abs(out[i] - exact[i]) <= 1e-6 * norm,
                   "position " << position << " head " << h << " dim " << d << ": " << out[i] << " vs " << exact[i]);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(position_zero_attends_to_itself_only) {
  Fixture f(5);
  const std::vector<float> q = random_floats(static_cast<std::size_t>(Fixture::kNumHeads) * Fixture::kHeadDim, f.rng);
  const std::vector<float> out = f.attend(0, q);
  for (std::int32_t h = 0; h < Fixture::kNumHeads; ++h) {
    const float* v0 = f.seq.value(0, h / 3);
    BOOST_TEST(std::memcmp(out.data() + h * Fixture::kHeadDim, v0, Fixture::kHeadDim * sizeof(float)) == 0,
               "head " << h);
  }
}

BOOST_AUTO_TEST_CASE(query_heads_share_their_group_kv_head) {
  Fixture f(10);
  // Every query head gets the same q: heads of one group (9 / 3 = 3 per KV head) must agree,
  // heads of different groups must not.
  const std::vector<float> q_head = random_floats(Fixture::kHeadDim, f.rng);
  std::vector<float> q;
  for (std::int32_t h = 0; h < Fixture::kNumHeads; ++h) q.insert(q.end(), q_head.begin(), q_head.end());
  const std::vector<float> out = f.attend(9, q);
  auto head = [&](std::int32_t h) {
    return std::vector<float>(out.begin() + h * Fixture::kHeadDim, out.begin() + (h + 1) * Fixture::kHeadDim);
  };
  for (std::int32_t h = 0; h < Fixture::kNumHeads; ++h) {
    BOOST_TEST((head(h) == head(h / 3 * 3)), "head " << h);
    if (h % 3 == 0 && h > 0) BOOST_TEST((head(h) != head(h - 3)), "head " << h);
  }
}

BOOST_AUTO_TEST_CASE(a_token_is_bit_identical_whatever_else_is_in_the_cache) {
  // The same sequence under two different block tables (and other garbage around) gives the
  // same output bits.
  Fixture a(13);
  Fixture b(13);
  b.block_table = {3, 14, 1, 8};
  for (std::int32_t t = 0; t < 13; ++t) {
    b.store.write(Fixture::kLayer, b.block_table[t / Fixture::kBlockSize], t % Fixture::kBlockSize, a.seq.key(t, 0),
                  a.seq.value(t, 0));
  }
  const std::vector<float> q = random_floats(static_cast<std::size_t>(Fixture::kNumHeads) * Fixture::kHeadDim, a.rng);
  const std::vector<float> out_a = a.attend(12, q);
  const std::vector<float> out_b = b.attend(12, q);
  BOOST_TEST(std::memcmp(out_a.data(), out_b.data(), out_a.size() * sizeof(float)) == 0);
}

// Sliding window against a naive masked attention over every causal key: windows of one token,
// shorter than, equal to and longer than a block (4), at every position of a 27-token sequence,
// with the blocks wholly outside the window released from the table.
BOOST_AUTO_TEST_CASE(sliding_window_matches_naive_masked_attention_at_every_position) {
  Fixture f(27);
  for (const std::int32_t window : {1, 3, 4, 5, 8, 13, 26, 27, 40}) {
    for (std::int32_t position = 0; position < 27; ++position) {
      const std::vector<float> q =
          random_floats(static_cast<std::size_t>(Fixture::kNumHeads) * Fixture::kHeadDim, f.rng);
      const std::vector<float> out = f.attend(position, q, window);
      const std::vector<double> exact = naive_double(f.seq, Fixture::kNumHeads, position, q, window);
      const std::vector<float> same_order = naive_float(f.seq, Fixture::kNumHeads, position, q, window);
      BOOST_TEST(std::memcmp(out.data(), same_order.data(), out.size() * sizeof(float)) == 0,
                 "window " << window << " position " << position);
      for (std::int32_t h = 0; h < Fixture::kNumHeads; ++h) {
        double norm = 0.0;
        for (std::int32_t d = 0; d < Fixture::kHeadDim; ++d)
          norm = std::max(norm, std::abs(exact[h * Fixture::kHeadDim + d]));
        for (std::int32_t d = 0; d < Fixture::kHeadDim; ++d) {
          const std::size_t i = static_cast<std::size_t>(h) * Fixture::kHeadDim + d;
          BOOST_TEST(std::abs(out[i] - exact[i]) <= 1e-6 * norm,
                     "window " << window << " position " << position << " head " << h << " dim " << d);
        }
      }
    }
  }
}

// A window that covers every position so far changes nothing, bit for bit; one that does not
// changes the output (the window is applied).
BOOST_AUTO_TEST_CASE(a_window_covering_the_context_is_bit_identical_to_none) {
  Fixture f(20);
  const std::vector<float> q = random_floats(static_cast<std::size_t>(Fixture::kNumHeads) * Fixture::kHeadDim, f.rng);
  const std::vector<float> full = f.attend(19, q);
  const std::vector<float> covering = f.attend(19, q, 20);
  const std::vector<float> shorter = f.attend(19, q, 19);
  BOOST_TEST(std::memcmp(full.data(), covering.data(), full.size() * sizeof(float)) == 0);
  BOOST_TEST(std::memcmp(full.data(), shorter.data(), full.size() * sizeof(float)) != 0);
}

// Head sizes that are not a multiple of 64 (or of 8): the value sums' narrower loops, bit for bit
// against the same-order float reference.
BOOST_AUTO_TEST_CASE(head_sizes_off_the_vector_width_match_the_same_order_reference) {
  for (const std::int32_t head_dim : {84, 24, 3}) {
    Fixture f(15, head_dim);
    for (const std::int32_t position : {0, 6, 14}) {
      const std::vector<float> q = random_floats(static_cast<std::size_t>(Fixture::kNumHeads) * head_dim, f.rng);
      const std::vector<float> out = f.attend(position, q);
      const std::vector<float> same_order = naive_float(f.seq, Fixture::kNumHeads, position, q);
      BOOST_TEST(std::memcmp(out.data(), same_order.data(), out.size() * sizeof(float)) == 0,
                 "head_dim " << head_dim << " position " << position);
    }
  }
}

// A token's heads computed a range at a time (as the forward pass spreads them over threads)
// are bit-identical to all at once, and a range writes only its own heads.
BOOST_AUTO_TEST_CASE(heads_computed_in_ranges_are_bit_identical_to_all_at_once) {
  Fixture f(23);
  const std::vector<float> q = random_floats(static_cast<std::size_t>(Fixture::kNumHeads) * Fixture::kHeadDim, f.rng);
  const std::vector<float> whole = f.attend(22, q);
  constexpr std::size_t kHeadFloats = Fixture::kHeadDim;
  for (std::int32_t h = 0; h < Fixture::kNumHeads; ++h) {
    const std::vector<float> one = f.attend(22, q, 0, h, h + 1);
    for (std::int32_t other = 0; other < Fixture::kNumHeads; ++other) {
      const float* got = one.data() + other * kHeadFloats;
      if (other == h) {
        BOOST_TEST(std::memcmp(got, whole.data() + h * kHeadFloats, kHeadFloats * sizeof(float)) == 0, "head " << h);
      } else {
        BOOST_TEST(std::all_of(got, got + kHeadFloats, [](float x) { return x == -7.0f; }),
                   "head " << other << " written by the range of head " << h);
      }
    }
  }
  const std::vector<float> first_four = f.attend(22, q, 0, 0, 4);
  BOOST_TEST(std::memcmp(first_four.data(), whole.data(), 4 * kHeadFloats * sizeof(float)) == 0);
}

BOOST_AUTO_TEST_SUITE_END()
