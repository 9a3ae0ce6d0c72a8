// The swap side of the KV manager: a preempted group's blocks move to the host tier as a whole
// (a block its sequences share moves once and stays shared) and come back, taking from the device
// prefix cache what it still holds.
#include <algorithm>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "core/kv/kv_cache_manager.h"
#include "core/kv/kv_errors.h"

namespace pagedllm::kv {
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
      throw KvCacheError("kv cache: swap " + std::string(expected_tier == Tier::device ? "out" : "in") + " of " +
                         seq_name(seq) + ", which is already " +
                         (state.tier == Tier::device ? "on the device" : "swapped out"));
    }
    // Only live blocks move: entries released outside the sliding window stay kNoBlock.
    for (size_t position = static_cast<size_t>(state.num_released_blocks); position < state.block_table.size();
         ++position) {
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

std::vector<BlockMove> KvCacheManager::swap_out(std::span<const SeqId> group) {
  if (host_.num_blocks() == 0) throw KvCacheError("kv cache: swap out with no host swap space configured");
  std::optional<std::vector<BlockMove>> moves = try_swap_out(group);
  if (!moves) {
    throw KvCacheFullError("kv cache: swap out needs " + std::to_string(group_blocks(group, Tier::device).size()) +
                           " free host blocks, " + std::to_string(host_.num_free()) + " are free");
  }
  return std::move(*moves);
}

std::optional<std::vector<BlockMove>> KvCacheManager::try_swap_out(std::span<const SeqId> group) {
  for (const SeqId seq : group) {
    if (sequence(seq).num_tentative > 0) {
      throw KvCacheError("kv cache: swap out of " + seq_name(seq) + ", whose last proposals are not settled");
    }
  }
  const std::vector<GroupBlock> blocks = group_blocks(group, Tier::device);
  if (static_cast<int32_t>(blocks.size()) > host_.num_free()) return std::nullopt;  // no room, or no host tier
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
    for (BlockId& block : state.block_table) {
      if (block != kNoBlock) block = device_to_host.at(block);
    }
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
    const BlockId hit =
        host_meta.has_hash && config_.enable_prefix_caching ? prefix_cache_.find(host_meta.hash) : kNoBlock;
    plan.cached_device_block[i] = hit;
    // Two host copies of one content (sequences that filled equal blocks apart) revive one block.
    const bool free_hit = hit != kNoBlock && device_.meta(hit).ref_count == 0 && revived.insert(hit).second;
    if (hit == kNoBlock || free_hit) ++plan.num_free_blocks_needed;
  }
  return plan;
}

std::vector<BlockMove> KvCacheManager::swap_in(std::span<const SeqId> group) {
  SwapInResult result = try_swap_in(group, Headroom{});
  if (result.status != AllocStatus::ok) {
    throw KvCacheFullError("kv cache: swap in needs " + std::to_string(plan_swap_in(group).num_free_blocks_needed) +
                           " free device blocks, " + std::to_string(device_.num_free()) + " are free");
  }
  return std::move(result.moves);
}

SwapInResult KvCacheManager::try_swap_in(std::span<const SeqId> group, Headroom headroom) {
  const SwapInPlan plan = plan_swap_in(group);
  const AllocStatus status = status_of(static_cast<int32_t>(plan.blocks.size()), plan.num_free_blocks_needed, headroom);
  if (status != AllocStatus::ok) return {status, {}};
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
    for (BlockId& block : state.block_table) {
      if (block != kNoBlock) block = host_to_device.at(block);
    }
    state.tier = Tier::device;
  }
  if (event_log_) {
    std::vector<BlockMove> reused;
    for (size_t i = 0; i < plan.blocks.size(); ++i) {
      if (plan.cached_device_block[i] != kNoBlock)
        reused.push_back({plan.blocks[i].block, plan.cached_device_block[i]});
    }
    event_log_->swap_in(group, moves, reused);
  }
  return {AllocStatus::ok, std::move(moves)};
}

}  // namespace pagedllm::kv
