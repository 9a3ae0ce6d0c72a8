// The tokens a byte automaton (or a grammar) allows next, over a model's vocabulary, and the
// per-sequence matcher that walks the automaton as tokens are accepted.
//
// A token is its byte string (special tokens have none: a constraint never allows them, except
// the stop tokens (end-of-sequence) where the text so far is a whole match). Whether a token is
// allowed in a state depends on that state and the token's bytes alone, so a state's mask is computed once and kept:
// one walk of a trie of the vocabulary, which visits each shared prefix once and leaves a subtree
// at its first refused byte. (XGrammar splits tokens the same way into context-independent ones,
// decided per automaton state ahead of time, and context-dependent ones, checked at each step; a
// byte DFA has only the first kind.)
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/common/types.h"
#include "core/structured/byte_dfa.h"
#include "core/structured/grammar_matcher.h"
#include "core/structured/token_trie.h"

namespace pagedllm::structured {

// The masks of one compiled constraint, computed on first use and kept: per state of a byte
// automaton, or per frame of a grammar (grammar_matcher.h). One per compiled constraint, shared by
// the sequences that use it (parallel samples, beams); not thread-safe.
class TokenMaskCache {
 public:
  TokenMaskCache(std::shared_ptr<const ByteDfa> dfa, std::shared_ptr<const TokenTrie> trie);
  TokenMaskCache(std::shared_ptr<const PushdownGrammar> grammar, std::shared_ptr<const TokenTrie> trie);

  bool is_grammar() const { return grammar_ != nullptr; }
  const ByteDfa& dfa() const;  // a byte automaton's; throws std::logic_error for a grammar
  const std::shared_ptr<GrammarMasks>& grammar() const { return grammar_; }  // null for a byte automaton
  const TokenTrie& trie() const { return *trie_; }
  int32_t vocab_size() const { return trie_->vocab_size(); }
  const TokenBitmask& mask(int32_t state);  // a byte automaton's state
  int32_t num_computed() const;             // states (or grammar frames) whose masks were computed
  int32_t num_states() const;               // the automaton's (over all of a grammar's rules)

 private:
  std::shared_ptr<const ByteDfa> dfa_;  // or grammar_
  std::shared_ptr<GrammarMasks> grammar_;
  std::shared_ptr<const TokenTrie> trie_;
  std::vector<TokenBitmask> masks_;  // [state]; empty until computed
  int32_t num_computed_ = 0;
};

// One sequence's place in a constraint. Copy it to fork (parallel sampling, beams); roll it back
// when a preemption by recompute or a rejected speculation undoes tokens.
//
// A grammar too ambiguous to follow (GrammarAmbiguityError) shows only while text is generated.
// The matcher then fails for good: failure() says why, the mask allows only the stop tokens, and
// the engine ends the request with that message instead of letting the error end every request.
class TokenMatcher {
 public:
  // stop_tokens: the tokens that end the text (the model's end-of-sequence, a request's stop ids);
  // at least one, each inside the vocabulary.
  TokenMatcher(std::shared_ptr<TokenMaskCache> cache, std::vector<TokenId> stop_tokens);

  // The tokens allowed next: the state's mask, and the stop tokens where the text is a whole
  // match. `out` is resized to the vocabulary's words.
  void fill_next_mask(TokenBitmask& out) const;
  // The same into `out`, a row of vocab_words() words (a step's bitmask matrix).
  void fill_next_mask(std::span<std::uint32_t> out) const;
  // Advances by `token`; false (state unchanged) when the constraint does not allow it, or when
  // reading it failed the matcher (failure() says why).
  bool accept(TokenId token);
  // Undoes the last `num_tokens` accepted tokens (a stop token included).
  void rollback(int32_t num_tokens);
  bool ended() const { return ended_; }  // a stop token accepted
  // Why the constraint gave up (GrammarAmbiguityError's message); empty while it holds.
  const std::string& failure() const { return failure_; }
  // The text so far is a whole match (a stop token would be allowed).
  bool can_end() const;
  int32_t vocab_words() const { return (cache_->vocab_size() + 31) / 32; }
  int32_t num_accepted() const { return static_cast<int32_t>(history_.size()); }

 private:
  std::shared_ptr<TokenMaskCache> cache_;
  std::vector<TokenId> stop_tokens_;
  int32_t state_;                          // a byte automaton's
  std::optional<GrammarMatcher> grammar_;  // or a grammar's parse
  bool ended_ = false;
  mutable std::string failure_;   // set by fill_next_mask() too, where the grammar's masks are computed
  std::vector<int32_t> history_;  // before each accepted token: the state (a grammar: 0)
};

}  // namespace pagedllm::structured
