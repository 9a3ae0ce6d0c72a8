#include "core/structured/grammar_matcher.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

namespace pagedllm::structured {

int32_t GrammarStacks::push(int32_t rule, int32_t state, int32_t parent) {
  // The empty stack and the boundary hash to distinct seeds; each frame mixes itself into the hash
  // of the stack under it (a multiply: pushes are per byte per stack).
  std::uint64_t hash = parent >= 0 ? frame(parent).hash : static_cast<std::uint64_t>(-parent);
  hash ^= (static_cast<std::uint64_t>(static_cast<std::uint32_t>(rule)) << 32) | static_cast<std::uint32_t>(state);
  hash *= 0x9E3779B97F4A7C15ull;
  frames_.push_back(Frame{rule, state, parent, static_cast<std::uint32_t>(hash >> 32)});
  return static_cast<int32_t>(frames_.size()) - 1;
}

bool GrammarStacks::same(int32_t a, int32_t b) const {
  if (a == b) return true;
  if (a >= 0 && b >= 0 && frame(a).hash != frame(b).hash) return false;
  while (a != b) {
    if (a < 0 || b < 0) return false;
    const Frame& x = frame(a);
    const Frame& y = frame(b);
    if (x.rule != y.rule || x.state != y.state) return false;
    a = x.parent;
    b = y.parent;
  }
  return true;
}

namespace {

// Sets of live stacks (a step's, one closure's) are bounded, so that an ambiguous grammar fails at
// once instead of taking exponential time and memory.
[[noreturn, gnu::cold, gnu::noinline]] void throw_too_ambiguous() {
  throw GrammarAmbiguityError("grammar: too ambiguous to follow: more than " +
                              std::to_string(GrammarMasks::kMaxLiveStacks) +
                              " parses of the text are alive at once (rewrite it so that fewer alternatives "
                              "stay open over the same text: rules in a row that may each match nothing, "
                              "or alternatives that part only after a shared recursive start)");
}

// Adds `stack` to the set `out` unless an equal stack is there; whether it did.
bool add_unique(const GrammarStacks& stacks, int32_t stack, std::vector<int32_t>& out) {
  for (const int32_t other : out) {
    if (stacks.same(other, stack)) return false;
  }
  if (out.size() >= GrammarMasks::kMaxLiveStacks) throw_too_ambiguous();
  out.push_back(stack);
  return true;
}

}  // namespace

GrammarMasks::GrammarMasks(std::shared_ptr<const PushdownGrammar> grammar, std::shared_ptr<const TokenTrie> trie)
    : grammar_(std::move(grammar)), trie_(std::move(trie)) {
  for (const PushdownRule& rule : grammar_->rules) {
    first_state_.push_back(static_cast<int32_t>(reads_.size()));
    for (int32_t s = 0; s < rule.dfa.num_states(); ++s) {
      const auto& row = rule.dfa.next[static_cast<std::size_t>(s)];
      reads_.push_back(std::any_of(row.begin(), row.end(), [](int32_t to) { return to != ByteDfa::kDead; }));
      moves_.push_back(!rule.calls[static_cast<std::size_t>(s)].empty() ||
                       rule.dfa.accepting[static_cast<std::size_t>(s)]);
    }
  }
  frames_.resize(reads_.size());
  computed_.assign(reads_.size(), 0);
}

bool GrammarMasks::close(GrammarStacks& stacks, int32_t stack, std::vector<int32_t>& out) const {
  bool crossed = false;
  std::vector<int32_t> pending{stack};
  std::vector<int32_t> seen;
  while (!pending.empty()) {
    const int32_t id = pending.back();
    pending.pop_back();
    if (id == GrammarStacks::kBoundary) {
      crossed = true;
      continue;
    }
    if (id == GrammarStacks::kEmpty) {
      if (std::find(out.begin(), out.end(), GrammarStacks::kEmpty) == out.end()) out.push_back(GrammarStacks::kEmpty);
      continue;
    }
    if (!add_unique(stacks, id, seen)) continue;
    const GrammarStacks::Frame frame = stacks.frame(id);  // a copy: push() may move the arena
    const PushdownRule& rule = grammar_->rules[static_cast<std::size_t>(frame.rule)];
    const std::size_t at = flat(frame.rule, frame.state);
    if (reads_[at]) add_unique(stacks, id, out);
    if (!moves_[at]) continue;
    for (const CallEdge& call : rule.calls[static_cast<std::size_t>(frame.state)]) {
      // A tail call: the caller would only pop after the callee, so the callee takes its place.
      const int32_t below = rule.final[static_cast<std::size_t>(call.return_state)]
                                ? frame.parent
                                : stacks.push(frame.rule, call.return_state, frame.parent);
      const PushdownRule& callee = grammar_->rules[static_cast<std::size_t>(call.callee)];
      pending.push_back(stacks.push(call.callee, callee.dfa.start, below));
    }
    if (rule.dfa.accepting[static_cast<std::size_t>(frame.state)]) pending.push_back(frame.parent);
  }
  return crossed;
}

GrammarMasks::StepResult GrammarMasks::step(GrammarStacks& stacks, std::span<const int32_t> from, std::uint8_t byte,
                                            std::vector<int32_t>& out) const {
  out.clear();
  StepResult result;
  for (const int32_t id : from) {
    if (id < 0) continue;  // an ended parse reads nothing
    const GrammarStacks::Frame frame = stacks.frame(id);
    const int32_t next = grammar_->rules[static_cast<std::size_t>(frame.rule)].dfa.step(frame.state, byte);
    if (next == ByteDfa::kDead) continue;
    result.read = true;
    const int32_t moved = stacks.push(frame.rule, next, frame.parent);
    if (!moves_[flat(frame.rule, next)]) {
      add_unique(stacks, moved, out);  // the common case: still inside the same rule
    } else if (close(stacks, moved, out)) {
      result.crossed = true;
    }
  }
  return result;
}

const GrammarMasks::FrameMasks& GrammarMasks::frame_masks(int32_t rule, int32_t state) {
  const std::size_t at = flat(rule, state);
  if (!computed_[at]) {
    frames_[at] = compute(rule, state);
    computed_[at] = 1;
    ++num_computed_;
  }
  return frames_[at];
}

GrammarMasks::FrameMasks GrammarMasks::compute(int32_t rule, int32_t state) const {
  FrameMasks masks;
  masks.accepted.assign(static_cast<std::size_t>(vocab_size() + 31) / 32, 0u);
  const TokenTrie& trie = *trie_;
  const auto levels = static_cast<std::size_t>(trie.max_depth()) + 1;
  // [d]: after a node's first d bytes: the stacks that can read on, whether a frame popped past the
  // bottom at some position in [1, d], and the arena's size once they were built.
  std::vector<std::vector<int32_t>> sets(levels);
  std::vector<char> crossed(levels, 0);
  std::vector<int32_t> arena_size(levels, 0);
  GrammarStacks stacks;
  // The bottom's own end at position 0 is left out: the matcher's set holds that popped stack too.
  close(stacks, stacks.push(rule, state, GrammarStacks::kBoundary), sets[0]);
  arena_size[0] = stacks.size();
  const auto add_uncertain = [&](std::span<const TokenId> tokens) {
    masks.uncertain.insert(masks.uncertain.end(), tokens.begin(), tokens.end());
  };
  for (int32_t node = 0; node < trie.num_nodes();) {
    const auto d = static_cast<std::size_t>(trie.node_depth(node));
    stacks.truncate(arena_size[d - 1]);  // frames of the previous sibling's subtree
    const StepResult result = step(stacks, sets[d - 1], trie.node_byte(node), sets[d]);
    if (result.read) {
      for (const TokenId token : trie.tokens_at(node)) allow(masks.accepted, token);
    } else if (crossed[d - 1]) {
      add_uncertain(trie.tokens_at(node));
    }
    const bool crossed_here = crossed[d - 1] || result.crossed;
    if (sets[d].empty()) {  // no parse inside the frame reads on: below, only one past its end may
      if (crossed_here) add_uncertain(trie.tokens_between(node + 1, trie.subtree_end(node)));
      node = trie.subtree_end(node);
      continue;
    }
    crossed[d] = crossed_here;
    arena_size[d] = stacks.size();
    ++node;
  }
  return masks;
}

bool GrammarMasks::reads(GrammarStacks& stacks, int32_t stack, std::string_view bytes) const {
  const int32_t mark = stacks.size();
  std::vector<int32_t> set{stack};
  std::vector<int32_t> next;
  for (const char byte : bytes) {
    step(stacks, set, static_cast<std::uint8_t>(byte), next);
    std::swap(set, next);
    if (set.empty()) break;
  }
  stacks.truncate(mark);
  return !set.empty();
}

const TokenBitmask& GrammarMasks::stack_mask(GrammarStacks& stacks, int32_t stack) {
  std::string key;
  for (int32_t id = stack; id >= 0; id = stacks.frame(id).parent) {
    const int32_t frame[2] = {stacks.frame(id).rule, stacks.frame(id).state};
    key.append(reinterpret_cast<const char*>(frame), sizeof(frame));
  }
  if (const auto found = stack_mask_by_key_.find(key); found != stack_mask_by_key_.end()) {
    stack_masks_.splice(stack_masks_.begin(), stack_masks_, found->second);
    return found->second->second;
  }
  const GrammarStacks::Frame& top = stacks.frame(stack);
  const FrameMasks& masks = frame_masks(top.rule, top.state);
  TokenBitmask mask = masks.accepted;
  for (const TokenId token : masks.uncertain) {
    if (reads(stacks, stack, trie_->bytes(token))) allow(mask, token);
  }
  ++num_stack_masks_computed_;
  const std::size_t mask_bytes = mask.size() * sizeof(std::uint32_t);
  stack_masks_.emplace_front(key, std::move(mask));
  stack_mask_by_key_.emplace(std::move(key), stack_masks_.begin());
  while (stack_masks_.size() > 1 && stack_masks_.size() * mask_bytes > kMaxStackMaskBytes) {
    stack_mask_by_key_.erase(stack_masks_.back().first);
    stack_masks_.pop_back();
  }
  return stack_masks_.front().second;
}

GrammarMatcher::GrammarMatcher(std::shared_ptr<GrammarMasks> masks) : masks_(std::move(masks)) {
  const PushdownGrammar& grammar = masks_->grammar();
  const PushdownRule& root = grammar.rules[static_cast<std::size_t>(grammar.root)];
  masks_->close(stacks_, stacks_.push(grammar.root, root.dfa.start, GrammarStacks::kEmpty), current_);
}

bool GrammarMatcher::can_end() const {
  return std::find(current_.begin(), current_.end(), GrammarStacks::kEmpty) != current_.end();
}

void GrammarMatcher::fill_mask(std::span<std::uint32_t> out) const {
  std::fill(out.begin(), out.end(), 0u);
  for (const int32_t stack : current_) {
    if (stack < 0) continue;
    const TokenBitmask& mask = masks_->stack_mask(stacks_, stack);
    for (std::size_t w = 0; w < out.size(); ++w) out[w] |= mask[w];
  }
}

bool GrammarMatcher::accept(std::string_view bytes) {
  if (bytes.empty()) return false;
  const int32_t mark = stacks_.size();
  std::vector<int32_t> set = current_;
  std::vector<int32_t> next;
  try {
    for (const char byte : bytes) {
      masks_->step(stacks_, set, static_cast<std::uint8_t>(byte), next);
      std::swap(set, next);
      if (set.empty()) {
        stacks_.truncate(mark);
        return false;
      }
    }
  } catch (const GrammarAmbiguityError&) {
    stacks_.truncate(mark);
    throw;
  }
  history_.push_back(std::move(current_));
  current_ = std::move(set);
  return true;
}

void GrammarMatcher::rollback(int32_t num_tokens) {
  if (num_tokens < 0 || num_tokens > static_cast<int32_t>(history_.size())) {
    throw std::invalid_argument("grammar matcher: cannot roll back " + std::to_string(num_tokens) + " of " +
                                std::to_string(history_.size()) + " accepted tokens");
  }
  for (int32_t i = 0; i < num_tokens; ++i) {
    current_ = std::move(history_.back());
    history_.pop_back();
  }
}

}  // namespace pagedllm::structured
