// Invariant checks that stay on in every build type.
//
// PAGEDLLM_ASSERT guards internal invariants (a broken one is a bug in pagedllm): it prints
// the condition, the place and a message, then aborts, so sanitizer and debug runs stop at the
// first corruption. Checks of caller input throw instead (see the *Error types of each module).
// PAGEDLLM_DEBUG_ASSERT is for checks that cost more than O(1); it compiles away under NDEBUG.
#pragma once

namespace pagedllm::detail {

[[noreturn]] void assert_failed(const char* condition, const char* file, int line, const char* message) noexcept;

}  // namespace pagedllm::detail

#define PAGEDLLM_ASSERT(condition, message)                                       \
  do {                                                                            \
    if (!(condition)) [[unlikely]]                                                \
      ::pagedllm::detail::assert_failed(#condition, __FILE__, __LINE__, message); \
  } while (false)

#ifdef NDEBUG
#define PAGEDLLM_DEBUG_ASSERT(condition, message) \
  do {                                            \
  } while (false)
#else
#define PAGEDLLM_DEBUG_ASSERT(condition, message) PAGEDLLM_ASSERT(condition, message)
#endif
