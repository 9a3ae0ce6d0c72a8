#include "tools/pagedllm/executor_factory.h"

#include <omp.h>

#include <sstream>

#include "core/model/model_shape.h"
#include "cpu_ref/cpu_executor.h"
#include "cpu_ref/openmp_wait.h"
#include "sim/sim_executor.h"
#include "tools/pagedllm/default_model.h"
#include "tools/pagedllm/sim_setup.h"

namespace pagedllm::cli {

namespace po = boost::program_options;

uint64_t gib_to_bytes(double gib) {
  if (!(gib >= 0.0) || gib > 1e6) throw po::error("--swap-space: expected GiB in [0, 1e6], got " + std::to_string(gib));
  return static_cast<uint64_t>(gib * static_cast<double>(1ull << 30));
}

double swap_space_gib_for(const ExecutorOptions& options, const std::string& executor) {
  if (options.swap_space_gib) return *options.swap_space_gib;
  return executor == "cpu" ? kCpuSwapSpaceGib : kGpuSwapSpaceGib;
}

void add_cpu_options(po::options_description& description, ExecutorOptions& options) {
  po::options_description cpu("cpu executor");
  // clang-format off
  cpu.add_options()
      ("threads", po::value(&options.num_threads)->default_value(options.num_threads), "cpu: OpenMP threads (0 = all cores)")
      ("kv-cache-mib", po::value(&options.kv_cache_mib)->default_value(options.kv_cache_mib), "cpu: fp32 KV cache memory")
      ("cpu-weights", po::value(&options.cpu_weights)->default_value(options.cpu_weights),
       "cpu: stored (compute from the weights' stored types, read in place from the file: about its size in "
       "memory) or fp32 (dequantize every weight at load: 4 bytes a weight); the logits are bit-identical");
  // clang-format on
  description.add(cpu);
}

void add_sim_options(po::options_description& description, ExecutorOptions& options) {
  po::options_description sim("simulator");
  // clang-format off
  sim.add_options()
      ("hardware", po::value(&options.hardware)->default_value(options.hardware),
       ("sim: " + sim::hardware_names()).c_str())
      ("sim-model", po::value(&options.sim_model),
       ("sim: a model shape preset instead of --model's config: " + model::model_shape_names()).c_str())
      ("tensor-parallel-size,tp", po::value(&options.tensor_parallel)->default_value(options.tensor_parallel),
       "sim: GPUs per replica")
      ("gemm-model", po::value(&options.gemm_model)->default_value(options.gemm_model),
       "sim: how the roofline prices the linear layers: roofline (a step's GEMMs at the larger of their FLOP and "
       "byte times) or per-gemm (each GEMM on its shape, with the transition between the bounds and each "
       "kernel's latency: closer to measured GPUs at 96-384 tokens; docs/SIMULATOR.md)")
      ("profile", po::value(&options.profile),
       "sim: a measured step profile (pagedllm profile) instead of the roofline; KV blocks as the profiled "
       "executor sizes them (cpu: --kv-cache-mib, --swap-space) unless --num-gpu-blocks-override")
      ("draft-profile", po::value(&options.draft_profile),
       "sim with --profile and a draft model (--speculative-config's \"model\"): the draft's own profile "
       "(pagedllm profile on the draft model, same executor and block size)")
      ("profile-engine-overhead", po::bool_switch(&options.profile_engine_overhead),
       "sim with --profile: add the engine's own time per step that the profile measured (to predict --time real)")
      ("profile-quiet", po::bool_switch(&options.profile_quiet),
       "sim with --profile: predict an undisturbed machine (the tables' lower quartiles) rather than the mean "
       "step times of the machine as busy as it was while profiling (times the profile's load factor)");
  // clang-format on
  description.add(sim);
}

void add_memory_options(po::options_description& description, ExecutorOptions& options) {
  po::options_description memory("memory");
  // clang-format off
  memory.add_options()
      ("gpu-memory-utilization", po::value(&options.gpu_memory_utilization)->default_value(options.gpu_memory_utilization),
       "sim, cuda: fraction of GPU memory for weights, activations and KV")
      ("swap-space", po::value<double>()->notifier([&options](double gib) { options.swap_space_gib = gib; }),
       "GiB of host memory for swapped-out KV, per GPU (default: cpu 0.25, sim and cuda 4 as vLLM)");
  // clang-format on
  description.add(memory);
}

void add_executor_options(po::options_description& description, ExecutorOptions& options) {
  po::options_description executor("executor");
  // clang-format off
  executor.add_options()
      ("executor", po::value(&options.executor)->default_value(options.executor),
       "cpu (the CPU reference engine, real weights), cuda (the GPU engine) or sim (the simulator's cost model)");
  // clang-format on
  description.add(executor);
  add_cpu_options(description, options);
  add_sim_options(description, options);
  add_memory_options(description, options);
}

namespace {

// --cpu-weights as the loader's type; throws po::error for another value.
model::WeightDType cpu_weight_dtype(const ExecutorOptions& options) {
  if (options.cpu_weights != "fp32" && options.cpu_weights != "stored") {
    throw po::error("--cpu-weights: expected fp32 or stored, got '" + options.cpu_weights + "'");
  }
  return options.cpu_weights == "stored" ? model::WeightDType::stored : model::WeightDType::f32;
}

// The draft model on a CPU engine of its own, over spec::draft_cache_config of the target's cache
// (a draft block is smaller: fewer layers or heads).
std::unique_ptr<spec::DraftModelProposer> make_cpu_draft_model(const ExecutorOptions& options,
                                                               const frontend::ModelBundle& target,
                                                               const engine::EngineConfig& config,
                                                               const kv::KvCacheConfig& target_cache,
                                                               std::string& description) {
  const frontend::ModelBundle draft = frontend::open_model(resolve_model_argument(config.speculative.draft_model));
  frontend::check_draft_model(target, draft, config.scheduler.max_model_len);
  const kv::KvCacheConfig cache = spec::draft_cache_config(target_cache, draft.config.attention_window());
  auto model = std::make_shared<const cpu_ref::LlamaModel>(frontend::load_weights(draft, {cpu_weight_dtype(options)}));
  const uint64_t kv_bytes =
      cpu_ref::kv_layout_for(draft.config, cache.block_size, cache.num_device_blocks).total_elements() * sizeof(float);
  std::ostringstream line;
  line << "; draft model " << draft.source.path << ", " << model::describe_weight_memory(model->weight_memory())
       << ", KV " << (kv_bytes >> 20) << " MiB (" << cache.num_device_blocks << " blocks)";
  description += line.str();
  return std::make_unique<spec::DraftModelProposer>(
      spec::DraftModelProposerConfig{.cache = cache, .max_num_batched_tokens = config.scheduler.max_num_batched_tokens},
      std::make_unique<cpu_ref::CpuExecutor>(
          model, cpu_ref::CpuExecutorConfig{.cache = cache, .num_threads = options.num_threads}));
}

ExecutorSetup make_cpu_executor(const ExecutorOptions& options, const frontend::ModelBundle& bundle,
                                const engine::EngineConfig& config) {
  kv::KvCacheConfig cache = config.cache;
  if (cache.num_device_blocks == 0) {
    cache.num_device_blocks = cpu_ref::num_kv_blocks_for_bytes(bundle.config, cache.block_size,
                                                               static_cast<uint64_t>(options.kv_cache_mib) << 20);
  }
  cache.num_host_blocks = cpu_ref::num_kv_blocks_for_bytes(bundle.config, cache.block_size,
                                                           gib_to_bytes(swap_space_gib_for(options, "cpu")));
  auto model = std::make_shared<const cpu_ref::LlamaModel>(frontend::load_weights(bundle, {cpu_weight_dtype(options)}));
  ExecutorSetup setup;
  setup.cache = cache;
  setup.executor = std::make_unique<cpu_ref::CpuExecutor>(
      model, cpu_ref::CpuExecutorConfig{.cache = cache, .num_threads = options.num_threads});
  std::ostringstream description;
  description << "cpu_ref (" << (options.num_threads > 0 ? options.num_threads : omp_get_max_threads())
              << " threads, idle wait " << cpu_ref::openmp_wait_setting() << "), " << bundle.source.path << ", "
              << model::describe_weight_memory(model->weight_memory()) << ", KV blocks: " << cache.num_device_blocks
              << " (" << static_cast<int64_t>(cache.num_device_blocks) * cache.block_size
              << " tokens), swap blocks: " << cache.num_host_blocks;
  setup.description = description.str();
  if (config.speculative.method == spec::SpeculativeMethod::draft_model) {
    setup.draft_model = make_cpu_draft_model(options, bundle, config, cache, setup.description);
  }
  return setup;
}

// The simulator: the roofline of --hardware on the model's shape (or --sim-model's), or a
// measured profile (sim_setup.h).
ExecutorSetup make_sim_executor(const ExecutorOptions& options, const frontend::ModelBundle& bundle,
                                const engine::EngineConfig& config) {
  if (!options.profile.empty() && !options.sim_model.empty()) {
    throw po::error("--profile: the profile fixes the model; drop --sim-model");
  }
  const bool own_shape = options.sim_model.empty();
  const model::ModelShape shape = own_shape ? model::model_shape_from_config(bundle.config, bundle.source.path)
                                            : model::find_model_shape(options.sim_model);
  const SimBackend backend = make_sim_backend(options, shape, own_shape ? &bundle.config : nullptr, config);
  sim::SimExecutorConfig sim_config;
  sim_config.cost_model = backend.cost_model;
  sim_config.tokens = sim::sim_tokens_for(config, static_cast<int32_t>(shape.vocab_size));
  ExecutorSetup setup;
  setup.cache = backend.cache;
  setup.executor = std::make_unique<sim::SimExecutor>(sim_config, backend.cache);
  setup.description = backend.description + ", " + backend.sizing;
  if (backend.draft)
    setup.draft_model = make_sim_draft_model(*backend.draft, config, static_cast<int32_t>(shape.vocab_size));
  return setup;
}

// The GPU engine: bf16 weights on the host (fp32 when the device runs fp16, rounded once there),
// each model's released once it is on the device. With a draft model, both executors are sized
// together (cuda/target_and_draft.h).
ExecutorSetup make_gpu_executor(const ExecutorOptions& options, const frontend::ModelBundle& bundle,
                                const engine::EngineConfig& config) {
  const CudaOptions cuda = cuda_options_of(options);
  require_cuda_executor();
  const model::WeightDType host_dtype = host_weight_dtype(cuda);
  ExecutorSetup setup;
  if (config.speculative.method != spec::SpeculativeMethod::draft_model) {
    CudaExecutorSetup cuda_setup =
        make_cuda_executor(cuda, frontend::load_weights(bundle, {.dtype = host_dtype}), config);
    setup.cache = cuda_setup.cache;
    setup.executor = std::move(cuda_setup.executor);
    setup.description = cuda_setup.description + ", " + bundle.source.path;
    return setup;
  }
  const frontend::ModelBundle draft = frontend::open_model(resolve_model_argument(config.speculative.draft_model));
  frontend::check_draft_model(bundle, draft, config.scheduler.max_model_len);
  const auto target_model = upload_cuda_model(cuda, frontend::load_weights(bundle, {.dtype = host_dtype}), config);
  const auto draft_model = upload_cuda_model(cuda, frontend::load_weights(draft, {.dtype = host_dtype}), config);
  CudaTargetAndDraftSetup pair = make_cuda_executor_with_draft(cuda, target_model, draft_model, config);
  setup.cache = pair.target.cache;
  setup.executor = std::move(pair.target.executor);
  setup.description = pair.target.description + ", " + bundle.source.path + "; draft model " + draft.source.path +
                      ", " + pair.draft_description;
  setup.draft_model = std::make_unique<spec::DraftModelProposer>(
      spec::DraftModelProposerConfig{.cache = pair.draft_cache,
                                     .max_num_batched_tokens = config.scheduler.max_num_batched_tokens},
      std::move(pair.draft));
  return setup;
}

}  // namespace

CudaOptions cuda_options_of(const ExecutorOptions& options) {
  CudaOptions cuda = options.cuda;
  cuda.gpu_memory_utilization = options.gpu_memory_utilization;
  cuda.swap_space_gib = swap_space_gib_for(options, "cuda");
  return cuda;
}

ExecutorSetup make_executor(const ExecutorOptions& options, const frontend::ModelBundle& bundle,
                            const engine::EngineConfig& config) {
  if (config.speculative.simulated && options.executor != "sim") {
    throw po::error(
        "--speculative-config: simulated_draft_rate and simulated_acceptance are the simulator's "
        "(--executor sim); the " +
        options.executor + " executor proposes and verifies for real");
  }
  if (options.executor == "cpu") return make_cpu_executor(options, bundle, config);
  if (options.executor == "sim") return make_sim_executor(options, bundle, config);
  if (options.executor == "cuda") return make_gpu_executor(options, bundle, config);
  throw po::error("--executor: expected cpu, cuda or sim, got '" + options.executor + "'");
}

}  // namespace pagedllm::cli
