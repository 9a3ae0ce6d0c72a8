// The paged KV cache manager: block tables, prefix caching, copy-on-write and swap.
//
// It owns the metadata of two block pools (device and host) and one block table per sequence;
// executors own the KV memory those ids name and apply the copies and moves this class returns.
// Each mutation is one call that does all of its work or none: the try_ forms return what they
// did or that they did nothing (too few free blocks), the plain forms throw instead (a caller
// that knows the blocks are there, tests). Misuse (an unknown sequence, bad sizes) throws with the
// manager unchanged. Internal invariants are asserted where state changes; check_invariants()
// verifies all of them at once for tests. The member functions are defined by concern:
// kv_cache_manager.cpp (lookups, block accounting, inspection), kv_block_tables.cpp (allocate,
// append, fork, free), kv_prefix_cache.cpp (matching and registering full blocks), kv_swap.cpp.
//
// A sequence's table has exactly ceil(num_tokens / block_size) entries: slots are reserved for tokens
// whose ids are known (a prompt chunk, or the token sampled last step), so each full block can be
// hashed and offered to the prefix cache the moment it fills. Executors must therefore write a
// layer's new KV for the whole batch before that layer's attention reads the cache, as vLLM's
// reshape_and_cache does: a request may hit a block that another request fills in the same step.
//
// Sliding window (config.sliding_window > 0; kv_sliding_window.cpp): before an append, the blocks
// wholly before the window of the append's first query are released, as vLLM v1's
// SlidingWindowManager does: the sequence's reference is dropped (a cached block stays cached and
// evictable on the free list, a block shared by a fork stays with the other holders) and its table
// entry becomes kNoBlock. Released entries are always a prefix of the table; executors never read
// them (attention reads only the window). An allocation does not take prefix hits wholly before
// the window of its first computed query (their entries start released). Forks inherit released
// entries, swaps move only live blocks, and each release is one event-log line (release_window).
#pragma once

#include <cstdint>
#include <deque>
#include <iosfwd>
#include <optional>
#include <span>
#include <vector>

#include "core/common/types.h"
#include "core/kv/block_hash.h"
#include "core/kv/block_pool.h"
#include "core/kv/kv_cache_config.h"
#include "core/kv/kv_event_log.h"
#include "core/kv/prefix_index.h"
#include "core/kv/token_run.h"

namespace pagedllm::kv {

// Whether an allocation can proceed: now, after other sequences release blocks, or never.
enum class AllocStatus : uint8_t { ok, later, never };
const char* to_string(AllocStatus status);
std::ostream& operator<<(std::ostream& out, AllocStatus status);

// A prompt as the prefix cache sees it.
struct PromptRef {
  std::span<const TokenId> tokens;  // all of them, or those after the first num_unstored_tokens
  uint64_t salt = 0;                // requests with different salts never share blocks
  // Optional: hash_prompt_blocks(tokens, block_size, salt[, content ids]), computed once by a
  // caller that looks the same prompt up repeatedly. Empty: the manager hashes the tokens itself.
  std::span<const BlockHash> block_hashes = {};
  // Leading block_hashes derived from content ids, not tokens (debug builds check only the rest
  // against the tokens).
  int32_t num_named_hashes = 0;
  // Leading tokens not given (a simulated prompt's, sched::Sequence::num_unstored_tokens): they
  // must lie in the blocks of the first num_named_hashes hashes, which must then be given.
  int32_t num_unstored_tokens = 0;

  int32_t num_tokens() const { return num_unstored_tokens + static_cast<int32_t>(tokens.size()); }
};

// What an admission (an allocation, a swap-in) must leave of the device tier.
struct Headroom {
  int32_t reserve_blocks = 0;  // it never fits if it needs more than the tier less these (the watermark)
  int32_t min_free_after = 0;  // it fits now only if at least these stay free afterwards
};

struct AllocResult {
  AllocStatus status = AllocStatus::later;
  int32_t num_cached_tokens = 0;  // when ok: leading prompt tokens served from cached blocks
};

// Slots for new tokens at the end of a sequence.
struct AppendRequest {
  SeqId seq = 0;
  std::span<const TokenId> tokens;  // one slot each
  // Optional: the chain hashes of the sequence's leading full blocks, as
  // hash_prompt_blocks(its tokens, block_size, its salt) gives them (a prompt's, computed once for
  // its admission): a block they cover is registered with its hash instead of hashing its tokens
  // again (debug builds check they agree).
  std::span<const BlockHash> block_hashes = {};
  int32_t num_named_hashes = 0;  // leading block_hashes derived from content ids (not checked)
  // Speculative decoding: the trailing this-many of `tokens` are proposals, not yet verified. Their
  // slots are reserved (the verify pass writes their KV) but they are neither hashed nor offered to
  // the prefix cache until settle_proposals() keeps them.
  int32_t num_tentative = 0;
  // Slots for this many tokens before `tokens`, which are not given (a simulated prompt's): each
  // lies in a block of the first num_named_hashes hashes (or the prefix cache is off).
  int32_t num_unstored_tokens = 0;

  int32_t num_tokens() const { return num_unstored_tokens + static_cast<int32_t>(tokens.size()); }
};

struct SwapInResult {
  AllocStatus status = AllocStatus::later;
  std::vector<BlockMove> moves;  // when ok: the copies the executor makes, host -> device
};

struct PrefixMatch {
  int32_t num_cached_tokens = 0;    // leading prompt tokens whose KV sits in cached blocks
  int32_t num_hit_blocks = 0;       // num_cached_tokens / block_size
  int32_t num_free_hit_blocks = 0;  // hit blocks that are on the free list (reviving uses them)
};

struct KvStats {
  int32_t block_size = 0;
  int32_t num_sequences = 0;
  int32_t num_device_blocks = 0;
  int32_t num_free_device_blocks = 0;
  int32_t num_cached_device_blocks = 0;       // registered in the prefix cache, used or free
  int32_t num_cached_free_device_blocks = 0;  // free but still holding reusable content
  int32_t num_host_blocks = 0;
  int32_t num_free_host_blocks = 0;
  int64_t num_filled_device_slots = 0;  // token slots written in used device blocks
  // Running totals, named for what they count (as the metrics that export them).
  int64_t prefix_query_tokens = 0;  // prompt tokens looked up by allocate()
  int64_t prefix_hit_tokens = 0;    // of those, tokens served from the cache
  int64_t evictions = 0;            // cached blocks reallocated for other content

  int32_t num_used_device_blocks() const { return num_device_blocks - num_free_device_blocks; }
  double device_usage() const;           // used / total, vLLM's "KV cache usage"
  int64_t internal_waste_slots() const;  // reserved but unfilled slots in used device blocks
  double prefix_hit_rate() const;        // hit tokens / query tokens (0 when no queries)
};

class KvCacheManager {
 public:
  // Throws KvCacheError for an unusable configuration. The event log, when given, must outlive
  // the manager.
  explicit KvCacheManager(const KvCacheConfig& config, KvEventLog* event_log = nullptr);

  const KvCacheConfig& config() const { return config_; }
  int32_t watermark_blocks() const { return watermark_blocks_; }
  void set_event_log(KvEventLog* event_log) { event_log_ = event_log; }

  // --- admission -------------------------------------------------------------------------------
  // The longest run of leading full blocks already cached, stopping short of the whole prompt so
  // that at least one token is computed and yields logits. No side effects.
  PrefixMatch match_prefix(PromptRef prompt) const;

  // Starts `seq` with slots for the first max(num_tokens, cached) prompt tokens, reusing cached
  // blocks for the matched prefix, within `headroom` (an admission passes the watermark for
  // both). ok: done, with the cached tokens (their KV need not be computed); later: too few free
  // blocks now; never: the whole prompt exceeds the tier less headroom.reserve_blocks. Nothing
  // changes unless ok. Throws KvCacheError for a known seq or bad sizes.
  AllocResult try_allocate(SeqId seq, PromptRef prompt, int32_t num_tokens, Headroom headroom);
  // Allocates if the free blocks suffice now (no headroom, no "never"); throws KvCacheFullError.
  int32_t allocate(SeqId seq, PromptRef prompt, int32_t num_tokens);
  // What try_allocate would answer, changing nothing: for a policy that weighs an admission
  // against other moves (priority preemption), not for checking before allocating.
  AllocStatus allocation_status(PromptRef prompt, int32_t num_tokens, Headroom headroom) const;

  // --- growth ----------------------------------------------------------------------------------
  // Device blocks that appending `num_new_tokens` to `seq` takes, copy-on-write included.
  int32_t num_blocks_to_append(SeqId seq, int32_t num_new_tokens) const;

  // Reserves one slot per token at the end of every request's sequence (new blocks on block
  // boundaries), if that leaves at least `keep_free_blocks` device blocks free; otherwise changes
  // nothing and returns false. A partially filled last block that is shared is first copied: the
  // copy goes to `copies`, for the executor to apply before the step's forward pass. `tables`,
  // when given (one per request), receives each sequence's block table after the append, valid
  // until that sequence changes again: a caller that plans a step needs no second lookup.
  bool try_append_slots(std::span<const AppendRequest> requests, std::vector<BlockCopy>& copies,
                        int32_t keep_free_blocks = 0, std::span<const BlockId>* tables = nullptr);
  bool try_append_slots(const AppendRequest& request, std::vector<BlockCopy>& copies, int32_t keep_free_blocks = 0,
                        std::span<const BlockId>* table = nullptr);
  // One sequence, nothing kept free; throws KvCacheFullError when the blocks are not there.
  std::optional<BlockCopy> append_slots(SeqId seq, std::span<const TokenId> tokens,
                                        std::span<const BlockHash> block_hashes = {});

  // Speculative decoding, after the verify pass: of `seq`'s tentative slots (its last append's
  // proposals), the first accepted.size() are kept, their tokens hashed and each block they fill
  // offered to the prefix cache; the rest are dropped and the blocks wholly past the kept tokens
  // released (they were taken fresh by the append, so they return to the free list). One event-log
  // line (`settle`). Throws KvCacheError for an unknown or swapped sequence, or more accepted
  // tokens than tentative slots.
  void settle_proposals(SeqId seq, std::span<const TokenId> accepted);

  // `child` shares all of `parent`'s blocks (reference counts +1); both may then diverge.
  void fork(SeqId parent, SeqId child);

  // Releases every block of `seq` (in either tier). Cached blocks stay reusable until evicted;
  // the tail of the sequence is evicted before its head.
  void free(SeqId seq);

  // --- preemption by swap ----------------------------------------------------------------------
  // A group (the sequences of one request) moves as a whole; a block shared inside the group is
  // moved once and stays shared. The returned moves are the copies the executor must make, in
  // first-use order. Swap-in copies only what the device lost: a full block whose content is
  // still in the device prefix cache is taken from there (no copy; it appears in no move).
  // Nothing (no change) when the host tier lacks free blocks or has none at all.
  std::optional<std::vector<BlockMove>> try_swap_out(std::span<const SeqId> group);
  std::vector<BlockMove> swap_out(std::span<const SeqId> group);  // throws KvCacheFullError instead
  // Within `headroom`, as try_allocate: never when the group's distinct blocks exceed the tier
  // less headroom.reserve_blocks. Nothing changes unless ok.
  SwapInResult try_swap_in(std::span<const SeqId> group, Headroom headroom);
  std::vector<BlockMove> swap_in(std::span<const SeqId> group);  // no headroom; throws unless ok

  // Forgets every cached prefix (blocks in use keep their content). Returns how many blocks it
  // uncached.
  int32_t reset_prefix_cache();

  // --- inspection ------------------------------------------------------------------------------
  bool contains(SeqId seq) const { return find_sequence(seq) != nullptr; }
  bool is_swapped(SeqId seq) const;
  // With a sliding window, the leading entries may be kNoBlock (released, never read again).
  std::span<const BlockId> block_table(SeqId seq) const;
  // Table entries that hold a block (not released outside the window).
  int32_t num_live_blocks(SeqId seq) const;
  int32_t num_tokens(SeqId seq) const;
  // The flat slot index (block_id * block_size + offset) of a token position, for the executor.
  int64_t slot(SeqId seq, int32_t position) const;
  std::vector<SeqId> sequence_ids() const;  // sorted
  KvStats stats() const;
  const BlockPool& device_pool() const { return device_; }
  const BlockPool& host_pool() const { return host_; }

  // Verifies every invariant (O(blocks + table entries)); throws std::logic_error naming the
  // first one broken: each block's reference count equals the tables holding it, free + used =
  // total in each tier, free blocks are exactly those on the free list, table lengths match token
  // counts, and the prefix cache maps each hash to a block that carries it.
  void check_invariants() const;

 private:
  struct SequenceKv {
    std::vector<BlockId> block_table;  // ids in `tier`, one per block_size tokens
    BlockHasher tail_hasher;           // hash state of the unfinished last block
    SeqId id = 0;
    uint64_t salt = 0;
    int32_t num_tokens = 0;
    int32_t num_released_blocks = 0;  // leading table entries released outside the window (kNoBlock)
    int32_t num_tentative = 0;        // trailing slots of proposals, not hashed (0 between steps)
    Tier tier = Tier::device;
    bool last_block_maybe_shared = false;  // set by fork; cleared once the block is known exclusive
    bool live = false;                     // false: a free slot awaiting reuse
    // The unfinished last block holds unstored tokens: the tail hasher has none of them (the
    // block's hash comes named when it fills). Cleared when a block is registered.
    bool tail_unstored = false;
  };

  struct SeqIdBits {
    uint64_t operator()(SeqId seq) const;  // mixes the id: sequential ids must spread out
  };
  using SequenceIndex = FlatIndex<SeqId, SeqIdBits>;

  // Distinct blocks of a group, in first-use order, with how many of the group's tables hold each.
  struct GroupBlock {
    BlockId block;
    int32_t refs;
    int32_t fill;  // slots holding KV
  };

  // For each host block of a swap-in group: the cached device block holding the same content, or
  // kNoBlock when it must be copied; and how many free device blocks the swap-in consumes.
  struct SwapInPlan {
    std::vector<GroupBlock> blocks;
    std::vector<BlockId> cached_device_block;
    int32_t num_free_blocks_needed = 0;
  };

  SwapInPlan plan_swap_in(std::span<const SeqId> group) const;
  // The blocks an allocation takes from the free list and whether it can ever fit.
  struct AllocPlan {
    PrefixMatch match;
    int32_t slots = 0;     // max(num_tokens, cached)
    int32_t consumed = 0;  // free blocks taken: new ones and free cached ones revived
    // Sliding window: leading hits wholly before the window of the first query computed; they
    // are not taken (their table entries start released), so a long cached prefix costs nothing.
    int32_t num_skipped_hits = 0;
    int32_t num_held = 0;  // blocks the sequence holds once allocated
  };
  // Chain hashes a caller already has for a sequence's leading full blocks.
  struct KnownHashes {
    std::span<const BlockHash> hashes;
    int32_t num_named = 0;  // leading entries derived from content ids, not from tokens
  };
  AllocPlan plan_allocation(PromptRef prompt, int32_t num_tokens, std::vector<BlockId>* hits) const;
  AllocStatus status_of(int32_t num_blocks_held, int32_t num_free_blocks_taken, Headroom headroom) const;
  // The blocks an allocation must some day hold at once, for its "never" answer: the whole prompt;
  // with a sliding window, what it holds now or the window's blocks (at most the prompt's),
  // whichever is more (later prompt chunks release what falls out of the window as they go).
  int32_t blocks_needed_at_once(PromptRef prompt, const AllocPlan& plan) const;
  // Sliding window: blocks a decoding sequence holds at most, ceil(window / block_size) + 1.
  int32_t window_blocks() const;
  int32_t commit_allocation(SeqId seq, PromptRef prompt, const AllocPlan& plan);      // returns the cached tokens
  void check_allocation(SeqId seq, PromptRef prompt, int32_t num_tokens) const;       // misuse throws
  void check_tentative(const AppendRequest& request, const SequenceKv& state) const;  // misuse throws
  // Unstored tokens from `first_position` on must lie in blocks named by the given hashes (with a
  // prefix cache: they are never read); throws KvCacheError otherwise.
  void check_unstored(SeqId seq, const char* what, int32_t num_unstored, int32_t first_position,
                      std::span<const BlockHash> hashes, int32_t num_named) const;
  // try_append_slots' common case: one confirmed token of a device sequence that holds its last
  // block alone, without a window or an event log, not filling a block that must be registered.
  bool try_append_decode(SequenceKv& state, TokenId token, int32_t keep_free_blocks, std::span<const BlockId>* table);
  // One token that does not fill its block (the common decode), into a block held alone; a block
  // taken for it goes to `fresh` when given (the event log's list).
  void append_one_token(SequenceKv& state, TokenId token, std::vector<BlockId>* fresh);
  // Appends to a device sequence whose blocks were counted by the caller.
  // The last `num_tentative` tokens are proposals (AppendRequest::num_tentative).
  void append_counted(SeqId seq, SequenceKv& state, TokenRun tokens, KnownHashes known, int32_t num_tentative,
                      std::vector<BlockCopy>& copies);
  // The prefix match, with the hit blocks' ids when `hits` is given.
  PrefixMatch match_prefix(PromptRef prompt, std::vector<BlockId>* hits) const;
  int32_t num_blocks_to_append(const SequenceKv& state, int32_t num_new_tokens) const;
  // Sliding window: table entries before the first block the query at `first_query_position`
  // reads (0 without a window).
  int32_t num_blocks_outside_window(int32_t first_query_position) const;
  // Of the blocks an append to `state` releases, those it holds alone and that are not cached
  // (their release frees them for good).
  int32_t num_blocks_freed_by_window(const SequenceKv& state) const;
  // Releases `state`'s blocks wholly before the window of the query at `first_query_position`.
  void release_outside_window(SeqId seq, SequenceKv& state, int32_t first_query_position);
  // The table entries that hold blocks: all but the released prefix.
  static std::span<const BlockId> live_blocks(const SequenceKv& state);
  const SequenceKv* find_sequence(SeqId seq) const;
  const SequenceKv& sequence(SeqId seq) const;  // throws KvCacheError naming an unknown seq
  SequenceKv& sequence(SeqId seq);
  SequenceKv& add_sequence(SeqId seq);
  void remove_sequence(SeqId seq);
  BlockPool& pool(Tier tier) { return tier == Tier::device ? device_ : host_; }
  std::vector<GroupBlock> group_blocks(std::span<const SeqId> group, Tier expected_tier) const;
  int32_t blocks_for_tokens(int64_t num_tokens) const;
  int32_t block_fill(const SequenceKv& state, size_t position) const;  // filled slots of table[position]
  bool needs_copy_on_write(const SequenceKv& state) const;

  // Takes a device block, evicting its cached content if any; the block is returned reset.
  BlockId take_device_block();
  void revive_device_block(BlockId block);                 // acquire + slot accounting
  void release_device_block(BlockId block, int32_t fill);  // release + slot and cache accounting
  void register_full_block(SequenceKv& seq, BlockId block, const BlockHash& hash, std::vector<BlockId>* cached);
  // The copy-on-write case of an append: copies the shared last block, then appends.
  [[gnu::noinline]] BlockCopy copy_and_append(SeqId seq, SequenceKv& state, TokenRun tokens, KnownHashes known,
                                              int32_t num_tentative);
  // append_tokens, then append_tentative for the last `num_tentative` tokens, with the event
  // log's `append` line when a log is set.
  void append_and_log(SeqId seq, SequenceKv& state, TokenRun tokens, KnownHashes known, int32_t num_tentative);
  // Slots for proposals: blocks taken as needed, nothing hashed.
  void append_tentative(SequenceKv& state, int32_t num_tokens, std::vector<BlockId>* fresh);
  // Appends tokens to a device sequence whose free blocks were checked by the caller. `known`:
  // chain hashes of the sequence's leading full blocks (may be empty), used for the blocks they
  // cover instead of hashing their tokens. Unstored tokens must lie in blocks `known` names.
  void append_tokens(SequenceKv& seq, TokenRun tokens, KnownHashes known, std::vector<BlockId>* fresh,
                     std::vector<BlockId>* cached);

  KvCacheConfig config_;
  int32_t watermark_blocks_ = 0;
  BlockPool device_;
  BlockPool host_;
  PrefixIndex prefix_cache_;               // device tier only
  SequenceIndex sequence_index_;           // seq -> index into sequence_slots_
  std::deque<SequenceKv> sequence_slots_;  // stable addresses; freed slots are reused
  std::vector<int32_t> free_sequence_slots_;
  KvEventLog* event_log_ = nullptr;  // not owned; null = no log

  int32_t num_cached_free_ = 0;
  int64_t device_slots_filled_ = 0;
  int64_t prefix_query_tokens_ = 0;
  int64_t prefix_hit_tokens_ = 0;
  int64_t evictions_ = 0;

  // Scratch buffers reused across calls, so that the hot paths allocate nothing.
  std::vector<BlockId> scratch_hits_;
  std::vector<BlockId> scratch_fresh_;
  std::vector<BlockId> scratch_cached_;
  std::vector<SequenceKv*> scratch_appending_;  // try_append_slots: each request's sequence, found once
  std::vector<BlockId> scratch_released_;       // release_outside_window: the blocks, for the event log
};

}  // namespace pagedllm::kv
