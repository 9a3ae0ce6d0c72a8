// An executor without a model: every sampled token is a fixed function of (request, sample,
// position, previous token), so any schedule of the same requests yields the same tokens. Of the
// logits processors it honours min_tokens and structured outputs' masks (a held-back or refused
// token becomes the next id allowed); it has no logits for logit_bias, allowed_token_ids or bad
// words to act on, and ignores them. It
// also simulates the KV memory (one fingerprint of the prefix per slot, in both tiers), applies
// the plan's swaps and copies to it, and checks that every sequence reads exactly its own prefix
// through its block table: a wrong prefix hit, a missing copy-on-write or a lost swap throws.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/engine/executor.h"
#include "core/kv/kv_cache_config.h"

namespace pagedllm::engine {

struct ScriptedExecutorConfig {
  int32_t vocab_size = 32000;
  std::optional<TokenId> eos_token_id;
  int32_t eos_period = 0;           // > 0: about one token in eos_period is EOS
  double seconds_per_step = 0.010;  // reported step time: fixed part
  double seconds_per_token = 1e-5;  // plus this per batched token
  bool verify_kv = true;            // simulate KV memory and check every read (O(context) per step)
  // Speculative decoding in the simulator (spec::SimulatedAcceptance): proposal j of a draft is
  // accepted with probability accepted_per_position[j] overall (a drawn fraction of the drafts
  // that got that far), whatever it is; empty: accepted only where the script agrees with it.
  std::vector<double> accepted_per_position;
  uint64_t acceptance_seed = 0;  // the acceptance draws' stream (SimulatedAcceptance::seed)
};

class ScriptedExecutor final : public Executor {
 public:
  ScriptedExecutor(const ScriptedExecutorConfig& config, const kv::KvCacheConfig& cache);

  sched::StepResult execute(const sched::StepPlan& plan) override;
  void recycle(sched::StepResult&& result) override;  // keeps the outputs' buffers for reuse
  std::string name() const override { return "scripted"; }
  // It samples from the last token alone; only its KV check (verify_kv) reads every token.
  bool reads_prompt_tokens() const override { return config_.verify_kv; }

  // The token sample `sample` of `request` takes at `position`, after `previous`.
  TokenId scripted_token(sched::RequestId request, int32_t sample, int32_t position, TokenId previous) const;

  int64_t num_steps() const { return num_steps_; }
  int64_t num_kv_reads_checked() const { return num_kv_reads_checked_; }

 private:
  void apply_block_operations(const sched::StepPlan& plan);
  void write_kv(const sched::ScheduledSequence& scheduled);
  void check_kv(const sched::ScheduledSequence& scheduled);
  void sample(const sched::ScheduledSequence& scheduled, sched::SequenceOutput& output) const;
  // A verify pass: the script's token at each proposal's position, accepted while it equals the
  // proposal; with accepted_per_position, accepted at those rates instead.
  void verify(const sched::ScheduledSequence& scheduled, sched::SequenceOutput& output) const;
  // One token of sample `sample` at `position` after `previous`, appended to the output (with its
  // top logprobs when asked); returns it.
  TokenId draw(const sched::ScheduledSequence& scheduled, int32_t sample, int32_t position, TokenId previous,
               sched::SequenceOutput& output) const;
  // The script's token as min_tokens and the output constraint let it through.
  TokenId allowed(const sched::ScheduledSequence& scheduled, int32_t position, TokenId token) const;
  float logprob_of(const sched::ScheduledSequence& scheduled, int32_t sample, int32_t rank, int32_t position,
                   TokenId previous) const;

  ScriptedExecutorConfig config_;
  int32_t block_size_;
  int32_t sliding_window_;              // the KV cache's: check_kv reads what attention would
  std::vector<uint64_t> device_slots_;  // prefix fingerprint per device slot
  std::vector<uint64_t> host_slots_;
  std::vector<uint64_t> scratch_prefix_;
  std::vector<sched::SequenceOutput> spare_outputs_;  // the last result's outputs, handed back by recycle()
  std::vector<sched::SequenceOutput> extra_outputs_;  // recycled outputs a step did not need
  int64_t num_steps_ = 0;
  int64_t num_kv_reads_checked_ = 0;
};

}  // namespace pagedllm::engine
