#include <boost/test/unit_test.hpp>

#include <map>
#include <random>
#include <tuple>

#include "core/kv/block_pool.h"
#include "core/kv/prefix_index.h"

namespace kv = pagedllm::kv;

namespace {

// Hashes whose low words collide in a small table, so probe runs and wrap-around are exercised.
kv::BlockHash clashing_hash(uint64_t home, uint64_t tag) { return kv::BlockHash{home, tag}; }

struct HashLess {
  bool operator()(const kv::BlockHash& a, const kv::BlockHash& b) const {
    return std::tie(a.lo, a.hi) < std::tie(b.lo, b.hi);
  }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(flat_index)

BOOST_AUTO_TEST_CASE(insert_find_erase) {
  kv::PrefixIndex index(4);
  const kv::BlockHash a = clashing_hash(3, 1);
  const kv::BlockHash b = clashing_hash(3, 2);  // same home slot as a
  BOOST_TEST(index.find(a) == kv::kNoBlock);
  BOOST_TEST(index.insert(a, 10));
  BOOST_TEST(index.insert(b, 11));
  BOOST_TEST(!index.insert(a, 12));  // present: unchanged
  BOOST_TEST(index.find(a) == 10);
  BOOST_TEST(index.find(b) == 11);
  BOOST_TEST(index.erase(a));
  BOOST_TEST(!index.erase(a));
  BOOST_TEST(index.find(a) == kv::kNoBlock);
  BOOST_TEST(index.find(b) == 11);  // shifted back into a's slot, still found
  BOOST_TEST(index.size() == 1u);
  index.clear();
  BOOST_TEST(index.find(b) == kv::kNoBlock);
  BOOST_TEST(index.size() == 0u);
}

BOOST_AUTO_TEST_CASE(matches_a_reference_map_under_random_churn) {
  // A table of 64 entries (capacity 256) with homes drawn from 16 values: long, wrapping probe runs.
  constexpr int32_t kMaxEntries = 64;
  kv::PrefixIndex index(kMaxEntries);
  std::map<kv::BlockHash, kv::BlockId, HashLess> reference;
  std::mt19937_64 rng(7);
  for (int op = 0; op < 200000; ++op) {
    const kv::BlockHash hash = clashing_hash((rng() % 16) * 16 + 250, rng() % 96);
    const auto it = reference.find(hash);
    if (it != reference.end() && rng() % 2 == 0) {
      BOOST_REQUIRE(index.erase(hash));
      reference.erase(it);
    } else if (it == reference.end() && static_cast<int32_t>(reference.size()) < kMaxEntries) {
      const auto block = static_cast<kv::BlockId>(rng() % 1000);
      BOOST_REQUIRE(index.insert(hash, block));
      reference.emplace(hash, block);
    }
    if (op % 97 == 0) {
      for (const auto& [key, block] : reference) BOOST_REQUIRE(index.find(key) == block);
      BOOST_REQUIRE(index.size() == reference.size());
    }
    BOOST_REQUIRE(index.find(hash) == (reference.contains(hash) ? reference.at(hash) : kv::kNoBlock));
  }
  int32_t visited = 0;
  index.for_each([&](const kv::BlockHash& key, kv::BlockId block) {
    BOOST_REQUIRE(reference.at(key) == block);
    ++visited;
  });
  BOOST_TEST(visited == static_cast<int32_t>(reference.size()));
}

BOOST_AUTO_TEST_CASE(grows_past_its_expected_size) {
  struct Identity {
    uint64_t operator()(int64_t key) const { return static_cast<uint64_t>(key); }
  };
  kv::FlatIndex<int64_t, Identity> index;  // expects nothing: must grow many times
  for (int64_t key = 0; key < 10000; ++key) BOOST_REQUIRE(index.insert(key * 1024, static_cast<int32_t>(key)));
  BOOST_TEST(index.size() == 10000u);
  for (int64_t key = 0; key < 10000; ++key) BOOST_REQUIRE(index.find(key * 1024) == key);
  for (int64_t key = 0; key < 10000; key += 2) BOOST_REQUIRE(index.erase(key * 1024));
  for (int64_t key = 0; key < 10000; ++key) {
    BOOST_REQUIRE(index.find(key * 1024) == (key % 2 ? key : kv::FlatIndex<int64_t, Identity>::kAbsent));
  }
}

BOOST_AUTO_TEST_SUITE_END()
