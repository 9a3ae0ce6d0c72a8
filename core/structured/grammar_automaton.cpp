#include "core/structured/grammar_automaton.h"

#include <algorithm>
#include <string>

#include "core/structured/grammar_parser.h"

namespace pagedllm::structured {

int32_t PushdownGrammar::num_states() const {
  int32_t total = 0;
  for (const PushdownRule& rule : rules) total += rule.dfa.num_states();
  return total;
}

namespace {

// --- which rules stay rules --------------------------------------------------------------------

void collect_references(const Grammar& grammar, int32_t expr, std::vector<int32_t>& out) {
  const PatternExpr& node = grammar.exprs[static_cast<std::size_t>(expr)];
  if (node.kind == PatternExpr::Kind::rule_ref) out.push_back(node.rule);
  for (const int32_t child : node.children) collect_references(grammar, child, out);
}

// [rule]: the root, or a rule that can reach itself (a strongly connected component of the
// reference graph with a cycle in it); the others are expanded where they are used. Tarjan's
// algorithm, iterative: a grammar's rules may chain deeper than the call stack would allow.
std::vector<bool> rules_kept(const Grammar& grammar) {
  const std::size_t n = grammar.rules.size();
  std::vector<std::vector<int32_t>> uses(n);
  for (std::size_t r = 0; r < n; ++r) collect_references(grammar, grammar.rules[r].body, uses[r]);
  std::vector<bool> kept(n, false);
  kept[static_cast<std::size_t>(grammar.root)] = true;
  std::vector<int32_t> index(n, -1);
  std::vector<int32_t> low(n, 0);
  std::vector<char> on_stack(n, 0);
  std::vector<int32_t> component;                         // Tarjan's stack
  std::vector<std::pair<std::size_t, std::size_t>> path;  // (rule, next use to visit)
  int32_t next_index = 0;
  for (std::size_t begin = 0; begin < n; ++begin) {
    if (index[begin] >= 0) continue;
    path.push_back({begin, 0});
    while (!path.empty()) {
      auto& [r, next] = path.back();
      if (next == 0 && index[r] < 0) {
        index[r] = low[r] = next_index++;
        component.push_back(static_cast<int32_t>(r));
        on_stack[r] = 1;
      }
      if (next < uses[r].size()) {
        const auto use = static_cast<std::size_t>(uses[r][next++]);
        if (use == r) kept[r] = true;  // a rule that uses itself
        if (index[use] < 0) {
          path.push_back({use, 0});
        } else if (on_stack[use]) {
          low[r] = std::min(low[r], index[use]);
        }
        continue;
      }
      const std::size_t done = r;
      path.pop_back();
      if (!path.empty()) low[path.back().first] = std::min(low[path.back().first], low[done]);
      if (low[done] != index[done]) continue;
      std::vector<int32_t> members;
      do {
        members.push_back(component.back());
        on_stack[static_cast<std::size_t>(component.back())] = 0;
        component.pop_back();
      } while (members.back() != static_cast<int32_t>(done));
      if (members.size() > 1) {
        for (const int32_t member : members) kept[static_cast<std::size_t>(member)] = true;
      }
    }
  }
  return kept;
}

// --- analyses over the whole grammar -----------------------------------------------------------

// [state]: the states of `rule` that can reach its end, over byte edges and the calls of productive
// rules: a search backward from the accepting states, over each state's incoming edges.
std::vector<char> live_states(const PushdownRule& rule, const std::vector<bool>& productive) {
  const auto n = static_cast<std::size_t>(rule.dfa.num_states());
  std::vector<std::vector<int32_t>> incoming(n);  // [to]: the states with an edge into it
  for (std::size_t s = 0; s < n; ++s) {
    for (const int32_t to : rule.dfa.next[s]) {
      if (to != ByteDfa::kDead) incoming[static_cast<std::size_t>(to)].push_back(static_cast<int32_t>(s));
    }
    for (const CallEdge& call : rule.calls[s]) {
      if (productive[static_cast<std::size_t>(call.callee)]) {
        incoming[static_cast<std::size_t>(call.return_state)].push_back(static_cast<int32_t>(s));
      }
    }
  }
  std::vector<char> live(n, 0);
  std::vector<int32_t> pending;
  for (std::size_t s = 0; s < n; ++s) {
    if (rule.dfa.accepting[s]) {
      live[s] = 1;
      pending.push_back(static_cast<int32_t>(s));
    }
  }
  while (!pending.empty()) {
    const auto s = static_cast<std::size_t>(pending.back());
    pending.pop_back();
    for (const int32_t from : incoming[s]) {
      if (live[static_cast<std::size_t>(from)]) continue;
      live[static_cast<std::size_t>(from)] = 1;
      pending.push_back(from);
    }
  }
  return live;
}

// Keeps only the edges that can still lead to the end of their rule, where a call counts only if its
// callee can match some text: a token mask must never allow a prefix that leads nowhere. A rule is
// productive once its start is live; each round can make more rules productive, so the rounds
// repeat until none does (at most one round per rule).
void prune_dead_ends(PushdownGrammar& grammar) {
  const std::size_t num_rules = grammar.rules.size();
  std::vector<bool> productive(num_rules, false);
  std::vector<std::vector<char>> live(num_rules);
  for (bool changed = true; changed;) {
    changed = false;
    for (std::size_t r = 0; r < num_rules; ++r) {
      live[r] = live_states(grammar.rules[r], productive);
      if (live[r][static_cast<std::size_t>(grammar.rules[r].dfa.start)] && !productive[r]) {
        productive[r] = true;
        changed = true;
      }
    }
  }
  if (!productive[static_cast<std::size_t>(grammar.root)]) throw GrammarError("grammar: the root rule matches no text");
  for (std::size_t r = 0; r < num_rules; ++r) {
    PushdownRule& rule = grammar.rules[r];
    for (std::size_t s = 0; s < rule.calls.size(); ++s) {
      for (int32_t& to : rule.dfa.next[s]) {
        if (to != ByteDfa::kDead && !live[r][static_cast<std::size_t>(to)]) to = ByteDfa::kDead;
      }
      std::erase_if(rule.calls[s], [&](const CallEdge& call) {
        return !productive[static_cast<std::size_t>(call.callee)] ||
               !live[r][static_cast<std::size_t>(call.return_state)];
      });
    }
  }
}

// The states a rule reaches from its start without reading a byte (through calls of rules that
// can match the empty text).
std::vector<int32_t> empty_reach(const PushdownGrammar& grammar, std::size_t r, const std::vector<bool>& nullable) {
  const PushdownRule& rule = grammar.rules[r];
  std::vector<char> seen(static_cast<std::size_t>(rule.dfa.num_states()), 0);
  std::vector<int32_t> stack{rule.dfa.start};
  std::vector<int32_t> reached;
  seen[static_cast<std::size_t>(rule.dfa.start)] = 1;
  while (!stack.empty()) {
    const int32_t s = stack.back();
    stack.pop_back();
    reached.push_back(s);
    for (const CallEdge& call : rule.calls[static_cast<std::size_t>(s)]) {
      if (nullable[static_cast<std::size_t>(call.callee)] && !seen[static_cast<std::size_t>(call.return_state)]) {
        seen[static_cast<std::size_t>(call.return_state)] = 1;
        stack.push_back(call.return_state);
      }
    }
  }
  return reached;
}

void refuse_left_recursion(const PushdownGrammar& grammar) {
  const std::size_t num_rules = grammar.rules.size();
  std::vector<bool> nullable(num_rules, false);
  for (bool changed = true; changed;) {
    changed = false;
    for (std::size_t r = 0; r < num_rules; ++r) {
      if (nullable[r]) continue;
      for (const int32_t s : empty_reach(grammar, r, nullable)) {
        if (grammar.rules[r].dfa.accepting[static_cast<std::size_t>(s)]) nullable[r] = changed = true;
      }
    }
  }
  // first[r]: the rules r can push before reading a byte; a cycle among them is left recursion.
  std::vector<std::vector<int32_t>> first(num_rules);
  for (std::size_t r = 0; r < num_rules; ++r) {
    for (const int32_t s : empty_reach(grammar, r, nullable)) {
      for (const CallEdge& call : grammar.rules[r].calls[static_cast<std::size_t>(s)]) first[r].push_back(call.callee);
    }
  }
  std::vector<int8_t> mark(num_rules, 0);  // 0 unvisited, 1 on the path, 2 done
  std::vector<std::pair<int32_t, std::size_t>> path;
  for (std::size_t begin = 0; begin < num_rules; ++begin) {
    if (mark[begin]) continue;
    path.push_back({static_cast<int32_t>(begin), 0});
    mark[begin] = 1;
    while (!path.empty()) {
      auto& [r, next] = path.back();
      const auto& out = first[static_cast<std::size_t>(r)];
      if (next == out.size()) {
        mark[static_cast<std::size_t>(r)] = 2;
        path.pop_back();
        continue;
      }
      const int32_t callee = out[next++];
      if (mark[static_cast<std::size_t>(callee)] == 1) {
        throw GrammarError("grammar: rule '" + grammar.rules[static_cast<std::size_t>(callee)].name +
                           "' is left-recursive (it can reach itself before matching a character); "
                           "rewrite it with repetition, e.g. list ::= item (\",\" item)*");
      }
      if (mark[static_cast<std::size_t>(callee)] == 0) {
        mark[static_cast<std::size_t>(callee)] = 1;
        path.push_back({callee, 0});
      }
    }
  }
}

}  // namespace

PushdownGrammar compile_grammar(std::string_view text, const RegexLimits& limits) {
  const Grammar grammar = parse_grammar(text);
  const std::vector<bool> kept = rules_kept(grammar);
  std::vector<int32_t> rule_index(grammar.rules.size(), -1);
  PushdownGrammar automaton;
  for (std::size_t r = 0; r < grammar.rules.size(); ++r) {
    if (!kept[r]) continue;
    rule_index[r] = static_cast<int32_t>(automaton.rules.size());
    automaton.rules.emplace_back();
    automaton.rules.back().name = grammar.rules[r].name;
  }
  automaton.root = rule_index[static_cast<std::size_t>(grammar.root)];
  int32_t dfa_states_left = limits.max_dfa_states;
  int32_t nfa_states_left = limits.max_nfa_states;
  // A reference to a kept rule is a call edge; any other rule's body is built in its place.
  const ThompsonNfa::RuleRefBuilder rule_ref = [&](ThompsonNfa& nfa, int32_t rule) {
    if (!kept[static_cast<std::size_t>(rule)]) return nfa.build(grammar.rules[static_cast<std::size_t>(rule)].body);
    const ThompsonNfa::Fragment call{nfa.new_state(), nfa.new_state()};
    nfa.add_call(call.start, {rule_index[static_cast<std::size_t>(rule)], call.end});
    return call;
  };
  try {
    for (std::size_t r = 0; r < grammar.rules.size(); ++r) {
      if (!kept[r]) continue;
      ThompsonNfa builder(grammar.exprs, limits.max_nfa_states, nfa_states_left, rule_ref);
      const ThompsonNfa::Fragment whole = builder.build(grammar.rules[r].body);
      DeterministicAutomaton deterministic =
          determinize(builder.take(), whole.start, whole.end, limits.max_dfa_states, dfa_states_left);
      PushdownRule& rule = automaton.rules[static_cast<std::size_t>(rule_index[r])];
      rule.dfa = std::move(deterministic.dfa);
      rule.calls = std::move(deterministic.calls);
    }
  } catch (const AutomatonLimitError& error) {
    throw GrammarError(std::string("grammar: ") + error.what() +
                       "; rules used without recursion are expanded where they are used");
  }
  prune_dead_ends(automaton);
  refuse_left_recursion(automaton);
  for (PushdownRule& rule : automaton.rules) {
    rule.final.assign(static_cast<std::size_t>(rule.dfa.num_states()), false);
    for (std::size_t s = 0; s < rule.final.size(); ++s) {
      const bool no_byte_edge = std::all_of(rule.dfa.next[s].begin(), rule.dfa.next[s].end(),
                                            [](int32_t to) { return to == ByteDfa::kDead; });
      rule.final[s] = rule.dfa.accepting[s] && no_byte_edge && rule.calls[s].empty();
    }
  }
  return automaton;
}

}  // namespace pagedllm::structured
