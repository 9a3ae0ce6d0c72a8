// Prompt lookup (vLLM's "ngram" proposer): a sequence's last n tokens, found earlier in its own
// prompt and output, propose the tokens that followed them there.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/common/types.h"

namespace pagedllm::spec {

struct NgramLookup {
  int32_t min_n = 1;  // the shortest suffix that may match
  int32_t max_n = 1;  // the longest suffix compared
};

// Replaces `proposals` with at most `max_proposals` tokens for `tokens` (the sequence so far): the
// tokens that follow an earlier occurrence of the longest suffix of `tokens` (min_n to max_n
// tokens long) that recurs. Among occurrences as long, the one followed by the most tokens (up to
// max_proposals), then the most recent: in a loop the latest occurrence is followed by a single
// token, an earlier one by a whole draft. Empty when no suffix of min_n tokens recurs.
// O(tokens x max_n) at worst, O(tokens) on text that does not repeat; allocates nothing once
// `proposals` has room.
void propose_ngram(std::span<const TokenId> tokens, const NgramLookup& lookup, int32_t max_proposals,
                   std::vector<TokenId>& proposals);

}  // namespace pagedllm::spec
