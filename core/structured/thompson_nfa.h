// The construction a regex and each rule of a grammar share: an expression tree (what both parsers
// write) to a Thompson NFA over bytes, and that NFA to a deterministic automaton by subset
// construction. A grammar's automata also have call edges (a rule reference kept as a call), which
// the subset construction treats as one more kind of symbol.
#pragma once

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <utility>
#include <vector>

#include "core/structured/byte_dfa.h"
#include "core/structured/code_point_set.h"

namespace pagedllm::structured {

struct PatternExpr {
  enum class Kind { empty, set, rule_ref, concat, alternate, repeat };
  Kind kind = Kind::empty;
  CodePointSet set;               // set: one character from it
  int32_t rule = -1;              // rule_ref (grammars only): an index into the grammar's rules
  std::vector<int32_t> children;  // concat / alternate: in order; repeat: the one repeated
  int32_t min = 0;                // repeat
  int32_t max = -1;               // repeat; -1 = no upper bound
};

struct CallEdge {
  int32_t callee = 0;        // the rule pushed
  int32_t return_state = 0;  // the caller's state once the callee pops
};

struct NfaState {
  std::vector<int32_t> epsilon;
  std::vector<std::pair<ByteRange, int32_t>> edges;
  std::vector<CallEdge> calls;
};

// An automaton past its budget of states, or an expression nested past kMaxDepth: each compiler
// turns it into its own error (RegexError, GrammarError). The message reads "too large: ..." or
// "too deep: ...".
class AutomatonLimitError : public std::length_error {
 public:
  using std::length_error::length_error;
};

class ThompsonNfa {
 public:
  struct Fragment {
    int32_t start = 0;
    int32_t end = 0;  // no edge out until the fragment is joined to another
  };
  // What a rule reference becomes: a call edge, or the rule's body built in place.
  using RuleRefBuilder = std::function<Fragment(ThompsonNfa& nfa, int32_t rule)>;
  static constexpr int32_t kMaxDepth = 2000;  // expressions (and rules built in place) nest no deeper

  // states_left: the NFA states this automaton may still take, out of max_states (a grammar's
  // rules share one budget).
  ThompsonNfa(const std::vector<PatternExpr>& exprs, int32_t max_states, int32_t& states_left,
              RuleRefBuilder rule_ref = nullptr)
      : exprs_(exprs), max_states_(max_states), states_left_(states_left), rule_ref_(std::move(rule_ref)) {}

  Fragment build(int32_t expr);
  int32_t new_state();
  void link(int32_t from, int32_t to) { states_[static_cast<std::size_t>(from)].epsilon.push_back(to); }
  void add_call(int32_t from, CallEdge call) { states_[static_cast<std::size_t>(from)].calls.push_back(call); }
  std::vector<NfaState> take() { return std::move(states_); }

 private:
  Fragment build_node(const PatternExpr& node);

  const std::vector<PatternExpr>& exprs_;
  int32_t max_states_;
  int32_t& states_left_;
  RuleRefBuilder rule_ref_;
  std::vector<NfaState> states_;
  int32_t depth_ = 0;
};

struct DeterministicAutomaton {
  ByteDfa dfa;                               // byte edges; dfa.accepting from the NFA's accept state
  std::vector<std::vector<CallEdge>> calls;  // [state]: call edges out (none for a regex)
};

// Subset construction. states_left: the deterministic states it may still take, out of max_states
// (a grammar's rules share one budget); throws AutomatonLimitError past it.
DeterministicAutomaton determinize(const std::vector<NfaState>& nfa, int32_t start, int32_t accept, int32_t max_states,
                                   int32_t& states_left);

}  // namespace pagedllm::structured
