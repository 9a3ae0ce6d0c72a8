// Errors the KV cache manager reports to its callers. A refused call leaves the manager unchanged.
#pragma once

#include <stdexcept>
#include <string>

#include "core/common/types.h"

namespace pagedllm::kv {

class KvCacheError : public std::runtime_error {
 public:
  explicit KvCacheError(const std::string& message) : std::runtime_error(message) {}
};

// The operation is valid but the tier it needs has too few free blocks right now.
class KvCacheFullError : public KvCacheError {
 public:
  explicit KvCacheFullError(const std::string& message) : KvCacheError(message) {}
};

// How an error message names a sequence: "sequence 7".
inline std::string seq_name(SeqId seq) { return "sequence " + std::to_string(seq); }

}  // namespace pagedllm::kv
