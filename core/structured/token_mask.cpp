#include "core/structured/token_mask.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace pagedllm::structured {

TokenTrie::TokenTrie(const std::vector<std::string>& token_bytes) : nodes_(1), token_bytes_(token_bytes) {
  for (std::size_t id = 0; id < token_bytes.size(); ++id) {
    const std::string& bytes = token_bytes[id];
    if (bytes.empty()) continue;  // special: no text
    int32_t node = 0;
    for (const char c : bytes) {
      const auto byte = static_cast<std::uint8_t>(c);
      auto& children = nodes_[static_cast<std::size_t>(node)].children;
      const auto it = std::lower_bound(children.begin(), children.end(), std::pair<std::uint8_t, int32_t>{byte, -1});
      if (it != children.end() && it->first == byte) {
        node = it->second;
      } else {
        const auto child = static_cast<int32_t>(nodes_.size());
        children.insert(it, {byte, child});
        nodes_.emplace_back();  // invalidates `children`: not used after this
        node = child;
      }
    }
    nodes_[static_cast<std::size_t>(node)].tokens.push_back(static_cast<TokenId>(id));
  }
}

void TokenTrie::add_allowed(const ByteDfa& dfa, int32_t state, TokenBitmask& mask) const {
  // Depth first; each entry is (trie node, automaton state after the node's bytes).
  std::vector<std::pair<int32_t, int32_t>> stack{{0, state}};
  while (!stack.empty()) {
    const auto [node, at] = stack.back();
    stack.pop_back();
    const Node& here = nodes_[static_cast<std::size_t>(node)];
    if (node != 0) {
      for (const TokenId token : here.tokens) allow(mask, token);
    }
    for (const auto& [byte, child] : here.children) {
      const int32_t next = dfa.step(at, byte);
      if (next != ByteDfa::kDead) stack.push_back({child, next});  // a refused byte drops the subtree
    }
  }
}

TokenMaskCache::TokenMaskCache(std::shared_ptr<const ByteDfa> dfa, std::shared_ptr<const TokenTrie> trie)
    : dfa_(std::move(dfa)), trie_(std::move(trie)), masks_(static_cast<std::size_t>(dfa_->num_states())) {}

const TokenBitmask& TokenMaskCache::mask(int32_t state) {
  TokenBitmask& mask = masks_.at(static_cast<std::size_t>(state));
  if (mask.empty()) {
    mask.assign(static_cast<std::size_t>(trie_->vocab_size() + 31) / 32, 0u);
    trie_->add_allowed(*dfa_, state, mask);
    ++num_computed_;
  }
  return mask;
}

TokenMatcher::TokenMatcher(std::shared_ptr<TokenMaskCache> cache, std::vector<TokenId> stop_tokens)
    : cache_(std::move(cache)), stop_tokens_(std::move(stop_tokens)), state_(cache_->dfa().start) {
  if (stop_tokens_.empty()) throw std::invalid_argument("token matcher: no stop token to end the text with");
  for (const TokenId token : stop_tokens_) {
    if (token < 0 || token >= cache_->vocab_size()) {
      throw std::invalid_argument("token matcher: stop token " + std::to_string(token) +
                                  " is outside the vocabulary of " + std::to_string(cache_->vocab_size()));
    }
  }
}

bool TokenMatcher::can_end() const { return !ended_ && cache_->dfa().accepting[static_cast<std::size_t>(state_)]; }

void TokenMatcher::fill_next_mask(TokenBitmask& out) const {
  out.resize(static_cast<std::size_t>(vocab_words()));
  fill_next_mask(std::span<std::uint32_t>(out));
}

void TokenMatcher::fill_next_mask(std::span<std::uint32_t> out) const {
  if (out.size() != static_cast<std::size_t>(vocab_words())) {
    throw std::invalid_argument("token matcher: a mask row of " + std::to_string(out.size()) + " words, not " +
                                std::to_string(vocab_words()));
  }
  if (ended_) {
    std::fill(out.begin(), out.end(), 0u);
    return;
  }
  const TokenBitmask& mask = cache_->mask(state_);
  std::copy(mask.begin(), mask.end(), out.begin());
  if (!can_end()) return;
  for (const TokenId token : stop_tokens_) {
    out[static_cast<std::size_t>(token) / 32] |= 1u << (static_cast<std::uint32_t>(token) % 32);
  }
}

bool TokenMatcher::accept(TokenId token) {
  if (ended_ || token < 0 || token >= cache_->vocab_size()) return false;
  if (std::find(stop_tokens_.begin(), stop_tokens_.end(), token) != stop_tokens_.end()) {
    if (!can_end()) return false;
    history_.push_back(state_);
    ended_ = true;
    return true;
  }
  if (!is_allowed(cache_->mask(state_), token)) return false;
  history_.push_back(state_);
  state_ = cache_->dfa().walk(state_, cache_->trie().bytes(token));
  return true;
}

void TokenMatcher::rollback(int32_t num_tokens) {
  if (num_tokens < 0 || num_tokens > num_accepted()) {
    throw std::invalid_argument("token matcher: cannot roll back " + std::to_string(num_tokens) + " of " +
                                std::to_string(num_accepted()) + " accepted tokens");
  }
  for (int32_t i = 0; i < num_tokens; ++i) {
    state_ = history_.back();
    history_.pop_back();
    ended_ = false;
  }
}

}  // namespace pagedllm::structured
