#include "core/kv/kv_cache_manager.h"

#include <algorithm>
#include <ostream>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "core/common/check.h"
#include "core/common/mix.h"
#include "core/kv/kv_errors.h"

namespace pagedllm::kv {
namespace {

const KvCacheConfig& validated(const KvCacheConfig& config) {
  validate(config);
  return config;
}

std::string seq_name(SeqId seq) { return "sequence " + std::to_string(seq); }

// append_slots returns this rather than std::nullopt: GCC 12 builds a nullopt by storing its
// flag byte and reloading the whole word (a store-forwarding stall in the hottest KV call).
constexpr std::optional<BlockCopy> kNoCopy{};

#ifdef NDEBUG
constexpr bool kCheckKnownHashes = false;
#else
constexpr bool kCheckKnownHashes = true;  // debug builds hash every block and compare
#endif

}  // namespace

const char* to_string(AllocStatus status) {
  switch (status) {
    case AllocStatus::ok: return "ok";
    case AllocStatus::later: return "later";
    case AllocStatus::never: return "never";
  }
  return "?";
}

std::ostream& operator<<(std::ostream& out, AllocStatus status) { return out << to_string(status); }

double KvStats::device_usage() const {
  return device_blocks_total == 0
             ? 0.0
             : static_cast<double>(device_blocks_used()) / device_blocks_total;
}

int64_t KvStats::internal_waste_slots() const {
  return static_cast<int64_t>(device_blocks_used()) * block_size - device_slots_filled;
}

double KvStats::prefix_hit_rate() const {
  return prefix_query_tokens == 0
             ? 0.0
             : static_cast<double>(prefix_hit_tokens) / static_cast<double>(prefix_query_tokens);
}

KvCacheManager::KvCacheManager(const KvCacheConfig& config, KvEventLog* event_log)
    : config_(validated(config)),
      watermark_blocks_(static_cast<int32_t>(config.watermark * config.num_device_blocks)),
      device_(Tier::device, config.num_device_blocks),
      host_(Tier::host, config.num_host_blocks),
      prefix_cache_(config.enable_prefix_caching ? config.num_device_blocks : 0),
      event_log_(event_log) {}

uint64_t KvCacheManager::SeqIdBits::operator()(SeqId seq) const {
  return mix64(static_cast<uint64_t>(seq));  // consecutive ids land far apart
}

// --- lookups -----------------------------------------------------------------------------------

const KvCacheManager::SequenceKv* KvCacheManager::find_sequence(SeqId seq) const {
  // Callers check, then act on the same sequence (can_append_slots, then append_slots): the last
  // sequence found is remembered, which saves the second probe.
  if (seq == last_found_seq_ && last_found_slot_ >= 0) return &sequence_slots_[static_cast<size_t>(last_found_slot_)];
  const int32_t slot = sequence_index_.find(seq);
  if (slot == SequenceIndex::kAbsent) return nullptr;
  last_found_seq_ = seq;
  last_found_slot_ = slot;
  return &sequence_slots_[static_cast<size_t>(slot)];
}

const KvCacheManager::SequenceKv& KvCacheManager::sequence(SeqId seq) const {
  const SequenceKv* state = find_sequence(seq);
  if (state == nullptr) throw KvCacheError("kv cache: unknown " + seq_name(seq));
  return *state;
}

KvCacheManager::SequenceKv& KvCacheManager::sequence(SeqId seq) {
  return const_cast<SequenceKv&>(std::as_const(*this).sequence(seq));
}

KvCacheManager::SequenceKv& KvCacheManager::add_sequence(SeqId seq) {
  int32_t slot = 0;
  if (free_sequence_slots_.empty()) {
    slot = static_cast<int32_t>(sequence_slots_.size());
    sequence_slots_.emplace_back();
  } else {
    slot = free_sequence_slots_.back();
    free_sequence_slots_.pop_back();
  }
  const bool inserted = sequence_index_.insert(seq, slot);
  PAGEDLLM_ASSERT(inserted, "sequence added twice");
  SequenceKv& state = sequence_slots_[static_cast<size_t>(slot)];
  state.block_table.clear();  // keeps its capacity: a reused slot allocates nothing
  state.tail_hasher = BlockHasher();
  state.id = seq;
  state.salt = 0;
  state.num_tokens = 0;
  state.tier = Tier::device;
  state.last_block_maybe_shared = false;
  state.live = true;
  return state;
}

void KvCacheManager::remove_sequence(SeqId seq) {
  const int32_t slot = sequence_index_.find(seq);
  PAGEDLLM_ASSERT(slot != SequenceIndex::kAbsent, "removing an unknown sequence");
  sequence_index_.erase(seq);
  if (last_found_seq_ == seq) last_found_slot_ = -1;
  sequence_slots_[static_cast<size_t>(slot)].live = false;
  free_sequence_slots_.push_back(slot);
}

int32_t KvCacheManager::block_fill(const SequenceKv& state, size_t position) const {
  return std::min(config_.block_size, state.num_tokens - static_cast<int32_t>(position) * config_.block_size);
}

int32_t KvCacheManager::blocks_for_tokens(int64_t num_tokens) const {
  return static_cast<int32_t>((num_tokens + config_.block_size - 1) / config_.block_size);
}

PrefixMatch KvCacheManager::match_prefix(PromptRef prompt) const {
  return match_prefix(prompt, nullptr);
}

PrefixMatch KvCacheManager::match_prefix(PromptRef prompt, std::vector<BlockId>* hits) const {
  PrefixMatch match;
  if (!config_.enable_prefix_caching || prompt.tokens.empty()) return match;
  const int32_t block_size = config_.block_size;
  // Stop one token short of the prompt: the last prompt token must run to produce logits.
  const auto max_hits = static_cast<int32_t>((prompt.tokens.size() - 1) / block_size);
  const bool precomputed = !prompt.block_hashes.empty();
  if (precomputed && prompt.block_hashes.size() != prompt.tokens.size() / block_size) {
    throw KvCacheError("kv cache: PromptRef carries " + std::to_string(prompt.block_hashes.size()) +
                       " block hashes for " + std::to_string(prompt.tokens.size() / block_size) +
                       " full blocks");
  }
  BlockHash hash = kRootBlockHash;
  for (int32_t i = 0; i < max_hits; ++i) {
    hash = precomputed ? prompt.block_hashes[static_cast<size_t>(i)]
                       : hash_block(hash, prompt.tokens.subspan(static_cast<size_t>(i) * block_size, block_size),
                                    prompt.salt);
    const BlockId block = prefix_cache_.find(hash);
    if (block == kNoBlock) break;
    ++match.num_hit_blocks;
    if (device_.meta(block).ref_count == 0) ++match.num_free_hit_blocks;
    if (hits) hits->push_back(block);
  }
  match.num_cached_tokens = match.num_hit_blocks * block_size;
  return match;
}

// --- admission ---------------------------------------------------------------------------------

AllocStatus KvCacheManager::can_allocate(PromptRef prompt, int32_t num_tokens) const {
  const int32_t whole_prompt_blocks = blocks_for_tokens(static_cast<int64_t>(prompt.tokens.size()));
  if (whole_prompt_blocks > device_.num_blocks() - watermark_blocks_) return AllocStatus::never;
  const PrefixMatch match = match_prefix(prompt);
  const int32_t slots = std::max(num_tokens, match.num_cached_tokens);
  const int32_t consumed = blocks_for_tokens(slots) - match.num_hit_blocks + match.num_free_hit_blocks;
  return device_.num_free() - consumed >= watermark_blocks_ ? AllocStatus::ok : AllocStatus::later;
}

int32_t KvCacheManager::allocate(SeqId seq, PromptRef prompt, int32_t num_tokens) {
  if (contains(seq)) {
    throw KvCacheError("kv cache: allocate of " + seq_name(seq) + ", which already holds blocks");
  }
  const auto prompt_len = static_cast<int64_t>(prompt.tokens.size());
  if (prompt_len == 0) throw KvCacheError("kv cache: allocate of " + seq_name(seq) + " with an empty prompt");
  if (num_tokens < 1 || num_tokens > prompt_len) {
    throw KvCacheError("kv cache: allocate of " + seq_name(seq) + ": num_tokens " +
                       std::to_string(num_tokens) + " outside [1, prompt length " +
                       std::to_string(prompt_len) + "]");
  }
  scratch_hits_.clear();
  const PrefixMatch match = match_prefix(prompt, &scratch_hits_);
  const int32_t slots = std::max(num_tokens, match.num_cached_tokens);
  const int32_t consumed = blocks_for_tokens(slots) - match.num_hit_blocks + match.num_free_hit_blocks;
  if (consumed > device_.num_free()) {
    throw KvCacheFullError("kv cache: allocate of " + seq_name(seq) + " needs " +
                           std::to_string(consumed) + " free device blocks, " +
                           std::to_string(device_.num_free()) + " are free");
  }

  // Checks done; from here on nothing throws (short of memory exhaustion).
  SequenceKv& state = add_sequence(seq);
  state.salt = prompt.salt;
  state.block_table.reserve(static_cast<size_t>(blocks_for_tokens(prompt_len)));
  for (const BlockId block : scratch_hits_) {
    revive_device_block(block);
    state.block_table.push_back(block);
  }
  const BlockHash parent =
      scratch_hits_.empty() ? kRootBlockHash : device_.meta(scratch_hits_.back()).hash;
  state.tail_hasher.reset(parent, prompt.salt);
  state.num_tokens = match.num_cached_tokens;
  prefix_query_tokens_ += prompt_len;
  prefix_hit_tokens_ += match.num_cached_tokens;

  const bool logging = event_log_ != nullptr;
  if (logging) {
    scratch_fresh_.clear();
    scratch_cached_.clear();
  }
  append_tokens(state,
                prompt.tokens.subspan(static_cast<size_t>(match.num_cached_tokens),
                                      static_cast<size_t>(slots - match.num_cached_tokens)),
                prompt.block_hashes, logging ? &scratch_fresh_ : nullptr, logging ? &scratch_cached_ : nullptr);
  if (logging) {
    event_log_->allocate(seq, std::span(state.block_table).first(static_cast<size_t>(match.num_hit_blocks)),
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
  return new_blocks + (needs_copy_on_write(state) ? 1 : 0);
}

bool KvCacheManager::needs_copy_on_write(const SequenceKv& state) const {
  // Only fork shares a partial block, and fork sets the hint: the common decode append reads no
  // block metadata at all.
  return state.last_block_maybe_shared && state.num_tokens % config_.block_size != 0 &&
         state.tier == Tier::device && device_.meta(state.block_table.back()).ref_count > 1;
}

bool KvCacheManager::can_append_slots(SeqId seq, int32_t num_new_tokens) const {
  return num_blocks_to_append(seq, num_new_tokens) <= device_.num_free();
}

std::optional<BlockCopy> KvCacheManager::append_slots(SeqId seq, std::span<const TokenId> tokens,
                                                      std::span<const BlockHash> block_hashes) {
  SequenceKv& state = sequence(seq);
  if (state.tier != Tier::device) {
    throw KvCacheError("kv cache: append to " + seq_name(seq) + ", which is swapped out");
  }
  const int32_t needed = num_blocks_to_append(state, static_cast<int32_t>(tokens.size()));
  if (needed > device_.num_free()) {
    throw KvCacheFullError("kv cache: append to " + seq_name(seq) + " needs " +
                           std::to_string(needed) + " free device blocks, " +
                           std::to_string(device_.num_free()) + " are free");
  }
  if (tokens.empty()) return kNoCopy;

  // The rare copy-on-write path lives in its own function: in this hot path (one call per
  // scheduled sequence and step) an optional filled on the way cost a store-forwarding stall.
  if (needs_copy_on_write(state)) [[unlikely]] return copy_and_append(seq, state, tokens, block_hashes);
  state.last_block_maybe_shared = false;  // found exclusive
  append_and_log(seq, state, tokens, block_hashes);
  return kNoCopy;
}

std::optional<BlockCopy> KvCacheManager::copy_and_append(SeqId seq, SequenceKv& state, std::span<const TokenId> tokens,
                                                         std::span<const BlockHash> known) {
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
  append_and_log(seq, state, tokens, known);
  return copy;
}

void KvCacheManager::append_and_log(SeqId seq, SequenceKv& state, std::span<const TokenId> tokens,
                                    std::span<const BlockHash> known) {
  if (event_log_ == nullptr) [[likely]] {
    append_tokens(state, tokens, known, nullptr, nullptr);
    return;
  }
  scratch_fresh_.clear();
  scratch_cached_.clear();
  append_tokens(state, tokens, known, &scratch_fresh_, &scratch_cached_);
  if (!scratch_fresh_.empty() || !scratch_cached_.empty()) event_log_->append(seq, scratch_fresh_, scratch_cached_);
}

void KvCacheManager::append_tokens(SequenceKv& state, std::span<const TokenId> tokens, std::span<const BlockHash> known,
                                   std::vector<BlockId>* fresh, std::vector<BlockId>* cached) {
  const int32_t block_size = config_.block_size;
  if (tokens.size() == 1 && (!config_.enable_prefix_caching || (state.num_tokens + 1) % block_size != 0)) {
    // A decode's token that does not fill its block (15 in 16): the common case, kept short.
    if (state.num_tokens % block_size == 0) {
      const BlockId block = take_device_block();
      state.block_table.push_back(block);
      if (fresh) fresh->push_back(block);
    }
    PAGEDLLM_DEBUG_ASSERT(device_.meta(state.block_table.back()).ref_count == 1, "append into a block that is shared");
    ++device_slots_filled_;
    ++state.num_tokens;
    if (config_.enable_prefix_caching) state.tail_hasher.add(tokens.front());
    return;
  }
  // A block's worth of tokens at a time: the run up to the end of the current block.
  size_t next = 0;
  while (next < tokens.size()) {
    const int32_t offset = state.num_tokens % block_size;
    if (offset == 0) {
      const BlockId block = take_device_block();
      state.block_table.push_back(block);
      if (fresh) fresh->push_back(block);
    }
    PAGEDLLM_DEBUG_ASSERT(device_.meta(state.block_table.back()).ref_count == 1,
                          "append into a block that is shared");
    const size_t run = std::min(tokens.size() - next, static_cast<size_t>(block_size - offset));
    const std::span<const TokenId> part = tokens.subspan(next, run);
    next += run;
    device_slots_filled_ += static_cast<int64_t>(run);
    state.num_tokens += static_cast<int32_t>(run);
    if (!config_.enable_prefix_caching) continue;
    const bool fills = offset + static_cast<int32_t>(run) == block_size;
    const size_t index = state.block_table.size() - 1;  // the block being filled
    const bool known_hash = fills && index < known.size();
    if (!known_hash || kCheckKnownHashes) {
      for (const TokenId token : part) state.tail_hasher.add(token);
    }
    if (!fills) continue;
    if (known_hash) {
      PAGEDLLM_DEBUG_ASSERT(state.tail_hasher.finish() == known[index], "a given block hash does not match the block's tokens");
      register_full_block(state, state.block_table.back(), known[index], cached);
    } else {
      PAGEDLLM_ASSERT(state.tail_hasher.num_tokens() == block_size, "hashing a block that is not full");
      register_full_block(state, state.block_table.back(), state.tail_hasher.finish(), cached);
    }
  }
}

void KvCacheManager::register_full_block(SequenceKv& state, BlockId block, const BlockHash& hash,
                                         std::vector<BlockId>* cached) {
  state.tail_hasher.reset(hash, state.salt);
  BlockMeta& meta = device_.meta(block);
  meta.hash = hash;
  meta.has_hash = true;
  meta.num_hashed_tokens = state.num_tokens;
  // The first block to hold a prefix stays its cache entry; a later duplicate is left uncached.
  if (!prefix_cache_.insert(hash, block)) return;
  meta.is_cached = true;
  if (cached) cached->push_back(block);
}

void KvCacheManager::fork(SeqId parent, SeqId child) {
  if (parent == child) throw KvCacheError("kv cache: fork of " + seq_name(parent) + " onto itself");
  const SequenceKv& source = sequence(parent);
  if (contains(child)) {
    throw KvCacheError("kv cache: fork into " + seq_name(child) + ", which already holds blocks");
  }
  SequenceKv& copy = add_sequence(child);  // slots live in a deque: `source` stays valid
  copy.block_table = source.block_table;
  copy.tail_hasher = source.tail_hasher;
  copy.salt = source.salt;
  copy.num_tokens = source.num_tokens;
  copy.tier = source.tier;
  copy.last_block_maybe_shared = true;
  sequence(parent).last_block_maybe_shared = true;
  BlockPool& tier_pool = pool(copy.tier);
  for (const BlockId block : copy.block_table) tier_pool.acquire(block);
  if (event_log_) event_log_->fork(parent, child);
}

void KvCacheManager::free(SeqId seq) {
  const SequenceKv* found = find_sequence(seq);
  if (found == nullptr) {
    throw KvCacheError("kv cache: free of unknown " + seq_name(seq) + " (double free?)");
  }
  const SequenceKv& state = *found;
  const std::vector<BlockId>& table = state.block_table;
  // Release the tail first so that it reaches the free list first and is evicted first.
  for (size_t i = table.size(); i-- > 0;) {
    if (state.tier == Tier::device) {
      release_device_block(table[i], block_fill(state, i));
    } else {
      host_.release(table[i]);
    }
  }
  if (event_log_) event_log_->free(seq, state.tier, table);
  remove_sequence(seq);
}

// --- swap --------------------------------------------------------------------------------------

std::vector<KvCacheManager::GroupBlock> KvCacheManager::group_blocks(std::span<const SeqId> group,
                                                                     Tier expected_tier) const {
  if (group.empty()) throw KvCacheError("kv cache: swap of an empty sequence group");
  std::vector<GroupBlock> blocks;
  std::unordered_map<BlockId, size_t> index;
  for (size_t i = 0; i < group.size(); ++i) {
    const SeqId seq = group[i];
    if (std::find(group.begin(), group.begin() + static_cast<std::ptrdiff_t>(i), seq) !=
        group.begin() + static_cast<std::ptrdiff_t>(i)) {
      throw KvCacheError("kv cache: " + seq_name(seq) + " appears twice in one swap group");
    }
    const SequenceKv& state = sequence(seq);
    if (state.tier != expected_tier) {
      throw KvCacheError("kv cache: swap " + std::string(expected_tier == Tier::device ? "out" : "in") +
                         " of " + seq_name(seq) + ", which is already " +
                         (state.tier == Tier::device ? "on the device" : "swapped out"));
    }
    for (size_t position = 0; position < state.block_table.size(); ++position) {
      const BlockId block = state.block_table[position];
      const auto [it, inserted] = index.try_emplace(block, blocks.size());
      if (inserted) {
        blocks.push_back(GroupBlock{block, 1, block_fill(state, position)});
      } else {
        ++blocks[it->second].refs;
      }
    }
  }
  return blocks;
}

bool KvCacheManager::can_swap_out(std::span<const SeqId> group) const {
  return static_cast<int32_t>(group_blocks(group, Tier::device).size()) <= host_.num_free();
}

std::vector<BlockMove> KvCacheManager::swap_out(std::span<const SeqId> group) {
  const std::vector<GroupBlock> blocks = group_blocks(group, Tier::device);
  if (host_.num_blocks() == 0) throw KvCacheError("kv cache: swap out with no host swap space configured");
  if (static_cast<int32_t>(blocks.size()) > host_.num_free()) {
    throw KvCacheFullError("kv cache: swap out needs " + std::to_string(blocks.size()) +
                           " free host blocks, " + std::to_string(host_.num_free()) + " are free");
  }
  std::vector<BlockMove> moves;
  moves.reserve(blocks.size());
  std::unordered_map<BlockId, BlockId> device_to_host;
  for (const GroupBlock& entry : blocks) {
    const BlockId host_block = host_.allocate();
    const BlockMeta& source = device_.meta(entry.block);
    BlockMeta& target = host_.meta(host_block);
    target.ref_count = entry.refs;
    target.hash = source.hash;  // kept so that swap-in can offer the block to the cache again
    target.has_hash = source.has_hash;
    target.num_hashed_tokens = source.num_hashed_tokens;
    target.is_cached = false;
    moves.push_back(BlockMove{entry.block, host_block});
    device_to_host.emplace(entry.block, host_block);
  }
  // Release in reverse first-use order: a group's tail blocks are evicted before its head.
  for (auto entry = blocks.rbegin(); entry != blocks.rend(); ++entry) {
    for (int32_t r = 0; r < entry->refs; ++r) release_device_block(entry->block, entry->fill);
  }
  for (const SeqId seq : group) {
    SequenceKv& state = sequence(seq);
    for (BlockId& block : state.block_table) block = device_to_host.at(block);
    state.tier = Tier::host;
  }
  if (event_log_) event_log_->swap_out(group, moves);
  return moves;
}

KvCacheManager::SwapInPlan KvCacheManager::plan_swap_in(std::span<const SeqId> group) const {
  SwapInPlan plan;
  plan.blocks = group_blocks(group, Tier::host);
  plan.cached_device_block.assign(plan.blocks.size(), kNoBlock);
  std::unordered_set<BlockId> revived;
  for (size_t i = 0; i < plan.blocks.size(); ++i) {
    const BlockMeta& host_meta = host_.meta(plan.blocks[i].block);
    const BlockId hit = host_meta.has_hash && config_.enable_prefix_caching
                            ? prefix_cache_.find(host_meta.hash)
                            : kNoBlock;
    plan.cached_device_block[i] = hit;
    // Two host copies of one content (sequences that filled equal blocks apart) revive one block.
    const bool free_hit = hit != kNoBlock && device_.meta(hit).ref_count == 0 && revived.insert(hit).second;
    if (hit == kNoBlock || free_hit) ++plan.num_free_blocks_needed;
  }
  return plan;
}

AllocStatus KvCacheManager::can_swap_in(std::span<const SeqId> group) const {
  const SwapInPlan plan = plan_swap_in(group);
  if (static_cast<int32_t>(plan.blocks.size()) > device_.num_blocks() - watermark_blocks_) {
    return AllocStatus::never;
  }
  return device_.num_free() - plan.num_free_blocks_needed >= watermark_blocks_ ? AllocStatus::ok
                                                                               : AllocStatus::later;
}

int32_t KvCacheManager::num_free_blocks_to_swap_in(std::span<const SeqId> group) const {
  return plan_swap_in(group).num_free_blocks_needed;
}

std::vector<BlockMove> KvCacheManager::swap_in(std::span<const SeqId> group) {
  const SwapInPlan plan = plan_swap_in(group);
  if (plan.num_free_blocks_needed > device_.num_free()) {
    throw KvCacheFullError("kv cache: swap in needs " + std::to_string(plan.num_free_blocks_needed) +
                           " free device blocks, " + std::to_string(device_.num_free()) + " are free");
  }
  std::unordered_map<BlockId, BlockId> host_to_device;
  // Revive the still-cached blocks first, so that allocating the others cannot evict them.
  for (size_t i = 0; i < plan.blocks.size(); ++i) {
    const BlockId device_block = plan.cached_device_block[i];
    if (device_block == kNoBlock) continue;
    for (int32_t r = 0; r < plan.blocks[i].refs; ++r) revive_device_block(device_block);
    host_to_device.emplace(plan.blocks[i].block, device_block);
  }
  std::vector<BlockMove> moves;
  moves.reserve(plan.blocks.size());
  for (size_t i = 0; i < plan.blocks.size(); ++i) {
    if (plan.cached_device_block[i] != kNoBlock) continue;
    const GroupBlock& entry = plan.blocks[i];
    const BlockId device_block = take_device_block();
    const BlockMeta& source = host_.meta(entry.block);
    BlockMeta& target = device_.meta(device_block);
    target.ref_count = entry.refs;
    device_slots_filled_ += entry.fill;
    if (source.has_hash) {
      // Not in the cache (checked above): this copy becomes the cache entry again.
      target.hash = source.hash;
      target.has_hash = true;
      target.num_hashed_tokens = source.num_hashed_tokens;
      if (config_.enable_prefix_caching) {
        target.is_cached = prefix_cache_.insert(source.hash, device_block);
      }
    }
    moves.push_back(BlockMove{entry.block, device_block});
    host_to_device.emplace(entry.block, device_block);
  }
  for (const GroupBlock& entry : plan.blocks) {
    for (int32_t r = 0; r < entry.refs; ++r) host_.release(entry.block);
  }
  for (const SeqId seq : group) {
    SequenceKv& state = sequence(seq);
    for (BlockId& block : state.block_table) block = host_to_device.at(block);
    state.tier = Tier::device;
  }
  if (event_log_) {
    std::vector<BlockMove> reused;
    for (size_t i = 0; i < plan.blocks.size(); ++i) {
      if (plan.cached_device_block[i] != kNoBlock) reused.push_back({plan.blocks[i].block, plan.cached_device_block[i]});
    }
    event_log_->swap_in(group, moves, reused);
  }
  return moves;
}

int32_t KvCacheManager::reset_prefix_cache() {
  int32_t uncached = 0;
  prefix_cache_.for_each([&](const BlockHash&, BlockId block) {
    BlockMeta& meta = device_.meta(block);
    meta.is_cached = false;
    if (meta.ref_count == 0) --num_cached_free_;
    ++uncached;
  });
  prefix_cache_.clear();
  PAGEDLLM_ASSERT(num_cached_free_ == 0, "cached-free count out of step after reset");
  if (event_log_) event_log_->reset_prefix_cache(uncached);
  return uncached;
}

// --- block accounting --------------------------------------------------------------------------

BlockId KvCacheManager::take_device_block() {
  const BlockId block = device_.allocate();
  BlockMeta& meta = device_.meta(block);
  if (meta.is_cached) {
    const bool erased = prefix_cache_.erase(meta.hash);
    PAGEDLLM_ASSERT(erased, "cached block missing from the prefix index");
    --num_cached_free_;
    ++evictions_;
    if (event_log_) event_log_->evict(block);
  }
  meta.num_hashed_tokens = 0;
  meta.has_hash = false;
  meta.is_cached = false;
  return block;
}

void KvCacheManager::revive_device_block(BlockId block) {
  BlockMeta& meta = device_.meta(block);
  PAGEDLLM_ASSERT(meta.has_hash, "only full, hashed blocks are shared by content");
  if (meta.ref_count == 0) {
    device_slots_filled_ += config_.block_size;
    if (meta.is_cached) --num_cached_free_;
  }
  device_.acquire(block);
}

void KvCacheManager::release_device_block(BlockId block, int32_t fill) {
  if (!device_.release(block)) return;
  const BlockMeta& meta = device_.meta(block);
  device_slots_filled_ -= fill;
  if (meta.is_cached) ++num_cached_free_;
  PAGEDLLM_ASSERT(device_slots_filled_ >= 0, "filled-slot count went negative");
}

// --- inspection --------------------------------------------------------------------------------

bool KvCacheManager::is_swapped(SeqId seq) const { return sequence(seq).tier == Tier::host; }

std::span<const BlockId> KvCacheManager::block_table(SeqId seq) const {
  return sequence(seq).block_table;
}

int32_t KvCacheManager::num_tokens(SeqId seq) const { return sequence(seq).num_tokens; }

int64_t KvCacheManager::slot(SeqId seq, int32_t position) const {
  const SequenceKv& state = sequence(seq);
  if (position < 0 || position >= state.num_tokens) {
    throw KvCacheError("kv cache: position " + std::to_string(position) + " outside " +
                       seq_name(seq) + " of " + std::to_string(state.num_tokens) + " tokens");
  }
  const BlockId block = state.block_table[static_cast<size_t>(position / config_.block_size)];
  return static_cast<int64_t>(block) * config_.block_size + position % config_.block_size;
}

std::vector<SeqId> KvCacheManager::sequence_ids() const {
  std::vector<SeqId> ids;
  ids.reserve(sequence_index_.size());
  for (const SequenceKv& state : sequence_slots_) {
    if (state.live) ids.push_back(state.id);
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

KvStats KvCacheManager::stats() const {
  KvStats stats;
  stats.block_size = config_.block_size;
  stats.num_sequences = static_cast<int32_t>(sequence_index_.size());
  stats.device_blocks_total = device_.num_blocks();
  stats.device_blocks_free = device_.num_free();
  stats.device_blocks_cached = static_cast<int32_t>(prefix_cache_.size());
  stats.device_blocks_cached_free = num_cached_free_;
  stats.host_blocks_total = host_.num_blocks();
  stats.host_blocks_free = host_.num_free();
  stats.device_slots_filled = device_slots_filled_;
  stats.prefix_query_tokens = prefix_query_tokens_;
  stats.prefix_hit_tokens = prefix_hit_tokens_;
  stats.evictions = evictions_;
  return stats;
}

}  // namespace pagedllm::kv
