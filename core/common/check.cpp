#include "core/common/check.h"

#include <cstdio>
#include <cstdlib>

namespace pagedllm::detail {

void assert_failed(const char* condition, const char* file, int line, const char* message) noexcept {
  std::fprintf(stderr, "pagedllm: invariant violated at %s:%d: %s (%s)\n", file, line, message, condition);
  std::fflush(stderr);
  std::abort();
}

}  // namespace pagedllm::detail
