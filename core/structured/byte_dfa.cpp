#include "core/structured/byte_dfa.h"

namespace pagedllm::structured {

int32_t ByteDfa::walk(int32_t state, std::string_view bytes) const {
  for (const char c : bytes) {
    state = step(state, static_cast<std::uint8_t>(c));
    if (state == kDead) break;
  }
  return state;
}

bool ByteDfa::matches(std::string_view text) const {
  const int32_t end = walk(start, text);
  return end != kDead && accepting[static_cast<std::size_t>(end)];
}

}  // namespace pagedllm::structured
