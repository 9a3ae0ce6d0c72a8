// bench_cpu_decode: decode throughput of the CPU reference engine (cpu_ref) through the whole
// engine loop (schedule, forward pass, greedy sampling, apply), beside floors measured on the
// same machine in the same run:
//   - the memory floor: the bytes one decode step must read (every weight once in its stored
//     type, the output head included, plus the KV cache the batch attends over) at the memory
//     read bandwidth measured here (a summing pass over a 1 GiB float array, best of several,
//     same thread count);
//   - the compute floor: 2 FLOPs per weight per token plus attention, at the peak of cpu_ref's
//     own linear kernel measured here on the model's MLP shape with weights in cache.
//
//   bench_cpu_decode --model M [--batch B] [--prompt-tokens P] [--steps S] [--warmup-steps W]
//                    [--threads T] [--quick] [--json]
//
// B requests with distinct pseudo-random prompts of P tokens (ignore_eos, greedy) are added and
// stepped until every one is prefilled and has sampled its first token; after W untimed decode
// steps, S decode steps (B tokens each) are timed one by one with std::chrono::steady_clock.
// Every timed step is checked to be a pure decode step of all B sequences. --json prints one JSON
// object on stdout (the human report then goes to stderr).

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <numeric>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/common/mix.h"
#include "core/common/types.h"
#include "core/engine/clock.h"
#include "core/engine/engine.h"
#include "core/frontend/model_bundle.h"
#include "cpu_ref/cpu_executor.h"
#include "cpu_ref/linear.h"
#include "cpu_ref/llama_model.h"
#include "cpu_ref/openmp_wait.h"
#include "tools/bench/bench_cli.h"
#include "tools/bench/bench_output.h"
#include "tools/bench/bench_timing.h"

namespace {

namespace cpu_ref = pagedllm::cpu_ref;
namespace engine = pagedllm::engine;
namespace frontend = pagedllm::frontend;
namespace sched = pagedllm::sched;
using pagedllm::TokenId;
using namespace pagedllm::bench;  // clock, sink (consume), statistics, command line, output

struct BenchConfig {
  std::string model;
  int32_t batch = 1;
  int32_t prompt_tokens = 128;
  int32_t steps = 32;
  int32_t warmup_steps = 2;
  int32_t threads = 0;  // 0: OpenMP's default
  bool json = false;
  int64_t bandwidth_bytes = 1ll << 30;
  int32_t bandwidth_passes = 10;
  bool quick = false;
  bool fp32_weights = false;  // dequantize at load (pagedllm --cpu-weights fp32) instead of stored
};

BenchCommandLine command_line(BenchConfig& config) {
  BenchCommandLine cli("bench_cpu_decode");
  const auto count = [](int32_t& field, const char* flag, int64_t minimum) {
    return
        [&field, flag, minimum](std::string_view v) { field = static_cast<int32_t>(parse_integer(flag, v, minimum)); };
  };
  cli.add({"--model", "M", "a .gguf file, a Hugging Face model directory, or a fetched model's name",
           [&](std::string_view v) { config.model = std::string(v); }, /*required=*/true});
  cli.add({"--batch", "B", "concurrent requests, one decode token each per step (default 1)",
           count(config.batch, "--batch", 1)});
  cli.add({"--prompt-tokens", "P", "prompt length of every request (default 128)",
           count(config.prompt_tokens, "--prompt-tokens", 1)});
  cli.add({"--steps", "S", "timed decode steps (default 32)", count(config.steps, "--steps", 1)});
  cli.add({"--warmup-steps", "W", "untimed decode steps before them (default 2)",
           count(config.warmup_steps, "--warmup-steps", 0)});
  cli.add({"--threads", "T", "OpenMP threads for the model and the floors (default: OpenMP's)",
           count(config.threads, "--threads", 0)});
  cli.add_quick("small sizes for a smoke run (the floors too: not figures to record)", [&] {
    config.quick = true;
    config.prompt_tokens = 16;
    config.steps = 4;
    config.warmup_steps = 1;
    config.bandwidth_bytes = 64ll << 20;
    config.bandwidth_passes = 2;
  });
  cli.add({"--fp32-weights", "",
           "dequantize every weight to fp32 at load (pagedllm --cpu-weights fp32) instead of computing from the "
           "stored types",
           [&](std::string_view) { config.fp32_weights = true; }});
  cli.add({"--json", "", "print the figures as one JSON object on stdout (the report goes to stderr)",
           [&](std::string_view) { config.json = true; }});
  return cli;
}

// --- floors ------------------------------------------------------------------------------------

// Memory read bandwidth in bytes/s: every thread sums its share of a `bytes` float array (16
// independent lanes, which the compiler vectorizes), best pass of `passes`.
double measure_read_bandwidth(int64_t bytes, int32_t passes) {
  constexpr int64_t kChunk = 16 * 1024;  // floats per OpenMP work item (64 KiB)
  const int64_t num_chunks = bytes / static_cast<int64_t>(sizeof(float)) / kChunk;
  const int64_t n = num_chunks * kChunk;
  const std::unique_ptr<float[]> data(new float[static_cast<size_t>(n)]);
#pragma omp parallel for schedule(static)
  for (int64_t chunk = 0; chunk < num_chunks; ++chunk) {  // first touch, as the reads split it
    std::fill_n(data.get() + chunk * kChunk, kChunk, 1.0f);
  }
  double best = 0.0;
  for (int32_t pass = 0; pass < passes; ++pass) {
    double total = 0.0;
    const auto start = Clock::now();
#pragma omp parallel for schedule(static) reduction(+ : total)
    for (int64_t chunk = 0; chunk < num_chunks; ++chunk) {
      const float* p = data.get() + chunk * kChunk;
      float lanes[16] = {};
      for (int64_t k = 0; k < kChunk; k += 16) {
        for (int j = 0; j < 16; ++j) lanes[j] += p[k + j];
      }
      float sum = 0.0f;
      for (float lane : lanes) sum += lane;
      total += sum;
    }
    const double seconds = elapsed_ns(start, Clock::now()) / 1e9;
    if (total != static_cast<double>(n)) throw std::runtime_error("bandwidth pass: wrong sum");
    consume(static_cast<uint64_t>(total));
    best = std::max(best, static_cast<double>(n) * sizeof(float) / seconds);
  }
  return best;
}

// FLOP/s of cpu_ref::linear on [rows x in] x [out x in]^T (weights in cache), best of `repeats`
// timed batches.
double measure_linear_peak(int64_t rows, int64_t in, int64_t out, int32_t repeats) {
  std::vector<float> x(static_cast<size_t>(rows * in));
  std::vector<float> w(static_cast<size_t>(out * in));
  std::vector<float> y(static_cast<size_t>(rows * out));
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(pagedllm::mix64(i) % 1000) * 1e-3f - 0.5f;
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(pagedllm::mix64(i + 7) % 1000) * 1e-3f - 0.5f;
  const cpu_ref::LinearArgs args{.x = x.data(),
                                 .weight = pagedllm::cpu_ref::WeightMatrix::f32(w.data(), in),
                                 .y = y.data(),
                                 .num_rows = rows,
                                 .in_features = in,
                                 .out_features = out};
  constexpr int kCallsPerRepeat = 10;
  cpu_ref::linear(args);  // warm the caches
  double best = 0.0;
  for (int32_t r = 0; r < repeats; ++r) {
    const double ns = time_ns([&] {
      for (int c = 0; c < kCallsPerRepeat; ++c) cpu_ref::linear(args);
    });
    consume(static_cast<uint64_t>(y[0] != 0.0f));
    best = std::max(best, 2.0 * static_cast<double>(rows * in * out) * kCallsPerRepeat / (ns / 1e9));
  }
  return best;
}

// --- the decode run ----------------------------------------------------------------------------

struct DecodeRun {
  double load_seconds = 0.0;
  double prefill_seconds = 0.0;
  int32_t prefill_steps = 0;
  std::vector<double> step_seconds;   // timed steps
  std::vector<int64_t> step_context;  // positions each sequence attends over in that step
};

// Distinct prompts: request r's token at position p is a fixed hash of (r, p), away from the
// lowest ids (where special tokens live).
std::vector<TokenId> make_prompt(int32_t request, int32_t length, int64_t vocab) {
  const int64_t low = std::min<int64_t>(vocab / 8, 256);
  std::vector<TokenId> tokens(static_cast<size_t>(length));
  for (int32_t p = 0; p < length; ++p) {
    const uint64_t hash = pagedllm::mix64(static_cast<uint64_t>(request) << 32 ^ static_cast<uint64_t>(p) ^ 0x5eedULL);
    tokens[static_cast<size_t>(p)] =
        static_cast<TokenId>(low + static_cast<int64_t>(hash % static_cast<uint64_t>(vocab - low)));
  }
  return tokens;
}

DecodeRun run_decode(const BenchConfig& config, const frontend::ModelBundle& bundle,
                     std::shared_ptr<const cpu_ref::LlamaModel> model) {
  DecodeRun run;
  const int32_t batch = config.batch;
  const int32_t tokens_per_sequence = config.prompt_tokens + 1 + config.warmup_steps + config.steps + 1;
  engine::EngineConfig engine_config;
  engine_config.cache.num_device_blocks =
      static_cast<int32_t>(std::ceil(1.05 * batch * ((tokens_per_sequence + 15) / 16) + 16));
  engine_config.cache.num_host_blocks = 0;
  engine_config.scheduler.max_num_seqs = std::max(256, batch);
  // The whole prefill in one step, so that every sequence decodes at the same length.
  engine_config.scheduler.max_num_batched_tokens = std::max(2048, batch * config.prompt_tokens);
  engine_config.scheduler.max_model_len =
      static_cast<int32_t>(std::min<int64_t>(bundle.config.max_position_embeddings, 32768));
  if (tokens_per_sequence > engine_config.scheduler.max_model_len) {
    throw std::invalid_argument("prompt + steps exceed the model's context of " +
                                std::to_string(engine_config.scheduler.max_model_len));
  }
  frontend::apply_model_limits(bundle, engine_config);
  engine_config.output_kind = engine::OutputKind::delta;  // what a streaming server asks for

  cpu_ref::CpuExecutor executor(model, {.cache = engine_config.cache, .num_threads = config.threads});
  engine::WallClock clock;
  engine::Engine eng(engine_config, executor, clock);
  sched::SamplingParams params;
  params.temperature = 0.0f;
  params.ignore_eos = true;
  params.max_tokens = tokens_per_sequence - config.prompt_tokens;
  for (int32_t r = 0; r < batch; ++r) {
    eng.add_request(sched::Request{
        .id = r, .prompt_tokens = make_prompt(r, config.prompt_tokens, model->vocab_size()), .params = params});
  }

  // Prefill (in chunks of the token budget) until every request has sampled its first token.
  const auto prefill_start = Clock::now();
  while (eng.counters().generation_tokens < batch) {
    if (!eng.has_unfinished()) throw std::runtime_error("requests finished during prefill");
    for (const engine::RequestOutput& output : eng.step()) {
      if (output.finished)
        throw std::runtime_error("request " + std::to_string(output.id) + " finished early: " + output.message);
    }
    ++run.prefill_steps;
  }
  run.prefill_seconds = elapsed_ns(prefill_start, Clock::now()) / 1e9;
  if (eng.counters().generation_tokens != batch) {
    throw std::runtime_error("prefill steps did not end together: " + std::to_string(eng.counters().generation_tokens) +
                             " first tokens for " + std::to_string(batch) + " requests");
  }

  for (int32_t s = 0; s < config.warmup_steps + config.steps; ++s) {
    // Each sequence holds prompt + generated tokens; this step computes the last one, which
    // attends over all of them.
    const int64_t context = config.prompt_tokens + eng.counters().generation_tokens / batch;
    const auto start = Clock::now();
    const std::vector<engine::RequestOutput>& outputs = eng.step();
    const double seconds = elapsed_ns(start, Clock::now()) / 1e9;
    const engine::StepMetrics& metrics = eng.step_metrics().back();
    if (metrics.num_decode_tokens != batch || metrics.num_prefill_tokens != 0 ||
        outputs.size() != static_cast<size_t>(batch)) {
      throw std::runtime_error("step " + std::to_string(s) + " was not a decode step of all " + std::to_string(batch) +
                               " sequences (" + std::to_string(metrics.num_decode_tokens) + " decode, " +
                               std::to_string(metrics.num_prefill_tokens) + " prefill tokens)");
    }
    consume(outputs.front().completions.empty() ? 0 : outputs.front().completions.front().tokens.size());
    if (s < config.warmup_steps) continue;
    run.step_seconds.push_back(seconds);
    run.step_context.push_back(context);
  }
  return run;
}

// --- report ------------------------------------------------------------------------------------

struct Figures {
  std::string model;
  int64_t num_parameters = 0;
  std::string weights;         // "stored" or "fp32": what the model computes from
  double weight_bytes = 0.0;   // read per decode step
  double kv_bytes_mean = 0.0;  // KV cache read per decode step, mean over timed steps
  double context_mean = 0.0;
  double step_ms_mean = 0.0;
  double step_ms_p50 = 0.0;
  double step_ms_p99 = 0.0;  // the stalls a loaded machine causes show here first
  double step_ms_best = 0.0;
  double tokens_per_s = 0.0;
  double bandwidth = 0.0;     // bytes/s
  double mem_floor_ms = 0.0;  // mean over the timed steps
  double linear_peak = 0.0;   // FLOP/s
  double flops_mean = 0.0;    // per step
  double compute_floor_ms = 0.0;
};

void print_report(std::FILE* out, const BenchConfig& config, const DecodeRun& run, const Figures& f) {
  const double mem_floor_tps = config.batch / (f.mem_floor_ms / 1e3);
  const double roofline_ms = std::max(f.mem_floor_ms, f.compute_floor_ms);
  std::fprintf(out, "bench_cpu_decode: %s\n  %s\n", f.model.c_str(), build_line(build_info()).c_str());
  std::fprintf(
      out,
      "  %lld parameters (weights %s, %.1f MB read per step), batch %d, prompt %d tokens, %d timed decode steps "
      "after %d warm-up, %d OpenMP threads, linear kernel %s\n",
      static_cast<long long>(f.num_parameters), f.weights.c_str(), f.weight_bytes / 1e6, config.batch,
      config.prompt_tokens, config.steps, config.warmup_steps, omp_get_max_threads(),
      cpu_ref::linear_kernel_name(cpu_ref::resolve_linear_kernel(cpu_ref::LinearKernel::best)));
  std::fprintf(out, "  load %.2f s; prefill %.2f s in %d step(s) (%.0f prompt tokens/s)\n", run.load_seconds,
               run.prefill_seconds, run.prefill_steps, config.batch * config.prompt_tokens / run.prefill_seconds);
  std::fprintf(
      out, "  decode: step mean %.2f ms, p50 %.2f, p99 %.2f, best %.2f -> %.1f tokens/s (batch x steps / total time)\n",
      f.step_ms_mean, f.step_ms_p50, f.step_ms_p99, f.step_ms_best, f.tokens_per_s);
  std::fprintf(out,
               "  memory floor: %.1f MB weights + %.1f MB KV (mean context %.0f) per step at %.1f GB/s "
               "(read bandwidth, best of %d passes over %lld MiB) = %.2f ms/step, %.1f tokens/s; "
               "measured / floor = %.2fx\n",
               f.weight_bytes / 1e6, f.kv_bytes_mean / 1e6, f.context_mean, f.bandwidth / 1e9, config.bandwidth_passes,
               static_cast<long long>(config.bandwidth_bytes >> 20), f.mem_floor_ms, mem_floor_tps,
               f.step_ms_mean / f.mem_floor_ms);
  std::fprintf(out,
               "  compute floor: %.2f GFLOP per step at %.1f GFLOP/s (cpu_ref linear peak) = %.2f ms/step; "
               "measured / floor = %.2fx; measured / max(memory, compute) floor = %.2fx\n",
               f.flops_mean / 1e9, f.linear_peak / 1e9, f.compute_floor_ms, f.step_ms_mean / f.compute_floor_ms,
               f.step_ms_mean / roofline_ms);
}

void print_json(const BenchConfig& config, const DecodeRun& run, const Figures& f) {
  const Json figures = {{"bench", "bench_cpu_decode"},
                        {"machine", build_json(build_info())},
                        {"model", f.model},
                        {"batch", config.batch},
                        {"prompt_tokens", config.prompt_tokens},
                        {"steps", config.steps},
                        {"warmup_steps", config.warmup_steps},
                        {"quick", config.quick},
                        {"threads", omp_get_max_threads()},
                        {"num_parameters", f.num_parameters},
                        {"weights", f.weights},
                        {"weight_bytes_per_step", f.weight_bytes},
                        {"kv_bytes_per_step_mean", f.kv_bytes_mean},
                        {"context_mean", f.context_mean},
                        {"load_s", run.load_seconds},
                        {"prefill_s", run.prefill_seconds},
                        {"step_ms_mean", f.step_ms_mean},
                        {"step_ms_p50", f.step_ms_p50},
                        {"step_ms_p99", f.step_ms_p99},
                        {"step_ms_best", f.step_ms_best},
                        {"decode_tokens_per_s", f.tokens_per_s},
                        {"read_bandwidth_gb_s", f.bandwidth / 1e9},
                        {"mem_floor_step_ms", f.mem_floor_ms},
                        {"mem_floor_tokens_per_s", config.batch / (f.mem_floor_ms / 1e3)},
                        {"ratio_to_mem_floor", f.step_ms_mean / f.mem_floor_ms},
                        {"linear_peak_gflop_s", f.linear_peak / 1e9},
                        {"flop_per_step", f.flops_mean},
                        {"compute_floor_step_ms", f.compute_floor_ms},
                        {"ratio_to_compute_floor", f.step_ms_mean / f.compute_floor_ms},
                        {"ratio_to_roofline", f.step_ms_mean / std::max(f.mem_floor_ms, f.compute_floor_ms)}};
  std::printf("%s\n", figures.dump().c_str());
}

}  // namespace

int main(int argc, char** argv) {
  cpu_ref::apply_openmp_wait_default(argv);  // as pagedllm does (openmp_wait.h)
  BenchConfig config;
  return run_benchmark(command_line(config), argc, argv, [&] {
    if (config.threads > 0) omp_set_num_threads(config.threads);

    const auto load_start = Clock::now();
    const frontend::ModelBundle bundle = frontend::open_model(config.model);
    pagedllm::model::ModelWeights weights = frontend::load_weights(
        bundle, {config.fp32_weights ? pagedllm::model::WeightDType::f32 : pagedllm::model::WeightDType::stored});
    const pagedllm::model::ModelConfig model_config = bundle.config;
    Figures f;
    f.model = weights.source.empty() ? config.model : weights.source;
    f.num_parameters = static_cast<int64_t>(weights.num_parameters());
    f.weights = config.fp32_weights ? "fp32" : "stored";
    // Bytes of weights one decode step must read, as stored (a Q4_1 matrix at 0.625 bytes per
    // weight): every tensor once (the output head included; a tied embedding is that same
    // tensor), except that an untied input embedding only has its batch's rows read.
    for (const auto& [name, tensor] : weights.tensors) f.weight_bytes += static_cast<double>(tensor.num_bytes());
    if (!bundle.config.tie_word_embeddings) {
      const double rows_not_read =
          1.0 - static_cast<double>(config.batch) / static_cast<double>(bundle.config.vocab_size);
      f.weight_bytes -= static_cast<double>(weights.at("model.embed_tokens.weight").num_bytes()) * rows_not_read;
    }
    auto model = std::make_shared<const cpu_ref::LlamaModel>(std::move(weights));
    const double load_seconds = elapsed_ns(load_start, Clock::now()) / 1e9;

    DecodeRun run = run_decode(config, bundle, model);
    run.load_seconds = load_seconds;

    // Floors, measured after the decode run on the same threads.
    f.bandwidth = measure_read_bandwidth(config.bandwidth_bytes, config.bandwidth_passes);
    f.linear_peak = measure_linear_peak(64, model_config.hidden_size, model_config.intermediate_size, 20);

    // Plus every sequence's K and V over its context.
    const double kv_bytes_per_position =
        2.0 * static_cast<double>(model_config.num_layers) * static_cast<double>(model_config.kv_dim()) * sizeof(float);
    const double attention_flops_per_position =
        4.0 * static_cast<double>(model_config.num_layers) * static_cast<double>(model_config.q_dim());
    f.context_mean = std::accumulate(run.step_context.begin(), run.step_context.end(), 0.0) /
                     static_cast<double>(run.step_context.size());
    f.kv_bytes_mean = config.batch * f.context_mean * kv_bytes_per_position;
    // Weights multiplied per token: all but an untied input embedding's (the batch's rows are
    // counted as before, a negligible overstatement).
    double weight_floats = static_cast<double>(f.num_parameters);
    if (!model_config.tie_word_embeddings) {
      weight_floats -=
          static_cast<double>(model_config.vocab_size - config.batch) * static_cast<double>(model_config.hidden_size);
    }
    f.flops_mean = 2.0 * weight_floats * config.batch + config.batch * f.context_mean * attention_flops_per_position;
    f.mem_floor_ms = (f.weight_bytes + f.kv_bytes_mean) / f.bandwidth * 1e3;
    f.compute_floor_ms = f.flops_mean / f.linear_peak * 1e3;

    const double total_seconds = std::accumulate(run.step_seconds.begin(), run.step_seconds.end(), 0.0);
    f.step_ms_mean = total_seconds / static_cast<double>(run.step_seconds.size()) * 1e3;
    f.step_ms_p50 = median(run.step_seconds) * 1e3;
    std::vector<double> sorted_steps = run.step_seconds;
    std::sort(sorted_steps.begin(), sorted_steps.end());
    f.step_ms_p99 = percentile(sorted_steps, 0.99) * 1e3;
    f.step_ms_best = *std::min_element(run.step_seconds.begin(), run.step_seconds.end()) * 1e3;
    f.tokens_per_s = static_cast<double>(config.batch) * static_cast<double>(run.step_seconds.size()) / total_seconds;

    print_report(config.json ? stderr : stdout, config, run, f);
    if (config.json) print_json(config, run, f);
    return 0;
  });
}
