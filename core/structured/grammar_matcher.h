// Token masks of a pushdown grammar (grammar_automaton.h), and the per-sequence matcher.
//
// A parse position is a set of stacks: several parses of the text so far may be alive at once. The
// tokens one stack allows split the way XGrammar splits them:
//   - context-independent: decided by the top frame alone (the token's bytes stay inside the top
//     rule and whatever it calls). They are computed once per frame (rule, state) by one walk of
//     the vocabulary's trie, on first use, and kept: `accepted` and `uncertain` below.
//   - context-dependent (`uncertain`): the token's bytes run past the end of the top rule, so the
//     frames below decide. Each is checked against the whole stack at the step that needs it.
// A rule's end at the very start of a token needs no check: the set of stacks already holds the
// stack with that frame popped. Uncertain tokens are the few that straddle a rule's end, such as
// `",` after a string.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/structured/grammar_automaton.h"
#include "core/structured/grammar_parser.h"
#include "core/structured/token_trie.h"

namespace pagedllm::structured {

// A grammar so ambiguous that following it would keep more than GrammarMasks::kMaxLiveStacks
// parses alive at once. Found while a text is generated, not when the grammar compiles, so a
// TokenMatcher turns it into its failure() and the engine ends the request with the message.
class GrammarAmbiguityError : public GrammarError {
 public:
  using GrammarError::GrammarError;
};

// Stacks of frames in an append-only arena: a stack is the id of its top frame, and stacks share
// their lower frames. Frames pushed for a check that is thrown away are taken back with truncate().
class GrammarStacks {
 public:
  static constexpr int32_t kEmpty = -1;     // the empty stack: the root rule has ended
  static constexpr int32_t kBoundary = -2;  // under a one-frame walk's bottom frame (mask precomputation)

  struct Frame {
    int32_t rule = 0;
    int32_t state = 0;
    int32_t parent = kEmpty;  // the stack under this frame
    std::uint32_t hash = 0;   // of the whole stack (this frame and those under it)
  };

  int32_t push(int32_t rule, int32_t state, int32_t parent);
  const Frame& frame(int32_t id) const { return frames_[static_cast<std::size_t>(id)]; }
  // Whether two stacks hold the same frames (ids differ when the same stack was built twice). The
  // stacks' hashes settle most comparisons without walking them.
  bool same(int32_t a, int32_t b) const;
  int32_t size() const { return static_cast<int32_t>(frames_.size()); }
  void truncate(int32_t size) { frames_.resize(static_cast<std::size_t>(size)); }

 private:
  std::vector<Frame> frames_;
};

// One grammar's masks over one vocabulary, computed per frame on first use and kept. One per
// compiled constraint, shared by the sequences that use it; not thread-safe.
class GrammarMasks {
 public:
  // An ambiguous grammar can keep exponentially many parses alive (`s ::= "(" s s ")" s | ""`
  // after a run of "("): a set of stacks past this size throws GrammarAmbiguityError, from
  // step() and close() and so from mask computation and the matcher alike. Real grammars (JSON,
  // code, the schemas' grammars) keep a handful.
  static constexpr std::size_t kMaxLiveStacks = 1024;

  struct FrameMasks {
    TokenBitmask accepted;           // tokens the frame allows on its own
    std::vector<TokenId> uncertain;  // tokens whose bytes run past the frame's rule: check with the stack
  };

  GrammarMasks(std::shared_ptr<const PushdownGrammar> grammar, std::shared_ptr<const TokenTrie> trie);

  const PushdownGrammar& grammar() const { return *grammar_; }
  const TokenTrie& trie() const { return *trie_; }
  int32_t vocab_size() const { return trie_->vocab_size(); }
  const FrameMasks& frame_masks(int32_t rule, int32_t state);
  int32_t num_computed() const { return num_computed_; }

  // The mask of one whole stack (of `stacks`): its top frame's accepted tokens and those of its
  // uncertain ones that the stack reads. Kept by the stack's frames, most recently used first, up to
  // kMaxStackMaskBytes: a generation revisits the same contexts (inside a string in an array in an
  // object), so most steps read a kept mask.
  const TokenBitmask& stack_mask(GrammarStacks& stacks, int32_t stack);
  int64_t num_stack_masks_computed() const { return num_stack_masks_computed_; }

  // Adds to `out` (without repeats) the stacks reachable from `stack` without reading a byte that
  // can read one, and kEmpty where the root may end. Returns whether a frame popped past kBoundary.
  bool close(GrammarStacks& stacks, int32_t stack, std::vector<int32_t>& out) const;

  struct StepResult {
    bool read = false;     // some stack read the byte
    bool crossed = false;  // and then a frame popped past kBoundary
  };
  // The stacks of `from` after reading `byte`, closed, into `out` (cleared first).
  StepResult step(GrammarStacks& stacks, std::span<const int32_t> from, std::uint8_t byte,
                  std::vector<int32_t>& out) const;

 private:
  std::size_t flat(int32_t rule, int32_t state) const {
    return static_cast<std::size_t>(first_state_[static_cast<std::size_t>(rule)] + state);
  }
  FrameMasks compute(int32_t rule, int32_t state) const;
  // Whether the stack reads all of `bytes` (frames it pushes are taken back).
  bool reads(GrammarStacks& stacks, int32_t stack, std::string_view bytes) const;

  static constexpr std::size_t kMaxStackMaskBytes = std::size_t{8} << 20;
  using StackMask = std::pair<std::string, TokenBitmask>;  // (the stack's frames as bytes, its mask)

  std::shared_ptr<const PushdownGrammar> grammar_;
  std::shared_ptr<const TokenTrie> trie_;
  std::vector<int32_t> first_state_;  // [rule]: where its states start in the flat tables below
  std::vector<char> reads_;           // [flat state]: has a byte edge
  std::vector<char> moves_;           // [flat state]: has a call edge or may pop
  std::vector<FrameMasks> frames_;    // [flat state]
  std::vector<char> computed_;        // [flat state]
  int32_t num_computed_ = 0;
  std::list<StackMask> stack_masks_;  // most recently used first
  std::unordered_map<std::string, std::list<StackMask>::iterator> stack_mask_by_key_;
  int64_t num_stack_masks_computed_ = 0;
};

// One sequence's parse: its set of stacks, and the sets before each accepted token for rollback.
// Copy it to fork.
class GrammarMatcher {
 public:
  explicit GrammarMatcher(std::shared_ptr<GrammarMasks> masks);

  // Sets exactly the bits of the tokens the grammar allows next (no stop tokens) in `out`.
  void fill_mask(std::span<std::uint32_t> out) const;
  bool can_end() const;  // the text so far is a whole match
  // Advances by a token's bytes; false (unchanged) when no parse can read them. Throws
  // GrammarAmbiguityError (unchanged) when reading them would keep too many parses alive.
  bool accept(std::string_view bytes);
  void rollback(int32_t num_tokens);

 private:
  std::shared_ptr<GrammarMasks> masks_;
  mutable GrammarStacks stacks_;  // mask checks push frames and take them back
  std::vector<int32_t> current_;  // the stacks that can read a byte, and kEmpty where the text may end
  std::vector<std::vector<int32_t>> history_;
};

}  // namespace pagedllm::structured
