// `pagedllm plan`: capacity planning on the simulator. For each engine configuration (a sweep
// over block size, max-num-seqs, max-num-batched-tokens and tensor parallelism), the highest
// request rate one replica sustains within the latency SLOs (binary search on the trace's rate
// scale; each rate simulated on the trace tiled until the queue reaches its steady state, and
// judged there: sim/steady_state.h; a rate that certainly misses the SLO stops where that is
// decided: sim/slo_watch.h), the replicas a target rate needs, and what it costs.
// Configurations are simulated in parallel (--jobs), each on one thread, so the result does not
// depend on the thread count; --shard I/N computes every N-th and `plan merge` joins the shards
// (plan_report.h).
#include <algorithm>
#include <atomic>
#include <boost/program_options.hpp>
#include <cmath>
#include <cstdio>
#include <exception>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/common/check.h"
#include "core/metrics/request_records.h"
#include "core/metrics/serving_metrics.h"
#include "core/trace/materialize.h"
#include "sim/latency_objective.h"
#include "sim/steady_state.h"
#include "tools/pagedllm/cli_options.h"
#include "tools/pagedllm/engine_options.h"
#include "tools/pagedllm/executor_factory.h"
#include "tools/pagedllm/plan_report.h"
#include "tools/pagedllm/progress_bar.h"
#include "tools/pagedllm/sim_setup.h"
#include "tools/pagedllm/subcommands.h"
#include "tools/pagedllm/trace_input.h"
#include "tools/pagedllm/trace_requests.h"

namespace pagedllm::cli {
namespace {

namespace po = boost::program_options;

// "--sweep block-size=16,32": the values of one engine knob.
struct SweepAxis {
  std::string knob;
  std::vector<int32_t> values;
};

SweepAxis parse_sweep(const std::string& text) {
  const size_t equals = text.find('=');
  if (equals == std::string::npos) throw po::error("--sweep: expected KNOB=V1,V2,..., got '" + text + "'");
  SweepAxis axis{text.substr(0, equals), {}};
  if (axis.knob != "block-size" && axis.knob != "max-num-seqs" && axis.knob != "max-num-batched-tokens" &&
      axis.knob != "tp") {
    throw po::error("--sweep: unknown knob '" + axis.knob + "' (block-size, max-num-seqs, max-num-batched-tokens, tp)");
  }
  std::stringstream list(text.substr(equals + 1));
  for (std::string value; std::getline(list, value, ',');) {
    try {
      axis.values.push_back(std::stoi(value));
    } catch (const std::exception&) {
      throw po::error("--sweep " + axis.knob + ": '" + value + "' is not an integer");
    }
  }
  if (axis.values.empty()) throw po::error("--sweep " + axis.knob + ": no values");
  return axis;
}

constexpr size_t kFewRequests = 100;

struct PlanOptions {
  TraceInputOptions trace;
  std::string model = "llama-2-7b";
  std::string slo;
  double target_rate = 0.0;
  double usd_per_gpu_hour = 0.0;
  double precision = 0.02;
  sim::SteadyStateConfig steady_state;
  std::vector<std::string> sweeps;
  std::string output_json;
  int32_t jobs = 0;
  bool full_runs = false;  // no early stop at a certain SLO miss
  std::string shard = "0/1";
  double max_wall_seconds = 0.0;
  bool quiet = false;
  EngineOptions engine;
  ExecutorOptions executor;
};

struct Evaluation {
  double rate_scale = 0.0;
  double request_rate = 0.0;  // offered, per replica
  bool feasible = false;
  bool sustained = false;    // the queue did not keep growing (sim/steady_state.h)
  int64_t num_requests = 0;  // simulated: the trace tiled
  double delay_growth = 0.0;
  double waiting_growth = 0.0;
  std::string shortfall;                    // why the span was too short to judge ("" = it was long enough)
  std::map<std::string, double> values_ms;  // per SLO objective; none when stopped early
  std::string missed;                       // why the SLO is certainly missed (sim/slo_watch.h), or ""
  bool stopped_early = false;               // at that verdict: no latencies, no steady-state figures
  double output_throughput = 0.0;
  double request_throughput = 0.0;
};

struct PlanRow {
  std::map<std::string, int32_t> knobs;
  std::vector<Evaluation> curve;   // every rate evaluated, ascending
  std::optional<Evaluation> best;  // the highest feasible rate
  std::string note;
  bool stopped = false;  // --max-wall-seconds ended its search
};

// Thrown out of a rate's simulation when --max-wall-seconds has passed.
struct WallLimitReached {};

// The arguments that decide a plan's result: all but --shard, --jobs, --quiet and the output file.
std::vector<std::string> result_arguments(const std::vector<std::string>& args) {
  static const std::vector<std::string> kSeparate = {"--shard", "--jobs", "-j", "--output-json", "-o"};
  static const std::vector<std::string> kSwitches = {"--quiet", "-q"};
  std::vector<std::string> kept;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (std::find(kSeparate.begin(), kSeparate.end(), arg) != kSeparate.end()) {
      ++i;  // and its value
      continue;
    }
    const bool attached = arg.starts_with("--shard=") || arg.starts_with("--jobs=") ||
                          arg.starts_with("--output-json=") || (arg.starts_with("-j") && arg.size() > 2) ||
                          (arg.starts_with("-o") && arg.size() > 2 && arg[2] != '-');
    const bool is_switch = std::find(kSwitches.begin(), kSwitches.end(), arg) != kSwitches.end();
    if (!attached && !is_switch) kept.push_back(arg);
  }
  return kept;
}

// Runs compute(i) for every index in `indices` on up to `jobs` threads (0 = all cores). Each
// index is computed whole on one thread, so the results do not depend on the thread count. The
// first failure (in index order) is rethrown after every thread has stopped.
template <typename Compute>
void for_each_parallel(const std::vector<size_t>& indices, int32_t jobs, Compute compute) {
  const size_t cores = std::max(1u, std::thread::hardware_concurrency());
  const size_t workers = std::min(indices.size(), jobs > 0 ? static_cast<size_t>(jobs) : cores);
  std::vector<std::exception_ptr> failures(indices.size());
  std::atomic<size_t> next{0};
  const auto work = [&] {
    for (size_t k = next++; k < indices.size(); k = next++) {
      try {
        compute(indices[k]);
      } catch (...) {
        failures[k] = std::current_exception();
      }
    }
  };
  std::vector<std::thread> threads;
  for (size_t w = 1; w < workers; ++w) threads.emplace_back(work);
  work();
  for (std::thread& thread : threads) thread.join();
  for (const std::exception_ptr& failure : failures) {
    if (failure) std::rethrow_exception(failure);
  }
}

}  // namespace

int run_plan(const std::vector<std::string>& args) {
  if (!args.empty() && args.front() == "merge") return run_plan_merge({args.begin() + 1, args.end()});
  PlanOptions options;
  po::options_description description(
      "pagedllm plan: the highest request rate per replica within latency SLOs, the replicas and cost for a\n"
      "target rate, over a sweep of engine settings (simulated)\n"
      "  pagedllm plan --trace T --model llama-2-7b --hardware h100-sxm --slo ttft_p99=500,tpot_p99=50 \\\n"
      "      --target-rate 20 --sweep max-num-seqs=64,256 --sweep tp=1,2");
  // clang-format off
  description.add_options()
      ("help,h", "show this help")
      ("model,m", po::value(&options.model)->default_value(options.model), "a shape preset or a model")
      ("slo", po::value(&options.slo)->required(), "objectives in ms: ttft_p99=500,tpot_p99=50 (stats: mean p50 p90 p99)")
      ("target-rate", po::value(&options.target_rate)->default_value(0.0), "requests per second to serve (replicas, cost)")
      ("usd-per-gpu-hour", po::value(&options.usd_per_gpu_hour)->default_value(0.0), "0 = the hardware preset's price")
      ("precision", po::value(&options.precision)->default_value(options.precision), "relative precision of the rate search")
      ("min-span-service-times", po::value(&options.steady_state.min_span_in_service_times)
           ->default_value(options.steady_state.min_span_in_service_times),
       "each rate's arrivals span at least this many mean service times (the trace is repeated)")
      ("min-requests", po::value(&options.steady_state.min_requests)->default_value(options.steady_state.min_requests),
       "each rate simulates at least this many requests (the trace is repeated)")
      ("max-requests", po::value(&options.steady_state.max_requests)->default_value(options.steady_state.max_requests),
       "and at most this many")
      ("max-growth", po::value(&options.steady_state.max_growth)->default_value(options.steady_state.max_growth),
       "largest upward trend of queueing delay (s/s) and waiting count (per arrival) over the run's second half")
      ("sweep", po::value(&options.sweeps)->multitoken(),
       "KNOB=V1,V2,... for block-size, max-num-seqs, max-num-batched-tokens, tp (repeatable: all combinations)")
      ("output-json,o", po::value(&options.output_json), "every configuration and its rate-latency curve as JSON "
                                                        "(tools/plot_plan.py draws it)")
      ("jobs,j", po::value(&options.jobs)->default_value(0),
       "configurations simulated at once, one thread each (0 = all cores); the result does not depend on it")
      ("max-wall-seconds", po::value(&options.max_wall_seconds)->default_value(0.0),
       "stop searching after this much wall time; each configuration reports the best rate found by then "
       "(marked stopped; 0 = no limit)")
      ("full-runs", po::bool_switch(&options.full_runs),
       "simulate every rate to its end, for the latencies of the infeasible ones too (slower; by default a rate "
       "stops once it certainly misses the SLO, and its curve point says why)")
      ("quiet,q", po::bool_switch(&options.quiet), "no progress bar")
      ("shard", po::value(&options.shard)->default_value(options.shard),
       "I/N: compute only configurations i with i mod N = I, for `pagedllm plan merge` to join (run every shard "
       "with the same arguments otherwise)");
  // clang-format on
  add_trace_input_options(description, options.trace);
  add_engine_options(description, options.engine);
  add_executor_options(description, options.executor);
  po::variables_map values;
  if (!parse_options(args, description, values)) return 0;
  std::vector<sim::LatencyObjective> slo;
  try {
    slo = sim::parse_latency_objectives(options.slo);
  } catch (const std::invalid_argument& error) {
    throw po::error(std::string("--slo: ") + error.what());
  }
  if (!options.full_runs) options.steady_state.objectives = slo;
  metrics::MetricsOptions metrics_options;  // each rate's latencies: ITL only when an objective asks
  metrics_options.inter_token_latencies = std::any_of(
      slo.begin(), slo.end(), [](const sim::LatencyObjective& o) { return o.metric == sim::LatencyMetric::itl; });
  PlanShard shard;
  try {
    shard = parse_plan_shard(options.shard);
  } catch (const std::invalid_argument& error) {
    throw po::error(error.what());
  }
  if (options.jobs < 0) throw po::error("--jobs: expected 0 (all cores) or a number of threads");
  const std::function<bool()> past_deadline = wall_clock_limit(options.max_wall_seconds);
  std::vector<SweepAxis> axes;
  for (const std::string& sweep : options.sweeps) axes.push_back(parse_sweep(sweep));
  for (const SweepAxis& axis : axes) {
    if (!options.executor.profile.empty() && (axis.knob == "tp" || axis.knob == "block-size")) {
      throw po::error("--sweep " + axis.knob +
                      ": a profile is measured at one block size on one device; sweep "
                      "max-num-seqs or max-num-batched-tokens, or measure a profile per setting");
    }
  }

  const SimModel model = resolve_sim_model(
      simulated_model_argument(options.model, !values["model"].defaulted(), options.executor.sim_model));
  trace::ReadReport read_report;
  const trace::Trace trace = read_trace_input(
      options.trace, token_counter(model.bundle ? &model.bundle->tokenizer : nullptr), read_report, std::cerr);
  if (trace.requests.size() < 2 || trace.requests.back().arrival_time <= trace.requests.front().arrival_time) {
    throw po::error(
        "--trace: the plan scales the trace's arrival times, and these span no time (synthesize one with "
        "--request-rate, or convert a trace with timestamps)");
  }
  const double base_rate = static_cast<double>(trace.requests.size()) /
                           (trace.requests.back().arrival_time - trace.requests.front().arrival_time);

  const int64_t context = model.shape.max_position_embeddings;
  const auto model_max_len =
      static_cast<int32_t>(std::max<int64_t>(std::min<int64_t>(context, 1 << 20), options.engine.max_model_len));
  const model::ModelConfig* model_config = model.bundle ? &model.bundle->config : nullptr;
  // The backend of the options as given: the header's device and price, and a bad --profile or
  // --hardware reported before the sweep starts.
  const SimBackend base_backend = [&] {
    engine::EngineConfig config = engine_config_from(options.engine, model_max_len);
    config.cache.num_device_blocks = options.engine.num_gpu_blocks_override;
    return make_sim_backend(options.executor, model.shape, model_config, config);
  }();
  const int32_t vocab_size = static_cast<int32_t>(model.shape.vocab_size);
  const trace::MaterializedTrace requests = materialize_trace(
      trace, options.trace.path, TraceRequestOptions{},
      {.max_model_len = options.engine.max_model_len > 0 ? options.engine.max_model_len : model_max_len,
       .vocab_size = vocab_size,
       .tokenizer = model.bundle ? &model.bundle->tokenizer : nullptr,
       .synthetic_prompts_unwritten = true},
      std::cerr);

  // Each rate repeats the trace until its queue settles, so a short trace gives a rate; but its
  // request mix is then only as representative as its few samples.
  if (requests.requests.size() < kFewRequests) {
    std::fprintf(stderr,
                 "plan: warning: the trace has %zu requests; each rate simulates it repeated, so its request "
                 "lengths rest on %zu samples (give %zu or more for a representative mix)\n",
                 requests.requests.size(), requests.requests.size(), kFewRequests);
  }

  // Every combination of the sweep's values (none: the options as given).
  std::vector<std::map<std::string, int32_t>> combinations{{}};
  for (const SweepAxis& axis : axes) {
    std::vector<std::map<std::string, int32_t>> next;
    for (const auto& combination : combinations) {
      for (const int32_t value : axis.values) {
        auto extended = combination;
        extended[axis.knob] = value;
        next.push_back(extended);
      }
    }
    combinations = std::move(next);
  }

  const auto evaluate = [&](const std::map<std::string, int32_t>& knobs, double rate_scale) {
    EngineOptions engine_options = options.engine;
    ExecutorOptions executor_options = options.executor;
    if (knobs.contains("block-size")) engine_options.block_size = knobs.at("block-size");
    if (knobs.contains("max-num-seqs")) engine_options.max_num_seqs = knobs.at("max-num-seqs");
    if (knobs.contains("max-num-batched-tokens"))
      engine_options.max_num_batched_tokens = knobs.at("max-num-batched-tokens");
    if (knobs.contains("tp")) executor_options.tensor_parallel = knobs.at("tp");
    engine::EngineConfig config = engine_config_from(engine_options, model_max_len);
    config.record_step_metrics = false;
    config.output_kind = engine::OutputKind::final_only;
    config.cache.num_device_blocks = engine_options.num_gpu_blocks_override;
    const SimBackend backend = make_sim_backend(executor_options, model.shape, model_config, config);
    config.cache = backend.cache;
    if (past_deadline && past_deadline()) throw WallLimitReached();
    const auto simulate = [&](std::vector<sched::Request> tiled, const sim::SimulationHooks& hooks) {
      engine::ReplayResult result =
          run_simulation({.config = config,
                          .cost_model = backend.cost_model,
                          .draft = backend.draft,
                          .vocab_size = vocab_size,
                          .num_replicas = 1,
                          .router = {},
                          .host = {},
                          .serving_path_seconds = 0.0,
                          .on_progress = {},
                          .should_stop = [&] { return hooks.should_stop() || (past_deadline && past_deadline()); },
                          .on_arrival = {},
                          .on_finished = hooks.on_finished,
                          .on_refused = hooks.on_refused},
                         std::move(tiled))
              .result;
      if (result.stopped && !hooks.should_stop()) throw WallLimitReached();
      return result;
    };
    const sim::SteadyStateReport steady =
        sim::run_to_steady_state(requests.requests, rate_scale, simulate, options.steady_state);
    Evaluation evaluation;
    evaluation.rate_scale = rate_scale;
    evaluation.request_rate = base_rate * rate_scale;
    evaluation.num_requests = steady.num_requests;
    evaluation.missed = steady.missed;
    evaluation.stopped_early = steady.stopped_early;
    if (steady.stopped_early) return evaluation;  // infeasible, and nothing measured
    const metrics::ServingMetrics serving = metrics::compute_serving_metrics(steady.window, metrics_options);
    evaluation.sustained = steady.sustained;
    evaluation.delay_growth = steady.delay_growth;
    evaluation.waiting_growth = steady.waiting_growth;
    evaluation.shortfall = steady.shortfall;
    evaluation.feasible = serving.num_completed > 0 && evaluation.sustained;
    for (const sim::LatencyObjective& objective : slo) {
      const double value = sim::statistic_ms(serving, objective);
      evaluation.values_ms[objective.name()] = value;
      evaluation.feasible = evaluation.feasible && value <= objective.ms;
    }
    PAGEDLLM_ASSERT(evaluation.missed.empty() || !evaluation.feasible, "a rate decided infeasible was judged feasible");
    evaluation.output_throughput = serving.output_throughput;
    evaluation.request_throughput = serving.request_throughput;
    return evaluation;
  };

  // This shard's configurations, each searched whole on one thread.
  std::vector<size_t> owned;
  for (size_t i = 0; i < combinations.size(); ++i) {
    if (shard.owns(i)) owned.push_back(i);
  }
  std::vector<PlanRow> rows(combinations.size());
  ProgressBar progress("plan", static_cast<int64_t>(owned.size()), !options.quiet);
  std::mutex progress_mutex;
  int64_t num_done = 0;
  int64_t num_evaluations = 0;
  for_each_parallel(owned, options.jobs, [&](size_t index) {
    const std::map<std::string, int32_t>& knobs = combinations[index];
    PlanRow row;
    row.knobs = knobs;
    std::optional<Evaluation> low;   // feasible
    std::optional<Evaluation> high;  // infeasible
    try {
      Evaluation first = evaluate(knobs, 1.0);
      row.curve.push_back(first);
      (first.feasible ? low : high) = first;
      for (double scale = 1.0; !high && scale < 1e6;) {  // grow until the SLOs break
        scale *= 2.0;
        Evaluation evaluation = evaluate(knobs, scale);
        row.curve.push_back(evaluation);
        (evaluation.feasible ? low : high) = evaluation;
      }
      for (double scale = 1.0; !low && scale > 1e-6;) {  // shrink until they hold
        scale /= 2.0;
        Evaluation evaluation = evaluate(knobs, scale);
        row.curve.push_back(evaluation);
        (evaluation.feasible ? low : high) = evaluation;
      }
      if (!low) {
        row.note = "SLOs not met even at 1e-6 of the trace's rate (an unloaded request already misses them)";
      } else if (!high) {
        row.note = "SLOs met at every rate tried (up to 1e6 x the trace's rate)";
      } else {
        while (high->rate_scale / low->rate_scale > 1.0 + options.precision) {
          Evaluation middle = evaluate(knobs, std::sqrt(low->rate_scale * high->rate_scale));
          row.curve.push_back(middle);
          (middle.feasible ? low : high) = middle;
        }
      }
    } catch (const WallLimitReached&) {
      row.stopped = true;
      row.note = low ? "stopped by --max-wall-seconds before the search converged: the rate is a lower bound"
                     : "stopped by --max-wall-seconds before a rate within the SLOs was found";
    }
    row.best = low;
    if (low && !low->shortfall.empty()) {
      row.note += std::string(row.note.empty() ? "" : "; ") +
                  "warning: too short to judge the steady state at the rate found: " + low->shortfall +
                  "; raise --max-requests";
    }
    std::sort(row.curve.begin(), row.curve.end(),
              [](const Evaluation& a, const Evaluation& b) { return a.rate_scale < b.rate_scale; });
    {
      const std::lock_guard lock(progress_mutex);
      num_evaluations += static_cast<int64_t>(row.curve.size());
      progress.update(++num_done, "configurations searched, " + std::to_string(num_evaluations) + " rates simulated");
    }
    rows[index] = std::move(row);
  });
  progress.finish("configurations searched, " + std::to_string(num_evaluations) + " rates simulated");

  const double price = options.usd_per_gpu_hour > 0.0 ? options.usd_per_gpu_hour : base_backend.usd_per_gpu_hour;
  char base_rate_text[32];
  std::snprintf(base_rate_text, sizeof(base_rate_text), "%.17g", base_rate);
  std::vector<std::string> identity = result_arguments(args);
  identity.push_back(std::to_string(requests.requests.size()));
  identity.push_back(base_rate_text);
  nlohmann::json document = {
      {"model", model.shape.name},
      {"hardware", base_backend.device},
      {"cost_model", cost_model_name(options.executor)},
      {"description", base_backend.description},
      {"trace", options.trace.path},
      {"num_requests", requests.requests.size()},
      {"base_request_rate", base_rate},
      {"usd_per_gpu_hour", price},
      {"target_rate", options.target_rate},
      {"slo", nlohmann::json::object()},
      {"sweep", {{"fingerprint", plan_fingerprint(identity)}, {"num_configurations", combinations.size()}}},
      {"configurations", nlohmann::json::array()}};
  if (shard.sharded()) document["shard"] = {{"index", shard.index}, {"count", shard.count}};
  for (const sim::LatencyObjective& objective : slo) document["slo"][objective.name()] = objective.ms;
  for (const size_t index : owned) {
    const PlanRow& row = rows[index];
    const int32_t tp = row.knobs.contains("tp") ? row.knobs.at("tp") : options.executor.tensor_parallel;
    nlohmann::json entry = {
        {"index", index}, {"knobs", row.knobs}, {"tensor_parallel", tp}, {"curve", nlohmann::json::array()}};
    for (const Evaluation& point : row.curve) {
      nlohmann::json curve_point = {{"rate_scale", point.rate_scale},
                                    {"request_rate", point.request_rate},
                                    {"feasible", point.feasible},
                                    {"simulated_requests", point.num_requests}};
      if (!point.missed.empty()) curve_point["slo_missed"] = point.missed;
      if (point.stopped_early) {
        curve_point["stopped_early"] = true;
      } else {
        curve_point.update({{"sustained", point.sustained},
                            {"delay_growth", point.delay_growth},
                            {"waiting_growth", point.waiting_growth},
                            {"span_shortfall", point.shortfall},
                            {"latency_ms", point.values_ms},
                            {"output_throughput", point.output_throughput}});
      }
      entry["curve"].push_back(std::move(curve_point));
    }
    if (!row.note.empty()) entry["note"] = row.note;
    if (row.stopped) entry["stopped_by_wall_limit"] = true;
    if (row.best) {
      const Evaluation& best = *row.best;
      entry["max_request_rate_per_replica"] = best.request_rate;
      entry["output_throughput"] = best.output_throughput;
      entry["latency_ms"] = best.values_ms;
      if (price > 0.0 && best.output_throughput > 0.0) {
        entry["usd_per_million_output_tokens"] = tp * price / 3600.0 / best.output_throughput * 1e6;
      }
      if (options.target_rate > 0.0) {
        // Replicas behind a balancing router scale about linearly; check with `simulate --replicas`.
        const auto replicas = static_cast<int64_t>(std::ceil(options.target_rate / best.request_rate));
        entry["replicas"] = replicas;
        entry["gpus"] = replicas * tp;
        if (price > 0.0) entry["usd_per_hour"] = static_cast<double>(replicas) * tp * price;
      }
    }
    document["configurations"].push_back(std::move(entry));
  }
  print_plan(document, stdout);
  if (!options.output_json.empty()) {
    std::ofstream file(options.output_json);
    file << document.dump(1) << '\n';
    if (!file) throw std::runtime_error(options.output_json + ": cannot write");
    std::printf("\nwrote %s\n", options.output_json.c_str());
  }
  return 0;
}

}  // namespace pagedllm::cli
