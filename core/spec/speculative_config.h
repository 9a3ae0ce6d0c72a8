// Speculative decoding's settings, as vLLM's --speculative-config JSON names them.
//
// A proposer guesses the next few tokens of a decoding sequence; the target model computes them
// all in one pass and keeps the longest run it agrees with, plus one token of its own (so a step
// yields 1 to num_speculative_tokens + 1 tokens). The n-gram proposer (vLLM's "ngram", prompt
// lookup) finds the sequence's last few tokens earlier in its own prompt and output and proposes
// what followed them there: no second model, useful where the output quotes its input. A draft
// model (vLLM's "draft_model") is a smaller model of the same tokenizer that decodes k tokens
// greedily ahead of the target (core/spec/draft_model_proposer.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pagedllm::spec {

// Measured on SmolLM2 and the CPU engine: speculative / plain decode 1.15x at batch 8, 1.01x at 16.
inline constexpr int32_t kDefaultDisableByBatchSize = 8;

enum class SpeculativeMethod : uint8_t { none, ngram, draft_model };

// The simulator's stand-in for a proposer and a target model, having neither: at a decode step a
// sequence has a draft with probability draft_rate (k placeholder tokens), and a draft's proposal j
// is accepted with probability accepted_per_position[j] (that of j - 1 and all before it being
// accepted is in it: the entries are what a real run measures, EngineCounters'
// spec_accepted_per_position / spec_drafts, and draft_rate is its spec_drafts / decode passes).
// With a draft model the simulator runs the draft's passes for real (priced by the draft's own
// cost model) and only the acceptance is drawn: draft_rate is 1.
struct SimulatedAcceptance {
  double draft_rate = 0.0;                    // in [0, 1]
  std::vector<double> accepted_per_position;  // k entries in [0, 1], non-increasing
  // The draws' stream ("simulated_seed"; the engine-wide config's only): runs that differ in it
  // show the spread the draws alone cause. 0 is the default stream.
  uint64_t seed = 0;
};
const char* to_string(SpeculativeMethod method);

struct SpeculativeConfig {
  SpeculativeMethod method = SpeculativeMethod::none;
  int32_t num_speculative_tokens = 0;  // k: proposals per step and sequence (>= 1 when on)
  // ngram: the longest and shortest suffix of the sequence looked up (vLLM's defaults: both 5
  // when neither is given, the other's value when one is).
  int32_t prompt_lookup_min = 0;
  int32_t prompt_lookup_max = 0;
  // draft_model: the draft ("model", a path or a fetched model's name, as --model takes), which the
  // frontend opens and runs on an executor of the target's kind.
  std::string draft_model{};
  // No proposals while more requests than this run (0 = always propose). vLLM's knob; its default
  // here is measured, not vLLM's (none): on the CPU engine a verify pass of k + 1 tokens costs
  // about what k + 1 decodes of other requests in the batch would, so speculation pays at small
  // batches only (docs/BENCHMARKS.md, "Speculative decoding").
  int32_t disable_by_batch_size = kDefaultDisableByBatchSize;
  // Only for the simulator ("simulated_draft_rate", "simulated_acceptance"): drafts and their
  // acceptance drawn from measured rates instead of proposed and verified.
  std::optional<SimulatedAcceptance> simulated{};

  bool enabled() const { return method != SpeculativeMethod::none; }
};

// Parses --speculative-config's JSON object: "method" ("ngram" or "draft_model"; a "model"
// without a method is a draft model, as in vLLM), "model", "num_speculative_tokens",
// "prompt_lookup_min", "prompt_lookup_max" (ngram), "disable_by_batch_size" (null: never), and for the
// simulator "simulated_draft_rate" with "simulated_acceptance" (one rate per proposal; a draft
// model takes "simulated_acceptance" alone) and "simulated_seed". Throws std::invalid_argument
// naming the field at fault (an unknown key, a wrong type, a value out of range, a method this build does not run).
SpeculativeConfig parse_speculative_config(std::string_view json);

// Checks the settings against the engine's step budget: a sequence's verify pass (k + 1 tokens)
// must fit max_num_batched_tokens. Throws std::invalid_argument naming the field.
void validate(const SpeculativeConfig& config, int32_t max_num_batched_tokens);

// One line for logs and summaries, e.g. "ngram k=4 lookup 2-5" or "draft_model k=4 (draft.gguf)";
// "off" when disabled.
std::string describe(const SpeculativeConfig& config);

}  // namespace pagedllm::spec
