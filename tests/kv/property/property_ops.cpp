// The property run's operation generators: allocations, appends, forks, frees, swaps and cache resets.
#include "tests/kv/property/property_run.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace pagedllm::kv::property_test {

// Prompts: many start with one of a few topics (prefix hits), some repeat or extend a recent
// prompt (hits up to one token short of the whole prompt), the rest are random; a few carry a
// salt so that equal tokens must not hit content computed under another salt.
void PropertyRun::draw_prompt(ModelSeq& seq) {
  const int32_t bs = config_.block_size;
  const uint64_t roll = rng_.below(100);
  seq.salt = rng_.percent(12) ? static_cast<uint64_t>(rng_.between(1, 3)) : 0;
  if (roll < 55) {
    const std::vector<TokenId>& topic = topics_[rng_.below(topics_.size())];
    const int32_t k = rng_.between(bs, static_cast<int32_t>(topic.size()));
    seq.prompt.assign(topic.begin(), topic.begin() + k);
    if (k >= 3 * bs && rng_.percent(20)) {
      // An edited history: one block dropped, so later blocks follow another chain and a hit
      // on them is only right if the block hash covers everything before the block.
      const int32_t dropped = rng_.between(1, k / bs - 2);
      seq.prompt.erase(seq.prompt.begin() + dropped * bs, seq.prompt.begin() + (dropped + 1) * bs);
    }
    for (int32_t i = rng_.between(0, 3 * bs); i > 0; --i) seq.prompt.push_back(random_token());
  } else if (roll < 75 && !recent_.empty()) {
    const RecentPrompt& recent = recent_[rng_.below(recent_.size())];
    seq.prompt = recent.tokens;
    seq.salt = recent.salt;
    if (roll >= 65) {
      for (int32_t i = rng_.between(1, 2 * bs); i > 0; --i) seq.prompt.push_back(random_token());
    }
  } else {
    for (int32_t i = rng_.between(1, 6 * bs); i > 0; --i) seq.prompt.push_back(random_token());
  }
  if (static_cast<int32_t>(seq.prompt.size()) > max_prompt_tokens()) {
    seq.prompt.resize(static_cast<size_t>(max_prompt_tokens()));
  }
}

// A prompt longer than the device tier less the watermark: try_allocate must say never.
void PropertyRun::draw_huge_prompt(ModelSeq& seq) {
  const int32_t blocks = config_.num_device_blocks - manager_.watermark_blocks() + 1;
  for (int32_t i = 0; i < blocks * config_.block_size; ++i) seq.prompt.push_back(random_token());
}

AllocStatus PropertyRun::expected_status(int32_t whole_blocks, int32_t needed) const {
  if (whole_blocks > config_.num_device_blocks - manager_.watermark_blocks()) return AllocStatus::never;
  return num_free(Tier::device) - needed >= manager_.watermark_blocks() ? AllocStatus::ok : AllocStatus::later;
}

bool PropertyRun::op_allocate(bool chunked) {
  if (at_max_live()) return false;
  ModelSeq seq;
  const bool huge = !chunked && rng_.below(100) == 0;
  if (huge) {
    draw_huge_prompt(seq);
  } else {
    draw_prompt(seq);
  }
  const auto len = static_cast<int32_t>(seq.prompt.size());
  if (chunked && len < 2) return false;
  const int32_t num_tokens = chunked ? rng_.between(1, len - 1) : len;
  seq.id = next_id_++;
  PromptRef prompt{seq.prompt, seq.salt};
  if (rng_.percent(25)) {
    // As a scheduler retrying a waiting request does: the chain hashes computed once, up front.
    prompt_hashes_ = hash_prompt_blocks(seq.prompt, config_.block_size, seq.salt);
    prompt.block_hashes = prompt_hashes_;
  }
  const PrefixMatch match = manager_.match_prefix(prompt);
  check_match(seq, match);
  const int32_t slots = std::max(num_tokens, match.num_cached_tokens);
  // Reviving a free hit block takes it off the free list just like a fresh block.
  const int32_t needed = blocks_for(slots) - match.num_hit_blocks + match.num_free_hit_blocks;
  const int32_t free_before = num_free(Tier::device);
  const int32_t watermark = manager_.watermark_blocks();
  const Headroom admission{.reserve_blocks = watermark, .min_free_after = watermark};
  const AllocStatus expected = expected_status(blocks_for(len), needed);
  require(manager_.allocation_status(prompt, num_tokens, admission) == expected,
          "allocation_status disagrees with the blocks it needs");
  if (expected == AllocStatus::ok && rng_.percent(50)) {
    // The scheduler's one call: it allocates at once.
    note(chunked ? "try_allocate chunk" : "try_allocate", seq.id, num_tokens);
    const AllocResult result = manager_.try_allocate(seq.id, prompt, num_tokens, admission);
    require(result.status == AllocStatus::ok && result.num_cached_tokens == match.num_cached_tokens,
            "try_allocate refused what allocation_status accepts, or another cached count");
    return after_allocation(seq, {match, needed, free_before, slots, chunked});
  }
  const AllocStatus status = expected;
  if (status != AllocStatus::ok) {
    // A refusal changes nothing.
    require(manager_.try_allocate(seq.id, prompt, num_tokens, admission).status == status,
            "try_allocate disagrees with allocation_status");
    require(!manager_.contains(seq.id) && num_free(Tier::device) == free_before,
            "a refused try_allocate changed state");
    if (!huge && !rng_.percent(kForcePercent)) return false;
    if (needed > free_before) {
      note("allocate refused", seq.id, num_tokens);
      expect_refused(Expect::full, "allocate beyond the free blocks",
                     [&] { manager_.allocate(seq.id, prompt, num_tokens); });
      ++counts_.refused_alloc_full;
      return true;
    }
    ++counts_.forced_ok;  // refused for the watermark only, which allocate itself leaves to the caller
  }
  note(chunked ? "allocate chunk" : "allocate", seq.id, num_tokens);
  require(manager_.allocate(seq.id, prompt, num_tokens) == match.num_cached_tokens,
          "allocate returned another cached count than match_prefix");
  return after_allocation(seq, {match, needed, free_before, slots, chunked});
}

bool PropertyRun::after_allocation(ModelSeq& seq, const AllocationDone& done) {
  const PrefixMatch& match = done.match;
  const int32_t cached = match.num_cached_tokens;
  const int32_t slots = done.slots;
  const bool chunked = done.chunked;
  require(num_free(Tier::device) == done.free_before - done.needed, "allocate took another number of free blocks");
  const std::span<const BlockId> table = manager_.block_table(seq.id);
  int32_t revived = 0;
  for (size_t i = 0; i < table.size(); ++i) {
    const int32_t refs_before = refs(Tier::device)[static_cast<size_t>(table[i])];
    if (static_cast<int32_t>(i) < match.num_hit_blocks) {
      if (refs_before == 0) ++revived;
    } else {
      require(refs_before == 0, "allocate handed out a block that another table holds");
    }
  }
  require(revived == match.num_free_hit_blocks, "num_free_hit_blocks is not the number of free hit blocks");
  for (int32_t p = 0; p < slots; ++p) seq.push(seq.prompt[static_cast<size_t>(p)]);
  seq.family = next_family_++;
  // The executor computes KV past the cached prefix only: the hit blocks must already hold the
  // prompt's KV, which verify() checks with every other position.
  write_kv(seq, cached, slots);
  ++(chunked ? counts_.allocate_chunk : counts_.allocate);
  if (cached > 0) {
    ++counts_.prefix_hit_allocs;
    counts_.prefix_hit_tokens += cached;
  }
  if (seq.salt != 0) ++counts_.salted_allocs;
  remember_prompt(seq);
  seqs_.push_back(std::move(seq));
  return true;
}

void PropertyRun::remember_prompt(const ModelSeq& seq) {
  RecentPrompt recent{seq.prompt, seq.salt};
  if (recent_.size() < kRecentPrompts) {
    recent_.push_back(std::move(recent));
  } else {
    recent_[rng_.below(recent_.size())] = std::move(recent);
  }
}

void PropertyRun::write_kv(const ModelSeq& seq, int32_t from, int32_t to) {
  const int32_t bs = config_.block_size;
  const std::span<const BlockId> table = manager_.block_table(seq.id);
  for (int32_t p = from; p < to; ++p) {
    memory_.block(seq.tier, table[static_cast<size_t>(p / bs)])[p % bs] = seq.kv[static_cast<size_t>(p)];
  }
}

ModelSeq& PropertyRun::model(SeqId id) {
  for (ModelSeq& seq : seqs_) {
    if (seq.id == id) return seq;
  }
  fail("no model sequence " + std::to_string(id));
}

bool PropertyRun::op_prefill_chunk() {
  ModelSeq* seq = pick_seq([](const ModelSeq& s) { return s.tier == Tier::device && s.prompt_left() > 0; });
  if (seq == nullptr) return false;
  const int32_t left = seq->prompt_left();
  const int32_t n = rng_.percent(40) ? left : rng_.between(1, left);
  const auto chunk =
      std::span<const TokenId>(seq->prompt).subspan(static_cast<size_t>(seq->num_tokens()), static_cast<size_t>(n));
  return append(*seq, chunk, "prefill chunk", counts_.prefill_chunk);
}

bool PropertyRun::op_decode(bool multi) {
  const int32_t min_room = multi ? 2 : 1;
  ModelSeq* seq = pick_seq([&](const ModelSeq& s) {
    return s.tier == Tier::device && s.prompt_left() == 0 && max_seq_tokens() - s.num_tokens() >= min_room;
  });
  if (seq == nullptr) return false;
  const int32_t n =
      multi ? rng_.between(2, std::min(2 * config_.block_size + 1, max_seq_tokens() - seq->num_tokens())) : 1;
  new_tokens_.clear();
  for (int32_t i = 0; i < n; ++i) new_tokens_.push_back(random_token());
  return multi ? append(*seq, new_tokens_, "multi append", counts_.multi_append)
               : append(*seq, new_tokens_, "decode", counts_.decode);
}

bool PropertyRun::append(ModelSeq& seq, std::span<const TokenId> tokens, const char* what, int64_t& counter) {
  const int32_t bs = config_.block_size;
  const int32_t before = seq.num_tokens();
  const auto n = static_cast<int32_t>(tokens.size());
  const std::span<const BlockId> old_table = manager_.block_table(seq.id);
  old_table_.assign(old_table.begin(), old_table.end());
  const BlockId last = old_table_.back();
  // A partial last block that another table also holds must be copied before this one writes.
  const bool cow = before % bs != 0 && refs(Tier::device)[static_cast<size_t>(last)] > 1;
  const int32_t needed = blocks_for(before + n) - blocks_for(before) + (cow ? 1 : 0);
  require(manager_.num_blocks_to_append(seq.id, n) == needed, "num_blocks_to_append is wrong");
  const int32_t free_before = num_free(Tier::device);
  const bool fits = needed <= free_before;
  if (!fits) {
    if (!rng_.percent(kForcePercent)) return false;
    note("append refused", seq.id, n);
    if (rng_.percent(50)) {
      expect_refused(Expect::full, "append beyond the free blocks", [&] { manager_.append_slots(seq.id, tokens); });
    } else {
      copies_.clear();
      require(!manager_.try_append_slots({.seq = seq.id, .tokens = tokens}, copies_) && copies_.empty() &&
                  manager_.num_tokens(seq.id) == before && num_free(Tier::device) == free_before,
              "try_append_slots beyond the free blocks did something");
    }
    ++counts_.refused_append_full;
    return true;
  }
  note(what, seq.id, n);
  std::optional<BlockCopy> copy;
  if (rng_.percent(50)) {
    copy = manager_.append_slots(seq.id, tokens);
  } else {
    copies_.clear();
    require(manager_.try_append_slots({.seq = seq.id, .tokens = tokens}, copies_) && copies_.size() <= 1,
            "try_append_slots refused what fits");
    if (!copies_.empty()) copy = copies_.front();
  }
  require(copy.has_value() == cow, cow ? "no copy-on-write of a shared partial block" : "needless copy-on-write");
  const std::span<const BlockId> table = manager_.block_table(seq.id);
  require(static_cast<int32_t>(table.size()) == blocks_for(before + n), "block table has the wrong length");
  for (size_t i = 0; i < old_table_.size(); ++i) {
    const bool copied = cow && i + 1 == old_table_.size();
    require(copied || table[i] == old_table_[i], "append changed a block it must keep");
  }
  if (copy) {
    require(copy->src == last && copy->dst == table[old_table_.size() - 1] &&
                refs(Tier::device)[static_cast<size_t>(copy->dst)] == 0,
            "copy-on-write names the wrong blocks");
    memory_.copy(Tier::device, copy->src, Tier::device, copy->dst);  // before this step's writes
    ++counts_.copy_on_write;
  }
  for (size_t i = old_table_.size(); i < table.size(); ++i) {
    require(refs(Tier::device)[static_cast<size_t>(table[i])] == 0,
            "append handed out a block that another table holds");
  }
  require(num_free(Tier::device) == free_before - needed, "append took another number of free blocks");
  for (const TokenId token : tokens) seq.push(token);
  write_kv(seq, before, before + n);
  ++counter;
  return true;
}

bool PropertyRun::op_fork() {
  if (at_max_live()) return false;
  // Mostly fork at a partial last block: the next append to either side must copy it.
  const bool want_partial = rng_.percent(70);
  ModelSeq* parent =
      pick_seq([&](const ModelSeq& s) { return !want_partial || s.num_tokens() % config_.block_size != 0; });
  if (parent == nullptr) parent = pick_seq([](const ModelSeq&) { return true; });
  if (parent == nullptr) return false;
  const SeqId parent_id = parent->id;
  const SeqId child = next_id_++;
  const int32_t device_free = num_free(Tier::device);
  const int32_t host_free = num_free(Tier::host);
  note("fork", child, parent_id);
  manager_.fork(parent_id, child);
  ModelSeq copy = *parent;
  copy.id = child;
  seqs_.push_back(std::move(copy));
  const std::span<const BlockId> parent_table = manager_.block_table(parent_id);
  const std::span<const BlockId> child_table = manager_.block_table(child);
  require(std::equal(parent_table.begin(), parent_table.end(), child_table.begin(), child_table.end()),
          "fork: the child does not share the parent's blocks");
  require(num_free(Tier::device) == device_free && num_free(Tier::host) == host_free, "fork took blocks");
  ++counts_.fork;
  return true;
}

bool PropertyRun::op_free() {
  if (seqs_.empty()) return false;
  const size_t at = rng_.below(seqs_.size());
  const ModelSeq& seq = seqs_[at];
  int32_t released = 0;  // blocks only this table holds return to the free list
  for (const BlockId b : manager_.block_table(seq.id)) {
    if (refs(seq.tier)[static_cast<size_t>(b)] == 1) ++released;
  }
  const int32_t free_before = num_free(seq.tier);
  note("free", seq.id, 0);
  manager_.free(seq.id);
  require(num_free(seq.tier) == free_before + released, "free released another number of blocks");
  remember_free(seq.id);
  if (at + 1 != seqs_.size()) seqs_[at] = std::move(seqs_.back());
  seqs_.pop_back();
  ++counts_.frees;
  return true;
}

void PropertyRun::remember_free(SeqId id) {
  if (recent_frees_.size() < kRecentFrees) {
    recent_frees_.push_back(id);
  } else {
    recent_frees_[rng_.below(recent_frees_.size())] = id;
  }
}

// The whole fork family, in a random order (which decides the order of the moves).
void PropertyRun::collect_family(int64_t family, Tier tier) {
  group_.clear();
  for (const ModelSeq& seq : seqs_) {
    if (seq.family != family) continue;
    require(seq.tier == tier, "model: a fork family is split across tiers");
    group_.push_back(seq.id);
  }
  rng_.shuffle(group_);
}

// Distinct blocks of group_ in first-use order, with how many of the group's tables hold each;
// and, per table entry of the group (in group order), which of those blocks it names.
void PropertyRun::collect_group_blocks(Tier tier) {
  group_blocks_.clear();
  group_block_refs_.clear();
  group_entries_.clear();
  std::vector<int32_t>& slot_of = group_index_[index(tier)];
  for (const SeqId id : group_) {
    for (const BlockId b : manager_.block_table(id)) {
      int32_t& entry = slot_of[static_cast<size_t>(b)];
      if (entry == 0) {
        group_blocks_.push_back(b);
        group_block_refs_.push_back(0);
        entry = static_cast<int32_t>(group_blocks_.size());
      }
      ++group_block_refs_[static_cast<size_t>(entry - 1)];
      group_entries_.push_back(entry - 1);
    }
  }
  for (const BlockId b : group_blocks_) slot_of[static_cast<size_t>(b)] = 0;
}

bool PropertyRun::op_swap_out() {
  ModelSeq* seq = pick_seq([](const ModelSeq& s) { return s.tier == Tier::device; });
  if (seq == nullptr) return false;
  collect_family(seq->family, Tier::device);
  collect_group_blocks(Tier::device);
  const auto needed = static_cast<int32_t>(group_blocks_.size());
  const int32_t host_free = num_free(Tier::host);
  const int32_t device_free = num_free(Tier::device);
  const bool fits = needed <= host_free;
  if (!fits) {
    if (!rng_.percent(kForcePercent)) return false;
    note("swap out refused", group_.front(), needed);
    if (rng_.percent(50)) {
      expect_refused(Expect::full, "swap out into a full host tier", [&] { manager_.swap_out(group_); });
    } else {
      require(!manager_.try_swap_out(group_).has_value() && num_free(Tier::host) == host_free &&
                  num_free(Tier::device) == device_free,
              "try_swap_out into a full host tier did something");
    }
    ++counts_.refused_host_full;
    return true;
  }
  // Blocks held by the group alone are freed; prefix hits shared with other requests stay.
  int32_t released = 0;
  for (size_t i = 0; i < group_blocks_.size(); ++i) {
    if (refs(Tier::device)[static_cast<size_t>(group_blocks_[i])] == group_block_refs_[i]) ++released;
  }
  note("swap out", group_.front(), static_cast<int64_t>(group_.size()));
  const std::vector<BlockMove> moves = manager_.swap_out(group_);
  group_targets_.assign(group_blocks_.size(), kNoBlock);  // every block is copied
  check_moves(moves, Tier::host);
  check_group_tables();
  for (const BlockMove& move : moves) memory_.copy(Tier::device, move.src, Tier::host, move.dst);
  for (const SeqId id : group_) model(id).tier = Tier::host;
  require(num_free(Tier::host) == host_free - needed, "swap out took another number of host blocks");
  require(num_free(Tier::device) == device_free + released, "swap out freed another number of device blocks");
  ++counts_.swap_out;
  return true;
}

PropertyRun::SwapInPlan PropertyRun::plan_swap_in() {
  cached_blocks_.clear();
  for (BlockId b = 0; b < config_.num_device_blocks; ++b) {
    if (manager_.device_pool().meta(b).is_cached) cached_blocks_.push_back(b);
  }
  group_targets_.assign(group_blocks_.size(), kNoBlock);
  std::vector<uint8_t>& counted = marks_[index(Tier::device)];
  SwapInPlan plan;
  for (size_t i = 0; i < group_blocks_.size(); ++i) {
    const BlockMeta& host_meta = manager_.host_pool().meta(group_blocks_[i]);
    for (const BlockId b : cached_blocks_) {
      if (host_meta.has_hash && manager_.device_pool().meta(b).hash == host_meta.hash) group_targets_[i] = b;
    }
    const BlockId target = group_targets_[i];
    if (target == kNoBlock) {
      ++plan.consumed;
      continue;
    }
    ++plan.reused;
    if (refs(Tier::device)[static_cast<size_t>(target)] == 0 && counted[static_cast<size_t>(target)] == 0) {
      counted[static_cast<size_t>(target)] = 1;
      ++plan.consumed;
      ++plan.reused_free;
    }
  }
  for (const BlockId target : group_targets_) {
    if (target != kNoBlock) counted[static_cast<size_t>(target)] = 0;
  }
  return plan;
}

bool PropertyRun::op_swap_in() {
  ModelSeq* seq = pick_seq([](const ModelSeq& s) { return s.tier == Tier::host; });
  if (seq == nullptr) return false;
  collect_family(seq->family, Tier::host);
  collect_group_blocks(Tier::host);
  for (size_t i = 0; i < group_blocks_.size(); ++i) {
    require(refs(Tier::host)[static_cast<size_t>(group_blocks_[i])] == group_block_refs_[i],
            "model: a host block is held outside its fork family");
  }
  const auto distinct = static_cast<int32_t>(group_blocks_.size());
  const int32_t host_free = num_free(Tier::host);
  const int32_t device_free = num_free(Tier::device);
  const SwapInPlan plan = plan_swap_in();
  const int32_t consumed = plan.consumed;
  const int32_t watermark = manager_.watermark_blocks();
  const AllocStatus expected = expected_status(distinct, consumed);  // before the call: it may swap in
  SwapInResult tried = manager_.try_swap_in(group_, {.reserve_blocks = watermark, .min_free_after = watermark});
  const AllocStatus status = tried.status;
  if (status != expected) {
    fail(std::string("try_swap_in says ") + to_string(status) + " for " + std::to_string(distinct) +
         " host blocks of which " + std::to_string(plan.reused) + " are still cached on the device, taking " +
         std::to_string(consumed) + " of " + std::to_string(device_free) + " free device blocks (watermark " +
         std::to_string(manager_.watermark_blocks()) + ")");
  }
  if (status != AllocStatus::ok) {
    require(num_free(Tier::device) == device_free && num_free(Tier::host) == host_free && tried.moves.empty(),
            "a refused try_swap_in changed state");
    if (!rng_.percent(kForcePercent)) return false;
    if (consumed > device_free) {
      note("swap in refused", group_.front(), consumed);
      expect_refused(Expect::full, "swap in beyond the free device blocks", [&] { manager_.swap_in(group_); });
      ++counts_.refused_swap_in_full;
      return true;
    }
    ++counts_.forced_ok;
    note("swap in", group_.front(), static_cast<int64_t>(group_.size()));
    tried.moves = manager_.swap_in(group_);
  } else {
    note("try_swap_in", group_.front(), static_cast<int64_t>(group_.size()));
  }
  const std::vector<BlockMove>& moves = tried.moves;
  check_moves(moves, Tier::device);  // reused blocks need no move; verify() checks their content
  check_group_tables();
  for (const BlockMove& move : moves) memory_.copy(Tier::host, move.src, Tier::device, move.dst);
  for (const SeqId id : group_) model(id).tier = Tier::device;
  require(num_free(Tier::device) == device_free - consumed, "swap in took another number of device blocks");
  require(num_free(Tier::host) == host_free + distinct, "swap in freed another number of host blocks");
  ++counts_.swap_in;
  counts_.swap_in_copied += static_cast<int64_t>(moves.size());
  counts_.swap_in_reused += plan.reused;
  counts_.swap_in_reused_free += plan.reused_free;
  return true;
}

bool PropertyRun::op_reset_prefix_cache() {
  const KvStats before = manager_.stats();
  note("reset prefix cache", 0, before.num_cached_device_blocks);
  const int32_t uncached = manager_.reset_prefix_cache();
  const KvStats after = manager_.stats();
  require(uncached == before.num_cached_device_blocks && after.num_cached_device_blocks == 0 &&
              after.num_cached_free_device_blocks == 0 && after.num_free_device_blocks == before.num_free_device_blocks,
          "reset_prefix_cache");
  ++counts_.reset_prefix_cache;
  return true;
}

}  // namespace pagedllm::kv::property_test
