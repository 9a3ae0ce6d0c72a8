// bench_cuda_decode: the CUDA executor's decode step against the memory floor (issue 9).
//
// For each model shape (random weights drawn on the device, nothing downloaded) and batch size,
// times whole executor steps (plan -> upload -> forward -> sampling -> token ids on the host, the
// CUDA graph replayed unless --eager) of `batch` sequences decoding at `--context` tokens, and
// prints it beside the floor: the bytes a decode step must read (every layer's weights, the LM
// head, and each sequence's KV) over the device-to-device copy bandwidth measured in the same
// run. "% of floor speed" = floor time / step time (the goal at batch 1: >= 90%).
//
//   bench_cuda_decode [--models llama-2-7b,llama-3-8b] [--batches 1,4,8,32,64] [--context 1024]
//                     [--block-sizes 16] [--steps 40] [--warmup 5] [--eager] [--dtype bf16|fp16]
//
// Needs a GPU; says so and exits 1 without one.
#include <cuda_profiler_api.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "core/model/model_config.h"
#include "core/model/model_shape.h"
#include "core/sched/step_plan.h"
#include "cuda/cuda_check.h"
#include "cuda/cuda_executor.h"
#include "cuda/device_info.h"
#include "cuda/device_memory.h"
#include "cuda/device_model.h"
#include "tools/bench/bench_cli.h"

namespace cuda = pagedllm::cuda;
namespace kv = pagedllm::kv;
namespace sched = pagedllm::sched;
using pagedllm::TokenId;

namespace {

struct Options {
  std::vector<std::string> models{"llama-2-7b", "llama-3-8b"};
  std::vector<int32_t> batches{1, 4, 8, 32, 64};
  std::vector<int32_t> block_sizes{16};
  int32_t context = 1024;
  int32_t steps = 40;
  int32_t warmup = 5;
  bool eager = false;
  cuda::DType dtype = cuda::DType::bf16;
};

pagedllm::bench::BenchCommandLine command_line(Options& options) {
  using namespace pagedllm::bench;
  BenchCommandLine cli("bench_cuda_decode");
  const auto ints = [](std::vector<int32_t>& field, const char* flag) {
    return [&field, flag](std::string_view v) {
      field.clear();
      for (const int64_t value : parse_integer_list(flag, v, 1)) field.push_back(static_cast<int32_t>(value));
    };
  };
  const auto count = [](int32_t& field, const char* flag, int64_t minimum) {
    return
        [&field, flag, minimum](std::string_view v) { field = static_cast<int32_t>(parse_integer(flag, v, minimum)); };
  };
  cli.add({"--models", "A,B", "model shape presets (default llama-2-7b,llama-3-8b)",
           [&](std::string_view v) { options.models = parse_name_list("--models", v); }});
  cli.add({"--batches", "B,..", "batch sizes (default 1,4,8,32,64)", ints(options.batches, "--batches")});
  cli.add(
      {"--context", "N", "tokens each sequence attends over (default 1024)", count(options.context, "--context", 1)});
  cli.add({"--block-sizes", "N,..", "KV block sizes (default 16)", ints(options.block_sizes, "--block-sizes")});
  cli.add({"--steps", "N", "timed steps per row (default 40)", count(options.steps, "--steps", 1)});
  cli.add({"--warmup", "N", "untimed steps before them (default 5)", count(options.warmup, "--warmup", 0)});
  cli.add({"--eager", "", "launch kernel by kernel instead of replaying a CUDA graph",
           [&](std::string_view) { options.eager = true; }});
  cli.add({"--dtype", "bf16|fp16", "weights and KV (default bf16)", [&](std::string_view v) {
             if (v != "bf16" && v != "fp16") throw UsageError("--dtype is bf16 or fp16, got '" + std::string(v) + "'");
             options.dtype = v == "fp16" ? cuda::DType::fp16 : cuda::DType::bf16;
           }});
  return cli;
}

// Device-to-device copy bandwidth (bytes read + written), 1 GiB, best of 10.
double copy_bandwidth() {
  const std::size_t bytes = std::size_t{1} << 30;
  cuda::DeviceBuffer a(bytes), b(bytes);
  cudaEvent_t start, stop;
  PAGEDLLM_CUDA_CHECK(cudaEventCreate(&start));
  PAGEDLLM_CUDA_CHECK(cudaEventCreate(&stop));
  float best_ms = 1e30f;
  for (int i = 0; i < 10; ++i) {
    PAGEDLLM_CUDA_CHECK(cudaEventRecord(start));
    PAGEDLLM_CUDA_CHECK(cudaMemcpyAsync(b.get(), a.get(), bytes, cudaMemcpyDeviceToDevice));
    PAGEDLLM_CUDA_CHECK(cudaEventRecord(stop));
    PAGEDLLM_CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0.0f;
    PAGEDLLM_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    best_ms = std::min(best_ms, ms);
  }
  PAGEDLLM_CUDA_CHECK(cudaEventDestroy(start));
  PAGEDLLM_CUDA_CHECK(cudaEventDestroy(stop));
  return 2.0 * static_cast<double>(bytes) / (static_cast<double>(best_ms) / 1e3);
}

struct Result {
  double step_seconds = 0.0;
  double floor_seconds = 0.0;
};

// `batch` sequences decoding from `context` tokens on; each its own consecutive blocks.
Result run_batch(const std::shared_ptr<const cuda::DeviceModel>& model, const Options& options, int32_t batch,
                 int32_t block_size, double bandwidth) {
  const pagedllm::model::ModelConfig& config = model->config();
  const int32_t max_len = options.context + options.warmup + options.steps + 1;
  const int32_t blocks_per_seq = (max_len + block_size - 1) / block_size;
  cuda::CudaExecutorConfig executor_config;
  executor_config.engine.cache.block_size = block_size;
  executor_config.engine.cache.num_device_blocks = batch * blocks_per_seq;
  executor_config.engine.cache.num_host_blocks = 0;
  executor_config.swap_space_bytes = 0;
  executor_config.dtype = options.dtype;
  executor_config.engine.scheduler.max_num_seqs = batch;
  executor_config.engine.scheduler.max_num_batched_tokens = std::max(batch, 256);
  executor_config.engine.scheduler.max_model_len = max_len;
  executor_config.enforce_eager = options.eager;
  cuda::CudaExecutor executor(model, executor_config);

  sched::SamplingParams greedy;
  greedy.temperature = 0.0f;
  std::vector<std::vector<TokenId>> tokens(static_cast<size_t>(batch), std::vector<TokenId>(options.context, 1));
  std::vector<std::vector<kv::BlockId>> tables(static_cast<size_t>(batch));
  for (int32_t s = 0; s < batch; ++s) {
    for (int32_t b = 0; b < blocks_per_seq; ++b) tables[static_cast<size_t>(s)].push_back(s * blocks_per_seq + b);
  }
  double timed = 0.0;
  double kv_bytes = 0.0;
  const double kv_bytes_per_token = 2.0 * static_cast<double>(config.num_layers * config.kv_dim()) * 2.0;
  for (int32_t step = 0; step < options.warmup + options.steps; ++step) {
    // A profiler started with --profile-from-start off (ncu, nsys) records the timed steps only.
    if (step == options.warmup) PAGEDLLM_CUDA_CHECK(cudaProfilerStart());
    sched::StepPlan plan;
    plan.step = step;
    for (int32_t s = 0; s < batch; ++s) {
      const auto& sequence = tokens[static_cast<size_t>(s)];
      const auto length = static_cast<int32_t>(sequence.size());
      sched::ScheduledSequence scheduled;
      scheduled.request = static_cast<sched::RequestId>(s);
      scheduled.seq = s;
      scheduled.tokens = sequence;
      scheduled.start = length - 1;
      scheduled.end = length;
      scheduled.num_prompt_tokens = 1;
      scheduled.block_table = tables[static_cast<size_t>(s)];
      scheduled.sample = true;
      scheduled.params = &greedy;
      plan.sequences.push_back(scheduled);
    }
    const auto start = std::chrono::steady_clock::now();
    const sched::StepResult result = executor.execute(plan);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (step >= options.warmup) {
      timed += seconds;
      kv_bytes += static_cast<double>(batch) * static_cast<double>(tokens[0].size()) * kv_bytes_per_token;
    }
    for (int32_t s = 0; s < batch; ++s)
      tokens[static_cast<size_t>(s)].push_back(result.outputs[static_cast<size_t>(s)].samples[0].token);
  }
  PAGEDLLM_CUDA_CHECK(cudaProfilerStop());
  // Bytes a decode step must read: all weights but the embedding table (only `batch` rows of it
  // are read; tied embeddings are read whole as the LM head), plus the KV of every sequence.
  const double embedding =
      config.tie_word_embeddings ? 0.0 : static_cast<double>(config.vocab_size * config.hidden_size) * 2.0;
  const double weight_bytes = static_cast<double>(model->weight_bytes()) - embedding;
  Result result;
  result.step_seconds = timed / options.steps;
  result.floor_seconds = (weight_bytes + kv_bytes / options.steps) / bandwidth;
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  return pagedllm::bench::run_benchmark(command_line(options), argc, argv, [&] {
    const cuda::DeviceQuery query = cuda::query_devices();
    if (query.devices.empty()) {
      std::printf("bench_cuda_decode: no GPU: %s\n", query.error.c_str());
      return 1;
    }
    const double bandwidth = copy_bandwidth();
    std::printf("device: %s; device-to-device copy %.0f GB/s; context %d; %s; %s\n", query.devices[0].name.c_str(),
                bandwidth / 1e9, options.context, cuda::dtype_name(options.dtype),
                options.eager ? "eager" : "CUDA graphs");
    std::printf("%-12s %6s %6s %10s %10s %9s %10s\n", "model", "block", "batch", "step ms", "floor ms", "% floor",
                "tok/s");
    for (const std::string& name : options.models) {
      const auto model = std::make_shared<const cuda::DeviceModel>(
          pagedllm::model::model_config_from_shape(pagedllm::model::find_model_shape(name)), options.dtype,
          cuda::RandomWeights{.seed = 1});
      for (const int32_t block_size : options.block_sizes) {
        for (const int32_t batch : options.batches) {
          const Result r = run_batch(model, options, batch, block_size, bandwidth);
          std::printf("%-12s %6d %6d %10.3f %10.3f %8.1f%% %10.0f\n", name.c_str(), block_size, batch,
                      r.step_seconds * 1e3, r.floor_seconds * 1e3, 100.0 * r.floor_seconds / r.step_seconds,
                      batch / r.step_seconds);
          std::fflush(stdout);
        }
      }
    }
    return 0;
  });
}
