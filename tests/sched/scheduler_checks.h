// Checks for the scheduler table tests: phase tables of the recorded steps, token comparisons, aborts.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "tests/sched/scheduler_harness.h"

namespace pagedllm::test {

// --- the tables --------------------------------------------------------------------------------
//
// A table lists phases, "steps a..b: these requests run with these token counts, these are
// preempted, this many blocks move", and must cover the recorded steps exactly.

struct Ran {
  RequestId request = 0;
  int32_t num_tokens = 0;  // summed over the request's sequences in the step
};

struct Preempted {
  RequestId request = 0;
  PreemptionMode mode = kRecompute;
};

// Steps first_step..last_step (inclusive) each look like this.
struct Phase {
  int64_t first_step = 0;
  int64_t last_step = 0;
  std::vector<Ran> ran;  // plan order
  std::vector<Preempted> preempted = {};
  int32_t swap_out = 0;  // blocks moved
  int32_t swap_in = 0;
  int32_t copies = 0;
};

std::string reason(FinishReason finish_reason);

const char* mode_name(PreemptionMode mode);

// The phases must cover the recorded steps exactly, in order.
void expect_phases(const std::vector<StepRecord>& steps, const std::vector<Phase>& phases);

// --- other checks ------------------------------------------------------------------------------

using Range = std::pair<int32_t, int32_t>;

// The [start, end) computed for `seq` in each step that ran it.
std::vector<Range> ranges_of(const std::vector<StepRecord>& steps, SeqId seq);

std::string render(const std::vector<Range>& ranges);

bool decodes_come_first(const StepRecord& record);

std::vector<kv::BlockId> table_of(const kv::KvCacheManager& kv, SeqId seq);

std::vector<std::vector<TokenId>> completion_tokens(const engine::RequestOutput& output);

// Each of `ids` finished with the tokens of the same requests run on an ample pool.
void expect_same_tokens(const Harness& harness, const std::vector<RequestSpec>& specs,
                        const std::vector<RequestId>& ids);

// Distinct blocks the sequences hold, per tier.
struct HeldBlocks {
  int32_t device = 0;
  int32_t host = 0;
};

// Aborts `id` and checks that its blocks are free at once and that the next step reports it.
void abort_and_check(Harness& harness, RequestId id, HeldBlocks expected_held);

}  // namespace pagedllm::test
