#include "core/structured/grammar_automaton.h"

#include <algorithm>
#include <array>
#include <map>

#include "core/structured/code_point_set.h"
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
  const GrammarExpr& node = grammar.exprs[static_cast<std::size_t>(expr)];
  if (node.kind == GrammarExpr::Kind::rule_ref) out.push_back(node.rule);
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

// --- Thompson automaton of one rule: byte edges, call edges, empty edges -----------------------

struct NfaState {
  std::vector<int32_t> epsilon;
  std::vector<std::pair<ByteRange, int32_t>> edges;
  std::vector<GrammarCall> calls;  // (callee, the state after it)
};

class RuleNfaBuilder {
 public:
  // nfa_states_left: what the grammar's rules may still take (RegexLimits::max_nfa_states over all).
  RuleNfaBuilder(const Grammar& grammar, const std::vector<bool>& kept, const std::vector<int32_t>& rule_index,
                 const RegexLimits& limits, int32_t& nfa_states_left)
      : grammar_(grammar), kept_(kept), rule_index_(rule_index), limits_(limits), states_left_(nfa_states_left) {}

  struct Fragment {
    int32_t start;
    int32_t end;
  };

  Fragment build(int32_t expr) {
    // Expressions nest as deep as groups and expanded rules do: bounded, so that a grammar cannot
    // exhaust the call stack.
    if (++depth_ > kMaxExpansionDepth) {
      throw GrammarError("grammar: too deep: expressions and the rules expanded into them nest more than " +
                         std::to_string(kMaxExpansionDepth) + " levels");
    }
    const Fragment fragment = build_node(grammar_.exprs[static_cast<std::size_t>(expr)]);
    --depth_;
    return fragment;
  }

 private:
  static constexpr int32_t kMaxExpansionDepth = 2000;

  Fragment build_node(const GrammarExpr& node) {
    switch (node.kind) {
      case GrammarExpr::Kind::empty: {
        const int32_t state = new_state();
        return {state, state};
      }
      case GrammarExpr::Kind::set: {
        const Fragment fragment{new_state(), new_state()};
        for (const std::vector<ByteRange>& sequence : utf8_sequences(node.set)) {
          int32_t from = fragment.start;
          for (std::size_t k = 0; k < sequence.size(); ++k) {
            const int32_t to = k + 1 == sequence.size() ? fragment.end : new_state();
            states_[static_cast<std::size_t>(from)].edges.push_back({sequence[k], to});
            from = to;
          }
        }
        return fragment;
      }
      case GrammarExpr::Kind::rule_ref: {
        if (!kept_[static_cast<std::size_t>(node.rule)]) {
          return build(grammar_.rules[static_cast<std::size_t>(node.rule)].body);  // no recursion: expand
        }
        const Fragment fragment{new_state(), new_state()};
        states_[static_cast<std::size_t>(fragment.start)].calls.push_back(
            {rule_index_[static_cast<std::size_t>(node.rule)], fragment.end});
        return fragment;
      }
      case GrammarExpr::Kind::concat: {
        Fragment whole = build(node.children.front());
        for (std::size_t i = 1; i < node.children.size(); ++i) {
          const Fragment next = build(node.children[i]);
          link(whole.end, next.start);
          whole.end = next.end;
        }
        return whole;
      }
      case GrammarExpr::Kind::alternate: {
        const Fragment whole{new_state(), new_state()};
        for (const int32_t child : node.children) {
          const Fragment option = build(child);
          link(whole.start, option.start);
          link(option.end, whole.end);
        }
        return whole;
      }
      case GrammarExpr::Kind::repeat: {
        const int32_t child = node.children.front();
        const int32_t start = new_state();
        int32_t end = start;
        for (int32_t i = 0; i < node.min; ++i) {
          const Fragment copy = build(child);
          link(end, copy.start);
          end = copy.end;
        }
        const int32_t after = new_state();
        if (node.max < 0) {
          const Fragment loop = build(child);
          link(end, loop.start);
          link(end, after);
          link(loop.end, loop.start);
          link(loop.end, after);
          return {start, after};
        }
        for (int32_t i = node.min; i < node.max; ++i) {
          link(end, after);
          const Fragment copy = build(child);
          link(end, copy.start);
          end = copy.end;
        }
        link(end, after);
        return {start, after};
      }
    }
    return {};
  }

  int32_t new_state() {
    if (--states_left_ < 0) {
      throw GrammarError("grammar: too large: its rules need more than " + std::to_string(limits_.max_nfa_states) +
                         " automaton states (rules used without recursion and counted repeats are expanded)");
    }
    states_.emplace_back();
    return static_cast<int32_t>(states_.size()) - 1;
  }
  void link(int32_t from, int32_t to) { states_[static_cast<std::size_t>(from)].epsilon.push_back(to); }

 public:
  std::vector<NfaState> take() { return std::move(states_); }

 private:
  const Grammar& grammar_;
  const std::vector<bool>& kept_;
  const std::vector<int32_t>& rule_index_;  // [grammar rule]: its index among the kept rules
  const RegexLimits& limits_;
  int32_t& states_left_;
  std::vector<NfaState> states_;
  int32_t depth_ = 0;
};

// --- subset construction over bytes and calls --------------------------------------------------

void close_over_epsilon(const std::vector<NfaState>& nfa, std::vector<int32_t>& set, std::vector<char>& seen) {
  std::vector<int32_t> stack(set.begin(), set.end());
  for (const int32_t state : set) seen[static_cast<std::size_t>(state)] = 1;
  while (!stack.empty()) {
    const int32_t state = stack.back();
    stack.pop_back();
    for (const int32_t next : nfa[static_cast<std::size_t>(state)].epsilon) {
      if (seen[static_cast<std::size_t>(next)]) continue;
      seen[static_cast<std::size_t>(next)] = 1;
      set.push_back(next);
      stack.push_back(next);
    }
  }
  for (const int32_t state : set) seen[static_cast<std::size_t>(state)] = 0;
  std::sort(set.begin(), set.end());
}

// states_left: the deterministic states the grammar's rules may still take (RegexLimits::max_dfa_states
// over all rules).
void determinize(const std::vector<NfaState>& nfa, int32_t nfa_start, int32_t nfa_accept, const RegexLimits& limits,
                 int32_t& states_left, PushdownRule& rule) {
  ByteDfa& dfa = rule.dfa;
  std::map<std::vector<int32_t>, int32_t> ids;
  std::vector<std::vector<int32_t>> sets;
  std::vector<char> seen(nfa.size(), 0);
  const auto intern = [&](std::vector<int32_t> set) {
    close_over_epsilon(nfa, set, seen);
    const auto [it, inserted] = ids.emplace(set, static_cast<int32_t>(sets.size()));
    if (inserted) {
      if (--states_left < 0) {
        throw GrammarError("grammar: too large: its rules need more than " + std::to_string(limits.max_dfa_states) +
                           " deterministic automaton states");
      }
      dfa.accepting.push_back(std::binary_search(set.begin(), set.end(), nfa_accept));
      sets.push_back(std::move(set));
      std::array<int32_t, 256> row;
      row.fill(ByteDfa::kDead);
      dfa.next.push_back(row);
      rule.calls.emplace_back();
    }
    return it->second;
  };
  dfa.start = intern({nfa_start});
  std::array<std::vector<int32_t>, 256> targets;
  for (std::size_t index = 0; index < sets.size(); ++index) {
    for (std::vector<int32_t>& target : targets) target.clear();
    std::map<int32_t, std::vector<int32_t>> call_targets;  // callee -> the states after it
    for (const int32_t state : sets[index]) {
      const NfaState& from = nfa[static_cast<std::size_t>(state)];
      for (const auto& [range, to] : from.edges) {
        for (int byte = range.lo; byte <= range.hi; ++byte) targets[static_cast<std::size_t>(byte)].push_back(to);
      }
      for (const GrammarCall& call : from.calls) call_targets[call.callee].push_back(call.return_state);
    }
    for (int byte = 0; byte < 256; ++byte) {
      std::vector<int32_t>& target = targets[static_cast<std::size_t>(byte)];
      if (target.empty()) continue;
      std::sort(target.begin(), target.end());
      target.erase(std::unique(target.begin(), target.end()), target.end());
      const int32_t id = intern(target);
      dfa.next[index][static_cast<std::size_t>(byte)] = id;
    }
    for (auto& [callee, target] : call_targets) {
      std::sort(target.begin(), target.end());
      target.erase(std::unique(target.begin(), target.end()), target.end());
      const int32_t id = intern(std::move(target));
      rule.calls[index].push_back({callee, id});
    }
  }
}

// --- analyses over the whole grammar -----------------------------------------------------------

// Keeps only the edges that can still lead to the end of their rule, where a call counts only if its
// callee can match some text: a token mask must never allow a prefix that leads nowhere.
void prune_dead_ends(PushdownGrammar& grammar) {
  const std::size_t num_rules = grammar.rules.size();
  std::vector<bool> productive(num_rules, false);
  std::vector<std::vector<char>> live(num_rules);
  for (bool changed = true; changed;) {
    changed = false;
    for (std::size_t r = 0; r < num_rules; ++r) {
      const PushdownRule& rule = grammar.rules[r];
      const auto n = static_cast<std::size_t>(rule.dfa.num_states());
      std::vector<char>& alive = live[r];
      alive.assign(n, 0);
      for (std::size_t s = 0; s < n; ++s) alive[s] = rule.dfa.accepting[s] ? 1 : 0;
      for (bool grew = true; grew;) {  // backward over byte edges and productive calls
        grew = false;
        for (std::size_t s = 0; s < n; ++s) {
          if (alive[s]) continue;
          bool reaches = false;
          for (const int32_t to : rule.dfa.next[s])
            reaches = reaches || (to != ByteDfa::kDead && alive[static_cast<std::size_t>(to)]);
          for (const GrammarCall& call : rule.calls[s]) {
            reaches = reaches || (productive[static_cast<std::size_t>(call.callee)] &&
                                  alive[static_cast<std::size_t>(call.return_state)]);
          }
          if (reaches) alive[s] = grew = 1;
        }
      }
      if (alive[static_cast<std::size_t>(rule.dfa.start)] && !productive[r]) productive[r] = changed = true;
    }
  }
  if (!productive[static_cast<std::size_t>(grammar.root)]) throw GrammarError("grammar: the root rule matches no text");
  for (std::size_t r = 0; r < num_rules; ++r) {
    PushdownRule& rule = grammar.rules[r];
    for (std::size_t s = 0; s < rule.calls.size(); ++s) {
      for (int32_t& to : rule.dfa.next[s]) {
        if (to != ByteDfa::kDead && !live[r][static_cast<std::size_t>(to)]) to = ByteDfa::kDead;
      }
      std::erase_if(rule.calls[s], [&](const GrammarCall& call) {
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
    for (const GrammarCall& call : rule.calls[static_cast<std::size_t>(s)]) {
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
      for (const GrammarCall& call : grammar.rules[r].calls[static_cast<std::size_t>(s)])
        first[r].push_back(call.callee);
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
  int32_t states_left = limits.max_dfa_states;
  int32_t nfa_states_left = limits.max_nfa_states;
  for (std::size_t r = 0; r < grammar.rules.size(); ++r) {
    if (!kept[r]) continue;
    RuleNfaBuilder builder(grammar, kept, rule_index, limits, nfa_states_left);
    const RuleNfaBuilder::Fragment whole = builder.build(grammar.rules[r].body);
    const std::vector<NfaState> nfa = builder.take();
    determinize(nfa, whole.start, whole.end, limits, states_left,
                automaton.rules[static_cast<std::size_t>(rule_index[r])]);
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
