#include "core/spec/ngram_proposer.h"

#include <algorithm>

namespace pagedllm::spec {

void propose_ngram(std::span<const TokenId> tokens, const NgramLookup& lookup, int32_t max_proposals,
                   std::vector<TokenId>& proposals) {
  proposals.clear();
  const auto length = static_cast<int64_t>(tokens.size());
  if (max_proposals <= 0 || lookup.min_n < 1 || length <= lookup.min_n) return;
  // A match ends just before `follow` (follow < length: something follows it); compare the tokens
  // before it with the sequence's suffix, backwards, up to max_n of them.
  int64_t best_follow = -1;
  int32_t best_n = 0;
  int64_t best_count = 0;  // tokens the best match can propose
  const TokenId* const suffix_end = tokens.data() + length;
  for (int64_t follow = length - 1; follow >= lookup.min_n; --follow) {
    if (tokens[static_cast<size_t>(follow - 1)] != suffix_end[-1]) continue;  // the common miss, first
    const int64_t limit = std::min<int64_t>(lookup.max_n, follow);
    int32_t n = 1;
    while (n < limit && tokens[static_cast<size_t>(follow - 1 - n)] == suffix_end[-1 - n]) ++n;
    const int64_t count = std::min<int64_t>(max_proposals, length - follow);
    if (n > best_n || (n == best_n && count > best_count)) {
      best_n = n;
      best_follow = follow;
      best_count = count;
      if (n == lookup.max_n && count == max_proposals) break;  // nothing earlier can do better
    }
  }
  if (best_n < lookup.min_n) return;
  proposals.assign(tokens.begin() + best_follow, tokens.begin() + best_follow + best_count);
}

}  // namespace pagedllm::spec
