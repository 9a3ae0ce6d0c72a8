#include <boost/test/unit_test.hpp>

#include <sstream>
#include <string>
#include <vector>

#include "core/kv/kv_cache_manager.h"

namespace kv = pagedllm::kv;
using pagedllm::TokenId;

BOOST_AUTO_TEST_SUITE(kv_event_log)

BOOST_AUTO_TEST_CASE(every_mutation_writes_one_documented_line) {
  std::ostringstream text;
  kv::KvEventLog log(text);
  kv::KvCacheConfig config;
  config.block_size = 2;
  config.num_device_blocks = 8;
  config.num_host_blocks = 4;
  config.watermark = 0.0;
  kv::KvCacheManager manager(config, &log);
  const std::vector<TokenId> prompt{1, 2, 3};
  log.set_step(1);
  manager.allocate(5, {prompt}, 3);
  manager.fork(5, 6);
  log.set_step(2);
  manager.append_slots(6, std::vector<TokenId>{4});
  manager.append_slots(5, std::vector<TokenId>{9, 9});
  const std::vector<pagedllm::SeqId> group{5, 6};
  log.set_step(3);
  manager.swap_out(group);
  manager.swap_in(group);
  manager.free(6);
  manager.reset_prefix_cache();
  const std::string expected =
      "{\"step\":1,\"op\":\"allocate\",\"seq\":5,\"hit\":[],\"new\":[0,1],\"cached\":[0]}\n"
      "{\"step\":1,\"op\":\"fork\",\"seq\":6,\"parent\":5}\n"
      "{\"step\":2,\"op\":\"cow\",\"seq\":6,\"src\":1,\"dst\":2}\n"
      "{\"step\":2,\"op\":\"append\",\"seq\":6,\"new\":[],\"cached\":[2]}\n"
      "{\"step\":2,\"op\":\"append\",\"seq\":5,\"new\":[3],\"cached\":[1]}\n"
      "{\"step\":3,\"op\":\"swap_out\",\"seqs\":[5,6],\"moves\":[[0,0],[1,1],[3,2],[2,3]]}\n"
      "{\"step\":3,\"op\":\"swap_in\",\"seqs\":[5,6],\"moves\":[[2,3]],\"reused\":[[0,0],[1,1],[3,2]]}\n"
      "{\"step\":3,\"op\":\"free\",\"seq\":6,\"tier\":\"device\",\"blocks\":[0,2]}\n"
      "{\"step\":3,\"op\":\"reset_prefix_cache\",\"blocks\":3}\n";
  BOOST_TEST(text.str() == expected);
}

BOOST_AUTO_TEST_CASE(appends_inside_a_block_write_nothing) {
  std::ostringstream text;
  kv::KvEventLog log(text);
  kv::KvCacheConfig config;
  config.block_size = 16;
  config.num_device_blocks = 4;
  kv::KvCacheManager manager(config, &log);
  manager.allocate(1, {std::vector<TokenId>{1, 2, 3}}, 3);
  const auto lines_before = text.str().size();
  manager.append_slots(1, std::vector<TokenId>{4});
  BOOST_TEST(text.str().size() == lines_before);
}

BOOST_AUTO_TEST_SUITE_END()
