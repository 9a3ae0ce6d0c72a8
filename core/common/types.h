// Identifiers shared by every part of pagedllm.
#pragma once

#include <cstdint>

namespace pagedllm {

using TokenId = int32_t;  // index into the model's vocabulary
using SeqId = int64_t;    // one sequence (one sample of a request); never reused within an engine

}  // namespace pagedllm
