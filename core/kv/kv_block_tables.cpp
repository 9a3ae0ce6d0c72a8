// The block tables side of the KV manager: a sequence's first slots (allocation, reusing cached
// prefix blocks), its growth by appended tokens (copy-on-write of a shared last block), forks, and
// freeing. Each operation counts the blocks it needs before its first write, so that it does all
// of its work or none.
#include <algorithm>
#include <string>

#include "core/common/check.h"
#include "core/kv/kv_cache_manager.h"
#include "core/kv/kv_errors.h"

namespace pagedllm::kv {
namespace {

#ifdef NDEBUG
constexpr bool kCheckKnownHashes = false;
#else
constexpr bool kCheckKnownHashes = true;  // debug builds hash every block and compare
#endif

}  // namespace

// --- admission ---------------------------------------------------------------------------------

void KvCacheManager::check_allocation(SeqId seq, PromptRef prompt, int32_t num_tokens) const {
  if (contains(seq)) {
    throw KvCacheError("kv cache: allocate of " + seq_name(seq) + ", which already holds blocks");
  }
  const auto prompt_len = static_cast<int64_t>(prompt.num_tokens());
  check_unstored(seq, "allocate of ", prompt.num_unstored_tokens, 0, prompt.block_hashes, prompt.num_named_hashes);
  if (prompt_len == 0) throw KvCacheError("kv cache: allocate of " + seq_name(seq) + " with an empty prompt");
  if (num_tokens < 1 || num_tokens > prompt_len) {
    throw KvCacheError("kv cache: allocate of " + seq_name(seq) + ": num_tokens " + std::to_string(num_tokens) +
                       " outside [1, prompt length " + std::to_string(prompt_len) + "]");
  }
}

KvCacheManager::AllocPlan KvCacheManager::plan_allocation(PromptRef prompt, int32_t num_tokens,
                                                          std::vector<BlockId>* hits) const {
  AllocPlan plan;
  std::vector<BlockId> local_hits;  // a windowed plan needs the hits even when the caller does not
  std::vector<BlockId>* found = hits != nullptr || config_.sliding_window <= 0 ? hits : &local_hits;
  const size_t first_hit = found != nullptr ? found->size() : 0;
  plan.match = match_prefix(prompt, found);
  plan.slots = std::max(num_tokens, plan.match.num_cached_tokens);
  int32_t skipped_free = 0;
  if (config_.sliding_window > 0) {
    // The first query computed is at `cached` (at slots - 1 when nothing is computed now).
    const int32_t first_query = std::min(plan.match.num_cached_tokens, plan.slots - 1);
    plan.num_skipped_hits = std::min(num_blocks_outside_window(first_query), plan.match.num_hit_blocks);
    for (int32_t i = 0; i < plan.num_skipped_hits; ++i) {
      if (device_.meta((*found)[first_hit + static_cast<size_t>(i)]).ref_count == 0) ++skipped_free;
    }
  }
  plan.consumed =
      blocks_for_tokens(plan.slots) - plan.match.num_hit_blocks + plan.match.num_free_hit_blocks - skipped_free;
  plan.num_held = blocks_for_tokens(plan.slots) - plan.num_skipped_hits;
  return plan;
}

int32_t KvCacheManager::window_blocks() const { return blocks_for_tokens(config_.sliding_window) + 1; }

int32_t KvCacheManager::blocks_needed_at_once(PromptRef prompt, const AllocPlan& plan) const {
  if (config_.sliding_window <= 0) return blocks_for_tokens(prompt.num_tokens());
  // A prompt shorter than the window never holds the window's blocks.
  const int32_t prompt_blocks = blocks_for_tokens(prompt.num_tokens());
  return std::max(plan.num_held, std::min(window_blocks(), prompt_blocks));
}

AllocStatus KvCacheManager::status_of(int32_t num_blocks_held, int32_t num_free_blocks_taken, Headroom headroom) const {
  if (num_blocks_held > device_.num_blocks() - headroom.reserve_blocks) return AllocStatus::never;
  return device_.num_free() - num_free_blocks_taken >= headroom.min_free_after ? AllocStatus::ok : AllocStatus::later;
}

AllocStatus KvCacheManager::allocation_status(PromptRef prompt, int32_t num_tokens, Headroom headroom) const {
  const AllocPlan plan = plan_allocation(prompt, num_tokens, nullptr);
  return status_of(blocks_needed_at_once(prompt, plan), plan.consumed, headroom);
}

AllocResult KvCacheManager::try_allocate(SeqId seq, PromptRef prompt, int32_t num_tokens, Headroom headroom) {
  check_allocation(seq, prompt, num_tokens);
  scratch_hits_.clear();
  const AllocPlan plan = plan_allocation(prompt, num_tokens, &scratch_hits_);
  // The whole prompt must fit the tier some day, not only the first chunk asked for now (with a
  // sliding window, what it holds at once).
  const AllocStatus status = status_of(blocks_needed_at_once(prompt, plan), plan.consumed, headroom);
  if (status != AllocStatus::ok) return {status, 0};
  return {AllocStatus::ok, commit_allocation(seq, prompt, plan)};
}

int32_t KvCacheManager::allocate(SeqId seq, PromptRef prompt, int32_t num_tokens) {
  check_allocation(seq, prompt, num_tokens);
  scratch_hits_.clear();
  const AllocPlan plan = plan_allocation(prompt, num_tokens, &scratch_hits_);
  if (plan.consumed > device_.num_free()) {
    throw KvCacheFullError("kv cache: allocate of " + seq_name(seq) + " needs " + std::to_string(plan.consumed) +
                           " free device blocks, " + std::to_string(device_.num_free()) + " are free");
  }
  return commit_allocation(seq, prompt, plan);
}

int32_t KvCacheManager::commit_allocation(SeqId seq, PromptRef prompt, const AllocPlan& plan) {
  // Counted; from here on nothing fails (short of memory exhaustion). scratch_hits_ holds the
  // plan's hit blocks.
  const PrefixMatch& match = plan.match;
  const auto prompt_len = static_cast<int64_t>(prompt.num_tokens());
  SequenceKv& state = add_sequence(seq);
  state.salt = prompt.salt;
  state.block_table.reserve(static_cast<size_t>(blocks_for_tokens(prompt_len)));
  for (size_t i = 0; i < scratch_hits_.size(); ++i) {
    if (i < static_cast<size_t>(plan.num_skipped_hits)) {  // before the window: never read, not taken
      state.block_table.push_back(kNoBlock);
      continue;
    }
    revive_device_block(scratch_hits_[i]);
    state.block_table.push_back(scratch_hits_[i]);
  }
  state.num_released_blocks = plan.num_skipped_hits;
  const BlockHash parent = scratch_hits_.empty() ? kRootBlockHash : device_.meta(scratch_hits_.back()).hash;
  state.tail_hasher.reset(parent, prompt.salt);
  state.num_tokens = match.num_cached_tokens;
  prefix_query_tokens_ += prompt_len;
  prefix_hit_tokens_ += match.num_cached_tokens;

  const bool logging = event_log_ != nullptr;
  if (logging) {
    scratch_fresh_.clear();
    scratch_cached_.clear();
  }
  append_tokens(state, TokenRun::of(prompt.tokens, prompt.num_unstored_tokens, match.num_cached_tokens, plan.slots),
                KnownHashes{prompt.block_hashes, prompt.num_named_hashes}, logging ? &scratch_fresh_ : nullptr,
                logging ? &scratch_cached_ : nullptr);
  if (logging) {
    event_log_->allocate(seq,
                         std::span(state.block_table)
                             .subspan(static_cast<size_t>(plan.num_skipped_hits),
                                      static_cast<size_t>(match.num_hit_blocks - plan.num_skipped_hits)),
                         scratch_fresh_, scratch_cached_);
  }
  return match.num_cached_tokens;
}

// --- growth ------------------------------------------------------------------------------------

int32_t KvCacheManager::num_blocks_to_append(SeqId seq, int32_t num_new_tokens) const {
  if (num_new_tokens < 0) throw KvCacheError("kv cache: negative token count for " + seq_name(seq));
  return num_blocks_to_append(sequence(seq), num_new_tokens);
}

int32_t KvCacheManager::num_blocks_to_append(const SequenceKv& state, int32_t num_new_tokens) const {
  if (num_new_tokens == 0) return 0;
  const int32_t new_blocks = blocks_for_tokens(static_cast<int64_t>(state.num_tokens) + num_new_tokens) -
                             static_cast<int32_t>(state.block_table.size());
  // A windowed sequence releases its blocks before the window first (kv_sliding_window.cpp): the
  // ones it holds alone return to the free list before the new ones are taken.
  return std::max(0, new_blocks + (needs_copy_on_write(state) ? 1 : 0) - num_blocks_freed_by_window(state));
}

bool KvCacheManager::needs_copy_on_write(const SequenceKv& state) const {
  // Only fork shares a partial block, and fork sets the hint: the common decode append reads no
  // block metadata at all.
  return state.last_block_maybe_shared && state.num_tokens % config_.block_size != 0 && state.tier == Tier::device &&
         device_.meta(state.block_table.back()).ref_count > 1;
}

inline void KvCacheManager::append_one_token(SequenceKv& state, TokenId token, std::vector<BlockId>* fresh) {
  if (state.num_tokens % config_.block_size == 0) {
    const BlockId block = take_device_block();
    state.block_table.push_back(block);
    if (fresh) fresh->push_back(block);
  }
  PAGEDLLM_DEBUG_ASSERT(device_.meta(state.block_table.back()).ref_count == 1, "append into a block that is shared");
  ++device_slots_filled_;
  ++state.num_tokens;
  if (config_.enable_prefix_caching) state.tail_hasher.add(token);
}

bool KvCacheManager::try_append_decode(SequenceKv& state, TokenId token, int32_t keep_free_blocks,
                                       std::span<const BlockId>* table) {
  const bool new_block = state.num_tokens % config_.block_size == 0;
  if (device_.num_free() - (new_block ? 1 : 0) < keep_free_blocks) return false;  // as num_blocks_to_append counts
  append_one_token(state, token, nullptr);
  if (table != nullptr) *table = state.block_table;
  return true;
}

bool KvCacheManager::try_append_slots(const AppendRequest& request, std::vector<BlockCopy>& copies,
                                      int32_t keep_free_blocks, std::span<const BlockId>* table) {
  SequenceKv& state = sequence(request.seq);
  // A decode's one confirmed token into a block the sequence holds alone, which it does not fill
  // (15 in 16 with prefix caching): no window, copy-on-write, proposals or hashes to settle, and
  // nothing to log. Every check below holds by construction there; what it does is append_tokens'
  // short path.
  if (request.tokens.size() == 1 && request.num_unstored_tokens == 0 && request.num_tentative == 0 &&
      state.num_tentative == 0 && state.tier == Tier::device && !state.last_block_maybe_shared &&
      config_.sliding_window <= 0 && event_log_ == nullptr &&
      (!config_.enable_prefix_caching || (state.num_tokens + 1) % config_.block_size != 0)) [[likely]] {
    return try_append_decode(state, request.tokens.front(), keep_free_blocks, table);
  }
  if (state.tier != Tier::device) {
    throw KvCacheError("kv cache: append to " + seq_name(request.seq) + ", which is swapped out");
  }
  check_tentative(request, state);
  const int32_t needed = num_blocks_to_append(state, request.num_tokens());
  if (device_.num_free() - needed < keep_free_blocks) return false;
  append_counted(request.seq, state, TokenRun{request.tokens, request.num_unstored_tokens},
                 KnownHashes{request.block_hashes, request.num_named_hashes}, request.num_tentative, copies);
  if (table != nullptr) *table = state.block_table;
  return true;
}

bool KvCacheManager::try_append_slots(std::span<const AppendRequest> requests, std::vector<BlockCopy>& copies,
                                      int32_t keep_free_blocks, std::span<const BlockId>* tables) {
  if (requests.size() == 1)
    return try_append_slots(requests.front(), copies, keep_free_blocks, tables);  // the common case
  // Two passes over the sequences, found once: count every block (a group's appends fit together
  // or not at all), then append.
  scratch_appending_.clear();
  int32_t needed = 0;
  for (const AppendRequest& request : requests) {
    SequenceKv& state = sequence(request.seq);
    if (state.tier != Tier::device) {
      throw KvCacheError("kv cache: append to " + seq_name(request.seq) + ", which is swapped out");
    }
    if (std::find(scratch_appending_.begin(), scratch_appending_.end(), &state) != scratch_appending_.end()) {
      throw KvCacheError("kv cache: " + seq_name(request.seq) + " appears twice in one append");
    }
    check_tentative(request, state);
    needed += num_blocks_to_append(state, request.num_tokens());
    scratch_appending_.push_back(&state);
  }
  if (device_.num_free() - needed < keep_free_blocks) return false;
  for (size_t i = 0; i < requests.size(); ++i) {
    const AppendRequest& request = requests[i];
    append_counted(request.seq, *scratch_appending_[i], TokenRun{request.tokens, request.num_unstored_tokens},
                   KnownHashes{request.block_hashes, request.num_named_hashes}, request.num_tentative, copies);
  }
  if (tables != nullptr) {
    for (size_t i = 0; i < requests.size(); ++i) tables[i] = scratch_appending_[i]->block_table;
  }
  return true;
}

std::optional<BlockCopy> KvCacheManager::append_slots(SeqId seq, std::span<const TokenId> tokens,
                                                      std::span<const BlockHash> block_hashes) {
  std::vector<BlockCopy> copies;
  if (!try_append_slots(AppendRequest{.seq = seq, .tokens = tokens, .block_hashes = block_hashes}, copies)) {
    throw KvCacheFullError("kv cache: append to " + seq_name(seq) + " needs " +
                           std::to_string(num_blocks_to_append(seq, static_cast<int32_t>(tokens.size()))) +
                           " free device blocks, " + std::to_string(device_.num_free()) + " are free");
  }
  if (copies.empty()) return std::nullopt;
  return copies.front();
}

void KvCacheManager::append_counted(SeqId seq, SequenceKv& state, TokenRun tokens, KnownHashes known,
                                    int32_t num_tentative, std::vector<BlockCopy>& copies) {
  if (tokens.size() == 0) return;
  release_outside_window(seq, state, state.num_tokens);  // the append's first query is at num_tokens
  // The rare copy-on-write path lives in its own function, out of this hot one (one call per
  // scheduled sequence and step).
  if (needs_copy_on_write(state)) [[unlikely]] {
    copies.push_back(copy_and_append(seq, state, tokens, known, num_tentative));
    return;
  }
  state.last_block_maybe_shared = false;  // found exclusive
  append_and_log(seq, state, tokens, known, num_tentative);
}

BlockCopy KvCacheManager::copy_and_append(SeqId seq, SequenceKv& state, TokenRun tokens, KnownHashes known,
                                          int32_t num_tentative) {
  // The shared partial block is copied before this sequence writes into it.
  const int32_t fill = state.num_tokens % config_.block_size;
  const BlockId src = state.block_table.back();
  const BlockId dst = take_device_block();
  device_slots_filled_ += fill;
  release_device_block(src, fill);  // stays held by the other sharers
  state.block_table.back() = dst;
  const BlockCopy copy{src, dst};
  if (event_log_) event_log_->copy_on_write(seq, copy);
  state.last_block_maybe_shared = false;  // copied
  append_and_log(seq, state, tokens, known, num_tentative);
  return copy;
}

void KvCacheManager::append_and_log(SeqId seq, SequenceKv& state, TokenRun tokens, KnownHashes known,
                                    int32_t num_tentative) {
  // Proposals are never unstored: they follow a sampled token.
  const TokenRun confirmed{tokens.stored.first(tokens.stored.size() - static_cast<size_t>(num_tentative)),
                           tokens.num_unstored};
  if (event_log_ == nullptr) [[likely]] {
    if (confirmed.size() > 0) append_tokens(state, confirmed, known, nullptr, nullptr);
    if (num_tentative > 0) append_tentative(state, num_tentative, nullptr);
    return;
  }
  scratch_fresh_.clear();
  scratch_cached_.clear();
  if (confirmed.size() > 0) append_tokens(state, confirmed, known, &scratch_fresh_, &scratch_cached_);
  if (num_tentative > 0) append_tentative(state, num_tentative, &scratch_fresh_);
  if (!scratch_fresh_.empty() || !scratch_cached_.empty()) event_log_->append(seq, scratch_fresh_, scratch_cached_);
}

void KvCacheManager::check_tentative(const AppendRequest& request, const SequenceKv& state) const {
  check_unstored(request.seq, "append to ", request.num_unstored_tokens, state.num_tokens, request.block_hashes,
                 request.num_named_hashes);
  if (request.num_tentative < 0 || request.num_tentative > static_cast<int32_t>(request.tokens.size())) {
    throw KvCacheError("kv cache: append to " + seq_name(request.seq) + " marks " +
                       std::to_string(request.num_tentative) + " of its " + std::to_string(request.tokens.size()) +
                       " tokens tentative");
  }
  if (state.num_tentative > 0) {
    throw KvCacheError("kv cache: append to " + seq_name(request.seq) + ", whose last proposals are not settled");
  }
}

void KvCacheManager::check_unstored(SeqId seq, const char* what, int32_t num_unstored, int32_t first_position,
                                    std::span<const BlockHash> hashes, int32_t num_named) const {
  if (num_unstored < 0) {
    throw KvCacheError("kv cache: " + std::string(what) + seq_name(seq) + " with a negative count of unstored tokens");
  }
  if (num_unstored == 0 || !config_.enable_prefix_caching) return;  // without a cache nothing reads them
  const int64_t named_end =
      static_cast<int64_t>(std::min(static_cast<size_t>(std::max(num_named, 0)), hashes.size())) * config_.block_size;
  if (first_position + int64_t{num_unstored} > named_end) {
    throw KvCacheError("kv cache: " + std::string(what) + seq_name(seq) + ": its unstored tokens reach position " +
                       std::to_string(first_position + int64_t{num_unstored}) + ", past the " +
                       std::to_string(named_end) + " tokens of the blocks named for them");
  }
}

void KvCacheManager::append_tentative(SequenceKv& state, int32_t num_tokens, std::vector<BlockId>* fresh) {
  const int32_t block_size = config_.block_size;
  for (int32_t i = 0; i < num_tokens; ++i) {
    if (state.num_tokens % block_size == 0) {
      const BlockId block = take_device_block();
      state.block_table.push_back(block);
      if (fresh) fresh->push_back(block);
    }
    PAGEDLLM_DEBUG_ASSERT(device_.meta(state.block_table.back()).ref_count == 1, "append into a block that is shared");
    ++state.num_tokens;
  }
  device_slots_filled_ += num_tokens;
  state.num_tentative += num_tokens;
}

void KvCacheManager::settle_proposals(SeqId seq, std::span<const TokenId> accepted) {
  SequenceKv& state = sequence(seq);
  const auto num_accepted = static_cast<int32_t>(accepted.size());
  if (state.tier != Tier::device) throw KvCacheError("kv cache: settle of " + seq_name(seq) + ", which is swapped out");
  if (num_accepted > state.num_tentative) {
    throw KvCacheError("kv cache: settle of " + seq_name(seq) + " keeps " + std::to_string(num_accepted) +
                       " proposals; it holds " + std::to_string(state.num_tentative));
  }
  const int32_t block_size = config_.block_size;
  const int32_t confirmed = state.num_tokens - state.num_tentative;
  const int32_t kept = confirmed + num_accepted;
  // The dropped slots: whole blocks past the kept tokens go back (taken fresh by the append, so
  // held by this sequence alone and never cached), tail first as free() releases them.
  scratch_released_.clear();
  const auto kept_blocks = static_cast<size_t>(blocks_for_tokens(kept));
  for (size_t i = state.block_table.size(); i-- > kept_blocks;) {
    const BlockId block = state.block_table[i];
    PAGEDLLM_ASSERT(device_.meta(block).ref_count == 1 && !device_.meta(block).is_cached,
                    "a proposal's block is shared or cached");
    release_device_block(block, block_fill(state, i));
    scratch_released_.push_back(block);
  }
  state.block_table.resize(kept_blocks);
  const int32_t dropped_in_kept = std::min(state.num_tokens, static_cast<int32_t>(kept_blocks) * block_size) - kept;
  device_slots_filled_ -= dropped_in_kept;
  PAGEDLLM_ASSERT(device_slots_filled_ >= 0, "filled-slot count went negative");
  // The accepted proposals are tokens now: hashed, and each block they fill offered to the cache.
  scratch_cached_.clear();
  state.num_tentative = 0;
  state.num_tokens = confirmed;
  for (const TokenId token : accepted) {
    ++state.num_tokens;
    if (!config_.enable_prefix_caching) continue;
    state.tail_hasher.add(token);
    if (state.num_tokens % block_size != 0) continue;
    register_full_block(state, state.block_table[static_cast<size_t>(state.num_tokens / block_size - 1)],
                        state.tail_hasher.finish(), &scratch_cached_);
  }
  if (event_log_) {
    std::reverse(scratch_released_.begin(), scratch_released_.end());  // table order
    event_log_->settle(seq, num_accepted, scratch_released_, scratch_cached_);
  }
}

void KvCacheManager::append_tokens(SequenceKv& state, TokenRun tokens, KnownHashes known, std::vector<BlockId>* fresh,
                                   std::vector<BlockId>* cached) {
  const int32_t block_size = config_.block_size;
  const int32_t total = tokens.size();
  if (total == 1 && tokens.num_unstored == 0 &&
      (!config_.enable_prefix_caching || (state.num_tokens + 1) % block_size != 0)) {
    append_one_token(state, tokens.stored.front(), fresh);  // a decode's token that does not fill its block
    return;
  }
  // A block's worth of tokens at a time: the run up to the end of the current block.
  int32_t next = 0;
  while (next < total) {
    const int32_t offset = state.num_tokens % block_size;
    if (offset == 0) {
      const BlockId block = take_device_block();
      state.block_table.push_back(block);
      if (fresh) fresh->push_back(block);
    }
    PAGEDLLM_DEBUG_ASSERT(device_.meta(state.block_table.back()).ref_count == 1, "append into a block that is shared");
    const int32_t run = std::min(total - next, block_size - offset);
    const int32_t run_begin = next;
    next += run;
    device_slots_filled_ += run;
    state.num_tokens += run;
    if (!config_.enable_prefix_caching) continue;
    const bool fills = offset + run == block_size;
    const size_t index = state.block_table.size() - 1;  // the block being filled
    const bool known_hash = fills && index < known.hashes.size();
    // A hash named by content ids (leading entries) cannot be checked against the tokens.
    const bool check_known = kCheckKnownHashes && index >= static_cast<size_t>(known.num_named);
    // Unstored tokens lie in named blocks (the unstored prompt is whole blocks), which the caller
    // names in every append until they fill: they are never hashed, so never read.
    const bool unstored = run_begin < tokens.num_unstored;
    PAGEDLLM_DEBUG_ASSERT(!unstored || index < std::min(static_cast<size_t>(known.num_named), known.hashes.size()),
                          "unstored tokens outside the blocks named for them (check_unstored lets none in)");
    if (unstored) state.tail_unstored = true;
    if (!unstored && (!known_hash || check_known)) {
      for (const TokenId token :
           tokens.stored.subspan(static_cast<size_t>(run_begin - tokens.num_unstored), static_cast<size_t>(run))) {
        state.tail_hasher.add(token);
      }
    }
    if (!fills) continue;
    if (known_hash) {
      PAGEDLLM_DEBUG_ASSERT(!check_known || state.tail_hasher.finish() == known.hashes[index],
                            "a given block hash does not match the block's tokens");
      register_full_block(state, state.block_table.back(), known.hashes[index], cached);
    } else {
      PAGEDLLM_ASSERT(state.tail_hasher.num_tokens() == block_size, "hashing a block that is not full");
      register_full_block(state, state.block_table.back(), state.tail_hasher.finish(), cached);
    }
  }
}

// --- forks and frees ---------------------------------------------------------------------------

void KvCacheManager::fork(SeqId parent, SeqId child) {
  if (parent == child) throw KvCacheError("kv cache: fork of " + seq_name(parent) + " onto itself");
  const SequenceKv& source = sequence(parent);
  if (source.num_tentative > 0) {
    throw KvCacheError("kv cache: fork of " + seq_name(parent) + ", whose last proposals are not settled");
  }
  if (contains(child)) {
    throw KvCacheError("kv cache: fork into " + seq_name(child) + ", which already holds blocks");
  }
  SequenceKv& copy = add_sequence(child);  // slots live in a deque: `source` stays valid
  copy.block_table = source.block_table;
  copy.tail_hasher = source.tail_hasher;
  copy.tail_unstored = source.tail_unstored;
  copy.salt = source.salt;
  copy.num_tokens = source.num_tokens;
  copy.num_released_blocks = source.num_released_blocks;
  copy.tier = source.tier;
  copy.last_block_maybe_shared = true;
  sequence(parent).last_block_maybe_shared = true;
  BlockPool& tier_pool = pool(copy.tier);
  for (const BlockId block : live_blocks(copy)) tier_pool.acquire(block);
  if (event_log_) event_log_->fork(parent, child);
}

void KvCacheManager::free(SeqId seq) {
  const SequenceKv* found = find_sequence(seq);
  if (found == nullptr) {
    throw KvCacheError("kv cache: free of unknown " + seq_name(seq) + " (double free?)");
  }
  const SequenceKv& state = *found;
  const std::vector<BlockId>& table = state.block_table;
  // Release the tail first so that it reaches the free list first and is evicted first. Entries
  // released outside the sliding window hold nothing.
  for (size_t i = table.size(); i-- > static_cast<size_t>(state.num_released_blocks);) {
    if (state.tier == Tier::device) {
      release_device_block(table[i], block_fill(state, i));
    } else {
      host_.release(table[i]);
    }
  }
  if (event_log_) event_log_->free(seq, state.tier, live_blocks(state));
  remove_sequence(seq);
}

}  // namespace pagedllm::kv
