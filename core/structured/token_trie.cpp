#include "core/structured/token_trie.h"

#include <algorithm>
#include <string_view>

namespace pagedllm::structured {

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

}  // namespace pagedllm::structured
