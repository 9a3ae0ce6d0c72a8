// The profile's single figures, each from steps built to differ in that one thing:
//   sample          a chunk that ends its prompt (one sampled row) against one that does not;
//   sampling extras b decodes greedy, then with temperature 1, then as beams (per row);
//   block ops       plans of swaps or copies only, straight to the executor (per block);
//   step overhead   mixed steps (b decodes + a fresh chunk of n tokens, alternating with
//                   decode-only steps in one engine) against their parts: decodes + chunk -
//                   mixed, the chunk from the prefill table; the median over the shapes. Chunks
//                   are small so that their own noise does not swamp tens of microseconds.
#pragma once

#include "sim/profile_session.h"
#include "sim/step_profile.h"
#include "sim/step_profiler.h"

namespace pagedllm::sim::profiling {

double measure_sample_seconds(const StepProfilerConfig& config, const PromptMaker& prompts);

struct SamplingExtras {
  double random = 0.0;  // per row with temperature > 0, over greedy
  double beam = 0.0;    // per beam row (candidates with logprobs), over greedy
};
SamplingExtras measure_sampling_extras(const StepProfilerConfig& config, const PromptMaker& prompts);

struct BlockOperationSeconds {
  double swap_out = 0.0;
  double swap_in = 0.0;
  double copy = 0.0;
};
BlockOperationSeconds measure_block_operations(const StepProfilerConfig& config);

double measure_step_overhead(const StepProfilerConfig& config, const PromptMaker& prompts, const ProfileGrid& prefill);

}  // namespace pagedllm::sim::profiling
