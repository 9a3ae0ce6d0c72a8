#include "core/structured/thompson_nfa.h"

#include <algorithm>
#include <array>
#include <map>
#include <string>

namespace pagedllm::structured {

int32_t ThompsonNfa::new_state() {
  if (--states_left_ < 0) {
    throw AutomatonLimitError("too large: more than " + std::to_string(max_states_) +
                              " automaton states (counted repeats are expanded)");
  }
  states_.emplace_back();
  return static_cast<int32_t>(states_.size()) - 1;
}

ThompsonNfa::Fragment ThompsonNfa::build(int32_t expr) {
  // Bounded: the construction recurses per level, and a client's pattern must not exhaust the stack.
  if (++depth_ > kMaxDepth) {
    throw AutomatonLimitError("too deep: expressions nest more than " + std::to_string(kMaxDepth) + " levels");
  }
  const Fragment fragment = build_node(exprs_[static_cast<std::size_t>(expr)]);
  --depth_;
  return fragment;
}

ThompsonNfa::Fragment ThompsonNfa::build_node(const PatternExpr& node) {
  switch (node.kind) {
    case PatternExpr::Kind::empty: {
      const int32_t state = new_state();
      return {state, state};
    }
    case PatternExpr::Kind::set: {
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
    case PatternExpr::Kind::rule_ref:
      if (!rule_ref_) throw std::logic_error("thompson nfa: a rule reference outside a grammar");
      return rule_ref_(*this, node.rule);
    case PatternExpr::Kind::concat: {
      Fragment whole = build(node.children.front());
      for (std::size_t i = 1; i < node.children.size(); ++i) {
        const Fragment next = build(node.children[i]);
        link(whole.end, next.start);
        whole.end = next.end;
      }
      return whole;
    }
    case PatternExpr::Kind::alternate: {
      const Fragment whole{new_state(), new_state()};
      for (const int32_t child : node.children) {
        const Fragment option = build(child);
        link(whole.start, option.start);
        link(option.end, whole.end);
      }
      return whole;
    }
    case PatternExpr::Kind::repeat: {
      const int32_t child = node.children.front();
      const int32_t start = new_state();
      int32_t end = start;
      for (int32_t i = 0; i < node.min; ++i) {  // the required copies
        const Fragment copy = build(child);
        link(end, copy.start);
        end = copy.end;
      }
      const int32_t after = new_state();
      if (node.max < 0) {  // then any number more
        const Fragment loop = build(child);
        link(end, loop.start);
        link(end, after);
        link(loop.end, loop.start);
        link(loop.end, after);
        return {start, after};
      }
      for (int32_t i = node.min; i < node.max; ++i) {  // the optional copies, each may stop
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

namespace {

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

}  // namespace

DeterministicAutomaton determinize(const std::vector<NfaState>& nfa, int32_t start, int32_t accept, int32_t max_states,
                                   int32_t& states_left) {
  DeterministicAutomaton out;
  ByteDfa& dfa = out.dfa;
  std::map<std::vector<int32_t>, int32_t> ids;
  std::vector<std::vector<int32_t>> sets;
  std::vector<char> seen(nfa.size(), 0);
  const auto intern = [&](std::vector<int32_t> set) {
    close_over_epsilon(nfa, set, seen);
    const auto [it, inserted] = ids.emplace(set, static_cast<int32_t>(sets.size()));
    if (inserted) {
      if (--states_left < 0) {
        throw AutomatonLimitError("too large: more than " + std::to_string(max_states) +
                                  " deterministic automaton states");
      }
      dfa.accepting.push_back(std::binary_search(set.begin(), set.end(), accept));
      sets.push_back(std::move(set));
      std::array<int32_t, 256> row;
      row.fill(ByteDfa::kDead);
      dfa.next.push_back(row);
      out.calls.emplace_back();
    }
    return it->second;
  };
  dfa.start = intern({start});
  std::array<std::vector<int32_t>, 256> targets;
  std::map<int32_t, std::vector<int32_t>> call_targets;  // callee -> the states after it
  for (std::size_t index = 0; index < sets.size(); ++index) {
    for (std::vector<int32_t>& target : targets) target.clear();
    call_targets.clear();
    for (const int32_t state : sets[index]) {
      const NfaState& from = nfa[static_cast<std::size_t>(state)];
      for (const auto& [range, to] : from.edges) {
        for (int byte = range.lo; byte <= range.hi; ++byte) targets[static_cast<std::size_t>(byte)].push_back(to);
      }
      for (const CallEdge& call : from.calls) call_targets[call.callee].push_back(call.return_state);
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
      out.calls[index].push_back({callee, id});
    }
  }
  return out;
}

}  // namespace pagedllm::structured
