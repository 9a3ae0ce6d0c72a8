// An EBNF grammar compiled to a pushdown automaton: each rule that takes part in a recursion (and
// the root) becomes a deterministic automaton over bytes whose edges may also call another rule;
// every other rule is expanded in place where it is used, so a grammar without recursion is one
// byte automaton and the stack holds recursion only.
//
// A parse is a stack of frames (rule, state). Reading a byte moves the top frame along its byte
// edge; a call edge (callee, return state) pushes the callee's start above the caller, which waits
// at the return state; a frame in an accepting state may pop. Left recursion (a rule that can reach
// itself before reading a byte) would push forever, so it is refused at compile time, as llama.cpp
// refuses it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/structured/byte_dfa.h"
#include "core/structured/regex_compiler.h"
#include "core/structured/thompson_nfa.h"

namespace pagedllm::structured {

struct PushdownRule {
  std::string name;
  ByteDfa dfa;                               // byte edges; dfa.accepting: the rule may end here
  std::vector<std::vector<CallEdge>> calls;  // [state]: the call edges out of it
  // [state]: accepting with no edge out. A call whose return state is final replaces its caller's
  // frame instead of stacking above it (a tail call), so right recursion keeps the stack flat.
  std::vector<bool> final;
};

struct PushdownGrammar {
  std::vector<PushdownRule> rules;
  int32_t root = 0;
  int32_t num_states() const;  // over all rules
};

// Throws GrammarError: the text's syntax (see grammar_parser.h), left recursion, a grammar that
// matches no text, or one past `limits` (states counted over all rules).
PushdownGrammar compile_grammar(std::string_view text, const RegexLimits& limits = {});

}  // namespace pagedllm::structured
