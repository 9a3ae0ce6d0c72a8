// Refused calls: a snapshot of the manager and its log to compare around one, and which error a call threw.
#pragma once

#include <algorithm>
#include <cstdint>
#include <ios>
#include <optional>
#include <streambuf>
#include <tuple>
#include <vector>

#include "core/common/types.h"
#include "core/kv/block_pool.h"
#include "core/kv/kv_cache_manager.h"
#include "core/kv/kv_errors.h"

namespace pagedllm::kv::property_test {

// Counts the bytes of the event log (a refused call must write none) and forwards them to an
// optional target.
class CountingBuf final : public std::streambuf {
 public:
  explicit CountingBuf(std::streambuf* target) : target_(target) {}
  int64_t bytes() const { return bytes_; }

 protected:
  std::streamsize xsputn(const char* data, std::streamsize n) override {
    bytes_ += n;
    return target_ != nullptr ? target_->sputn(data, n) : n;
  }
  int_type overflow(int_type ch) override {
    if (traits_type::eq_int_type(ch, traits_type::eof())) return traits_type::not_eof(ch);
    ++bytes_;
    return target_ != nullptr ? target_->sputc(traits_type::to_char_type(ch)) : ch;
  }

 private:
  std::streambuf* target_;
  int64_t bytes_ = 0;
};

// Everything observable about the manager, to compare before and after a refused call.
struct Snapshot {
  KvStats stats;
  std::vector<SeqId> ids;
  std::vector<int64_t> tables;  // per sequence: token count, swapped flag, table size, table
  std::vector<BlockId> device_free;
  std::vector<BlockId> host_free;
  std::vector<BlockMeta> device_meta;
  std::vector<BlockMeta> host_meta;
  int64_t log_bytes = 0;
};

inline auto stats_key(const KvStats& s) {
  return std::tie(s.block_size, s.num_sequences, s.num_device_blocks, s.num_free_device_blocks,
                  s.num_cached_device_blocks, s.num_cached_free_device_blocks, s.num_host_blocks,
                  s.num_free_host_blocks, s.num_filled_device_slots, s.prefix_query_tokens, s.prefix_hit_tokens,
                  s.evictions);
}

inline auto meta_key(const BlockMeta& m) {
  return std::tie(m.hash, m.ref_count, m.num_hashed_tokens, m.prev_free, m.next_free, m.has_hash, m.is_cached);
}

inline bool same_meta(const std::vector<BlockMeta>& a, const std::vector<BlockMeta>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                    [](const BlockMeta& x, const BlockMeta& y) { return meta_key(x) == meta_key(y); });
}

inline bool same_snapshot(const Snapshot& a, const Snapshot& b) {
  return stats_key(a.stats) == stats_key(b.stats) && a.ids == b.ids && a.tables == b.tables &&
         a.device_free == b.device_free && a.host_free == b.host_free && same_meta(a.device_meta, b.device_meta) &&
         same_meta(a.host_meta, b.host_meta) && a.log_bytes == b.log_bytes;
}

enum class Expect : uint8_t { misuse, full };  // KvCacheError proper, or KvCacheFullError

// Which error a call threw: nullopt when none, true for KvCacheFullError.
template <typename Call>
std::optional<bool> refusal_of(Call&& call) {
  try {
    call();
  } catch (const KvCacheFullError&) {
    return true;
  } catch (const KvCacheError&) {
    return false;
  }
  return std::nullopt;
}

}  // namespace pagedllm::kv::property_test
