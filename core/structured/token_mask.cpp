#include "core/structured/token_mask.h"

#include <algorithm>
#include <stdexcept>
#include <string_view>
#include <utility>

namespace pagedllm::structured {

std::vector<std::string> constraint_token_bytes(const tokenizer::Tokenizer& tokenizer, int32_t vocab_size) {
  std::vector<std::string> bytes(static_cast<size_t>(vocab_size));
  for (TokenId id = 0; id < vocab_size && id < tokenizer.num_tokens(); ++id) {
    if (!tokenizer.is_special(id)) bytes[static_cast<size_t>(id)] = tokenizer.token_bytes(id);
  }
  return bytes;
}

TokenTrie::TokenTrie(const std::vector<std::string>& token_bytes) : token_bytes_(token_bytes) {
  // The tokens in byte order (std::string compares bytes as unsigned): then each token adds the
  // nodes of its bytes past the prefix it shares with the previous one, in depth-first order.
  std::vector<TokenId> order;
  for (std::size_t id = 0; id < token_bytes.size(); ++id) {
    if (!token_bytes[id].empty()) order.push_back(static_cast<TokenId>(id));  // special: no text
  }
  std::stable_sort(order.begin(), order.end(), [&](TokenId a, TokenId b) {
    return token_bytes[static_cast<std::size_t>(a)] < token_bytes[static_cast<std::size_t>(b)];
  });
  std::vector<int32_t> open;  // [depth - 1]: the nodes of the previous token's bytes
  std::string_view previous;
  for (const TokenId token : order) {
    const std::string_view bytes = token_bytes[static_cast<std::size_t>(token)];
    std::size_t shared = 0;
    while (shared < previous.size() && shared < bytes.size() && previous[shared] == bytes[shared]) ++shared;
    while (open.size() > shared) {  // the previous token's nodes past the shared prefix are complete
      subtree_end_[static_cast<std::size_t>(open.back())] = num_nodes();
      open.pop_back();
    }
    for (std::size_t d = shared; d < bytes.size(); ++d) {
      open.push_back(num_nodes());
      byte_.push_back(static_cast<std::uint8_t>(bytes[d]));
      depth_.push_back(static_cast<int32_t>(d + 1));
      subtree_end_.push_back(-1);
      first_token_.push_back(static_cast<int32_t>(tokens_.size()));
    }
    // The token ends at the newest node (a token with the same bytes as the previous one adds
    // none), so tokens_ stays grouped by node in node order.
    tokens_.push_back(token);
    max_depth_ = std::max(max_depth_, static_cast<int32_t>(bytes.size()));
    previous = bytes;
  }
  for (const int32_t node : open) subtree_end_[static_cast<std::size_t>(node)] = num_nodes();
  first_token_.push_back(static_cast<int32_t>(tokens_.size()));
}

void TokenTrie::add_allowed(const ByteDfa& dfa, int32_t state, TokenBitmask& mask) const {
  // at[d]: the automaton's state after the current node's first d bytes.
  std::vector<int32_t> at(static_cast<std::size_t>(max_depth_) + 1);
  at[0] = state;
  const auto nodes = static_cast<int32_t>(byte_.size());
  for (int32_t node = 0; node < nodes;) {
    const auto n = static_cast<std::size_t>(node);
    const int32_t depth = depth_[n];
    const int32_t next = dfa.step(at[static_cast<std::size_t>(depth - 1)], byte_[n]);
    if (next == ByteDfa::kDead) {
      node = subtree_end_[n];  // a refused byte refuses every token under it
      continue;
    }
    at[static_cast<std::size_t>(depth)] = next;
    for (int32_t k = first_token_[n]; k < first_token_[n + 1]; ++k) allow(mask, tokens_[static_cast<std::size_t>(k)]);
    ++node;
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
  for (const TokenId token : stop_tokens_) allow(out, token);
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
