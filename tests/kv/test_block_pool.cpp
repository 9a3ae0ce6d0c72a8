#include <boost/test/unit_test.hpp>

#include <vector>

#include "core/kv/block_pool.h"

namespace kv = pagedllm::kv;
using Ids = std::vector<kv::BlockId>;

BOOST_AUTO_TEST_SUITE(block_pool)

BOOST_AUTO_TEST_CASE(new_pool_hands_out_ids_in_order) {
  kv::BlockPool pool(kv::Tier::device, 4);
  BOOST_TEST(pool.num_free() == 4);
  BOOST_TEST(pool.free_list() == Ids({0, 1, 2, 3}), boost::test_tools::per_element());
  BOOST_TEST(pool.allocate() == 0);
  BOOST_TEST(pool.allocate() == 1);
  BOOST_TEST(pool.num_free() == 2);
  BOOST_TEST(pool.num_used() == 2);
  BOOST_TEST(pool.meta(0).ref_count == 1);
}

BOOST_AUTO_TEST_CASE(uncached_blocks_are_reused_first_cached_blocks_last) {
  kv::BlockPool pool(kv::Tier::device, 4);
  for (int i = 0; i < 4; ++i) pool.allocate();
  pool.meta(1).is_cached = true;
  pool.meta(2).is_cached = true;
  BOOST_TEST(pool.release(1));  // cached: tail
  BOOST_TEST(pool.release(0));  // uncached: head
  BOOST_TEST(pool.release(2));  // cached: tail, behind 1 (LRU)
  BOOST_TEST(pool.release(3));  // uncached: head
  BOOST_TEST(pool.free_list() == Ids({3, 0, 1, 2}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(acquire_of_a_free_block_removes_it_from_the_middle) {
  kv::BlockPool pool(kv::Tier::device, 5);
  pool.acquire(2);
  BOOST_TEST(pool.meta(2).ref_count == 1);
  BOOST_TEST(pool.free_list() == Ids({0, 1, 3, 4}), boost::test_tools::per_element());
  pool.acquire(0);  // head
  pool.acquire(4);  // tail
  BOOST_TEST(pool.free_list() == Ids({1, 3}), boost::test_tools::per_element());
  pool.acquire(2);  // already held: only the count moves
  BOOST_TEST(pool.meta(2).ref_count == 2);
  BOOST_TEST(!pool.release(2));
  BOOST_TEST(pool.release(2));
  BOOST_TEST(pool.num_free() == 3);
}

BOOST_AUTO_TEST_CASE(empty_pool_is_valid) {
  kv::BlockPool pool(kv::Tier::host, 0);
  BOOST_TEST(pool.num_free() == 0);
  BOOST_TEST(pool.free_list().empty());
}

BOOST_AUTO_TEST_SUITE_END()
