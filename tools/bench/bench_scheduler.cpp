// bench_scheduler: what the scheduler (core/sched) and the engine loop (core/engine) cost on the
// CPU per engine step, against the target (at most 100 us of scheduler plus block work per
// step with 1,024 running sequences; vLLM's Python scheduler spends milliseconds) and against
// floors measured in the same run, so that every figure comes with ratios taken side by side.
//
//   bench_scheduler [--steps N] [--sequences N] [--quick] [--json PATH]
//
// 1. steady decode: every request decodes; nothing finishes, nothing is preempted.
// 2. mixed stream: requests finish and are replaced, prompts share a prefix half the time, chunked
//    prefill under a 2,048-token budget, so steps carry prefill chunks and decodes.
// 3. KV pressure: the same stream over a pool too small for it: preemption by recompute and swap.
// Every step is timed on its own (std::chrono::steady_clock); the variants of a section take turns
// every few steps, so that noise from other processes falls on all of them. The workload is
// deterministic (fixed-seed std::mt19937_64); arrivals are built between steps, outside the timed
// region (they are the frontend's work). The binary replaces the global operator new to count
// heap allocations, so each variant also reports its allocations per timed step.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <new>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/common/mix.h"
#include "core/common/types.h"
#include "core/engine/clock.h"
#include "core/engine/engine.h"
#include "core/engine/executor.h"
#include "core/kv/kv_cache_config.h"
#include "core/kv/kv_cache_manager.h"
#include "core/sched/scheduler.h"
#include "core/sched/step_plan.h"
#include "tools/bench/bench_cli.h"
#include "tools/bench/bench_output.h"
#include "tools/bench/bench_timing.h"

// Every heap allocation of the process, counted (operator new[] and the nothrow forms go through
// this one; aligned forms are not used by the code under test).
namespace {
std::atomic<int64_t> g_heap_allocations{0};
}  // namespace

void* operator new(std::size_t size) {
  g_heap_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* memory = std::malloc(size == 0 ? 1 : size)) return memory;
  throw std::bad_alloc();
}
// GCC takes free() after its built-in idea of operator new for a mismatch; here both are ours.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void operator delete(void* memory) noexcept { std::free(memory); }
void operator delete(void* memory, std::size_t /*size*/) noexcept { std::free(memory); }
#pragma GCC diagnostic pop

namespace {

namespace engine = pagedllm::engine;
namespace kv = pagedllm::kv;
namespace sched = pagedllm::sched;
using pagedllm::mix64;
using pagedllm::SeqId;
using pagedllm::TokenId;
using namespace pagedllm::bench;  // clock, sink (consume), statistics, command line, output

constexpr double kStepTargetUs = 100.0;
constexpr int32_t kBlockSize = 16;
constexpr TokenId kVocabSize = 32'000;
constexpr TokenId kUniqueTokenBase = 1 << 24;  // one stamped token per prompt, outside the vocabulary

// The null model: the token sampled at `position` is a fixed function of (request, position).
TokenId null_token(int64_t request, int64_t position) {
  const uint64_t hash = mix64(static_cast<uint64_t>(request) << 32 ^ static_cast<uint64_t>(position));
  return static_cast<TokenId>(hash % static_cast<uint64_t>(kVocabSize));
}

// --- configuration -----------------------------------------------------------------------------

struct BenchConfig {
  int32_t steps = 1'000;       // timed steps per variant and section
  int32_t warmup_steps = 100;  // untimed, after the setup
  int32_t sequences = 1'024;   // requests kept in the system
  int32_t chunk_steps = 25;    // the variants of a section take turns every this many steps
  int32_t min_device_blocks = 100'000;
  int32_t max_num_batched_tokens = 2'048;
  int32_t pressure_blocks_per_seq = 8;  // section 3's pool, per request in the system
  uint64_t seed = 0x5eed'5c4e'd01eULL;
  bool quick = false;
  std::string json_path;
};

struct WorkloadSpec {
  int32_t population = 1'024;  // requests in the system: each one that finishes is replaced
  int32_t min_prompt = 960;
  int32_t max_prompt = 1'040;
  int32_t shared_prefix = 0;  // tokens of a system prompt that shared prompts start with
  double shared_fraction = 0.0;
  double finish_fraction = 0.0;  // > 0: max_tokens is geometric, so this fraction ends per step
  int32_t max_model_len = 2'048;
};

struct DriverSpec {
  WorkloadSpec workload;
  kv::KvCacheConfig cache;
  sched::SchedulerConfig scheduler;
};

// --- requests ----------------------------------------------------------------------------------

class RequestSource {
 public:
  RequestSource(const WorkloadSpec& spec, uint64_t seed) : spec_(spec), rng_(seed) {
    shared_.resize(static_cast<size_t>(spec.shared_prefix));
    for (TokenId& t : shared_) t = token();
  }

  sched::Request next(double now) {
    sched::Request request;
    request.id = next_id_++;
    request.arrival_time = now;
    const uint64_t spread = static_cast<uint64_t>(spec_.max_prompt - spec_.min_prompt + 1);
    const size_t length = static_cast<size_t>(spec_.min_prompt) + rng_() % spread;
    std::vector<TokenId>& prompt = request.prompt_tokens;
    prompt.reserve(length);
    if (uniform() < spec_.shared_fraction) {
      prompt.assign(shared_.begin(),
                    shared_.begin() + static_cast<std::ptrdiff_t>(std::min(shared_.size(), length - 1)));
    }
    prompt.push_back(kUniqueTokenBase + static_cast<TokenId>(request.id));  // no two prompts share more
    while (prompt.size() < length) prompt.push_back(token());
    request.params.max_tokens = max_tokens(static_cast<int32_t>(length));
    return request;
  }

 private:
  double uniform() { return static_cast<double>(rng_() >> 11) * 0x1.0p-53; }
  TokenId token() { return static_cast<TokenId>(rng_() % static_cast<uint64_t>(kVocabSize)); }

  int32_t max_tokens(int32_t prompt) {
    const int32_t room = spec_.max_model_len - prompt;
    if (spec_.finish_fraction <= 0.0) return room;
    // Geometric, hence memoryless: from the first step on, finish_fraction of the decoders end.
    const double draw = std::floor(std::log1p(-uniform()) / std::log1p(-spec_.finish_fraction));
    return static_cast<int32_t>(std::min(static_cast<double>(room), 1.0 + draw));
  }

  WorkloadSpec spec_;
  std::mt19937_64 rng_;
  std::vector<TokenId> shared_;
  sched::RequestId next_id_ = 0;
};

// --- what the timed steps did ------------------------------------------------------------------

struct Tally {
  int64_t steps = 0, scheduled = 0, batched_tokens = 0, prefill_tokens = 0, finished = 0;
  int64_t running = 0;  // summed over steps
  int64_t preempted_recompute = 0, preempted_swap = 0, blocks_swapped_out = 0, blocks_swapped_in = 0;
  uint64_t plan_hash = 0;  // the engine and the hand-applied scheduler must see the same plans

  void add(const sched::StepPlan& plan) {
    ++steps;
    scheduled += static_cast<int64_t>(plan.sequences.size());
    batched_tokens += plan.num_batched_tokens;
    prefill_tokens += plan.num_prefill_tokens;
    for (const sched::PreemptedGroup& p : plan.preempted) {
      ++(p.mode == sched::PreemptionMode::swap ? preempted_swap : preempted_recompute);
    }
    blocks_swapped_out += static_cast<int64_t>(plan.swap_out.size());
    blocks_swapped_in += static_cast<int64_t>(plan.swap_in.size());
    plan_hash = mix64(plan_hash ^ static_cast<uint64_t>(plan.num_batched_tokens) << 40 ^ plan.sequences.size() << 20 ^
                      static_cast<uint64_t>(plan.num_prefill_tokens) ^ plan.preempted.size() << 56 ^
                      plan.swap_out.size() << 48);
  }
};

// --- the systems under test --------------------------------------------------------------------

class Driver {
 public:
  virtual ~Driver() = default;
  virtual void refill() {}                       // arrivals between steps (untimed)
  virtual double step() = 0;                     // one step; ns of its "of which" part, or kNone
  virtual bool settled() const { return true; }  // setup done: nothing waits
  Tally& tally() { return tally_; }

 protected:
  Tally tally_;
};

// An executor that does no work: one token per sampled sequence, no KV memory, no verification.
// Like every executor of ours it fills the result the engine handed back (recycle) in place.
class NullExecutor final : public engine::Executor {
 public:
  sched::StepResult execute(const sched::StepPlan& plan) override {
    const auto start = Clock::now();
    sched::StepResult result;
    result.outputs = std::move(spare_outputs_);
    size_t used = 0;
    for (const sched::ScheduledSequence& s : plan.sequences) {
      if (!s.sample) continue;
      if (used == result.outputs.size()) result.outputs.emplace_back();
      sched::SequenceOutput& output = result.outputs[used++];
      output.seq = s.seq;
      output.samples.assign(1, sched::SampledToken{null_token(s.request, s.end), 0.0f});
      output.top_logprobs.clear();
    }
    result.outputs.resize(used);
    tally->add(plan);
    last_ns = elapsed_ns(start, Clock::now());
    return result;
  }
  void recycle(sched::StepResult&& result) override { spare_outputs_ = std::move(result.outputs); }
  std::string name() const override { return "null"; }

  Tally* tally = nullptr;
  double last_ns = 0.0;

 private:
  std::vector<sched::SequenceOutput> spare_outputs_;
};

// (a) The whole engine step: schedule, execute (null), apply, outputs.
class EngineDriver final : public Driver {
 public:
  EngineDriver(const DriverSpec& spec, uint64_t seed)
      : source_(spec.workload, seed), population_(spec.workload.population), engine_(config(spec), executor_, clock_) {
    executor_.tally = &tally_;
  }
  void refill() override {
    const sched::Scheduler& s = engine_.scheduler();
    for (int32_t n = s.num_running() + s.num_waiting() + s.num_swapped(); n < population_; ++n) {
      engine_.add_request(source_.next(static_cast<double>(engine_.num_steps())));
    }
  }
  double step() override {
    const std::vector<engine::RequestOutput>& outputs = engine_.step();
    uint64_t folded = outputs.size();
    for (const engine::RequestOutput& output : outputs) {
      tally_.finished += output.finished ? 1 : 0;
      folded += output.completions.empty() ? 0 : output.completions.front().tokens.size();
    }
    tally_.running += engine_.scheduler().num_running();
    consume(folded);
    return executor_.last_ns;
  }
  bool settled() const override { return engine_.scheduler().num_waiting() == 0; }

 private:
  static engine::EngineConfig config(const DriverSpec& spec) {
    engine::EngineConfig result;
    result.cache = spec.cache;
    result.scheduler = spec.scheduler;
    result.output_kind = engine::OutputKind::delta;  // what a streaming server asks for
    return result;                                   // step metrics on, as the engine runs by default
  }

  RequestSource source_;
  int32_t population_;
  NullExecutor executor_;
  engine::VirtualClock clock_;
  engine::Engine engine_;
};

// (b) Scheduler::schedule() and the engine's apply done by hand, reduced to what a null model
// leaves: computed-token counts, the sampled token, the stop on length, finishing.
class SchedulerDriver final : public Driver {
 public:
  SchedulerDriver(const DriverSpec& spec, uint64_t seed)
      : source_(spec.workload, seed),
        population_(spec.workload.population),
        max_model_len_(spec.scheduler.max_model_len),
        kv_(spec.cache),
        scheduler_(spec.scheduler, kv_) {}

  void refill() override {
    const int32_t n = scheduler_.num_running() + scheduler_.num_waiting() + scheduler_.num_swapped();
    for (int32_t i = n; i < population_; ++i) scheduler_.add(make_group(source_.next(static_cast<double>(step_))));
  }
  double step() override {
    const auto start = Clock::now();
    const sched::StepPlan plan = scheduler_.schedule(step_++, 0.0);
    const double schedule_ns = elapsed_ns(start, Clock::now());
    apply(plan);
    tally_.add(plan);
    tally_.running += scheduler_.num_running();
    return schedule_ns;
  }
  bool settled() const override { return scheduler_.num_waiting() == 0; }

 private:
  // As Engine::add_request, less the validation.
  std::unique_ptr<sched::SequenceGroup> make_group(sched::Request request) {
    return sched::make_sequence_group(std::move(request), next_seq_id_++);
  }

  // Releases and finishes in the engine's order, so that both see the same KV states and plans.
  void apply(const sched::StepPlan& plan) {
    finished_.clear();
    uint64_t folded = 0;
    for (const sched::ScheduledSequence& s : plan.sequences) {
      sched::SequenceGroup& group = *scheduler_.find(s.request);
      sched::Sequence& seq = group.seqs[static_cast<size_t>(s.sample_index)];
      seq.num_computed_tokens = s.end;
      if (!s.sample) continue;
      seq.tokens.push_back(null_token(s.request, s.end));
      folded += static_cast<uint64_t>(seq.tokens.back());
      if (seq.num_output_tokens() >= group.request.params.max_tokens || seq.num_tokens() >= max_model_len_) {
        seq.finish_reason = sched::FinishReason::length;
        scheduler_.release(seq);
        finished_.push_back(s.request);
      }
    }
    for (const sched::RequestId id : finished_) {
      scheduler_.finish(*scheduler_.find(id), sched::FinishReason::length);
      scheduler_.take_finished(id);
    }
    tally_.finished += static_cast<int64_t>(finished_.size());
    consume(folded);
  }

  RequestSource source_;
  int32_t population_;
  int32_t max_model_len_;
  kv::KvCacheManager kv_;
  sched::Scheduler scheduler_;
  int64_t step_ = 0;
  SeqId next_seq_id_ = 1;  // as the engine numbers them
  std::vector<sched::RequestId> finished_;
};

// The KV manager's own work in a decode step, as bench_kv times it: one try_append_slots each.
class KvDriver final : public Driver {
 public:
  KvDriver(const DriverSpec& spec, uint64_t seed) : kv_(spec.cache) {
    RequestSource source(spec.workload, seed);
    for (int32_t i = 0; i < spec.workload.population; ++i) {
      const sched::Request request = source.next(0.0);
      const auto length = static_cast<int32_t>(request.prompt_tokens.size());
      kv_.allocate(request.id, kv::PromptRef{request.prompt_tokens, 0}, length);
      seqs_.emplace_back(request.id, length);
    }
  }
  double step() override {
    uint64_t folded = 0;
    for (auto& [id, length] : seqs_) {
      const TokenId token = null_token(id, length++);
      copies_.clear();
      if (!kv_.try_append_slots({.seq = id, .tokens = std::span<const TokenId>(&token, 1)}, copies_)) {
        throw std::runtime_error("KV-only variant: the pool ran out");
      }
      folded += copies_.empty() ? 1 : static_cast<uint64_t>(copies_.front().dst);
    }
    ++tally_.steps;
    tally_.scheduled += static_cast<int64_t>(seqs_.size());
    consume(folded);
    return kNone;
  }

 private:
  std::vector<kv::BlockCopy> copies_;  // reused
  kv::KvCacheManager kv_;
  std::vector<std::pair<SeqId, int32_t>> seqs_;
};

// The irreducible work of a decode step: per sequence, read the block table's tail (where the new
// token's KV goes), take a fresh block id on a block boundary, append the token to the sequence.
class FloorDriver final : public Driver {
 public:
  FloorDriver(const DriverSpec& spec, uint64_t seed) {
    RequestSource source(spec.workload, seed);
    const auto capacity = static_cast<size_t>(spec.workload.max_model_len);
    for (int32_t i = 0; i < spec.workload.population; ++i) {
      sched::Request request = source.next(0.0);
      FloorSeq& seq = seqs_.emplace_back(FloorSeq{request.id, {}, std::move(request.prompt_tokens)});
      // Room for the whole run up front: the floor pays no reallocation (the scheduler's side does).
      seq.tokens.reserve(capacity);
      seq.block_table.reserve(capacity / kBlockSize + 1);
      while (seq.block_table.size() * kBlockSize < seq.tokens.size()) seq.block_table.push_back(next_block_++);
    }
  }
  double step() override {
    uint64_t folded = 0;
    for (FloorSeq& seq : seqs_) {
      const size_t position = seq.tokens.size();
      if (position % kBlockSize == 0) seq.block_table.push_back(next_block_++);
      folded += static_cast<uint64_t>(seq.block_table.back());
      seq.tokens.push_back(null_token(seq.id, static_cast<int64_t>(position)));
    }
    ++tally_.steps;
    tally_.scheduled += static_cast<int64_t>(seqs_.size());
    consume(folded);
    return kNone;
  }

 private:
  struct FloorSeq {
    int64_t id;
    std::vector<int32_t> block_table;
    std::vector<TokenId> tokens;
  };
  std::vector<FloorSeq> seqs_;
  int32_t next_block_ = 0;
};

// --- sections ----------------------------------------------------------------------------------

struct Variant {
  std::string name;
  std::string inner;  // what the "of which" column holds
  std::unique_ptr<Driver> driver;
  std::vector<double> step_ns;
  std::vector<double> inner_ns;
  int64_t heap_allocations = 0;  // in the timed steps
};

struct Section {
  std::string key;
  std::string title;
  std::string setup;
  int32_t settle_cap = 0;  // untimed steps at most until nothing waits (before the warm-up)
  std::vector<Variant> variants;
  std::vector<std::pair<size_t, size_t>> twins;  // (engine, scheduler) pairs that must see the same plans
};

DriverSpec driver_spec(const BenchConfig& config, const WorkloadSpec& workload, int32_t device_blocks,
                       int32_t host_blocks) {
  DriverSpec spec;
  spec.workload = workload;
  spec.cache.block_size = kBlockSize;  // default watermark (1%) and prefix caching on, as the engine runs
  spec.cache.num_device_blocks = device_blocks;
  spec.cache.num_host_blocks = host_blocks;
  spec.scheduler.max_num_batched_tokens = config.max_num_batched_tokens;
  spec.scheduler.max_num_seqs = config.sequences;
  spec.scheduler.max_model_len = workload.max_model_len;
  spec.scheduler.enable_chunked_prefill = true;
  return spec;
}

void add_twins(Section& section, const std::string& suffix, const DriverSpec& spec, uint64_t seed) {
  section.twins.emplace_back(section.variants.size(), section.variants.size() + 1);
  section.variants.push_back(
      {"Engine::step(), null executor" + suffix, "executor", std::make_unique<EngineDriver>(spec, seed), {}, {}});
  section.variants.push_back(
      {"schedule() + hand apply" + suffix, "schedule()", std::make_unique<SchedulerDriver>(spec, seed), {}, {}});
}

// 1. The budget admits every prompt in one setup step (a decode step uses one token per sequence
// of it); the pool grows past min_device_blocks until no sequence can be preempted.
Section decode_section(const BenchConfig& config) {
  WorkloadSpec workload{config.sequences, 960, 1'040, 0, 0.0, 0.0, 0};
  workload.max_model_len = workload.max_prompt + config.warmup_steps + config.steps + 64;
  const int32_t needed = config.sequences * ((workload.max_model_len + kBlockSize - 1) / kBlockSize);
  DriverSpec spec = driver_spec(config, workload, std::max(config.min_device_blocks, needed + needed / 50 + 64), 0);
  spec.scheduler.max_num_batched_tokens =
      std::max(config.max_num_batched_tokens, config.sequences * workload.max_prompt);
  const std::string setup = std::to_string(config.sequences) +
                            " requests, 960-1040-token distinct prompts, none "
                            "finishes | " +
                            std::to_string(spec.cache.num_device_blocks) + " device blocks";
  Section section{"decode", "1. Steady decode", setup, 4, {}, {}};
  add_twins(section, "", spec, config.seed);
  section.variants.push_back(
      {"KV manager only (try_append_slots)", "", std::make_unique<KvDriver>(spec, config.seed), {}, {}});
  section.variants.push_back(
      {"floor (table tail + token push)", "", std::make_unique<FloorDriver>(spec, config.seed), {}, {}});
  return section;
}

// 1% finish per step and are replaced at once. Prompts are short enough (~90 new tokens each after
// the prefix cache, ~10 arrivals per step) that the 2,048-token budget keeps about `sequences`
// requests running; with 256-1,024-token prompts only ~190 of 1,024 stayed running (prefill-bound).
WorkloadSpec stream_workload(const BenchConfig& config) { return {config.sequences, 32, 224, 96, 0.5, 0.01, 4'096}; }

std::string stream_setup(const DriverSpec& spec) {
  return std::to_string(spec.workload.population) +
         " requests, 1% finish per step (geometric max_tokens) and are "
         "replaced | prompts 32-224 tokens, half after a 96-token shared prefix | chunked prefill, budget " +
         std::to_string(spec.scheduler.max_num_batched_tokens) + ", max_num_seqs " +
         std::to_string(spec.scheduler.max_num_seqs) + " | " + std::to_string(spec.cache.num_device_blocks) +
         " device blocks";
}

Section mixed_section(const BenchConfig& config) {
  const DriverSpec spec = driver_spec(config, stream_workload(config), config.min_device_blocks, 0);
  Section section{"mixed",
                  "2. Mixed stream",
                  stream_setup(spec),
                  4 * config.sequences * 224 / config.max_num_batched_tokens + 16,
                  {},
                  {}};
  add_twins(section, "", spec, config.seed);
  return section;
}

// With the default 1% watermark, admission leaves more free blocks than a step's decodes take, so
// this stream almost never preempts; with watermark 0 admission fills the pool, and decodes that
// cross a block boundary in a step when few requests finished must preempt.
Section pressure_section(const BenchConfig& config) {
  const int32_t blocks = config.sequences * config.pressure_blocks_per_seq;
  DriverSpec recompute = driver_spec(config, stream_workload(config), blocks, 0);
  DriverSpec swap = driver_spec(config, stream_workload(config), blocks, blocks);
  recompute.cache.watermark = swap.cache.watermark = 0.0;
  recompute.scheduler.preemption_mode = sched::PreemptionMode::recompute;
  swap.scheduler.preemption_mode = sched::PreemptionMode::swap;
  const std::string setup =
      stream_setup(recompute) + ", watermark 0 (" + std::to_string(blocks) + " host blocks for swap)";
  Section section{
      "pressure", "3. KV pressure", setup, 4 * config.sequences * 224 / config.max_num_batched_tokens + 16, {}, {}};
  add_twins(section, ", recompute", recompute, config.seed);
  add_twins(section, ", swap", swap, config.seed);
  return section;
}

void run_untimed(Driver& driver, int32_t steps, bool until_settled) {
  for (int32_t i = 0; i < steps && !(until_settled && driver.settled()); ++i) {
    driver.refill();
    driver.step();
  }
}

void run_section(Section& section, const BenchConfig& config) {
  for (Variant& v : section.variants) {
    run_untimed(*v.driver, section.settle_cap, true);
    run_untimed(*v.driver, config.warmup_steps, false);
    v.driver->tally() = Tally{};
    v.step_ns.reserve(static_cast<size_t>(config.steps));
  }
  // Variants take turns every chunk_steps steps, each round starting with the next one.
  const size_t n = section.variants.size();
  for (int32_t done = 0, round = 0; done < config.steps; done += config.chunk_steps, ++round) {
    for (size_t k = 0; k < n; ++k) {
      Variant& v = section.variants[(k + static_cast<size_t>(round)) % n];
      for (int32_t i = 0; i < std::min(config.chunk_steps, config.steps - done); ++i) {
        v.driver->refill();
        const int64_t allocations_before = g_heap_allocations.load(std::memory_order_relaxed);
        const auto start = Clock::now();
        const double inner = v.driver->step();
        v.step_ns.push_back(elapsed_ns(start, Clock::now()));
        v.heap_allocations += g_heap_allocations.load(std::memory_order_relaxed) - allocations_before;
        if (!std::isnan(inner)) v.inner_ns.push_back(inner);
      }
    }
  }
}

// --- figures -----------------------------------------------------------------------------------

struct Summary {
  double mean_us = kNone, p50_us = kNone, p99_us = kNone, max_us = kNone;
  double first_tenth_us = kNone, last_tenth_us = kNone;  // steps in time order: drift as contexts age
  double inner_us = kNone, inner_p50_us = kNone, seqs_per_step = kNone, ns_per_seq = kNone;
  double allocations_per_step = kNone;  // heap allocations, mean over the timed steps
};

double percentile_us(std::vector<double> ns, double q) {
  if (ns.empty()) return kNone;
  std::sort(ns.begin(), ns.end());
  return ns[static_cast<size_t>(std::ceil(q * static_cast<double>(ns.size()))) - 1] / 1e3;
}

double mean_us(std::span<const double> ns) {
  double sum = 0.0;
  for (const double v : ns) sum += v;
  return ns.empty() ? kNone : sum / static_cast<double>(ns.size()) / 1e3;
}

Summary summarize(const Variant& v) {
  Summary s;
  if (v.step_ns.empty()) return s;
  const std::span<const double> steps(v.step_ns);
  const size_t tenth = std::max<size_t>(1, steps.size() / 10);
  s = {mean_us(steps),
       percentile_us(v.step_ns, 0.5),
       percentile_us(v.step_ns, 0.99),
       percentile_us(v.step_ns, 1.0),
       mean_us(steps.first(tenth)),
       mean_us(steps.last(tenth)),
       mean_us(v.inner_ns),
       percentile_us(v.inner_ns, 0.5),
       kNone,
       kNone};
  const Tally& t = v.driver->tally();
  s.seqs_per_step = static_cast<double>(t.scheduled) / static_cast<double>(std::max<int64_t>(1, t.steps));
  s.ns_per_seq = s.mean_us * 1e3 / s.seqs_per_step;
  s.allocations_per_step = static_cast<double>(v.heap_allocations) / static_cast<double>(v.step_ns.size());
  return s;
}

// "a / b = X mean, Y p50": the p50 ratio is the robust one when other processes share the CPU.
std::string ratios(const Summary& a, const Summary& b) {
  return format_ratio(ratio(a.mean_us, b.mean_us)) + " mean, " + format_ratio(ratio(a.p50_us, b.p50_us)) + " p50";
}

void print_header(const BenchConfig& config) {
  std::printf(
      "bench_scheduler: pagedllm scheduler (core/sched) + engine loop (core/engine) per step vs target and floors\n");
  std::printf("%s\n", build_line(build_info()).c_str());
  std::printf(
      "steps: %d timed per variant (+%d warm-up), variants take turns every %d steps | block size %d | seed %#llx%s\n",
      config.steps, config.warmup_steps, config.chunk_steps, kBlockSize, static_cast<unsigned long long>(config.seed),
      config.quick ? " | --quick" : "");
  std::printf("target: <= %.0f us of scheduler + block work per engine step with 1,024 running sequences\n\n",
              kStepTargetUs);
}

void print_section(const Section& section, const Summary& floor, std::vector<Summary>& summaries) {
  std::printf("%s: %s\n", section.title.c_str(), section.setup.c_str());
  std::printf("%-42s %8s %8s %8s %8s %5s %7s %8s %8s %9s  %s\n", "variant", "mean us", "p50 us", "p99 us", "max us",
              "seqs", "ns/seq", "mean/tgt", "p50/tgt", "p50/floor", "of which (mean / p50 us)");
  const size_t first = summaries.size();
  for (const Variant& v : section.variants) {
    const Summary& s = summaries.emplace_back(summarize(v));
    const std::string inner = v.inner.empty() ? "-"
                                              : format_value(s.inner_us, "%.1f") + " / " +
                                                    format_value(s.inner_p50_us, "%.1f") + " " + v.inner;
    std::printf("%-42s %8.1f %8.1f %8.1f %8.1f %5.0f %7.1f %8s %8s %9s  %s\n", v.name.c_str(), s.mean_us, s.p50_us,
                s.p99_us, s.max_us, s.seqs_per_step, s.ns_per_seq, format_ratio(s.mean_us / kStepTargetUs).c_str(),
                format_ratio(s.p50_us / kStepTargetUs).c_str(), format_ratio(ratio(s.p50_us, floor.p50_us)).c_str(),
                inner.c_str());
  }
  std::printf("   heap allocations per timed step:");
  for (size_t i = 0; i < section.variants.size(); ++i) {
    std::printf("%s %s %.2f", i == 0 ? "" : ",", section.variants[i].name.c_str(),
                summaries[first + i].allocations_per_step);
  }
  std::printf("\n");
  for (const auto& [e, k] : section.twins) {
    const Summary& ks = summaries[first + k];
    const Tally& et = section.variants[e].driver->tally();
    const Tally& t = section.variants[k].driver->tally();
    const double steps = static_cast<double>(std::max<int64_t>(1, t.steps));
    std::printf("   %s: engine / it = %s | schedule() alone / target = %s mean, %s p50 | plans identical: %s\n",
                section.variants[k].name.c_str(), ratios(summaries[first + e], ks).c_str(),
                format_ratio(ks.inner_us / kStepTargetUs).c_str(),
                format_ratio(ks.inner_p50_us / kStepTargetUs).c_str(),
                et.plan_hash == t.plan_hash && et.steps == t.steps ? "yes" : "NO");
    std::printf(
        "      per step: %.0f running, %.0f batched tokens (%.0f prefill), %.2f finished | per run: %lld preempted"
        " by recompute, %lld by swap, %lld blocks swapped out, %lld in\n",
        static_cast<double>(t.running) / steps, static_cast<double>(t.batched_tokens) / steps,
        static_cast<double>(t.prefill_tokens) / steps, static_cast<double>(t.finished) / steps,
        static_cast<long long>(t.preempted_recompute), static_cast<long long>(t.preempted_swap),
        static_cast<long long>(t.blocks_swapped_out), static_cast<long long>(t.blocks_swapped_in));
  }
}

// Section 1's rows, in decode_section's order: engine, schedule()+apply, KV-only, floor.
void print_decode_ratios(std::span<const Summary> s) {
  std::printf(
      "   side by side: engine / floor = %s | schedule()+apply / floor = %s\n"
      "                 schedule()+apply / KV-only = %s | KV-only / floor = %s\n",
      ratios(s[0], s[3]).c_str(), ratios(s[1], s[3]).c_str(), ratios(s[1], s[2]).c_str(), ratios(s[2], s[3]).c_str());
  std::printf(
      "   drift, mean us of the first -> last tenth of timed steps (contexts grow a token per step): engine %.1f ->"
      " %.1f, schedule()+apply %.1f -> %.1f, floor %.1f -> %.1f\n",
      s[0].first_tenth_us, s[0].last_tenth_us, s[1].first_tenth_us, s[1].last_tenth_us, s[3].first_tenth_us,
      s[3].last_tenth_us);
}

// --- JSON --------------------------------------------------------------------------------------

void write_json(const BenchConfig& config, const std::vector<Section>& sections, const std::vector<Summary>& summaries,
                const Summary& floor) {
  Json document = {{"benchmark", "bench_scheduler"},
                   {"machine", build_json(build_info())},
                   {"config",
                    {{"steps", config.steps},
                     {"warmup_steps", config.warmup_steps},
                     {"sequences", config.sequences},
                     {"chunk_steps", config.chunk_steps},
                     {"seed", config.seed},
                     {"quick", config.quick}}},
                   {"target_step_us", kStepTargetUs},
                   {"floor_mean_us", floor.mean_us},
                   {"floor_p50_us", floor.p50_us},
                   {"sections", Json::array()}};
  size_t index = 0;
  for (const Section& section : sections) {
    bool identical = true;
    for (const auto& [e, k] : section.twins) {
      identical =
          identical && section.variants[e].driver->tally().plan_hash == section.variants[k].driver->tally().plan_hash;
    }
    Json variants = Json::array();
    for (const Variant& v : section.variants) {
      const Summary& s = summaries[index++];
      const Tally& t = v.driver->tally();
      variants.push_back({{"name", v.name},
                          {"inner", v.inner},
                          {"mean_us", s.mean_us},
                          {"p50_us", s.p50_us},
                          {"p99_us", s.p99_us},
                          {"max_us", s.max_us},
                          {"ns_per_seq", s.ns_per_seq},
                          {"seqs_per_step", s.seqs_per_step},
                          {"mean_over_target", s.mean_us / kStepTargetUs},
                          {"p50_over_target", s.p50_us / kStepTargetUs},
                          {"mean_over_floor", ratio(s.mean_us, floor.mean_us)},
                          {"p50_over_floor", ratio(s.p50_us, floor.p50_us)},
                          {"inner_mean_us", s.inner_us},
                          {"inner_p50_us", s.inner_p50_us},
                          {"first_tenth_mean_us", s.first_tenth_us},
                          {"last_tenth_mean_us", s.last_tenth_us},
                          {"heap_allocations_per_step", s.allocations_per_step},
                          {"steps", t.steps},
                          {"batched_tokens", t.batched_tokens},
                          {"prefill_tokens", t.prefill_tokens},
                          {"finished", t.finished},
                          {"preempted_recompute", t.preempted_recompute},
                          {"preempted_swap", t.preempted_swap},
                          {"blocks_swapped_out", t.blocks_swapped_out},
                          {"blocks_swapped_in", t.blocks_swapped_in}});
    }
    document["sections"].push_back({{"key", section.key}, {"plans_identical", identical}, {"variants", variants}});
  }
  write_json_file(config.json_path, document);
}

// --- command line ------------------------------------------------------------------------------

BenchCommandLine command_line(BenchConfig& config) {
  BenchCommandLine cli("bench_scheduler");
  cli.add({"--steps", "N", "timed steps per variant and section (default 1000)",
           [&](std::string_view v) { config.steps = static_cast<int32_t>(parse_integer("--steps", v, 1)); }});
  cli.add({"--sequences", "N", "requests kept in the system (default 1024)",
           [&](std::string_view v) { config.sequences = static_cast<int32_t>(parse_integer("--sequences", v, 1)); }});
  cli.add_quick("small sizes for a smoke run (under a second)", [&] {
    config.quick = true;
    config.steps = 40;
    config.warmup_steps = 10;
    config.sequences = 128;
    config.chunk_steps = 10;
    config.min_device_blocks = 16'384;
    config.pressure_blocks_per_seq = 6;  // preempts within the few steps of a smoke run
  });
  cli.add({"--json", "PATH", "also write the figures as JSON to PATH",
           [&](std::string_view v) { config.json_path = std::string(v); }});
  return cli;
}

}  // namespace

int main(int argc, char** argv) {
  BenchConfig config;
  return run_benchmark(command_line(config), argc, argv, [&] {
    const auto start = Clock::now();
    print_header(config);
    std::vector<Section> sections;
    sections.push_back(decode_section(config));
    sections.push_back(mixed_section(config));
    sections.push_back(pressure_section(config));
    std::vector<Summary> summaries;
    Summary floor;
    for (Section& section : sections) {
      run_section(section, config);
      if (section.key == "decode") floor = summarize(section.variants.back());
      print_section(section, floor, summaries);
      if (section.key == "decode") print_decode_ratios(summaries);
      std::printf("\n");
    }
    std::printf(
        "tgt: the %.0f us target | floor: section 1's floor (p50 %.1f us) | seqs: sequences scheduled per step |"
        " ns/seq: mean / seqs\n",
        kStepTargetUs, floor.p50_us);
    if (!config.json_path.empty()) {
      write_json(config, sections, summaries, floor);
      std::printf("JSON written to %s\n", config.json_path.c_str());
    }
    std::printf("total wall time %.2f s (sink %llu)\n", elapsed_ns(start, Clock::now()) / 1e9,
                static_cast<unsigned long long>(g_sink));
    return 0;
  });
}
