#include "core/structured/token_mask.h"

#include <algorithm>
#include <stdexcept>
#include <string_view>
#include <utility>

namespace pagedllm::structured {

TokenMaskCache::TokenMaskCache(std::shared_ptr<const ByteDfa> dfa, std::shared_ptr<const TokenTrie> trie)
    : dfa_(std::move(dfa)), trie_(std::move(trie)), masks_(static_cast<std::size_t>(dfa_->num_states())) {}

TokenMaskCache::TokenMaskCache(std::shared_ptr<const PushdownGrammar> grammar, std::shared_ptr<const TokenTrie> trie)
    : grammar_(std::make_shared<GrammarMasks>(std::move(grammar), trie)), trie_(std::move(trie)) {}

const ByteDfa& TokenMaskCache::dfa() const {
  if (!dfa_) throw std::logic_error("token mask cache: a grammar has no byte automaton");
  return *dfa_;
}

int32_t TokenMaskCache::num_states() const { return grammar_ ? grammar_->grammar().num_states() : dfa_->num_states(); }

int32_t TokenMaskCache::num_computed() const { return grammar_ ? grammar_->num_computed() : num_computed_; }

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
    : cache_(std::move(cache)), stop_tokens_(std::move(stop_tokens)), state_(0) {
  if (cache_->is_grammar()) {
    grammar_.emplace(cache_->grammar());
  } else {
    state_ = cache_->dfa().start;
  }
  if (stop_tokens_.empty()) throw std::invalid_argument("token matcher: no stop token to end the text with");
  for (const TokenId token : stop_tokens_) {
    if (token < 0 || token >= cache_->vocab_size()) {
      throw std::invalid_argument("token matcher: stop token " + std::to_string(token) +
                                  " is outside the vocabulary of " + std::to_string(cache_->vocab_size()));
    }
  }
}

bool TokenMatcher::can_end() const {
  if (ended_) return false;
  if (!failure_.empty()) return true;  // only a stop token is left to take
  return grammar_ ? grammar_->can_end() : cache_->dfa().accepting[static_cast<std::size_t>(state_)];
}

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
  if (!grammar_) {
    const TokenBitmask& mask = cache_->mask(state_);
    std::copy(mask.begin(), mask.end(), out.begin());
  } else if (failure_.empty()) {
    try {
      grammar_->fill_mask(out);
    } catch (const GrammarAmbiguityError& error) {
      failure_ = error.what();
    }
  }
  if (!failure_.empty()) std::fill(out.begin(), out.end(), 0u);  // only the stop tokens below
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
  if (!failure_.empty()) return false;  // only a stop token is left to take
  if (grammar_) {
    try {
      if (!grammar_->accept(cache_->trie().bytes(token))) return false;
    } catch (const GrammarAmbiguityError& error) {
      failure_ = error.what();  // the parse stays where it was
      return false;
    }
    history_.push_back(0);
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
    // A stop token is always the last one accepted; a grammar's parse did not advance for it.
    if (grammar_ && !ended_) grammar_->rollback(1);
    state_ = history_.back();
    history_.pop_back();
    ended_ = false;
  }
}

}  // namespace pagedllm::structured
