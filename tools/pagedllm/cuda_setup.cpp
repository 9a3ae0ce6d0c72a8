#include "tools/pagedllm/cuda_setup.h"

#ifdef PAGEDLLM_HAVE_CUDA
#include <sstream>

#include "cuda/cuda_executor.h"
#include "cuda/device_model.h"
#include "cuda/target_and_draft.h"
#endif

namespace pagedllm::cli {

namespace po = boost::program_options;

void add_cuda_options(po::options_description& description, CudaOptions& options) {
  po::options_description cuda("cuda executor");
  // clang-format off
  cuda.add_options()
      ("dtype", po::value(&options.dtype)->default_value(options.dtype), "cuda: bf16 or fp16 (weights, activations, KV)")
      ("cuda-device", po::value(&options.device)->default_value(options.device), "cuda: the device index")
      ("enforce-eager", po::bool_switch(&options.enforce_eager), "cuda: no CUDA graphs for decode steps");
  // clang-format on
  description.add(cuda);
}

void require_cuda_executor() {
  if (!cuda_executor_available()) {
    throw po::error("--executor cuda: this build has no CUDA executor (nvcc was not found when it was configured)");
  }
}

#ifdef PAGEDLLM_HAVE_CUDA

struct CudaModel {
  std::shared_ptr<const cuda::DeviceModel> device_model;
};

bool cuda_executor_available() noexcept { return true; }

namespace {

cuda::CudaExecutorConfig executor_config(const CudaOptions& options, const engine::EngineConfig& config) {
  if (options.dtype != "bf16" && options.dtype != "fp16") {
    throw po::error("--dtype: expected bf16 or fp16, got '" + options.dtype + "'");
  }
  cuda::CudaExecutorConfig cuda_config;
  cuda_config.engine = config;
  cuda_config.dtype = options.dtype == "bf16" ? cuda::DType::bf16 : cuda::DType::fp16;
  cuda_config.device = options.device;
  cuda_config.gpu_memory_utilization = options.gpu_memory_utilization;
  cuda_config.swap_space_bytes = static_cast<std::uint64_t>(options.swap_space_gib * static_cast<double>(1ull << 30));
  cuda_config.enforce_eager = options.enforce_eager;
  cuda_config.logits_observer = options.logits_observer;
  return cuda_config;
}

}  // namespace

std::shared_ptr<const CudaModel> upload_cuda_model(const CudaOptions& options, const model::ModelWeights& weights,
                                                   const engine::EngineConfig& config) {
  return std::make_shared<const CudaModel>(CudaModel{cuda::upload_model(weights, executor_config(options, config))});
}

CudaExecutorSetup make_cuda_executor(const CudaOptions& options, const std::shared_ptr<const CudaModel>& model,
                                     const engine::EngineConfig& config) {
  auto executor = std::make_unique<cuda::CudaExecutor>(model->device_model, executor_config(options, config));
  CudaExecutorSetup setup;
  setup.cache = executor->cache_config();
  setup.description = "cuda, " + executor->sizing_description();
  setup.executor = std::move(executor);
  return setup;
}

CudaExecutorSetup make_cuda_executor(const CudaOptions& options, const model::ModelWeights& weights,
                                     const engine::EngineConfig& config) {
  return make_cuda_executor(options, upload_cuda_model(options, weights, config), config);
}

CudaTargetAndDraftSetup make_cuda_executor_with_draft(const CudaOptions& options,
                                                      const std::shared_ptr<const CudaModel>& target,
                                                      const std::shared_ptr<const CudaModel>& draft,
                                                      const engine::EngineConfig& config) {
  cuda::TargetAndDraft pair =
      cuda::make_target_and_draft(target->device_model, draft->device_model, executor_config(options, config));
  CudaTargetAndDraftSetup setup;
  setup.target.cache = pair.target->cache_config();
  setup.target.description = "cuda, " + pair.target->sizing_description();
  setup.target.executor = std::move(pair.target);
  setup.draft_cache = pair.draft_cache;
  std::ostringstream line;
  line << draft->device_model->weight_bytes() / (1 << 20) << " MiB of weights on the GPU, KV "
       << static_cast<uint64_t>(pair.draft_cache.num_device_blocks) *
              cuda::kv_block_bytes(draft->device_model->config(), pair.draft_cache.block_size) / (1 << 20)
       << " MiB (" << pair.draft_cache.num_device_blocks << " blocks)";
  setup.draft_description = line.str();
  setup.draft = std::move(pair.draft);
  return setup;
}

#else

struct CudaModel {};

bool cuda_executor_available() noexcept { return false; }

std::shared_ptr<const CudaModel> upload_cuda_model(const CudaOptions&, const model::ModelWeights&,
                                                   const engine::EngineConfig&) {
  require_cuda_executor();
  return nullptr;
}

CudaExecutorSetup make_cuda_executor(const CudaOptions&, const std::shared_ptr<const CudaModel>&,
                                     const engine::EngineConfig&) {
  require_cuda_executor();
  return {};
}

CudaExecutorSetup make_cuda_executor(const CudaOptions&, const model::ModelWeights&, const engine::EngineConfig&) {
  require_cuda_executor();
  return {};
}

CudaTargetAndDraftSetup make_cuda_executor_with_draft(const CudaOptions&, const std::shared_ptr<const CudaModel>&,
                                                      const std::shared_ptr<const CudaModel>&,
                                                      const engine::EngineConfig&) {
  require_cuda_executor();
  return {};
}

#endif

}  // namespace pagedllm::cli
