// The offline API on token ids, as vLLM's LLM.generate: requests in, run to completion, outputs
// back. With text (stop strings, detokenized outputs): frontend::generate.
#pragma once

#include <span>
#include <vector>

#include "core/engine/engine_config.h"
#include "core/engine/executor.h"
#include "core/engine/request_output.h"
#include "core/sched/sampling_params.h"

namespace pagedllm::engine {

struct GenerateRequest {
  std::vector<TokenId> prompt;
  sched::SamplingParams params;
  int32_t priority = 0;
};

// All requests arrive at time 0 (ids 0..n-1) and run on `executor` under a virtual clock that
// advances by the executor's step times. Returns one finished output per request, in input order.
// Throws sched::InvalidRequestError for an invalid request before running any, and for stop
// strings (they need text).
std::vector<RequestOutput> generate(std::span<const GenerateRequest> requests, Executor& executor,
                                    const EngineConfig& config);

}  // namespace pagedllm::engine
