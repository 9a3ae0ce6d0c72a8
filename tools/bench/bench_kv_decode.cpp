// The decode-step workload's driver (DecodeWorkload) and its interleaved runs of the three variants.
#include "tools/bench/bench_kv_decode.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <ios>
#include <ostream>
#include <span>
#include <streambuf>
#include <utility>
#include <vector>

#include "core/common/types.h"
#include "core/kv/kv_event_log.h"
#include "tools/bench/bench_kv_config.h"
#include "tools/bench/bench_kv_tokens.h"
#include "tools/bench/kv_baseline.h"
#include "tools/bench/kv_paged.h"

namespace pagedllm::kv_bench {
namespace {

// An ostream target that keeps only a byte count: the event log's formatting and write cost,
// without a buffer growing through the run.
class CountingNullBuffer : public std::streambuf {
 public:
  int64_t bytes() const { return bytes_; }

 protected:
  std::streamsize xsputn(const char* /*text*/, std::streamsize count) override {
    bytes_ += count;
    return count;
  }
  int_type overflow(int_type ch) override {
    ++bytes_;
    return traits_type::not_eof(ch);
  }

 private:
  int64_t bytes_ = 0;
};

// The block work of the scheduler's decode steps: each step some sequences finish and are freed,
// every running sequence gets a slot for one token (try_append: one call in pagedllm, nano-vllm's
// can_append then append in the baseline), and new prompts take the free slots (try_allocate). Only that work is timed;
// picking who finishes and building the new prompts happens before the clock starts.
template <typename Kv>
class DecodeWorkload {
 public:
  DecodeWorkload(Kv& kv, const BenchConfig& config)
      : kv_(kv),
        config_(config),
        tokens_(config.seed, config.shared_prefix_tokens),
        slots_(static_cast<size_t>(config.sequences), kNoSeq) {}

  // Fills every slot with a sequence some decode tokens old, so that block boundaries fall on
  // different steps, as in a server that has been running.
  void admit_initial() {
    std::vector<TokenId> prompt(static_cast<size_t>(config_.prompt_tokens));
    for (SeqId& slot : slots_) {
      tokens_.fill_prompt(prompt, tokens_.chance(config_.shared_fraction));
      if (!kv_.try_allocate(next_seq_, prompt)) continue;
      slot = next_seq_++;
      const auto age = static_cast<int32_t>(tokens_.random() % static_cast<uint64_t>(config_.max_initial_age));
      int32_t grown = 0;
      while (grown < age && kv_.try_append(slot, next_decode_token())) ++grown;
    }
  }

  // Untimed: the first sequences, then the warm-up steps.
  void start() {
    admit_initial();
    run(config_.warmup_steps, nullptr);
  }

  // One untimed step (the caches were just used by another variant), then `steps` timed ones.
  void run_timed(int32_t steps) {
    run(1, nullptr);
    run(steps, &run_);
  }

  DecodeRun take_run() { return std::move(run_); }

 private:
  // Runs `steps` steps, recording their times and counters into `record` when given.
  void run(int32_t steps, DecodeRun* record) {
    counters_ = record != nullptr ? &record->counters : &untimed_counters_;
    for (int32_t i = 0; i < steps; ++i) {
      plan_step();
      kv_.begin_step(step_++);
      const auto start = Clock::now();
      const uint64_t acc = execute_step();
      const auto stop = Clock::now();
      consume(acc);
      if (record != nullptr) record->step_ns.push_back(elapsed_ns(start, stop));
    }
  }

  TokenId next_decode_token() { return tokens_.decode_token(decode_cursor_++); }

  std::span<const TokenId> admission_prompt(size_t index) const {
    const auto length = static_cast<size_t>(config_.prompt_tokens);
    return std::span(prompts_).subspan(index * length, length);
  }

  // Untimed: picks the sequences that finish this step (finish_fraction of them on average) and
  // builds a prompt for every slot that will be empty.
  void plan_step() {
    finishing_.clear();
    finish_credit_ += config_.finish_fraction * config_.sequences;
    const auto count = static_cast<int32_t>(finish_credit_);
    finish_credit_ -= count;
    for (int32_t k = 0; k < count; ++k) {
      const size_t slot = tokens_.random() % slots_.size();
      if (slots_[slot] == kNoSeq || std::find(finishing_.begin(), finishing_.end(), slot) != finishing_.end()) continue;
      finishing_.push_back(slot);
    }
    admitting_ = finishing_;
    for (size_t slot = 0; slot < slots_.size(); ++slot) {
      if (slots_[slot] == kNoSeq) admitting_.push_back(slot);  // deferred or preempted earlier
    }
    const auto length = static_cast<size_t>(config_.prompt_tokens);
    prompts_.resize(admitting_.size() * length);
    for (size_t k = 0; k < admitting_.size(); ++k) {
      tokens_.fill_prompt(std::span(prompts_).subspan(k * length, length), tokens_.chance(config_.shared_fraction));
    }
  }

  // Timed: the block work of one step, in the scheduler's order (finished, running, waiting), with
  // the time of each phase added to the counters.
  uint64_t execute_step() {
    const auto start = Clock::now();
    free_finished();
    const auto freed = Clock::now();
    const uint64_t acc = decode_running();
    const auto decoded = Clock::now();
    admit_waiting();
    const auto admitted = Clock::now();
    counters_->phase_ns[kFreePhase] += elapsed_ns(start, freed);
    counters_->phase_ns[kDecodePhase] += elapsed_ns(freed, decoded);
    counters_->phase_ns[kAdmitPhase] += elapsed_ns(decoded, admitted);
    return acc;
  }

  void free_finished() {
    for (const size_t slot : finishing_) {
      kv_.free(slots_[slot]);
      slots_[slot] = kNoSeq;
    }
  }

  uint64_t decode_running() {
    uint64_t acc = 0;
    for (SeqId& seq : slots_) {
      if (seq == kNoSeq) continue;
      if (const std::optional<int64_t> appended = kv_.try_append(seq, next_decode_token())) {
        acc += static_cast<uint64_t>(*appended);
        ++counters_->appends;
      } else {
        kv_.free(seq);  // preempted (by recompute): its slot is refilled by a new prompt
        seq = kNoSeq;
        ++counters_->preemptions;
      }
    }
    return acc;
  }

  void admit_waiting() {
    for (size_t k = 0; k < admitting_.size(); ++k) {
      const std::span<const TokenId> prompt = admission_prompt(k);
      const std::optional<int32_t> cached = kv_.try_allocate(next_seq_, prompt);
      if (!cached) {
        ++counters_->deferred;
        continue;
      }
      const SeqId seq = next_seq_++;
      counters_->cached_tokens += *cached;
      slots_[admitting_[k]] = seq;
      ++counters_->admissions;
    }
  }

  Kv& kv_;
  const BenchConfig& config_;
  TokenSource tokens_;
  std::vector<SeqId> slots_;  // the running sequence of each batch slot, kNoSeq when empty
  std::vector<size_t> finishing_;
  std::vector<size_t> admitting_;
  std::vector<TokenId> prompts_;  // admitting_.size() prompts, back to back
  DecodeRun run_;
  DecodeCounters untimed_counters_;
  DecodeCounters* counters_ = &untimed_counters_;  // where the running steps count
  double finish_credit_ = 0.0;
  SeqId next_seq_ = 1;
  int64_t step_ = 0;
  uint64_t decode_cursor_ = 0;
};

void run_decode_repeat(const BenchConfig& config, DecodeResults& results) {
  CountingNullBuffer log_buffer;
  std::ostream log_stream(&log_buffer);
  kv::KvEventLog log(log_stream);
  PagedKv paged(config, nullptr);
  BaselineBlockManager baseline(config.device_blocks, kBlockSize);
  PagedKv paged_log(config, &log);
  DecodeWorkload<PagedKv> paged_work(paged, config);
  DecodeWorkload<BaselineBlockManager> baseline_work(baseline, config);
  DecodeWorkload<PagedKv> log_work(paged_log, config);
  paged_work.start();
  baseline_work.start();
  log_work.start();
  for (int32_t done = 0; done < config.steps; done += kChunkSteps) {
    const int32_t steps = std::min(kChunkSteps, config.steps - done);
    paged_work.run_timed(steps);
    baseline_work.run_timed(steps);
    log_work.run_timed(steps);
  }
  paged.manager().check_invariants();  // the workload drove the managers correctly
  paged_log.manager().check_invariants();
  DecodeRun paged_run = paged_work.take_run();
  paged_run.evictions = paged.manager().stats().evictions;
  DecodeRun log_run = log_work.take_run();
  log_run.evictions = paged_log.manager().stats().evictions;
  log_run.log_bytes = log_buffer.bytes();
  results.paged.add(std::move(paged_run));
  results.baseline.add(baseline_work.take_run());
  results.paged_log.add(std::move(log_run));
}

}  // namespace

DecodeResults run_decode_variants(const BenchConfig& config) {
  DecodeResults results;
  for (int32_t rep = 0; rep < config.repeats; ++rep) run_decode_repeat(config, results);
  return results;
}

}  // namespace pagedllm::kv_bench
