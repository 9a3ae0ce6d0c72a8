#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/kv/kv_layout.h"
#include "core/sched/step_plan.h"
#include "cpu_ref/host_kv_store.h"

namespace cpu_ref = pagedllm::cpu_ref;
namespace kv = pagedllm::kv;

namespace {

// 2 layers, 3 KV heads of 4 dims, 4 slots per block; 5 device blocks, 3 host blocks.
kv::KvLayout small_layout() {
  return {.num_layers = 2, .num_kv_heads = 3, .head_dim = 4, .block_size = 4, .num_blocks = 5};
}

// A value unique to (layer, kind, block, head, slot, dim).
float value_of(std::int32_t layer, kv::KvKind kind, kv::BlockId block, std::int32_t head, std::int32_t slot,
               std::int32_t dim) {
  return static_cast<float>(((((layer * 2 + static_cast<int>(kind)) * 10 + block) * 10 + head) * 10 + slot) * 10 + dim +
                            1);
}

// Fills every slot of every device block with value_of.
void fill_device(cpu_ref::HostKvStore& store) {
  const kv::KvLayout& l = store.device_layout();
  std::vector<float> k(static_cast<std::size_t>(l.num_kv_heads * l.head_dim));
  std::vector<float> v(k.size());
  for (std::int32_t layer = 0; layer < l.num_layers; ++layer)
    for (kv::BlockId block = 0; block < l.num_blocks; ++block)
      for (std::int32_t slot = 0; slot < l.block_size; ++slot) {
        for (std::int32_t h = 0; h < l.num_kv_heads; ++h)
          for (std::int32_t d = 0; d < l.head_dim; ++d) {
            k[h * l.head_dim + d] = value_of(layer, kv::KvKind::key, block, h, slot, d);
            v[h * l.head_dim + d] = value_of(layer, kv::KvKind::value, block, h, slot, d);
          }
        store.write(layer, block, slot, k.data(), v.data());
      }
}

using Chunk = std::vector<float>;

Chunk chunk(const cpu_ref::HostKvStore& store, kv::Tier tier, std::int32_t layer, kv::KvKind kind, kv::BlockId block) {
  const auto span = store.chunk(tier, layer, kind, block);
  return Chunk(span.begin(), span.end());
}

// Every chunk of a tier, [layer][kind][block].
std::vector<Chunk> snapshot(const cpu_ref::HostKvStore& store, kv::Tier tier) {
  const kv::KvLayout& l = tier == kv::Tier::device ? store.device_layout() : store.host_layout();
  std::vector<Chunk> chunks;
  for (std::int32_t layer = 0; layer < l.num_layers; ++layer)
    for (const kv::KvKind kind : {kv::KvKind::key, kv::KvKind::value})
      for (kv::BlockId block = 0; block < l.num_blocks; ++block)
        chunks.push_back(chunk(store, tier, layer, kind, block));
  return chunks;
}

std::size_t index_of(const kv::KvLayout& l, std::int32_t layer, kv::KvKind kind, kv::BlockId block) {
  return (static_cast<std::size_t>(layer) * 2 + static_cast<std::size_t>(kind)) * l.num_blocks + block;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(host_kv_store)

BOOST_AUTO_TEST_CASE(tiers_share_the_layout_and_start_zeroed) {
  const cpu_ref::HostKvStore store(small_layout(), 3);
  BOOST_TEST(store.device_layout().num_blocks == 5);
  BOOST_TEST(store.host_layout().num_blocks == 3);
  BOOST_TEST(store.host_layout().chunk_elements() == store.device_layout().chunk_elements());
  for (const Chunk& c : snapshot(store, kv::Tier::device))
    BOOST_TEST(std::all_of(c.begin(), c.end(), [](float x) { return x == 0.0f; }));
}

BOOST_AUTO_TEST_CASE(write_stores_one_token_per_head_where_the_layout_says) {
  cpu_ref::HostKvStore store(small_layout(), 0);
  const std::vector<float> k = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};  // [3 heads][4]
  const std::vector<float> v = {-1, -2, -3, -4, -5, -6, -7, -8, -9, -10, -11, -12};
  store.write(1, 3, 2, k.data(), v.data());
  const kv::KvLayout& l = store.device_layout();
  for (std::int32_t h = 0; h < 3; ++h) {
    const float* key = store.device_vector(1, kv::KvKind::key, 3, h, 2);
    const float* value = store.device_vector(1, kv::KvKind::value, 3, h, 2);
    BOOST_TEST(key == store.device_data() + l.element_offset(1, kv::KvKind::key, 3, h, 2));
    for (std::int32_t d = 0; d < 4; ++d) {
      BOOST_TEST(key[d] == k[h * 4 + d]);
      BOOST_TEST(value[d] == v[h * 4 + d]);
    }
  }
  // Nothing else changed: exactly 2 * 12 non-zero elements in the whole tier.
  std::size_t num_nonzero = 0;
  for (std::size_t i = 0; i < l.total_elements(); ++i) num_nonzero += store.device_data()[i] != 0.0f;
  BOOST_TEST(num_nonzero == 24u);
  // In the chunk of (layer 1, K, block 3): head h, slot 2 at (h * block_size + 2) * head_dim.
  const Chunk c = chunk(store, kv::Tier::device, 1, kv::KvKind::key, 3);
  BOOST_TEST(c[(1 * 4 + 2) * 4 + 3] == 8.0f);
}

BOOST_AUTO_TEST_CASE(swap_out_swap_in_and_copy_move_exactly_the_named_blocks) {
  cpu_ref::HostKvStore store(small_layout(), 3);
  fill_device(store);
  const kv::KvLayout& dl = store.device_layout();
  const kv::KvLayout& hl = store.host_layout();
  const std::vector<Chunk> device0 = snapshot(store, kv::Tier::device);
  const std::vector<Chunk> host0 = snapshot(store, kv::Tier::host);

  // Swap out device 2 -> host 1 and device 4 -> host 0.
  const std::vector<kv::BlockMove> out = {{.src = 2, .dst = 1}, {.src = 4, .dst = 0}};
  store.swap_out(out);
  const std::vector<Chunk> host1 = snapshot(store, kv::Tier::host);
  BOOST_TEST((snapshot(store, kv::Tier::device) == device0));  // the source stays
  for (std::int32_t layer = 0; layer < 2; ++layer)
    for (const kv::KvKind kind : {kv::KvKind::key, kv::KvKind::value}) {
      BOOST_TEST((host1[index_of(hl, layer, kind, 1)] == device0[index_of(dl, layer, kind, 2)]));
      BOOST_TEST((host1[index_of(hl, layer, kind, 0)] == device0[index_of(dl, layer, kind, 4)]));
      BOOST_TEST((host1[index_of(hl, layer, kind, 2)] == host0[index_of(hl, layer, kind, 2)]));
    }

  // Swap in host 1 -> device 0.
  const std::vector<kv::BlockMove> in = {{.src = 1, .dst = 0}};
  store.swap_in(in);
  const std::vector<Chunk> device1 = snapshot(store, kv::Tier::device);
  BOOST_TEST((snapshot(store, kv::Tier::host) == host1));
  for (std::int32_t layer = 0; layer < 2; ++layer)
    for (const kv::KvKind kind : {kv::KvKind::key, kv::KvKind::value})
      for (kv::BlockId b = 0; b < dl.num_blocks; ++b) {
        const kv::BlockId expected_source = b == 0 ? 2 : b;
        BOOST_TEST((device1[index_of(dl, layer, kind, b)] == device0[index_of(dl, layer, kind, expected_source)]));
      }

  // Copy device 3 -> device 1.
  const std::vector<kv::BlockCopy> copies = {{.src = 3, .dst = 1}};
  store.copy(copies);
  const std::vector<Chunk> device2 = snapshot(store, kv::Tier::device);
  for (std::int32_t layer = 0; layer < 2; ++layer)
    for (const kv::KvKind kind : {kv::KvKind::key, kv::KvKind::value})
      for (kv::BlockId b = 0; b < dl.num_blocks; ++b) {
        const kv::BlockId expected_source = b == 1 ? 3 : b;
        BOOST_TEST((device2[index_of(dl, layer, kind, b)] == device1[index_of(dl, layer, kind, expected_source)]));
      }
}

BOOST_AUTO_TEST_CASE(a_plan_applies_swap_out_then_swap_in_then_copies) {
  cpu_ref::HostKvStore store(small_layout(), 3);
  fill_device(store);
  const kv::KvLayout& dl = store.device_layout();
  const std::vector<Chunk> before = snapshot(store, kv::Tier::device);
  // Only this order gives device 1 == device 2 == the old device 3: device 3 goes out to host 0,
  // host 0 comes back into device 1, device 1 is copied to device 2.
  pagedllm::sched::StepPlan plan;
  plan.swap_out = {{.src = 3, .dst = 0}};
  plan.swap_in = {{.src = 0, .dst = 1}};
  plan.copies = {{.src = 1, .dst = 2}};
  store.apply_block_operations(plan);
  const std::vector<Chunk> after = snapshot(store, kv::Tier::device);
  for (std::int32_t layer = 0; layer < 2; ++layer)
    for (const kv::KvKind kind : {kv::KvKind::key, kv::KvKind::value}) {
      const Chunk& old3 = before[index_of(dl, layer, kind, 3)];
      BOOST_TEST((after[index_of(dl, layer, kind, 1)] == old3));
      BOOST_TEST((after[index_of(dl, layer, kind, 2)] == old3));
      for (const kv::BlockId b : {0, 3, 4})
        BOOST_TEST((after[index_of(dl, layer, kind, b)] == before[index_of(dl, layer, kind, b)]));
    }
}

BOOST_AUTO_TEST_SUITE_END()
