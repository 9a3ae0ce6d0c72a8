// The engine tests' harness: engine setups, random workloads, and runs checked step by step on a scripted executor.
#pragma once

#include <boost/test/unit_test.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <ostream>
#include <vector>

#include "core/engine/engine.h"
#include "core/engine/scripted_executor.h"
#include "core/kv/kv_event_log.h"
#include "core/spec/speculative_config.h"

// Boost.Test prints finish reasons by name.
namespace boost::test_tools::tt_detail {
template <>
struct print_log_value<pagedllm::sched::FinishReason> {
  void operator()(std::ostream& out, pagedllm::sched::FinishReason reason) {
    out << pagedllm::sched::to_string(reason);
  }
};
}  // namespace boost::test_tools::tt_detail

namespace pagedllm::test {

using sched::FinishReason;
using sched::PreemptionMode;

inline constexpr TokenId kEos = 2;
inline constexpr TokenId kFirstPromptToken = 3;  // prompts never hold EOS

// --- configuration -----------------------------------------------------------------------------

struct EngineSetup {
  int32_t block_size = 4;
  int32_t num_device_blocks = 1024;
  int32_t num_host_blocks = 512;
  int32_t max_num_batched_tokens = 128;
  int32_t max_num_seqs = 64;
  int32_t max_model_len = 128;
  double watermark = 0.01;
  bool enable_prefix_caching = true;
  bool enable_chunked_prefill = true;
  std::optional<PreemptionMode> preemption_mode;  // absent: auto
  int32_t eos_period = 16;                        // 0: the executor never samples EOS
  double seconds_per_step = 0.010;
  double seconds_per_token = 1e-4;
  int32_t vocab_size = 1000;            // the script's output tokens (a small one repeats n-grams)
  spec::SpeculativeConfig speculative;  // off unless a test turns it on
  // With speculative.method draft_model: the draft, a scripted executor of this config (its own
  // KV reads checked too) over a cache of the target's block size and device blocks.
  std::optional<engine::ScriptedExecutorConfig> draft{};
  // The executor checks every KV read (it then reads every prompt token); off, it reads none and
  // the engine leaves synthetic prompts unwritten but for their last block, as the simulator's.
  bool verify_kv = true;
};

engine::EngineConfig engine_config(const EngineSetup& setup);

// A scripted executor that verifies every KV read, with the setup's EOS period and step times.
engine::ScriptedExecutorConfig executor_config(const EngineSetup& setup);

// A pool far too small for make_workload's workloads: every request fits alone, few fit together.
EngineSetup small_pool(std::optional<PreemptionMode> mode, bool chunked_prefill);

// --- workloads ---------------------------------------------------------------------------------

struct WorkloadSpec {
  uint64_t seed = 7;
  int32_t num_requests = 40;
  int32_t min_prompt = 5;
  int32_t max_prompt = 60;
  int32_t min_max_tokens = 5;
  int32_t max_max_tokens = 40;
  int32_t num_shared_prefixes = 3;  // some prompts start with one of these
  int32_t percent_parallel = 20;    // n = 2..3
  int32_t percent_beam = 10;        // beam_width 2..3
  int32_t percent_min_tokens = 15;
  int32_t percent_ignore_eos = 10;
};

std::vector<sched::Request> make_workload(const WorkloadSpec& spec);

bool has_beam_search(const std::vector<sched::Request>& requests);

// A request with a prompt of its own (no EOS in it).
sched::Request make_request(sched::RequestId id, int32_t prompt_length, int32_t max_tokens);

// --- running a workload ------------------------------------------------------------------------

// What a test needs to know of one executed plan.
struct PlanRecord {
  int64_t step = 0;
  std::vector<sched::RequestId> scheduled;  // distinct requests with a sequence in the plan
  std::vector<sched::RequestId> sampled;    // distinct requests with a sampled sequence
  int32_t num_sequences = 0;
  int32_t num_batched_tokens = 0;
  int32_t num_swap_out = 0;
  int32_t num_swap_in = 0;
  int32_t num_copies = 0;
  int64_t num_unstored_tokens = 0;  // summed over the plan's sequences
};

struct RunOptions {
  int32_t requests_per_step = 0;  // 0: every request arrives before the first step
  kv::KvEventLog* event_log = nullptr;
  int64_t max_steps = 20000;
};

struct RunResult {
  std::map<sched::RequestId, engine::RequestOutput> outputs;  // the final output of each request
  engine::EngineCounters counters;
  std::vector<engine::StepMetrics> step_metrics;
  std::vector<PlanRecord> plans;
  kv::KvStats kv_stats;
  double end_time = 0.0;
  int64_t num_steps = 0;
};

// Runs the requests to completion on a scripted executor that verifies every KV read, checking
// the scheduler's invariants after every step and that the KV cache ends empty.
RunResult run_workload(const EngineSetup& setup, const std::vector<sched::Request>& requests,
                       const RunOptions& options = {});

// Runs one request alone and returns its final output.
engine::RequestOutput run_one(const EngineSetup& setup, const sched::Request& request);

// --- comparing runs ----------------------------------------------------------------------------

// The same finished completions, token for token, for every request.
void check_same_tokens(const RunResult& expected, const RunResult& actual);

int64_t num_output_tokens(const RunResult& run);

std::ptrdiff_t index_of(const std::vector<TokenId>& tokens, TokenId token);

}  // namespace pagedllm::test
