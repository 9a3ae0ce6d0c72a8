#include "core/kv/kv_cache_manager.h"

#include <algorithm>
#include <ostream>
#include <string>
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

}  // namespace

const char* to_string(AllocStatus status) {
  switch (status) {
    case AllocStatus::ok:
      return "ok";
    case AllocStatus::later:
      return "later";
    case AllocStatus::never:
      return "never";
  }
  return "?";
}

std::ostream& operator<<(std::ostream& out, AllocStatus status) { return out << to_string(status); }

double KvStats::device_usage() const {
  return num_device_blocks == 0 ? 0.0 : static_cast<double>(num_used_device_blocks()) / num_device_blocks;
}

int64_t KvStats::internal_waste_slots() const {
  return static_cast<int64_t>(num_used_device_blocks()) * block_size - num_filled_device_slots;
}

double KvStats::prefix_hit_rate() const {
  return prefix_query_tokens == 0 ? 0.0
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
  const int32_t slot = sequence_index_.find(seq);
  return slot == SequenceIndex::kAbsent ? nullptr : &sequence_slots_[static_cast<size_t>(slot)];
}

const KvCacheManager::SequenceKv& KvCacheManager::sequence(SeqId seq) const {
  const SequenceKv* state = find_sequence(seq);
  if (state == nullptr) throw KvCacheError("kv cache: unknown sequence " + std::to_string(seq));
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
  state.num_released_blocks = 0;
  state.num_tentative = 0;
  state.tier = Tier::device;
  state.last_block_maybe_shared = false;
  state.tail_unstored = false;
  state.live = true;
  return state;
}

void KvCacheManager::remove_sequence(SeqId seq) {
  const int32_t slot = sequence_index_.find(seq);
  PAGEDLLM_ASSERT(slot != SequenceIndex::kAbsent, "removing an unknown sequence");
  sequence_index_.erase(seq);
  sequence_slots_[static_cast<size_t>(slot)].live = false;
  free_sequence_slots_.push_back(slot);
}

int32_t KvCacheManager::block_fill(const SequenceKv& state, size_t position) const {
  return std::min(config_.block_size, state.num_tokens - static_cast<int32_t>(position) * config_.block_size);
}

int32_t KvCacheManager::blocks_for_tokens(int64_t num_tokens) const {
  return static_cast<int32_t>((num_tokens + config_.block_size - 1) / config_.block_size);
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

std::span<const BlockId> KvCacheManager::block_table(SeqId seq) const { return sequence(seq).block_table; }

int32_t KvCacheManager::num_tokens(SeqId seq) const { return sequence(seq).num_tokens; }

int64_t KvCacheManager::slot(SeqId seq, int32_t position) const {
  const SequenceKv& state = sequence(seq);
  if (position < 0 || position >= state.num_tokens) {
    throw KvCacheError("kv cache: position " + std::to_string(position) + " outside sequence " + std::to_string(seq) +
                       " of " + std::to_string(state.num_tokens) + " tokens");
  }
  const BlockId block = state.block_table[static_cast<size_t>(position / config_.block_size)];
  if (block == kNoBlock) {
    throw KvCacheError("kv cache: position " + std::to_string(position) + " of sequence " + std::to_string(seq) +
                       " lies in a block released outside its sliding window");
  }
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
  stats.num_device_blocks = device_.num_blocks();
  stats.num_free_device_blocks = device_.num_free();
  stats.num_cached_device_blocks = static_cast<int32_t>(prefix_cache_.size());
  stats.num_cached_free_device_blocks = num_cached_free_;
  stats.num_host_blocks = host_.num_blocks();
  stats.num_free_host_blocks = host_.num_free();
  stats.num_filled_device_slots = device_slots_filled_;
  stats.prefix_query_tokens = prefix_query_tokens_;
  stats.prefix_hit_tokens = prefix_hit_tokens_;
  stats.evictions = evictions_;
  return stats;
}

}  // namespace pagedllm::kv
