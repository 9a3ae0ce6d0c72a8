// The KV event log: one JSON line per block-manager mutation.
//
// The lockstep check compares these logs across executors byte for byte, so the format is fixed
// and documented in docs/KV_EVENT_LOG.md: keys in a fixed order, no spaces, integers only. The
// log is optional; a manager without one pays a single pointer test per mutation.
#pragma once

#include <cstdint>
#include <ostream>
#include <span>
#include <string>

#include "core/common/types.h"
#include "core/kv/block_ops.h"
#include "core/kv/block_pool.h"

namespace pagedllm::kv {

class KvEventLog {
 public:
  explicit KvEventLog(std::ostream& out) : out_(out) {}

  // The engine step that following events belong to.
  void set_step(int64_t step) { step_ = step; }
  int64_t step() const { return step_; }

  void allocate(SeqId seq, std::span<const BlockId> hit, std::span<const BlockId> fresh,
                std::span<const BlockId> cached);
  void append(SeqId seq, std::span<const BlockId> fresh, std::span<const BlockId> cached);
  void copy_on_write(SeqId seq, BlockCopy copy);
  void fork(SeqId parent, SeqId child);
  void free(SeqId seq, Tier tier, std::span<const BlockId> blocks);
  // Blocks a sequence dropped because they lie wholly before its sliding window.
  void release_outside_window(SeqId seq, std::span<const BlockId> blocks);
  // Speculative decoding: the sequence kept `accepted` of its proposals' slots and dropped the
  // rest, releasing `released` and caching `cached` (blocks the kept proposals filled).
  void settle(SeqId seq, int32_t accepted, std::span<const BlockId> released, std::span<const BlockId> cached);
  void evict(BlockId block);
  void swap_out(std::span<const SeqId> seqs, std::span<const BlockMove> moves);
  // `reused`: host blocks whose content was still cached on the device (no copy).
  void swap_in(std::span<const SeqId> seqs, std::span<const BlockMove> moves, std::span<const BlockMove> reused);
  void reset_prefix_cache(int32_t num_blocks_uncached);

 private:
  void begin(const char* op);
  void end();
  void append_moves(const char* key, std::span<const BlockMove> moves);

  std::ostream& out_;
  std::string line_;  // reused buffer: one write per event
  int64_t step_ = 0;
};

}  // namespace pagedllm::kv
