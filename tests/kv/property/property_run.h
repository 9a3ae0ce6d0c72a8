// The PropertyRun class: random operations on a KvCacheManager, each checked against the reference model.
// Defined in property_run.cpp (set-up, loop, failure reports), property_ops.cpp (operations),
// property_misuse.cpp (calls that must be refused) and property_checks.cpp (checks).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <ostream>
#include <span>
#include <stdexcept>
#include <streambuf>
#include <string>
#include <utility>
#include <vector>

#include "core/common/types.h"
#include "core/kv/block_hash.h"
#include "core/kv/block_pool.h"
#include "core/kv/kv_cache_manager.h"
#include "core/kv/kv_event_log.h"
#include "tests/kv/property/kv_memory.h"
#include "tests/kv/property/reference_model.h"
#include "tests/kv/property/refused_calls.h"
#include "tests/kv/property/run_config.h"

namespace pagedllm::kv::property_test {

class PropertyFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class OpKind : uint8_t {
  allocate,
  allocate_chunk,
  prefill_chunk,
  decode,
  multi_append,
  fork,
  free,
  swap_out,
  swap_in,
  reset_prefix_cache,
  misuse,
};

struct OpWeight {
  OpKind kind;
  int32_t weight;  // per mille
};

inline constexpr std::array<OpWeight, 11> kOpWeights{{
    {OpKind::allocate, 110},
    {OpKind::allocate_chunk, 50},
    {OpKind::prefill_chunk, 80},
    {OpKind::decode, 340},
    {OpKind::multi_append, 80},
    {OpKind::fork, 80},
    {OpKind::free, 70},
    {OpKind::swap_out, 60},
    {OpKind::swap_in, 80},
    {OpKind::reset_prefix_cache, 1},
    {OpKind::misuse, 49},
}};

struct TraceEntry {
  int64_t op = -1;
  const char* what = "";
  SeqId seq = 0;
  int64_t arg = 0;
};

// --- the run -----------------------------------------------------------------------------------

class PropertyRun {
 public:
  // `log_target`, when not null, receives the event log (config.event_log must be set).
  PropertyRun(const RunConfig& config, std::streambuf* log_target);
  PropertyRun(const PropertyRun&) = delete;
  PropertyRun& operator=(const PropertyRun&) = delete;

  // Runs config.num_ops operations, then frees everything. Throws PropertyFailure.
  void run();

  const OpCounts& counts() const { return counts_; }
  KvStats stats() const { return manager_.stats(); }

 private:
  static size_t index(Tier tier) { return static_cast<size_t>(tier); }
  std::vector<int32_t>& refs(Tier tier) { return refs_[index(tier)]; }
  const BlockPool& pool(Tier tier) const {
    return tier == Tier::device ? manager_.device_pool() : manager_.host_pool();
  }
  int32_t num_free(Tier tier) const { return pool(tier).num_free(); }
  int32_t blocks_for(int64_t num_tokens) const {
    return static_cast<int32_t>((num_tokens + config_.block_size - 1) / config_.block_size);
  }
  int32_t max_seq_tokens() const { return 16 * config_.block_size; }
  int32_t max_prompt_tokens() const { return 10 * config_.block_size; }
  bool at_max_live() const { return static_cast<int32_t>(seqs_.size()) >= config_.max_live_seqs; }
  TokenId random_token() { return static_cast<TokenId>(rng_.below(kVocab)); }

  // --- failure reporting -----------------------------------------------------------------------

  void note(const char* what, SeqId seq, int64_t arg) {
    trace_[static_cast<size_t>(counts_.ops) % kTraceLength] = TraceEntry{counts_.ops, what, seq, arg};
  }

  [[noreturn]] void fail(const std::string& what) const;

  void require(bool ok, const char* what) const {
    if (!ok) [[unlikely]]
      fail(what);
  }

  // --- refused calls ---------------------------------------------------------------------------

  void capture(Snapshot& s) const;
  static void capture_meta(const BlockPool& blocks, std::vector<BlockMeta>& out);

  // The call must throw the expected kind of KvCacheError and leave the manager (and its log)
  // exactly as it was.
  template <typename Call>
  void expect_refused(Expect expect, const char* what, Call&& call) {
    capture(before_);
    const std::optional<bool> thrown_full = refusal_of(std::forward<Call>(call));
    if (!thrown_full) fail(std::string(what) + ": the call was not refused");
    if (*thrown_full != (expect == Expect::full)) {
      fail(std::string(what) + (*thrown_full ? ": threw KvCacheFullError, expected a plain KvCacheError"
                                             : ": threw a plain KvCacheError, expected KvCacheFullError"));
    }
    capture(after_);
    if (!same_snapshot(before_, after_)) fail(std::string(what) + ": the refused call changed the manager");
  }

  // --- operations ------------------------------------------------------------------------------

  bool random_op();
  bool run_op(OpKind kind);
  void draw_prompt(ModelSeq& seq);
  void draw_huge_prompt(ModelSeq& seq);
  AllocStatus expected_status(int32_t whole_blocks, int32_t needed) const;
  void check_match(const ModelSeq& seq, const PrefixMatch& match);
  bool op_allocate(bool chunked);
  // After an allocation: the free blocks it took, the table it built (the hit blocks, fresh ones).
  struct AllocationDone {
    PrefixMatch match;
    int32_t needed = 0;  // free blocks it was to take
    int32_t free_before = 0;
    int32_t slots = 0;
    bool chunked = false;
  };
  bool after_allocation(ModelSeq& seq, const AllocationDone& done);
  void remember_prompt(const ModelSeq& seq);
  void write_kv(const ModelSeq& seq, int32_t from, int32_t to);

  // A random model sequence satisfying `pred`, or null.
  template <typename Pred>
  ModelSeq* pick_seq(Pred pred) {
    candidates_.clear();
    for (size_t i = 0; i < seqs_.size(); ++i) {
      if (pred(seqs_[i])) candidates_.push_back(i);
    }
    if (candidates_.empty()) return nullptr;
    return &seqs_[candidates_[rng_.below(candidates_.size())]];
  }

  ModelSeq& model(SeqId id);
  bool op_prefill_chunk();
  bool op_decode(bool multi);
  bool append(ModelSeq& seq, std::span<const TokenId> tokens, const char* what, int64_t& counter);
  bool op_fork();
  bool op_free();
  void remember_free(SeqId id);
  void collect_family(int64_t family, Tier tier);
  void collect_group_blocks(Tier tier);
  void check_group_tables();
  void check_moves(const std::vector<BlockMove>& moves, Tier to_tier);
  bool op_swap_out();

  // The model's own swap-in plan: a full host block whose hash is still in the device prefix
  // cache comes back as that cached block (no copy); every other block is copied into a free one.
  struct SwapInPlan {
    int32_t consumed = 0;     // free device blocks the swap-in takes (a reused free block once)
    int32_t reused = 0;       // group blocks that come back without a copy
    int32_t reused_free = 0;  // distinct reused blocks that were on the free list
  };

  SwapInPlan plan_swap_in();
  bool op_swap_in();
  bool op_reset_prefix_cache();

  // --- calls that must be refused --------------------------------------------------------------

  bool op_misuse();
  bool misuse_unknown_sequence();
  bool misuse_double_free();
  bool misuse_append_swapped();
  bool misuse_bad_allocate();
  bool misuse_bad_fork();
  bool misuse_bad_swap_group();
  bool misuse_bad_query();

  // --- the full check after every operation ----------------------------------------------------

  void verify();
  void verify_ids();
  void verify_sequence(const ModelSeq& seq);
  [[noreturn]] void fail_content(const ModelSeq& seq, size_t block_index);

  struct PoolTally {
    int64_t filled = 0;       // slots filled in used blocks, as their holders' token counts say
    int32_t cached = 0;       // blocks marked cached
    int32_t cached_free = 0;  // of those, free ones
  };

  PoolTally verify_pool(Tier tier);
  void verify_stats(const PoolTally& device);
  void verify_slot();
  void drain();

  RunConfig config_;
  Rng rng_;
  CountingBuf log_buf_;
  std::ostream log_stream_;
  KvEventLog event_log_;
  KvCacheManager manager_;
  KvMemory memory_;

  std::vector<ModelSeq> seqs_;  // live sequences, in an order the generator picks from
  std::vector<std::vector<TokenId>> topics_;
  std::vector<RecentPrompt> recent_;
  std::vector<SeqId> recent_frees_;
  SeqId next_id_ = 1;
  int64_t next_family_ = 1;
  OpCounts counts_;
  KvStats last_stats_;
  std::array<TraceEntry, kTraceLength> trace_{};

  // Recomputed by verify() after every operation, so valid at the start of the next one.
  std::array<std::vector<int32_t>, 2> refs_;         // per tier: tables holding each block
  std::array<std::vector<int32_t>, 2> fills_;        // per tier: the holders' fill of each block, -1 if none
  std::array<std::vector<uint8_t>, 2> marks_;        // per tier scratch, all zero between uses
  std::array<std::vector<int32_t>, 2> group_index_;  // per tier: block -> group_blocks_ index + 1, else 0

  // Scratch buffers reused across operations.
  std::vector<size_t> candidates_;
  std::vector<SeqId> group_;
  std::vector<BlockId> group_blocks_;
  std::vector<int32_t> group_block_refs_;
  std::vector<int32_t> group_entries_;  // per table entry of the group: index into group_blocks_
  std::vector<BlockId> group_targets_;  // per group block: where the swap puts it
  std::vector<BlockId> cached_blocks_;
  std::vector<BlockId> old_table_;
  std::vector<BlockId> free_list_;
  std::vector<SeqId> model_ids_;
  std::vector<TokenId> new_tokens_;
  std::vector<BlockHash> prompt_hashes_;
  std::vector<BlockCopy> copies_;  // try_append_slots' output, reused
  Snapshot before_;
  Snapshot after_;
};

}  // namespace pagedllm::kv::property_test
