// The property run's calls that must be refused, each checked to leave the manager unchanged.
#include "tests/kv/property/property_run.h"

#include <array>
#include <cstdint>
#include <span>

namespace pagedllm::kv::property_test {

bool PropertyRun::op_misuse() {
  switch (rng_.below(7)) {
    case 0:
      return misuse_unknown_sequence();
    case 1:
      return misuse_double_free();
    case 2:
      return misuse_append_swapped();
    case 3:
      return misuse_bad_allocate();
    case 4:
      return misuse_bad_fork();
    case 5:
      return misuse_bad_swap_group();
    default:
      return misuse_bad_query();
  }
}

bool PropertyRun::misuse_unknown_sequence() {
  const SeqId id = rng_.percent(50) ? -1 - static_cast<SeqId>(rng_.below(1000))
                                    : next_id_ + 1 + static_cast<SeqId>(rng_.below(1000));
  require(!manager_.contains(id), "contains() of a sequence never allocated");
  const TokenId token = random_token();
  const std::array<SeqId, 1> group{id};
  const uint64_t call = rng_.below(10);
  note("unknown sequence", id, static_cast<int64_t>(call));
  const char* what = "call on an unknown sequence";
  switch (call) {
    case 0:
      expect_refused(Expect::misuse, what, [&] { manager_.append_slots(id, std::span(&token, 1)); });
      break;
    case 1:
      expect_refused(Expect::misuse, what, [&] { manager_.free(id); });
      break;
    case 2:
      expect_refused(Expect::misuse, what, [&] { manager_.fork(id, next_id_); });
      break;
    case 3:
      expect_refused(Expect::misuse, what, [&] { manager_.num_blocks_to_append(id, 1); });
      break;
    case 4:
      expect_refused(Expect::misuse, what, [&] { manager_.swap_out(group); });
      break;
    case 5:
      expect_refused(Expect::misuse, what, [&] { manager_.swap_in(group); });
      break;
    case 6:
      expect_refused(Expect::misuse, what, [&] { manager_.try_swap_out(group); });
      break;
    case 7:
      expect_refused(Expect::misuse, what, [&] { manager_.try_swap_in(group, {}); });
      break;
    case 8:
      expect_refused(Expect::misuse, what, [&] { manager_.block_table(id); });
      break;
    default:
      expect_refused(Expect::misuse, what, [&] { manager_.num_tokens(id); });
      break;
  }
  ++counts_.refused_unknown;
  return true;
}

bool PropertyRun::misuse_double_free() {
  if (recent_frees_.empty()) return false;
  const SeqId id = recent_frees_[rng_.below(recent_frees_.size())];
  note("double free", id, 0);
  expect_refused(Expect::misuse, "double free", [&] { manager_.free(id); });
  ++counts_.refused_double_free;
  return true;
}

bool PropertyRun::misuse_append_swapped() {
  const ModelSeq* seq = pick_seq([](const ModelSeq& s) { return s.tier == Tier::host; });
  if (seq == nullptr) return false;
  new_tokens_.clear();
  for (int32_t i = rng_.between(1, 2 * config_.block_size); i > 0; --i) new_tokens_.push_back(random_token());
  note("append to swapped", seq->id, static_cast<int64_t>(new_tokens_.size()));
  expect_refused(Expect::misuse, "append to a swapped sequence", [&] { manager_.append_slots(seq->id, new_tokens_); });
  ++counts_.refused_swapped_append;
  return true;
}

bool PropertyRun::misuse_bad_allocate() {
  new_tokens_.clear();
  for (int32_t i = rng_.between(1, 3 * config_.block_size); i > 0; --i) new_tokens_.push_back(random_token());
  const PromptRef prompt{new_tokens_, 0};
  const auto len = static_cast<int32_t>(new_tokens_.size());
  const uint64_t call = rng_.below(config_.enable_prefix_caching ? 5 : 4);
  note("bad allocate", next_id_, static_cast<int64_t>(call));
  switch (call) {
    case 4: {  // precomputed hashes that do not match the prompt's full blocks
      prompt_hashes_ = hash_prompt_blocks(new_tokens_, config_.block_size, 0);
      prompt_hashes_.push_back(kRootBlockHash);
      const PromptRef mismatched{new_tokens_, 0, prompt_hashes_};
      expect_refused(Expect::misuse, "allocate with the wrong number of block hashes",
                     [&] { manager_.allocate(next_id_, mismatched, len); });
      break;
    }
    case 0: {
      const ModelSeq* existing = pick_seq([](const ModelSeq&) { return true; });
      if (existing == nullptr) return false;
      expect_refused(Expect::misuse, "allocate of a live sequence",
                     [&] { manager_.allocate(existing->id, prompt, len); });
      break;
    }
    case 1:
      expect_refused(Expect::misuse, "allocate of 0 tokens", [&] { manager_.allocate(next_id_, prompt, 0); });
      break;
    case 2:
      expect_refused(Expect::misuse, "allocate past the prompt", [&] { manager_.allocate(next_id_, prompt, len + 1); });
      break;
    default:
      expect_refused(Expect::misuse, "allocate of an empty prompt",
                     [&] { manager_.allocate(next_id_, PromptRef{}, 1); });
      break;
  }
  ++counts_.refused_bad_args;
  return true;
}

bool PropertyRun::misuse_bad_fork() {
  const ModelSeq* parent = pick_seq([](const ModelSeq&) { return true; });
  if (parent == nullptr) return false;
  const SeqId parent_id = parent->id;
  const SeqId child = pick_seq([](const ModelSeq&) { return true; })->id;  // may be the parent
  note("bad fork", child, parent_id);
  expect_refused(Expect::misuse, "fork onto a live sequence", [&] { manager_.fork(parent_id, child); });
  ++counts_.refused_bad_args;
  return true;
}

bool PropertyRun::misuse_bad_swap_group() {
  const ModelSeq* seq = pick_seq([](const ModelSeq&) { return true; });
  if (seq == nullptr) return false;
  const bool on_device = seq->tier == Tier::device;
  const uint64_t call = rng_.below(4);
  note("bad swap group", seq->id, static_cast<int64_t>(call));
  group_.assign({seq->id});
  switch (call) {
    case 0:  // a group must hold each sequence once
      group_.push_back(seq->id);
      if (on_device) {
        expect_refused(Expect::misuse, "swap out with a repeated sequence", [&] { manager_.swap_out(group_); });
      } else {
        expect_refused(Expect::misuse, "swap in with a repeated sequence", [&] { manager_.swap_in(group_); });
      }
      break;
    case 1:  // swap towards the tier the sequence is already in
      if (on_device) {
        expect_refused(Expect::misuse, "swap in of a device sequence", [&] { manager_.swap_in(group_); });
      } else {
        expect_refused(Expect::misuse, "swap out of a swapped sequence", [&] { manager_.swap_out(group_); });
      }
      break;
    case 2:
      if (on_device) {
        expect_refused(Expect::misuse, "try_swap_in of a device sequence", [&] { manager_.try_swap_in(group_, {}); });
      } else {
        expect_refused(Expect::misuse, "try_swap_out of a swapped sequence", [&] { manager_.try_swap_out(group_); });
      }
      break;
    default:
      group_.clear();
      expect_refused(Expect::misuse, "swap of an empty group",
                     [&] { on_device ? manager_.swap_out(group_) : manager_.swap_in(group_); });
      break;
  }
  ++counts_.refused_bad_args;
  return true;
}

bool PropertyRun::misuse_bad_query() {
  const ModelSeq* seq = pick_seq([](const ModelSeq&) { return true; });
  if (seq == nullptr) return false;
  const SeqId id = seq->id;
  const int32_t n = seq->num_tokens();
  const uint64_t call = rng_.below(3);
  note("bad query", id, static_cast<int64_t>(call));
  switch (call) {
    case 0:
      expect_refused(Expect::misuse, "negative token count", [&] { manager_.num_blocks_to_append(id, -1); });
      break;
    case 1:
      expect_refused(Expect::misuse, "slot past the end", [&] { manager_.slot(id, n); });
      break;
    default:
      expect_refused(Expect::misuse, "negative slot", [&] { manager_.slot(id, -1); });
      break;
  }
  ++counts_.refused_bad_args;
  return true;
}

}  // namespace pagedllm::kv::property_test
