// The property run's checks: prefix matches, swap plans, and the full state check after every operation.
#include "tests/kv/property/property_run.h"

#include <algorithm>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace pagedllm::kv::property_test {

// Bounds on a prefix match; in particular, full blocks that a live device sequence with the
// same salt and tokens holds in the cache must be found.
void PropertyRun::check_match(const ModelSeq& seq, const PrefixMatch& match) {
  const int32_t bs = config_.block_size;
  if (!config_.enable_prefix_caching) {
    require(match.num_cached_tokens == 0 && match.num_hit_blocks == 0 && match.num_free_hit_blocks == 0,
            "prefix match with prefix caching off");
    return;
  }
  const int32_t max_hits = (static_cast<int32_t>(seq.prompt.size()) - 1) / bs;
  require(match.num_cached_tokens == match.num_hit_blocks * bs && match.num_hit_blocks >= 0 &&
              match.num_hit_blocks <= max_hits && match.num_free_hit_blocks >= 0 &&
              match.num_free_hit_blocks <= match.num_hit_blocks,
          "prefix match out of bounds (hits must stop one token short of the prompt)");
  int32_t must_hit = 0;
  for (const ModelSeq& other : seqs_) {
    if (other.tier != Tier::device || other.salt != seq.salt) continue;
    const std::span<const BlockId> table = manager_.block_table(other.id);
    const int32_t full = std::min(other.num_tokens() / bs, max_hits);
    int32_t j = 0;
    while (j < full && manager_.device_pool().meta(table[static_cast<size_t>(j)]).is_cached &&
           std::equal(seq.prompt.begin() + j * bs, seq.prompt.begin() + (j + 1) * bs, other.tokens.begin() + j * bs)) {
      ++j;
    }
    must_hit = std::max(must_hit, j);
  }
  require(match.num_hit_blocks >= must_hit, "prefix match missed blocks a live sequence holds in the cache");
}

// After a swap every table of the group must name, entry by entry, where its old block went.
void PropertyRun::check_group_tables() {
  size_t k = 0;
  bool ok = true;
  for (const SeqId id : group_) {
    for (const BlockId b : manager_.block_table(id)) {
      ok = ok && k < group_entries_.size() && b == group_targets_[static_cast<size_t>(group_entries_[k])];
      ++k;
    }
  }
  require(ok && k == group_entries_.size(), "swap: a block table does not follow its blocks");
}

// Moves copy the group blocks that need a copy (those without a planned target), in first-use
// order, into distinct blocks of `to_tier` that were free; fills in their targets.
void PropertyRun::check_moves(const std::vector<BlockMove>& moves, Tier to_tier) {
  std::vector<uint8_t>& taken = marks_[index(to_tier)];
  size_t next = 0;
  bool ok = true;
  for (size_t i = 0; i < group_blocks_.size() && ok; ++i) {
    if (group_targets_[i] != kNoBlock) continue;
    ok = next < moves.size() && moves[next].src == group_blocks_[i];
    if (!ok) break;
    const BlockId to = moves[next++].dst;
    ok = to >= 0 && to < pool(to_tier).num_blocks() && refs(to_tier)[static_cast<size_t>(to)] == 0 &&
         taken[static_cast<size_t>(to)] == 0;
    if (ok) {
      taken[static_cast<size_t>(to)] = 1;
      group_targets_[i] = to;
    }
  }
  ok = ok && next == moves.size();
  for (const BlockMove& move : moves) {
    if (move.dst >= 0 && move.dst < pool(to_tier).num_blocks()) taken[static_cast<size_t>(move.dst)] = 0;
  }
  require(ok, "swap moves are not the group's blocks to copy, in first-use order, into distinct free blocks");
}

void PropertyRun::verify() {
  try {
    manager_.check_invariants();
  } catch (const std::logic_error& e) {
    fail(std::string("check_invariants: ") + e.what());
  }
  for (const Tier tier : {Tier::device, Tier::host}) {
    std::fill(refs(tier).begin(), refs(tier).end(), 0);
    std::fill(fills_[index(tier)].begin(), fills_[index(tier)].end(), -1);
  }
  verify_ids();
  for (const ModelSeq& seq : seqs_) verify_sequence(seq);
  const PoolTally device = verify_pool(Tier::device);
  verify_pool(Tier::host);
  verify_stats(device);
  verify_slot();
}

void PropertyRun::verify_ids() {
  model_ids_.clear();
  for (const ModelSeq& seq : seqs_) model_ids_.push_back(seq.id);
  std::sort(model_ids_.begin(), model_ids_.end());
  require(manager_.sequence_ids() == model_ids_, "sequence_ids differ from the live sequences");
}

// Counts the table's references and compares every position's simulated KV with the model.
void PropertyRun::verify_sequence(const ModelSeq& seq) {
  const int32_t bs = config_.block_size;
  const int32_t n = seq.num_tokens();
  require(manager_.num_tokens(seq.id) == n, "num_tokens differs from the model");
  require(manager_.is_swapped(seq.id) == (seq.tier == Tier::host), "is_swapped differs from the model");
  const std::span<const BlockId> table = manager_.block_table(seq.id);
  require(static_cast<int32_t>(table.size()) == blocks_for(n), "block table length != ceil(tokens / block_size)");
  std::vector<int32_t>& tier_refs = refs(seq.tier);
  std::vector<int32_t>& tier_fills = fills_[index(seq.tier)];
  for (size_t i = 0; i < table.size(); ++i) {
    const BlockId b = table[i];
    require(b >= 0 && b < pool(seq.tier).num_blocks(), "block id out of range");
    const auto at = static_cast<size_t>(b);
    ++tier_refs[at];
    const int32_t fill = std::min(bs, n - static_cast<int32_t>(i) * bs);
    if (tier_fills[at] < 0) tier_fills[at] = fill;
    require(tier_fills[at] == fill, "tables sharing a block disagree on its fill");
    const KvValue* expected = seq.kv.data() + i * static_cast<size_t>(bs);
    if (!std::equal(expected, expected + fill, memory_.block(seq.tier, b))) fail_content(seq, i);
  }
}

void PropertyRun::fail_content(const ModelSeq& seq, size_t block_index) {
  const int32_t bs = config_.block_size;
  const BlockId b = manager_.block_table(seq.id)[block_index];
  const KvValue* held = memory_.block(seq.tier, b);
  int32_t offset = 0;
  while (held[offset] == seq.kv[block_index * static_cast<size_t>(bs) + static_cast<size_t>(offset)]) ++offset;
  fail("sequence " + std::to_string(seq.id) + " position " +
       std::to_string(static_cast<int64_t>(block_index) * bs + offset) + " (" +
       (seq.tier == Tier::device ? "device" : "host") + " block " + std::to_string(b) + " slot " +
       std::to_string(offset) +
       ") does not hold the KV of its tokens (lost copy-on-write, wrong prefix hit or lost swap)");
}

// Reference counts, fills and free list of one tier against the tables.
PropertyRun::PoolTally PropertyRun::verify_pool(Tier tier) {
  const BlockPool& blocks = pool(tier);
  const std::vector<int32_t>& tier_refs = refs(tier);
  int32_t used = 0;
  PoolTally tally;
  for (BlockId b = 0; b < blocks.num_blocks(); ++b) {
    const BlockMeta& meta = blocks.meta(b);
    const auto at = static_cast<size_t>(b);
    require(meta.ref_count == tier_refs[at], "ref_count differs from the number of tables holding the block");
    if (meta.is_cached) {
      ++tally.cached;
      if (meta.ref_count == 0) ++tally.cached_free;
    }
    if (tier_refs[at] == 0) continue;
    ++used;
    tally.filled += fills_[index(tier)][at];
  }
  require(tier == Tier::device || tally.cached == 0, "a host block is marked cached");
  require(used == blocks.num_used() && blocks.num_free() + blocks.num_used() == blocks.num_blocks(),
          "free + used != total");
  free_list_ = blocks.free_list();
  require(static_cast<int32_t>(free_list_.size()) == blocks.num_free(), "free list length != num_free");
  std::vector<uint8_t>& on_list = marks_[index(tier)];
  bool ok = true;
  for (const BlockId b : free_list_) {
    const auto at = static_cast<size_t>(b);
    ok = ok && b >= 0 && b < blocks.num_blocks() && tier_refs[at] == 0 && on_list[at] == 0;
    if (!ok) break;
    on_list[at] = 1;
  }
  for (const BlockId b : free_list_) {
    if (b >= 0 && b < blocks.num_blocks()) on_list[static_cast<size_t>(b)] = 0;
  }
  require(ok, "a block on the free list is held by a table (or listed twice)");
  return tally;
}

void PropertyRun::verify_stats(const PoolTally& device) {
  const KvStats s = manager_.stats();
  require(s.num_sequences == static_cast<int32_t>(seqs_.size()) && s.block_size == config_.block_size &&
              s.num_device_blocks == config_.num_device_blocks && s.num_host_blocks == config_.num_host_blocks &&
              s.num_free_device_blocks == num_free(Tier::device) && s.num_free_host_blocks == num_free(Tier::host),
          "stats() sizes differ from the pools");
  require(s.num_filled_device_slots == device.filled, "stats().num_filled_device_slots differs from the tables");
  require(s.num_cached_device_blocks == device.cached && s.num_cached_free_device_blocks == device.cached_free,
          "stats() cached counts differ from the blocks marked cached");
  require(s.evictions >= last_stats_.evictions && s.prefix_query_tokens >= last_stats_.prefix_query_tokens &&
              s.prefix_hit_tokens >= last_stats_.prefix_hit_tokens,
          "a cumulative stats() counter went down");
  if (!config_.enable_prefix_caching) {
    require(s.num_cached_device_blocks == 0 && s.evictions == 0 && s.prefix_hit_tokens == 0,
            "prefix cache in use with prefix caching off");
  }
  last_stats_ = s;
}

// One position per check (rotating) against the documented slot formula.
void PropertyRun::verify_slot() {
  if (seqs_.empty()) return;
  const auto op = static_cast<size_t>(counts_.ops);
  const ModelSeq& seq = seqs_[op % seqs_.size()];
  const auto p = static_cast<int32_t>(op % static_cast<size_t>(seq.num_tokens()));
  const int32_t bs = config_.block_size;
  const BlockId block = manager_.block_table(seq.id)[static_cast<size_t>(p / bs)];
  const int64_t expected = static_cast<int64_t>(block) * bs + p % bs;
  require(manager_.slot(seq.id, p) == expected, "slot() differs from block_table * block_size + offset");
}

}  // namespace pagedllm::kv::property_test
