// A deterministic automaton over bytes: what every output constraint compiles to (a regex, a
// choice, a JSON schema). The model's tokens are byte strings, so a token is allowed in a state
// exactly when walking its bytes from that state never reaches the dead state; the mask of a
// state depends on nothing else, which is what lets masks be computed once per state and cached.
//
// Texts are UTF-8: the compilers build automata whose accepted strings are well-formed UTF-8
// (no overlong forms, no surrogates), so a constrained output always decodes.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

namespace pagedllm::structured {

struct ByteDfa {
  static constexpr int32_t kDead = -1;

  std::vector<std::array<int32_t, 256>> next;  // [state][byte]: the next state, or kDead
  std::vector<bool> accepting;                 // [state]: the text so far is a whole match
  int32_t start = 0;

  int32_t num_states() const { return static_cast<int32_t>(next.size()); }
  int32_t step(int32_t state, std::uint8_t byte) const {
    return state == kDead ? kDead : next[static_cast<std::size_t>(state)][byte];
  }
  // The state after `bytes` from `state` (kDead once any byte is refused).
  int32_t walk(int32_t state, std::string_view bytes) const;
  bool matches(std::string_view text) const;
};

}  // namespace pagedllm::structured
