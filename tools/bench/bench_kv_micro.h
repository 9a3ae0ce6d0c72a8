// bench_kv's per-operation suite: each block-manager operation timed in batches on a warm manager.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "tools/bench/bench_kv_config.h"

namespace pagedllm::kv_bench {

using SampleMap = std::map<std::string, std::vector<double>>;  // op key -> ns/op of each batch

// The operations timed one by one, in print order. `has_target`: the 50 ns append target applies.
struct OpSpec {
  const char* key;
  const char* label;
  bool has_target;
};

inline constexpr OpSpec kOps[] = {
    {"append_slot", "append_slots 1 token, into current block (common)", true},
    {"append_fill", "append_slots 1 token that fills its block (hash)", false},
    {"append_new_block", "append_slots 1 token that opens a new block", false},
    {"append_amortized", "append_slots 1 token, amortized over 16", true},
    {"fresh_append_new_block", "  same, new block, fresh pool (no eviction)", false},
    {"fresh_append_amortized", "  same, amortized, fresh pool (no eviction)", true},
    {"allocate_miss", "allocate 512-token prompt, no prefix hit", false},
    {"free_unshared", "free a 512-token sequence, unshared", false},
    {"allocate_hit", "allocate 520-token prompt, 32/33 blocks hit", false},
    {"free_shared", "free a 520-token sequence, 32 blocks shared", false},
    {"match_hit", "match_prefix 520 tokens, 32 blocks hit", false},
    {"match_miss", "match_prefix 512 tokens, miss at block 0", false},
    {"fork", "fork a 520-token sequence (33 blocks)", false},
    {"cow_append", "append_slots 1 token, copy-on-write", false},
    {"swap_out", "swap_out a 4-sequence group (36 blocks)", false},
    {"swap_in", "swap_in a 4-sequence group (36 blocks)", false},
    {"swap_pair", "swap_out + swap_in, 4-sequence group", false},
};

struct MicroResults {
  SampleMap paged;
  SampleMap baseline;
};

// Runs the suite config.repeats times on each manager, pagedllm first, and pools the samples.
MicroResults run_micro(const BenchConfig& config);

}  // namespace pagedllm::kv_bench
