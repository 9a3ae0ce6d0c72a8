// bench_sim: how fast the simulator runs, against the target (>= 1,000,000 simulated
// requests per minute on one core, Llama-2-7B on one H100), on two traces side by side:
//
//   bench_sim [--requests N] [--load F] [--repeats N] [--azure PATH] [--quick] [--json PATH]
//             [--kv-events DIR] [--only azure|sharegpt]
//
// (a) azure: the real Azure LLM inference trace of 2023 (code), ../shared/traces, repeated with
//     its arrivals shifted by the trace's span until it holds at least N requests (skipped, with a
//     message, when the file is absent); long prompts (mean ~2,000 tokens), short outputs.
// (b) sharegpt: a synthetic ShareGPT-like trace (trace_synth: lognormal prompt lengths of mean 161,
//     sigma 1.0, outputs of mean 338, sigma 0.8, clipped to [4, 1024]; Poisson arrivals).
// Each is materialized (core/trace/materialize.h) and replayed in virtual time
// (engine::replay_requests) through engine::Engine + sim::SimExecutor with the roofline cost model
// (h100-sxm, llama-2-7b, device blocks as vLLM sizes them at 0.9 GPU memory utilization, 4 GiB of
// swap, max_model_len 4096, the scheduler's defaults: vLLM's 256 sequences, a 2,048-token budget,
// chunked prefill, prefix caching), on one thread, as `pagedllm replay --executor sim` runs it
// (final outputs only; step metrics recorded).
//
// The arrival rate: `--load` (default 0.9) times the simulated server's capacity, measured first
// by a saturated run (the trace's first requests all at time 0; simulated requests finished per
// simulated second between the first and the last tenth of them), so that the server is loaded
// but stable. Events = arrivals + engine steps;
// sequence-steps = the sequences the steps computed (a decode token or a prefill chunk each).
// Wall times: the trace's construction, its materialization and the simulation are timed apart.
// Every repeat must give the same fingerprint (the materialized prompts, the output tokens, finish
// times, counters): the simulation is deterministic, and builds that must not change behaviour
// can be compared by it.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/common/mix.h"
#include "core/engine/clock.h"
#include "core/engine/engine.h"
#include "core/engine/executor.h"
#include "core/engine/replay.h"
#include "core/kv/kv_event_log.h"
#include "core/model/model_shape.h"
#include "core/trace/azure_reader.h"
#include "core/trace/materialize.h"
#include "core/trace/trace.h"
#include "core/trace/trace_synth.h"
#include "sim/hardware.h"
#include "sim/roofline_cost_model.h"
#include "sim/sim_executor.h"
#include "tools/bench/bench_cli.h"
#include "tools/bench/bench_output.h"
#include "tools/bench/bench_timing.h"

#ifndef PAGEDLLM_SHARED_TRACES_DIR
#define PAGEDLLM_SHARED_TRACES_DIR "../shared/traces"
#endif

namespace {

namespace engine = pagedllm::engine;
namespace kv = pagedllm::kv;
namespace model = pagedllm::model;
namespace sched = pagedllm::sched;
namespace sim = pagedllm::sim;
namespace trace = pagedllm::trace;
using pagedllm::mix64;
using namespace pagedllm::bench;  // Clock, elapsed_ns, median, ratio, kNone

constexpr double kTargetPerMinute = 1'000'000.0;
constexpr const char* kHardware = "h100-sxm";
constexpr const char* kModel = "llama-2-7b";
constexpr double kGpuMemoryUtilization = 0.9;
constexpr int64_t kSwapSpaceBytes = 4LL << 30;  // vLLM's default swap space
constexpr int32_t kBlockSize = 16;
constexpr int32_t kMaxModelLen = 4096;
constexpr pagedllm::TokenId kLlamaEos = 2;
constexpr pagedllm::TokenId kFirstOrdinaryToken = 3;  // Llama 2: <unk>, <s>, </s> come first

// CPU time of this thread: on a shared machine the wall time also counts other tenants' turns.
double thread_cpu_seconds() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

// --- configuration -----------------------------------------------------------------------------

struct BenchConfig {
  int64_t min_requests = 100'000;
  int32_t calibration_requests = 4'000;
  double load = 0.9;
  int32_t repeats = 3;
  std::string azure_path = std::string(PAGEDLLM_SHARED_TRACES_DIR) + "/azure_llm_2023_code.csv";
  std::string json_path;
  std::string kv_events_dir;  // the first repeat's KV event log per trace, to compare builds
  std::string only;           // one trace's key: run that one alone (profiling)
  uint64_t seed = 7;
  bool quick = false;
};

// --- the simulated server ----------------------------------------------------------------------

sim::RooflineConfig roofline_config() {
  sim::RooflineConfig roofline;
  roofline.hardware = sim::find_hardware(kHardware);
  roofline.model = model::find_model_shape(kModel);
  roofline.block_size = kBlockSize;
  return roofline;
}

engine::EngineConfig engine_config(const sim::RooflineConfig& roofline) {
  engine::EngineConfig config;  // scheduler defaults: 256 sequences, 2,048-token budget, chunked prefill
  config.cache.block_size = kBlockSize;
  config.cache.num_device_blocks = sim::num_device_blocks(roofline, kGpuMemoryUtilization, 0);
  config.cache.num_host_blocks = sim::num_host_blocks(roofline, kSwapSpaceBytes);
  config.scheduler.max_model_len = kMaxModelLen;
  config.eos_token_ids = {kLlamaEos};
  config.output_kind = engine::OutputKind::final_only;  // the replay reads final outputs only
  config.record_step_metrics = true;                    // its figures average over every step
  return config;
}

// Counts what the engine hands the executor: forward steps and the sequences they compute.
class CountingExecutor final : public engine::Executor {
 public:
  explicit CountingExecutor(engine::Executor& inner) : inner_(inner) {}
  sched::StepResult execute(const sched::StepPlan& plan) override {
    ++num_forward_steps;
    num_sequence_steps += static_cast<int64_t>(plan.sequences.size());
    return inner_.execute(plan);
  }
  void recycle(sched::StepResult&& result) override { inner_.recycle(std::move(result)); }
  std::string name() const override { return inner_.name(); }
  bool reads_prompt_tokens() const override { return inner_.reads_prompt_tokens(); }

  int64_t num_forward_steps = 0;
  int64_t num_sequence_steps = 0;

 private:
  engine::Executor& inner_;
};

// --- traces ------------------------------------------------------------------------------------

struct TraceSpec {
  std::string key;           // "azure" | "sharegpt"
  double native_rate = 1.0;  // mean arrivals per second of the trace as built
  double rate = 0.0;         // the replay's rate (req/s), from the calibration
  double capacity = 0.0;     // saturated throughput, simulated req/s
};

double mean_rate(const trace::Trace& t) {
  if (t.requests.size() < 2) return 1.0;
  const double span = t.requests.back().arrival_time - t.requests.front().arrival_time;
  return span > 0.0 ? static_cast<double>(t.requests.size() - 1) / span : 1.0;
}

// The Azure trace, repeated with shifted arrivals until it holds at least `min_requests`.
trace::Trace build_azure(const BenchConfig& config) {
  const trace::Trace base = trace::read_azure_trace(config.azure_path);
  if (base.requests.empty()) throw std::runtime_error(config.azure_path + ": no requests");
  const double span = base.requests.back().arrival_time - base.requests.front().arrival_time;
  const double period = span + 1.0 / mean_rate(base);  // one mean gap between the copies
  trace::Trace result;
  result.header = base.header;
  const auto copies = static_cast<size_t>((config.min_requests + static_cast<int64_t>(base.requests.size()) - 1) /
                                          static_cast<int64_t>(base.requests.size()));
  result.requests.reserve(copies * base.requests.size());
  for (size_t copy = 0; copy < copies; ++copy) {
    for (const trace::TraceRequest& request : base.requests) {
      trace::TraceRequest shifted = request;
      shifted.arrival_time += static_cast<double>(copy) * period;
      result.requests.push_back(std::move(shifted));
    }
  }
  return result;
}

trace::LengthDistribution lognormal(double mean, double sigma) {
  trace::LengthDistribution length;
  length.kind = trace::LengthKind::lognormal;
  length.sigma = sigma;
  length.mu = std::log(mean) - sigma * sigma / 2.0;  // E[exp(N(mu, sigma^2))] = mean
  length.min = 4;
  length.max = 1024;
  return length;
}

trace::Trace build_sharegpt(const BenchConfig& config) {
  trace::SynthConfig synth;
  synth.seed = config.seed;
  synth.num_requests = static_cast<int32_t>(config.min_requests);
  synth.request_rate = 1.0;  // rescaled at materialization
  synth.prompt_len = lognormal(161.0, 1.0);
  synth.output_len = lognormal(338.0, 0.8);
  return trace::synthesize_trace(synth);
}

trace::Trace build_trace(const TraceSpec& spec, const BenchConfig& config) {
  return spec.key == "azure" ? build_azure(config) : build_sharegpt(config);
}

// Engine requests at `rate` req/s; 0 keeps the trace's own times.
trace::MaterializedTrace materialize(const trace::Trace& t, const TraceSpec& spec, double rate, uint64_t seed) {
  trace::MaterializeConfig config;
  config.max_model_len = kMaxModelLen;
  config.over_length = trace::OverLength::clip;
  config.vocab_size = 32'000;
  config.synthetic_token_begin = kFirstOrdinaryToken;
  config.synthetic_token_end = config.vocab_size;
  config.seed = seed;
  config.rate_scale = rate > 0.0 ? rate / spec.native_rate : 1.0;
  config.defer_synthetic_prompts = true;  // as `pagedllm simulate`: the engine writes each prompt's last block
  return trace::materialize_requests(t, config, spec.key);
}

// --- one simulation ----------------------------------------------------------------------------

struct RunFigures {
  double build_s = 0.0;         // the trace (read + repeat, or synthesize)
  double materialize_s = 0.0;   // trace entries -> engine requests
  double simulate_s = 0.0;      // replay_requests, engine + sim executor
  double simulate_cpu_s = 0.0;  // the same, this thread's CPU time
  int64_t requests = 0;         // given to the replay
  int64_t finished = 0;         // final outputs (finished or rejected)
  int64_t refused = 0;
  int64_t steps = 0;          // engine steps
  int64_t forward_steps = 0;  // steps that reached the executor
  int64_t sequence_steps = 0;
  int64_t batched_tokens = 0;
  int64_t generation_tokens = 0;
  int64_t preemptions = 0;
  double sim_seconds = 0.0;  // simulated span, first arrival to last finish
  double mean_running = 0.0, mean_waiting = 0.0, max_waiting = 0.0, mean_kv_usage = 0.0;
  uint64_t fingerprint = 0;
  std::vector<double> finish_times;  // sorted; saturated (fast) runs only

  int64_t events() const { return requests + steps; }
  double per_second(int64_t count) const { return static_cast<double>(count) / simulate_s; }
};

uint64_t fold(uint64_t hash, uint64_t value) { return mix64(hash ^ mix64(value + 0x9e3779b97f4a7c15ULL)); }
std::string hex(uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof(text), "%016llx", static_cast<unsigned long long>(value));
  return text;
}

uint64_t bits(double value) {
  uint64_t out = 0;
  std::memcpy(&out, &value, sizeof(out));
  return out;
}

RunFigures simulate(std::vector<sched::Request> requests, engine::TimeMode mode, kv::KvEventLog* events) {
  const sim::RooflineConfig roofline = roofline_config();
  const engine::EngineConfig config = engine_config(roofline);
  sim::SimExecutorConfig sim_config;
  sim_config.cost_model = std::make_shared<sim::RooflineCostModel>(roofline);
  sim_config.tokens.vocab_size = static_cast<int32_t>(roofline.model.vocab_size);
  sim::SimExecutor executor(sim_config, config.cache);
  CountingExecutor counting(executor);
  engine::VirtualClock clock;
  engine::Engine eng(config, counting, clock, events);

  RunFigures figures;
  figures.requests = static_cast<int64_t>(requests.size());
  const double first_arrival = requests.empty() ? 0.0 : requests.front().arrival_time;
  const double start_cpu = thread_cpu_seconds();
  const auto start = Clock::now();
  const engine::ReplayResult result = engine::replay_requests(eng, clock, std::move(requests), mode);
  figures.simulate_s = elapsed_ns(start, Clock::now()) / 1e9;
  figures.simulate_cpu_s = thread_cpu_seconds() - start_cpu;

  figures.finished = static_cast<int64_t>(result.outputs.size());
  figures.refused = static_cast<int64_t>(result.refused.size());
  figures.steps = eng.num_steps();
  figures.forward_steps = counting.num_forward_steps;
  figures.sequence_steps = counting.num_sequence_steps;
  figures.batched_tokens = executor.counters().num_batched_tokens;
  figures.generation_tokens = eng.counters().generation_tokens;
  figures.preemptions = eng.counters().preemptions_recompute + eng.counters().preemptions_swap;
  figures.sim_seconds = result.end_time - (mode == engine::TimeMode::fast ? result.start_time : first_arrival);
  double weighted_running = 0.0, weighted_waiting = 0.0, weighted_kv = 0.0, busy = 0.0;
  for (const engine::StepMetrics& m : eng.step_metrics()) {
    const double dt = m.end_time - m.start_time;
    busy += dt;
    weighted_running += dt * m.num_running;
    weighted_waiting += dt * m.num_waiting;
    weighted_kv += dt * m.kv_usage;
    figures.max_waiting = std::max(figures.max_waiting, static_cast<double>(m.num_waiting));
  }
  if (busy > 0.0) {
    figures.mean_running = weighted_running / busy;
    figures.mean_waiting = weighted_waiting / busy;
    figures.mean_kv_usage = weighted_kv / busy;
  }
  if (mode == engine::TimeMode::fast) {
    for (const engine::RequestOutput& output : result.outputs) figures.finish_times.push_back(output.times.finished);
    std::sort(figures.finish_times.begin(), figures.finish_times.end());
  }
  uint64_t hash = 0;
  for (const engine::RequestOutput& output : result.outputs) {
    hash = fold(hash, static_cast<uint64_t>(output.id));
    hash = fold(hash, static_cast<uint64_t>(output.finish_reason));
    hash = fold(hash, bits(output.times.first_token));
    hash = fold(hash, bits(output.times.finished));
    for (const engine::Completion& completion : output.completions) {
      for (const pagedllm::TokenId token : completion.tokens) hash = fold(hash, static_cast<uint64_t>(token));
    }
  }
  for (const int64_t count : {figures.steps, figures.sequence_steps, figures.batched_tokens, figures.generation_tokens,
                              figures.preemptions, figures.refused}) {
    hash = fold(hash, static_cast<uint64_t>(count));
  }
  figures.fingerprint = hash;
  return figures;
}

// --- the bench ---------------------------------------------------------------------------------

struct TraceRun {
  TraceSpec spec;
  std::optional<std::string> skipped;  // why, when skipped
  double calibration_wall_s = 0.0;
  int64_t calibration_requests = 0;
  std::vector<RunFigures> runs;
  int64_t num_clipped = 0;
};

void calibrate(TraceRun& run, const BenchConfig& config) {
  const trace::Trace t = build_trace(run.spec, config);
  run.spec.native_rate = mean_rate(t);
  trace::Trace head;
  head.header = t.header;
  head.requests.assign(t.requests.begin(),
                       t.requests.begin() + std::min<std::ptrdiff_t>(config.calibration_requests,
                                                                     static_cast<std::ptrdiff_t>(t.requests.size())));
  trace::MaterializedTrace requests = materialize(head, run.spec, 0.0, config.seed);
  run.calibration_requests = static_cast<int64_t>(requests.requests.size());
  const RunFigures saturated = simulate(std::move(requests.requests), engine::TimeMode::fast, nullptr);
  run.calibration_wall_s = saturated.simulate_s;
  // Steady state: the requests that finished between the first and the last tenth (the ramp-up
  // fills the batch, the tail drains it).
  const std::vector<double>& done = saturated.finish_times;
  if (done.size() < 10 || !(saturated.sim_seconds > 0.0)) {
    throw std::runtime_error(run.spec.key + ": the saturated calibration run finished too few requests");
  }
  const size_t lo = done.size() / 10;
  const size_t hi = done.size() - 1 - done.size() / 10;
  run.spec.capacity = done[hi] > done[lo] ? static_cast<double>(hi - lo) / (done[hi] - done[lo])
                                          : static_cast<double>(saturated.finished) / saturated.sim_seconds;
  run.spec.rate = config.load * run.spec.capacity;
}

void run_once(TraceRun& run, const BenchConfig& config, bool first) {
  RunFigures figures;
  auto start = Clock::now();
  const trace::Trace t = build_trace(run.spec, config);
  figures.build_s = elapsed_ns(start, Clock::now()) / 1e9;
  start = Clock::now();
  trace::MaterializedTrace requests = materialize(t, run.spec, run.spec.rate, config.seed);
  figures.materialize_s = elapsed_ns(start, Clock::now()) / 1e9;
  run.num_clipped = requests.num_clipped;
  uint64_t inputs = 0;  // the materialized requests, folded into the fingerprint (untimed)
  for (const sched::Request& request : requests.requests) {
    inputs = fold(inputs, static_cast<uint64_t>(request.id));
    inputs = fold(inputs, bits(request.arrival_time));
    inputs = fold(inputs, static_cast<uint64_t>(request.params.max_tokens));
    for (int32_t p = 0; p < sched::prompt_length(request); ++p) {  // the tokens, written or described
      const pagedllm::TokenId token = request.prompt_tokens.empty()
                                          ? request.prompt_synthesis->token_at(request.content_ids, p)
                                          : request.prompt_tokens[static_cast<size_t>(p)];
      inputs = fold(inputs, static_cast<uint64_t>(token));
    }
  }
  std::ofstream events_file;
  std::optional<kv::KvEventLog> events;
  if (first && !config.kv_events_dir.empty()) {
    const std::string path = config.kv_events_dir + "/" + run.spec.key + ".jsonl";
    events_file.open(path, std::ios::binary);
    if (!events_file) throw std::runtime_error("cannot open " + path + " for writing");
    events.emplace(events_file);
  }
  const RunFigures simulated =
      simulate(std::move(requests.requests), engine::TimeMode::virtual_clock, events ? &*events : nullptr);
  const double build_s = figures.build_s;
  const double materialize_s = figures.materialize_s;
  figures = simulated;
  figures.build_s = build_s;
  figures.materialize_s = materialize_s;
  figures.fingerprint = fold(figures.fingerprint, inputs);
  run.runs.push_back(figures);
}

// --- figures -----------------------------------------------------------------------------------

struct Range {
  double min = kNone, median = kNone, max = kNone;
};

template <class Fn>
Range range_of(const std::vector<RunFigures>& runs, Fn&& fn) {
  std::vector<double> values;
  for (const RunFigures& r : runs) values.push_back(fn(r));
  if (values.empty()) return {};
  const auto [lo, hi] = std::minmax_element(values.begin(), values.end());
  return {*lo, median(values), *hi};
}

std::string fmt_range(const Range& r, const char* format) {
  if (!std::isfinite(r.min)) return "-";
  if (r.min == r.max) return format_value(r.median, format);
  return format_value(r.min, format) + " - " + format_value(r.max, format);
}

double requests_per_second(const RunFigures& r) { return r.per_second(r.finished + r.refused); }
double requests_per_minute(const RunFigures& r) { return 60.0 * requests_per_second(r); }

struct Row {
  const char* name;
  const char* format;
  double (*value)(const RunFigures&);
};

const std::vector<Row>& rows() {
  static const std::vector<Row> table = {
      {"simulated requests", "%.0f", [](const RunFigures& r) { return static_cast<double>(r.finished + r.refused); }},
      {"wall s, simulation", "%.2f", [](const RunFigures& r) { return r.simulate_s; }},
      {"cpu s, simulation (this thread)", "%.2f", [](const RunFigures& r) { return r.simulate_cpu_s; }},
      {"wall s, trace build (read / synthesize)", "%.3f", [](const RunFigures& r) { return r.build_s; }},
      {"wall s, materialization", "%.3f", [](const RunFigures& r) { return r.materialize_s; }},
      {"simulation share of the wall time", "%.3f",
       [](const RunFigures& r) { return r.simulate_s / (r.simulate_s + r.build_s + r.materialize_s); }},
      {"simulated requests / s", "%.0f", requests_per_second},
      {"simulated requests / min", "%.0f", requests_per_minute},
      {"  / target (1,000,000 / min)", "%.3fx",
       [](const RunFigures& r) { return requests_per_minute(r) / kTargetPerMinute; }},
      {"simulated requests / min per cpu s", "%.0f",
       [](const RunFigures& r) { return 60.0 * static_cast<double>(r.finished + r.refused) / r.simulate_cpu_s; }},
      {"events / s (arrivals + steps)", "%.0f", [](const RunFigures& r) { return r.per_second(r.events()); }},
      {"engine steps / s", "%.0f", [](const RunFigures& r) { return r.per_second(r.steps); }},
      {"sequence-steps / s", "%.0f", [](const RunFigures& r) { return r.per_second(r.sequence_steps); }},
      {"wall us per engine step", "%.2f",
       [](const RunFigures& r) { return 1e6 * r.simulate_s / static_cast<double>(r.steps); }},
      {"wall ns per sequence-step", "%.1f",
       [](const RunFigures& r) { return 1e9 * r.simulate_s / static_cast<double>(r.sequence_steps); }},
      {"events (arrivals + steps)", "%.0f", [](const RunFigures& r) { return static_cast<double>(r.events()); }},
      {"engine steps", "%.0f", [](const RunFigures& r) { return static_cast<double>(r.steps); }},
      {"sequence-steps per step", "%.1f",
       [](const RunFigures& r) { return static_cast<double>(r.sequence_steps) / static_cast<double>(r.steps); }},
      {"batched tokens per step", "%.0f",
       [](const RunFigures& r) { return static_cast<double>(r.batched_tokens) / static_cast<double>(r.steps); }},
      {"simulated span, s", "%.0f", [](const RunFigures& r) { return r.sim_seconds; }},
      {"simulated throughput / arrival rate", "%.3f",
       [](const RunFigures& r) { return static_cast<double>(r.finished) / r.sim_seconds; }},  // divided below
      {"mean running / waiting (time-weighted)", "%.1f", [](const RunFigures& r) { return r.mean_running; }},
      {"max waiting", "%.0f", [](const RunFigures& r) { return r.max_waiting; }},
      {"mean KV usage", "%.3f", [](const RunFigures& r) { return r.mean_kv_usage; }},
      {"preemptions", "%.0f", [](const RunFigures& r) { return static_cast<double>(r.preemptions); }},
  };
  return table;
}

std::string cell(const TraceRun& run, const Row& row) {
  if (run.skipped) return "skipped";
  const std::string name = row.name;
  if (name == "simulated throughput / arrival rate") {
    return fmt_range(range_of(run.runs, [&](const RunFigures& r) { return row.value(r) / run.spec.rate; }), row.format);
  }
  if (name == "mean running / waiting (time-weighted)") {
    return fmt_range(range_of(run.runs, row.value), row.format) + " / " +
           fmt_range(range_of(run.runs, [](const RunFigures& r) { return r.mean_waiting; }), row.format);
  }
  return fmt_range(range_of(run.runs, row.value), row.format);
}

bool fingerprints_agree(const TraceRun& run) {
  return std::all_of(run.runs.begin(), run.runs.end(),
                     [&](const RunFigures& r) { return r.fingerprint == run.runs.front().fingerprint; });
}

void print_header(const BenchConfig& config) {
  std::printf(
      "bench_sim: simulator speed (engine + sim executor, virtual time, one thread) vs the target of "
      "%.0f simulated requests per minute\n",
      kTargetPerMinute);
  std::printf("%s\n", build_line(build_info()).c_str());
  const sim::RooflineConfig roofline = roofline_config();
  const engine::EngineConfig engine = engine_config(roofline);
  std::printf(
      "server: %s on %s (roofline), %d device blocks (%.2f GPU memory utilization), %d host blocks, block %d | "
      "max_model_len %d, max_num_seqs %d, max_num_batched_tokens %d, chunked prefill %s, prefix caching %s\n",
      kModel, kHardware, engine.cache.num_device_blocks, kGpuMemoryUtilization, engine.cache.num_host_blocks,
      kBlockSize, engine.scheduler.max_model_len, engine.scheduler.max_num_seqs,
      engine.scheduler.max_num_batched_tokens, engine.scheduler.enable_chunked_prefill ? "on" : "off",
      engine.cache.enable_prefix_caching ? "on" : "off");
  std::printf(
      "runs: %d per trace, traces interleaved | at least %lld requests per trace | load %.2f of the capacity "
      "measured by a saturated run of the first %d requests | seed %llu%s\n\n",
      config.repeats, static_cast<long long>(config.min_requests), config.load, config.calibration_requests,
      static_cast<unsigned long long>(config.seed), config.quick ? " | --quick" : "");
}

void print_table(const std::vector<TraceRun>& runs) {
  std::printf("%-42s", "figure (min - max over runs)");
  for (const TraceRun& run : runs) std::printf(" %28s", run.spec.key.c_str());
  std::printf("\n");
  for (const Row& row : rows()) {
    std::printf("%-42s", row.name);
    for (const TraceRun& run : runs) std::printf(" %28s", cell(run, row).c_str());
    std::printf("\n");
  }
  std::printf("%-42s", "fingerprint (identical in every run)");
  for (const TraceRun& run : runs) {
    const std::string text =
        run.skipped ? "skipped" : hex(run.runs.front().fingerprint) + (fingerprints_agree(run) ? " yes" : " NO");
    std::printf(" %28s", text.c_str());
  }
  std::printf("\n");
  const auto medians = [](const TraceRun& run) { return range_of(run.runs, requests_per_second).median; };
  if (runs.size() == 2 && !runs[0].skipped && !runs[1].skipped) {
    std::printf(
        "side by side: %s / %s simulated requests per second = %.2fx (median runs); sequence-steps per second "
        "%.2fx\n",
        runs[0].spec.key.c_str(), runs[1].spec.key.c_str(), medians(runs[0]) / medians(runs[1]),
        range_of(runs[0].runs, [](const RunFigures& r) { return r.per_second(r.sequence_steps); }).median /
            range_of(runs[1].runs, [](const RunFigures& r) { return r.per_second(r.sequence_steps); }).median);
  }
}

// --- JSON --------------------------------------------------------------------------------------

Json run_json(const RunFigures& r) {
  return {{"build_s", r.build_s},
          {"materialize_s", r.materialize_s},
          {"simulate_s", r.simulate_s},
          {"simulate_cpu_s", r.simulate_cpu_s},
          {"requests_per_s", requests_per_second(r)},
          {"requests_per_min", requests_per_minute(r)},
          {"over_target", requests_per_minute(r) / kTargetPerMinute},
          {"events_per_s", r.per_second(r.events())},
          {"steps_per_s", r.per_second(r.steps)},
          {"sequence_steps_per_s", r.per_second(r.sequence_steps)},
          {"sim_seconds", r.sim_seconds},
          {"mean_running", r.mean_running},
          {"mean_waiting", r.mean_waiting},
          {"max_waiting", r.max_waiting},
          {"mean_kv_usage", r.mean_kv_usage},
          {"requests", r.requests},
          {"finished", r.finished},
          {"refused", r.refused},
          {"steps", r.steps},
          {"forward_steps", r.forward_steps},
          {"sequence_steps", r.sequence_steps},
          {"batched_tokens", r.batched_tokens},
          {"generation_tokens", r.generation_tokens},
          {"preemptions", r.preemptions},
          {"fingerprint", hex(r.fingerprint)}};
}

void write_json(const BenchConfig& config, const std::vector<TraceRun>& runs) {
  Json document = {{"benchmark", "bench_sim"},
                   {"machine", build_json(build_info())},
                   {"config",
                    {{"min_requests", config.min_requests},
                     {"load", config.load},
                     {"repeats", config.repeats},
                     {"calibration_requests", config.calibration_requests},
                     {"seed", config.seed},
                     {"hardware", kHardware},
                     {"model", kModel},
                     {"max_model_len", kMaxModelLen}}},
                   {"target_requests_per_minute", kTargetPerMinute},
                   {"traces", Json::array()}};
  for (const TraceRun& run : runs) {
    Json trace = {{"key", run.spec.key}, {"skipped", run.skipped.has_value()}};
    if (!run.skipped) {
      trace["rate"] = run.spec.rate;
      trace["capacity"] = run.spec.capacity;
      trace["calibration_wall_s"] = run.calibration_wall_s;
      trace["fingerprints_agree"] = fingerprints_agree(run);
      trace["runs"] = Json::array();
      for (const RunFigures& r : run.runs) trace["runs"].push_back(run_json(r));
    }
    document["traces"].push_back(std::move(trace));
  }
  write_json_file(config.json_path, document);
}

// --- command line ------------------------------------------------------------------------------

BenchCommandLine command_line(BenchConfig& config) {
  BenchCommandLine cli("bench_sim");
  cli.add({"--requests", "N", "requests per trace, at least (default 100000)",
           [&](std::string_view v) { config.min_requests = parse_integer("--requests", v, 1, 1 << 30); }});
  cli.add({"--load", "F", "arrival rate as a fraction of the measured capacity (default 0.9)",
           [&](std::string_view v) { config.load = parse_positive_number("--load", v); }});
  cli.add({"--repeats", "N", "runs per trace, interleaved (default 3)",
           [&](std::string_view v) { config.repeats = static_cast<int32_t>(parse_integer("--repeats", v, 1, 1000)); }});
  cli.add({"--azure", "PATH", "the Azure code trace (default ../shared/traces/azure_llm_2023_code.csv)",
           [&](std::string_view v) { config.azure_path = std::string(v); }});
  cli.add_quick("small sizes for a smoke run", [&] {
    config.quick = true;
    config.min_requests = 5'000;
    config.calibration_requests = 500;
    config.repeats = 1;
  });
  cli.add({"--json", "PATH", "also write the figures as JSON to PATH",
           [&](std::string_view v) { config.json_path = std::string(v); }});
  cli.add({"--kv-events", "DIR", "write the first run's KV event log per trace to DIR/<trace>.jsonl",
           [&](std::string_view v) { config.kv_events_dir = std::string(v); }});
  cli.add({"--only", "KEY", "run one trace alone: azure or sharegpt (for profiling)", [&](std::string_view v) {
             if (v != "azure" && v != "sharegpt") throw UsageError("--only: expected azure or sharegpt");
             config.only = std::string(v);
           }});
  return cli;
}

}  // namespace

int main(int argc, char** argv) {
  BenchConfig config;
  return run_benchmark(command_line(config), argc, argv, [&] {
    config.calibration_requests =
        static_cast<int32_t>(std::min<int64_t>(config.calibration_requests, config.min_requests));
    const auto start = Clock::now();
    print_header(config);
    std::vector<TraceRun> runs;
    TraceRun& azure = runs.emplace_back();
    azure.spec = {"azure", 1.0, 0.0, 0.0};
    if (config.only == "sharegpt") {
      azure.skipped = "--only sharegpt";
    } else if (!std::filesystem::exists(config.azure_path)) {
      azure.skipped = config.azure_path + " is absent (real traces live in ../shared/traces)";
      std::printf("azure: skipped: %s\n", azure.skipped->c_str());
    }
    TraceRun& sharegpt = runs.emplace_back();
    sharegpt.spec = {"sharegpt", 1.0, 0.0, 0.0};
    if (config.only == "azure") sharegpt.skipped = "--only azure";
    for (TraceRun& run : runs) {
      if (run.skipped) continue;
      calibrate(run, config);
      std::printf(
          "%s: capacity %.2f simulated req/s (saturated run of %lld requests, %.2f s wall) -> rate %.2f req/s "
          "(trace's own mean rate %.3f req/s)\n",
          run.spec.key.c_str(), run.spec.capacity, static_cast<long long>(run.calibration_requests),
          run.calibration_wall_s, run.spec.rate, run.spec.native_rate);
    }
    for (int32_t repeat = 0; repeat < config.repeats; ++repeat) {
      for (TraceRun& run : runs) {
        if (run.skipped) continue;
        run_once(run, config, repeat == 0);
        const RunFigures& r = run.runs.back();
        std::printf(
            "  run %d %-9s %7lld requests in %6.2f s wall (%.2f s cpu; +%.2f s build, %.2f s materialize): "
            "%9.0f req/s, %9.0f req/min = %.3fx target\n",
            repeat + 1, run.spec.key.c_str(), static_cast<long long>(r.finished + r.refused), r.simulate_s,
            r.simulate_cpu_s, r.build_s, r.materialize_s, requests_per_second(r), requests_per_minute(r),
            requests_per_minute(r) / kTargetPerMinute);
        std::fflush(stdout);
      }
    }
    std::printf("\n");
    for (const TraceRun& run : runs) {
      if (run.skipped) continue;
      std::printf("%s: %lld requests clipped to max_model_len %d\n", run.spec.key.c_str(),
                  static_cast<long long>(run.num_clipped), kMaxModelLen);
    }
    print_table(runs);
    if (!config.json_path.empty()) {
      write_json(config, runs);
      std::printf("JSON written to %s\n", config.json_path.c_str());
    }
    std::printf("total wall time %.2f s\n", elapsed_ns(start, Clock::now()) / 1e9);
    const bool deterministic = std::all_of(runs.begin(), runs.end(),
                                           [](const TraceRun& run) { return run.skipped || fingerprints_agree(run); });
    if (!deterministic) {
      std::fprintf(stderr, "bench_sim: runs of the same trace gave different results\n");
      return 1;
    }
    return 0;
  });
}
