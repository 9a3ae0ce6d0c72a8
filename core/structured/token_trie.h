// The model's vocabulary as constraints see it: each token's bytes, in a trie that a mask walk
// visits once per shared prefix, and the bitmask layout masks are written in.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/common/types.h"
#include "core/structured/byte_dfa.h"

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
class TokenTrie {
 public:
  // token_bytes[id]: the token's bytes; empty for a special token (never allowed by a constraint).
  explicit TokenTrie(const std::vector<std::string>& token_bytes);

  int32_t vocab_size() const { return static_cast<int32_t>(token_bytes_.size()); }
  int32_t num_nodes() const { return static_cast<int32_t>(byte_.size()); }
  const std::string& bytes(TokenId token) const { return token_bytes_[static_cast<std::size_t>(token)]; }

  int32_t max_depth() const { return max_depth_; }

  // Sets in `mask` the bit of every token whose bytes the automaton can read from `state`.
  void add_allowed(const ByteDfa& dfa, int32_t state, TokenBitmask& mask) const;

  // The flat nodes, for walks of other automata (a grammar's): node n's last byte and its prefix's
  // length; the end of its subtree, [n, subtree_end(n)); the tokens whose bytes end at n.
  std::uint8_t node_byte(int32_t node) const { return byte_[static_cast<std::size_t>(node)]; }
  int32_t node_depth(int32_t node) const { return depth_[static_cast<std::size_t>(node)]; }
  int32_t subtree_end(int32_t node) const { return subtree_end_[static_cast<std::size_t>(node)]; }
  std::span<const TokenId> tokens_at(int32_t node) const { return tokens_between(node, node + 1); }
  // The tokens of nodes [first_node, end_node).
  std::span<const TokenId> tokens_between(int32_t first_node, int32_t end_node) const {
    const auto begin = static_cast<std::size_t>(first_token_[static_cast<std::size_t>(first_node)]);
    const auto end = static_cast<std::size_t>(first_token_[static_cast<std::size_t>(end_node)]);
    return std::span<const TokenId>(tokens_).subspan(begin, end - begin);
  }

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

}  // namespace pagedllm::structured
