// The tokens a byte automaton allows next, over a model's vocabulary, and the per-sequence matcher
// that walks the automaton as tokens are accepted.
//
// A token is its byte string (special tokens have none: a constraint never allows them, except
// the stop tokens (end-of-sequence) where the text so far is a whole match). Whether a token is allowed in a state
// depends on that state and the token's bytes alone, so a state's mask is computed once and kept:
// one walk of a trie of the vocabulary, which visits each shared prefix once and leaves a subtree
// at its first refused byte. (XGrammar splits tokens the same way into context-independent ones,
// decided per automaton state ahead of time, and context-dependent ones, checked at each step; a
// byte DFA has only the first kind.)
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/common/types.h"
#include "core/structured/byte_dfa.h"
#include "core/tokenizer/tokenizer.h"

namespace pagedllm::structured {

// One bit per token id, 32 to a word, bit (id % 32) of word (id / 32): the layout of XGrammar's and
// vLLM's bitmasks, so one upload format serves the CUDA sampler too.
using TokenBitmask = std::vector<std::uint32_t>;

// Over a whole mask or one row of a step's bitmask matrix (StepPlan::token_bitmask).
inline bool is_allowed(std::span<const std::uint32_t> mask, TokenId token) {
  return (mask[static_cast<std::size_t>(token) / 32] >> (static_cast<std::uint32_t>(token) % 32)) & 1u;
}
inline void allow(std::span<std::uint32_t> mask, TokenId token) {
  mask[static_cast<std::size_t>(token) / 32] |= 1u << (static_cast<std::uint32_t>(token) % 32);
}

// The vocabulary as a byte trie, stored flat in depth-first order (its nodes are the distinct
// prefixes of the token strings, in byte order): a node's subtree is the run of nodes after it up
// to subtree_end, so a walk skips a refused prefix's whole subtree with one jump and otherwise
// reads the arrays front to back (XGrammar walks its lexicographically sorted vocabulary the same
// way). Built once per model and shared by every constraint.
// A tokenizer's vocabulary as constraints see it, over `vocab_size` ids (a model's logits may have
// more ids than its tokenizer: padding): each token's bytes, empty for special tokens and padding
// ids, so that no constraint allows them. What the server, `pagedllm token-masks` and the benchmark
// build their ConstraintCompiler (or TokenTrie) from.
std::vector<std::string> constraint_token_bytes(const tokenizer::Tokenizer& tokenizer, int32_t vocab_size);

class TokenTrie {
 public:
  // token_bytes[id]: the token's bytes; empty for a special token (never allowed by a constraint).
  explicit TokenTrie(const std::vector<std::string>& token_bytes);

  int32_t vocab_size() const { return static_cast<int32_t>(token_bytes_.size()); }
  int32_t num_nodes() const { return static_cast<int32_t>(byte_.size()); }
  const std::string& bytes(TokenId token) const { return token_bytes_[static_cast<std::size_t>(token)]; }

  // Sets in `mask` the bit of every token whose bytes the automaton can read from `state`.
  void add_allowed(const ByteDfa& dfa, int32_t state, TokenBitmask& mask) const;

 private:
  // [node], in depth-first order; the root (no bytes) is not stored.
  std::vector<std::uint8_t> byte_;    // the last byte of the node's prefix
  std::vector<int32_t> depth_;        // the prefix's length (>= 1)
  std::vector<int32_t> subtree_end_;  // one past the node's last descendant
  std::vector<int32_t>
      first_token_;  // [node + 1]: the node's tokens are tokens_[first_token_[node], first_token_[node + 1])
  std::vector<TokenId> tokens_;  // the tokens whose bytes end at each node, by node
  int32_t max_depth_ = 0;
  std::vector<std::string> token_bytes_;  // [token id]
};

// The masks of one automaton, computed per state on first use and kept. One per compiled
// constraint, shared by the sequences that use it (parallel samples, beams); not thread-safe.
class TokenMaskCache {
 public:
  TokenMaskCache(std::shared_ptr<const ByteDfa> dfa, std::shared_ptr<const TokenTrie> trie);

  const ByteDfa& dfa() const { return *dfa_; }
  const TokenTrie& trie() const { return *trie_; }
  int32_t vocab_size() const { return trie_->vocab_size(); }
  const TokenBitmask& mask(int32_t state);
  int32_t num_computed() const { return num_computed_; }

 private:
  std::shared_ptr<const ByteDfa> dfa_;
  std::shared_ptr<const TokenTrie> trie_;
  std::vector<TokenBitmask> masks_;  // [state]; empty until computed
  int32_t num_computed_ = 0;
};

// One sequence's place in a constraint. Copy it to fork (parallel sampling, beams); roll it back
// when a preemption by recompute or a rejected speculation undoes tokens.
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
  // Advances by `token`; false (state unchanged) when the constraint does not allow it.
  bool accept(TokenId token);
  // Undoes the last `num_tokens` accepted tokens (a stop token included).
  void rollback(int32_t num_tokens);
  bool ended() const { return ended_; }  // a stop token accepted
  // The text so far is a whole match (a stop token would be allowed).
  bool can_end() const;
  int32_t vocab_words() const { return (cache_->vocab_size() + 31) / 32; }
  int32_t num_accepted() const { return static_cast<int32_t>(history_.size()); }

 private:
  std::shared_ptr<TokenMaskCache> cache_;
  std::vector<TokenId> stop_tokens_;
  int32_t state_;
  bool ended_ = false;
  std::vector<int32_t> history_;  // the state before each accepted token
};

}  // namespace pagedllm::structured
