#include "cuda/cuda_executor.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <numeric>
#include <stdexcept>

#include "core/common/check.h"
#include "core/sampling/proposal_verify.h"
#include "core/sampling/sampler.h"
#include "cuda/cuda_check.h"
#include "cuda/device_info.h"
#include "cuda/device_memory.h"
#include "cuda/device_model.h"
#include "cuda/forward_pass.h"
#include "cuda/gemm.h"
#include "cuda/kernels/cache_ops.h"
#include "cuda/kernels/decode_attention.h"
#include "cuda/kernels/sampling.h"
#include "cuda/kernels/token_bitmask.h"
#include "cuda/kernels/token_logprobs.h"
#include "cuda/step_batch.h"
#include "cuda/step_inputs.h"

namespace pagedllm::cuda {

std::vector<int32_t> decode_graph_batch_sizes(int32_t max_num_seqs) {
  const int32_t largest = std::min(max_num_seqs, 256);
  std::vector<int32_t> sizes;
  for (int32_t size : {1, 2, 4}) {
    if (size < largest) sizes.push_back(size);
  }
  for (int32_t size = 8; size < largest; size += 8) sizes.push_back(size);
  if (largest > 0) sizes.push_back(largest);
  return sizes;
}

bool needs_host_sampling(const sched::ScheduledSequence& scheduled) {
  const sched::SamplingParams& params = *scheduled.params;
  // A verify pass: the host walks its k + 1 rows (sampling::verify_proposals).
  return scheduled.num_proposed_tokens > 0 || scheduled.num_samples != 1 || scheduled.num_beam_candidates > 0 ||
         params.logprobs.has_value() || params.min_p != 0.0f ||
         params.adjusts_logits(static_cast<int32_t>(scheduled.tokens.size()) - scheduled.num_prompt_tokens);
}

// Per sampled row, the device sampler's parameters ([rows] each), uploaded with one copy.
struct SamplingArena {
  static constexpr std::size_t kBytesPerRow =
      4 + 4 + 4 + 8 + 4 + 4 + 4;  // temperature, top_k, top_p, seed, stream, position, mask row

  explicit SamplingArena(int32_t rows)
      : max_rows(rows),
        device(static_cast<std::size_t>(rows) * kBytesPerRow),
        host(static_cast<std::size_t>(rows) * kBytesPerRow) {}

  // Offsets: the seeds first (8-byte aligned), then the 4-byte arrays.
  uint64_t* seeds(void* base) const { return static_cast<uint64_t*>(base); }
  char* at(void* base, int index) const {
    return static_cast<char*>(base) + static_cast<std::size_t>(max_rows) * (8 + 4 * static_cast<std::size_t>(index));
  }
  float* temperatures(void* base) const { return reinterpret_cast<float*>(at(base, 0)); }
  int32_t* top_k(void* base) const { return reinterpret_cast<int32_t*>(at(base, 1)); }
  float* top_p(void* base) const { return reinterpret_cast<float*>(at(base, 2)); }
  int32_t* streams(void* base) const { return reinterpret_cast<int32_t*>(at(base, 3)); }
  int32_t* positions(void* base) const { return reinterpret_cast<int32_t*>(at(base, 4)); }
  int32_t* mask_rows(void* base) const { return reinterpret_cast<int32_t*>(at(base, 5)); }

  int32_t max_rows;
  DeviceBuffer device;
  PinnedHostBuffer host;
};

struct CudaExecutor::State {
  CudaExecutorConfig config;
  std::string device_name;
  cudaStream_t stream = nullptr;
  std::shared_ptr<const DeviceModel> model;
  std::unique_ptr<GemmRunner> gemm;
  std::unique_ptr<ForwardPass> forward;
  std::unique_ptr<StepInputs> inputs;
  std::unique_ptr<SamplingArena> sampling;
  int32_t max_logits_rows = 0;    // max_seqs, or more with speculative decoding (max_logits_rows_of)
  DeviceBuffer sampled_tokens;    // [max_logits_rows] int32
  DeviceBuffer sampled_logprobs;  // [max_logits_rows] fp32
  PinnedHostBuffer results_host;  // [max_logits_rows] int32 tokens, then [max_logits_rows] fp32 logprobs
  PinnedHostBuffer logits_host;   // rows copied back for host sampling / the observer; grows
  DeviceBuffer token_bitmask;     // the plan's structured-output bitmask rows; grows
  int64_t vocab = 0;

  kv::KvCacheConfig cache;
  kv::KvLayout device_layout;
  kv::KvLayout host_layout;
  DeviceBuffer device_kv;
  PinnedHostBuffer host_kv;
  DeviceBuffer copy_pairs;  // [capacity][2] int32 (src, dst)
  PinnedHostBuffer copy_pairs_host;
  std::string sizing_description;

  StepBatch batch;
  sampling::Sampler host_sampler;
  std::vector<int32_t> graph_sizes;
  std::map<int32_t, cudaGraphExec_t> graphs;  // decode batch size -> its captured forward pass

  ~State() {
    for (auto& [size, graph] : graphs) cudaGraphExecDestroy(graph);
    if (stream != nullptr) cudaStreamDestroy(stream);
  }
};

namespace {

// Logits rows of a step: one per sampled sequence, k + 1 for a verify pass (within the budget).
int32_t max_logits_rows_of(const CudaExecutorConfig& config) {
  const sched::SchedulerConfig& scheduler = config.engine.scheduler;
  const spec::SpeculativeConfig& speculative = config.engine.speculative;
  if (!speculative.enabled()) return scheduler.max_num_seqs;
  const int64_t verified = static_cast<int64_t>(scheduler.max_num_seqs) * (speculative.num_speculative_tokens + 1);
  return std::max(scheduler.max_num_seqs,
                  static_cast<int32_t>(std::min<int64_t>(verified, scheduler.max_num_batched_tokens)));
}

int32_t max_tokens_of(const CudaExecutorConfig& config) {
  return std::max(config.engine.scheduler.max_num_batched_tokens, config.engine.scheduler.max_num_seqs);
}

int32_t full_table_width(const CudaExecutorConfig& config) {
  return (config.engine.scheduler.max_model_len + config.engine.cache.block_size - 1) / config.engine.cache.block_size;
}

// The largest step a configuration allows, as one batch of prompt chunks of at most
// max_model_len tokens each (fresh prompts from position 0), laid out in consecutive blocks
// of a scratch tier: what the profiling pass runs.
StepBatch profiling_batch(const CudaExecutorConfig& config, int32_t& num_blocks) {
  StepBatch batch;
  const int32_t block_size = config.engine.cache.block_size;
  const int32_t total = max_tokens_of(config);
  const int32_t longest = std::max(1, std::min(config.engine.scheduler.max_model_len, total));
  const int32_t num_seqs = std::min((total + longest - 1) / longest, std::max(config.engine.scheduler.max_num_seqs, 1));
  batch.table_width = (longest + block_size - 1) / block_size;
  batch.query_starts.push_back(0);
  num_blocks = 0;
  for (int32_t s = 0; s < num_seqs; ++s) {
    const int32_t length = std::min(longest, total - s * longest);
    const int32_t first_block = num_blocks;
    for (int32_t b = 0; b < batch.table_width; ++b) {
      batch.block_tables.push_back(b * block_size < length ? num_blocks++ : 0);
    }
    for (int32_t position = 0; position < length; ++position) {
      batch.token_ids.push_back(position % 7 + 1);
      batch.positions.push_back(position);
      batch.slot_mapping.push_back(static_cast<int64_t>(first_block + position / block_size) * block_size +
                                   position % block_size);
    }
    batch.seq_lens.push_back(length);
    batch.context_starts.push_back(0);
    batch.query_starts.push_back(batch.query_starts.back() + length);
    batch.max_query_len = std::max(batch.max_query_len, length);
    batch.logits_rows.push_back(batch.num_tokens() - 1);
    batch.logits_sequence.push_back(s);
  }
  return batch;
}

void check_supported(const model::ModelConfig& config, const CudaExecutorConfig& options) {
  if (config.head_dim != 64 && config.head_dim != 128) {
    throw std::invalid_argument("cuda executor: the attention kernels support head_dim 64 and 128, this model has " +
                                std::to_string(config.head_dim));
  }
  const int32_t block_size = options.engine.cache.block_size;
  if (block_size < 8 || block_size > kMaxDecodeBlockSize || (block_size & (block_size - 1)) != 0) {
    throw std::invalid_argument("cuda executor: block_size must be a power of two in [8, " +
                                std::to_string(kMaxDecodeBlockSize) + "], got " + std::to_string(block_size));
  }
  if (options.engine.scheduler.max_model_len <= 0)
    throw std::invalid_argument("cuda executor: max_model_len must be positive");
  if (options.engine.scheduler.max_num_seqs <= 0 || options.engine.scheduler.max_num_batched_tokens <= 0) {
    throw std::invalid_argument("cuda executor: max_num_seqs and max_num_batched_tokens must be positive");
  }
}

DeviceInfo select_device(const CudaExecutorConfig& config) {
  const DeviceQuery query = query_devices();
  if (query.devices.empty()) throw std::runtime_error("cuda executor: no usable GPU: " + query.error);
  if (config.device < 0 || config.device >= static_cast<int32_t>(query.devices.size())) {
    throw std::runtime_error("cuda executor: no GPU " + std::to_string(config.device) + " (" +
                             std::to_string(query.devices.size()) + " visible)");
  }
  PAGEDLLM_CUDA_CHECK(cudaSetDevice(config.device));
  return query.devices[static_cast<std::size_t>(config.device)];
}

}  // namespace

std::shared_ptr<const DeviceModel> upload_model(const model::ModelWeights& weights, const CudaExecutorConfig& config) {
  check_supported(weights.config, config);
  select_device(config);
  return std::make_shared<const DeviceModel>(weights, config.dtype);
}

CudaExecutor::CudaExecutor(const model::ModelWeights& weights, const CudaExecutorConfig& config)
    : CudaExecutor(upload_model(weights, config), config) {}

CudaExecutor::CudaExecutor(std::shared_ptr<const DeviceModel> device_model, const CudaExecutorConfig& config)
    : state_(std::make_unique<State>()) {
  State& s = *state_;
  s.config = config;
  const model::ModelConfig& model_config = device_model->config();
  check_supported(model_config, config);
  if (device_model->dtype() != config.dtype) {
    throw std::invalid_argument(std::string("CudaExecutor: the weights are ") + dtype_name(device_model->dtype()) +
                                ", the executor is configured for " + dtype_name(config.dtype));
  }
  const DeviceInfo device = select_device(config);
  s.device_name = device.name;
  PAGEDLLM_CUDA_CHECK(cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking));

  s.model = std::move(device_model);
  s.gemm = std::make_unique<GemmRunner>();
  const int32_t max_tokens = max_tokens_of(config);
  const int32_t max_seqs = config.engine.scheduler.max_num_seqs;
  const int32_t max_rows = max_logits_rows_of(config);
  s.max_logits_rows = max_rows;
  s.vocab = model_config.vocab_size;
  s.forward = std::make_unique<ForwardPass>(*s.model, *s.gemm,
                                            ForwardLimits{.max_tokens = max_tokens,
                                                          .max_seqs = max_seqs,
                                                          .max_logits_rows = max_rows,
                                                          .max_model_len = config.engine.scheduler.max_model_len,
                                                          .block_size = config.engine.cache.block_size,
                                                          .num_sms = device.multiprocessors});
  s.inputs = std::make_unique<StepInputs>(StepInputLimits{.max_tokens = max_tokens,
                                                          .max_seqs = max_seqs,
                                                          .max_logits_rows = max_rows,
                                                          .max_table_width = full_table_width(config)});
  s.sampling = std::make_unique<SamplingArena>(max_rows);
  s.sampled_tokens = DeviceBuffer(static_cast<std::size_t>(max_rows) * sizeof(int32_t));
  s.sampled_logprobs = DeviceBuffer(static_cast<std::size_t>(max_rows) * sizeof(float));
  s.results_host = PinnedHostBuffer(static_cast<std::size_t>(max_rows) * (sizeof(int32_t) + sizeof(float)));

  // Profiling pass: the largest step, on a scratch tier, before measuring what is left.
  {
    int32_t scratch_blocks = 0;
    const StepBatch batch = profiling_batch(config, scratch_blocks);
    kv::KvLayout scratch_layout{.num_layers = static_cast<int32_t>(model_config.num_layers),
                                .num_kv_heads = static_cast<int32_t>(model_config.num_kv_heads),
                                .head_dim = static_cast<int32_t>(model_config.head_dim),
                                .block_size = config.engine.cache.block_size,
                                .num_blocks = std::max(scratch_blocks, 1)};
    DeviceBuffer scratch_kv(scratch_layout.total_elements() * kDTypeBytes);
    s.inputs->upload(batch, s.stream);
    s.forward->enqueue(forward_shape(batch, s.inputs->device_view()), scratch_layout, scratch_kv.get(), s.stream);
    PAGEDLLM_CUDA_CHECK(cudaStreamSynchronize(s.stream));
  }

  s.cache = config.engine.cache;
  s.device_layout = kv::KvLayout{.num_layers = static_cast<int32_t>(model_config.num_layers),
                                 .num_kv_heads = static_cast<int32_t>(model_config.num_kv_heads),
                                 .head_dim = static_cast<int32_t>(model_config.head_dim),
                                 .block_size = config.engine.cache.block_size,
                                 .num_blocks = 0};
  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
  PAGEDLLM_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  const KvSizingInput sizing_input{.total_memory_bytes = total_bytes,
                                   .used_memory_bytes = total_bytes - free_bytes,
                                   .gpu_memory_utilization = config.gpu_memory_utilization,
                                   .swap_space_bytes = config.swap_space_bytes,
                                   .block_bytes = kv_block_bytes(model_config, config.engine.cache.block_size),
                                   .companion_block_bytes = config.companion_block_bytes,
                                   .block_size = config.engine.cache.block_size,
                                   .max_model_len = config.engine.scheduler.max_model_len};
  KvSizing sizing;
  if (s.cache.num_device_blocks > 0) {
    sizing.num_device_blocks = s.cache.num_device_blocks;
    sizing.num_host_blocks = static_cast<int32_t>(
        std::min<std::uint64_t>(config.swap_space_bytes / sizing_input.block_bytes, kv::kMaxBlocksPerTier));
  } else {
    sizing = size_kv_cache(sizing_input);
  }
  if (s.cache.num_host_blocks == 0) s.cache.num_host_blocks = sizing.num_host_blocks;
  s.cache.num_device_blocks = sizing.num_device_blocks;
  sizing.num_host_blocks = s.cache.num_host_blocks;
  s.device_layout.num_blocks = s.cache.num_device_blocks;
  s.host_layout = s.device_layout;
  s.host_layout.num_blocks = s.cache.num_host_blocks;
  // Both tiers start zeroed (as cpu_ref's): a block never written reads as zeros, not as whatever
  // the allocator left.
  s.device_kv = DeviceBuffer(s.device_layout.total_elements() * kDTypeBytes);
  PAGEDLLM_CUDA_CHECK(cudaMemset(s.device_kv.get(), 0, s.device_kv.bytes()));
  if (s.cache.num_host_blocks > 0) {
    s.host_kv = PinnedHostBuffer(s.host_layout.total_elements() * kDTypeBytes);
    std::memset(s.host_kv.get(), 0, s.host_kv.bytes());
  }
  s.sizing_description =
      describe_kv_sizing(sizing, sizing_input) + " on " + s.device_name + " (" + dtype_name(config.dtype) + ")";
  if (!config.enforce_eager) s.graph_sizes = decode_graph_batch_sizes(max_seqs);
}

CudaExecutor::~CudaExecutor() = default;

const kv::KvCacheConfig& CudaExecutor::cache_config() const noexcept { return state_->cache; }
const std::string& CudaExecutor::sizing_description() const noexcept { return state_->sizing_description; }

namespace {

void apply_block_operations(CudaExecutor::State& s, const sched::StepPlan& plan) {
  SwapParams swap{.dtype = s.config.dtype,
                  .device_layout = s.device_layout,
                  .host_layout = s.host_layout,
                  .device_kv = s.device_kv.get(),
                  .host_kv = s.host_kv.get(),
                  .direction = SwapDirection::device_to_host};
  if (!plan.swap_out.empty()) swap_blocks(swap, plan.swap_out, s.stream);
  if (!plan.swap_in.empty()) {
    swap.direction = SwapDirection::host_to_device;
    swap_blocks(swap, plan.swap_in, s.stream);
  }
  if (plan.copies.empty()) return;
  const std::size_t bytes = plan.copies.size() * 2 * sizeof(int32_t);
  if (s.copy_pairs.bytes() < bytes) {
    // The previous step has finished (execute ends with a synchronize), so the old buffers are idle.
    s.copy_pairs = DeviceBuffer(bytes * 2);
    s.copy_pairs_host = PinnedHostBuffer(bytes * 2);
  }
  auto* pairs = s.copy_pairs_host.as<int32_t>();
  for (std::size_t i = 0; i < plan.copies.size(); ++i) {
    pairs[2 * i] = plan.copies[i].src;
    pairs[2 * i + 1] = plan.copies[i].dst;
  }
  PAGEDLLM_CUDA_CHECK(cudaMemcpyAsync(s.copy_pairs.get(), pairs, bytes, cudaMemcpyHostToDevice, s.stream));
  copy_blocks(CopyBlocksParams{.dtype = s.config.dtype,
                               .layout = s.device_layout,
                               .kv_cache = s.device_kv.get(),
                               .pairs = s.copy_pairs.as<int32_t>(),
                               .num_pairs = static_cast<int32_t>(plan.copies.size())},
              s.stream);
}

// The smallest captured decode size >= num_seqs, or 0 when the step runs eagerly.
int32_t graph_bucket(const CudaExecutor::State& s, const StepBatch& batch) {
  if (s.graph_sizes.empty() || !batch.is_pure_decode() || batch.num_seqs() == 0 ||
      static_cast<int32_t>(batch.logits_rows.size()) != batch.num_seqs()) {
    return 0;
  }
  const auto it = std::lower_bound(s.graph_sizes.begin(), s.graph_sizes.end(), batch.num_seqs());
  return it == s.graph_sizes.end() ? 0 : *it;
}

void capture_graph(CudaExecutor::State& s, int32_t bucket, const ForwardShape& shape) {
  cudaGraph_t graph = nullptr;
  PAGEDLLM_CUDA_CHECK(cudaStreamBeginCapture(s.stream, cudaStreamCaptureModeThreadLocal));
  try {
    s.forward->enqueue(shape, s.device_layout, s.device_kv.get(), s.stream);
  } catch (...) {
    cudaStreamEndCapture(s.stream, &graph);
    if (graph != nullptr) cudaGraphDestroy(graph);
    throw;
  }
  PAGEDLLM_CUDA_CHECK(cudaStreamEndCapture(s.stream, &graph));
  cudaGraphExec_t exec = nullptr;
  const cudaError_t status = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);
  PAGEDLLM_CUDA_CHECK(status);
  s.graphs.emplace(bucket, exec);
}

// Fills the device sampler's parameters for the first `rows` logits rows and launches it, then
// the logprob of each sampled token; enqueues the copies of both back to the host.
void sample_on_device(CudaExecutor::State& s, const sched::StepPlan& plan, int32_t rows) {
  SamplingArena& arena = *s.sampling;
  void* host = arena.host.get();
  const auto words = static_cast<std::ptrdiff_t>((s.vocab + 31) / 32);
  int32_t row_in_sequence = 0;  // a verify pass's rows follow one another: 0..k
  for (int32_t row = 0; row < rows; ++row) {
    const int32_t sequence = s.batch.logits_sequence[static_cast<std::size_t>(row)];
    row_in_sequence =
        row > 0 && s.batch.logits_sequence[static_cast<std::size_t>(row) - 1] == sequence ? row_in_sequence + 1 : 0;
    const sched::ScheduledSequence& scheduled = plan.sequences[static_cast<std::size_t>(sequence)];
    const sched::SamplingParams& params = *scheduled.params;
    arena.seeds(host)[row] = sampling::stream_seed(params, scheduled.request);
    arena.temperatures(host)[row] = params.temperature;
    arena.top_k(host)[row] = params.top_k;
    arena.top_p(host)[row] = params.top_p;
    arena.streams(host)[row] = scheduled.sample_index;
    arena.positions(host)[row] =
        static_cast<int32_t>(scheduled.confirmed_tokens().size()) + row_in_sequence - scheduled.num_prompt_tokens;
    // Structured outputs: the row's place in the plan's bitmask rows (a verify pass has one per
    // position), or -1.
    arena.mask_rows(host)[row] =
        scheduled.allowed_tokens.empty()
            ? -1
            : static_cast<int32_t>((scheduled.allowed_tokens.data() - plan.token_bitmask.data()) / words) +
                  row_in_sequence;
  }
  PAGEDLLM_CUDA_CHECK(
      cudaMemcpyAsync(arena.device.get(), host, arena.device.bytes(), cudaMemcpyHostToDevice, s.stream));
  void* device = arena.device.get();
  float* logits = s.forward->logits();
  if (!plan.token_bitmask.empty()) {
    // Host -> device: 4 bytes per 32 tokens per constrained row, in one copy; the refused tokens'
    // logits become -inf in place, so the device draw, the logprobs and the rows copied back for
    // host sampling all see the constrained distribution.
    const std::size_t bytes = plan.token_bitmask.size() * sizeof(uint32_t);
    if (s.token_bitmask.bytes() < bytes) s.token_bitmask = DeviceBuffer(bytes);
    PAGEDLLM_CUDA_CHECK(
        cudaMemcpyAsync(s.token_bitmask.get(), plan.token_bitmask.data(), bytes, cudaMemcpyHostToDevice, s.stream));
    apply_token_bitmask(TokenBitmaskParams{.logits = logits,
                                           .num_rows = rows,
                                           .vocab_size = static_cast<int32_t>(s.vocab),
                                           .bitmask = s.token_bitmask.as<uint32_t>(),
                                           .mask_rows = arena.mask_rows(device)},
                        s.stream);
  }
  auto* tokens = s.sampled_tokens.as<int32_t>();
  sample_top_k_top_p(TopKTopPParams{.logits = logits,
                                    .num_rows = rows,
                                    .vocab_size = static_cast<int32_t>(s.vocab),
                                    .temperatures = arena.temperatures(device),
                                    .top_k = arena.top_k(device),
                                    .top_p = arena.top_p(device),
                                    .seeds = arena.seeds(device),
                                    .streams = arena.streams(device),
                                    .positions = arena.positions(device),
                                    .out_tokens = tokens},
                     s.stream);
  token_logprobs(TokenLogprobsParams{.logits = logits,
                                     .num_rows = rows,
                                     .vocab_size = static_cast<int32_t>(s.vocab),
                                     .tokens = tokens,
                                     .out = s.sampled_logprobs.as<float>()},
                 s.stream);
  auto* results = static_cast<char*>(s.results_host.get());
  const auto max_rows = static_cast<std::size_t>(s.max_logits_rows);
  PAGEDLLM_CUDA_CHECK(cudaMemcpyAsync(results, tokens, static_cast<std::size_t>(rows) * sizeof(int32_t),
                                      cudaMemcpyDeviceToHost, s.stream));
  PAGEDLLM_CUDA_CHECK(cudaMemcpyAsync(results + max_rows * sizeof(int32_t), s.sampled_logprobs.get(),
                                      static_cast<std::size_t>(rows) * sizeof(float), cudaMemcpyDeviceToHost,
                                      s.stream));
}

// Rows whose logits come back to the host: host sampling, or every row for the observer.
// Returns, per logits row, its index in logits_host (-1: not copied).
std::vector<int32_t> copy_logits_rows(CudaExecutor::State& s, const sched::StepPlan& plan, int32_t rows) {
  std::vector<int32_t> copied(static_cast<std::size_t>(rows), -1);
  int32_t count = 0;
  for (int32_t row = 0; row < rows; ++row) {
    const auto& scheduled =
        plan.sequences[static_cast<std::size_t>(s.batch.logits_sequence[static_cast<std::size_t>(row)])];
    if (s.config.logits_observer || needs_host_sampling(scheduled)) copied[static_cast<std::size_t>(row)] = count++;
  }
  if (count == 0) return copied;
  const std::size_t row_bytes = static_cast<std::size_t>(s.vocab) * sizeof(float);
  if (s.logits_host.bytes() < static_cast<std::size_t>(count) * row_bytes) {
    s.logits_host = PinnedHostBuffer(static_cast<std::size_t>(count) * row_bytes);
  }
  for (int32_t row = 0; row < rows; ++row) {
    const int32_t slot = copied[static_cast<std::size_t>(row)];
    if (slot < 0) continue;
    // Device -> host: vocab * 4 bytes per row.
    PAGEDLLM_CUDA_CHECK(cudaMemcpyAsync(
        static_cast<char*>(s.logits_host.get()) + static_cast<std::size_t>(slot) * row_bytes,
        s.forward->logits() + static_cast<std::size_t>(row) * s.vocab, row_bytes, cudaMemcpyDeviceToHost, s.stream));
  }
  return copied;
}

}  // namespace

sched::StepResult CudaExecutor::execute(const sched::StepPlan& plan) {
  const auto start = std::chrono::steady_clock::now();
  State& s = *state_;
  apply_block_operations(s, plan);

  sched::StepResult result;
  if (plan.sequences.empty()) {
    PAGEDLLM_CUDA_CHECK(cudaStreamSynchronize(s.stream));
    result.elapsed_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return result;
  }

  build_step_batch(plan, s.cache.block_size, s.batch);
  const int32_t rows = static_cast<int32_t>(s.batch.logits_rows.size());
  const int32_t bucket = graph_bucket(s, s.batch);
  const auto graph = s.graphs.find(bucket);
  if (bucket > 0) {
    pad_decode_batch(s.batch, DecodePadding{.batch_size = bucket,
                                            .table_width = full_table_width(s.config),
                                            .max_seq_len = s.config.engine.scheduler.max_model_len});
  }
  s.inputs->upload(s.batch, s.stream);
  const ForwardShape shape = forward_shape(s.batch, s.inputs->device_view());
  if (bucket > 0 && graph != s.graphs.end()) {
    PAGEDLLM_CUDA_CHECK(cudaGraphLaunch(graph->second, s.stream));
  } else {
    s.forward->enqueue(shape, s.device_layout, s.device_kv.get(), s.stream);
  }

  if (rows > 0) sample_on_device(s, plan, rows);
  const std::vector<int32_t> copied = copy_logits_rows(s, plan, rows);
  PAGEDLLM_CUDA_CHECK(cudaStreamSynchronize(s.stream));

  const auto* tokens = static_cast<const int32_t*>(s.results_host.get());
  const auto* logprobs = reinterpret_cast<const float*>(static_cast<const char*>(s.results_host.get()) +
                                                        static_cast<std::size_t>(s.max_logits_rows) * sizeof(int32_t));
  const auto vocab = static_cast<std::size_t>(s.vocab);
  for (int32_t row = 0; row < rows; ++row) {
    const sched::ScheduledSequence& scheduled =
        plan.sequences[static_cast<std::size_t>(s.batch.logits_sequence[static_cast<std::size_t>(row)])];
    const int32_t slot = copied[static_cast<std::size_t>(row)];
    const std::span<const float> logits =
        slot < 0 ? std::span<const float>()
                 : std::span<const float>(s.logits_host.as<float>() + static_cast<std::size_t>(slot) * vocab, vocab);
    if (s.config.logits_observer) s.config.logits_observer(scheduled, logits);
    if (scheduled.num_proposed_tokens > 0) {
      // A verify pass: its k + 1 rows were copied to consecutive slots.
      const auto num_rows = static_cast<std::size_t>(scheduled.num_proposed_tokens) + 1;
      for (std::size_t more = 1; more < num_rows && s.config.logits_observer; ++more) {
        s.config.logits_observer(scheduled, std::span<const float>(logits.data() + more * vocab, vocab));
      }
      result.outputs.push_back(sampling::verify_proposals(
          s.host_sampler, scheduled, std::span<const float>(logits.data(), num_rows * vocab), vocab));
      row += static_cast<int32_t>(num_rows) - 1;
      continue;
    }
    if (needs_host_sampling(scheduled)) {
      result.outputs.push_back(s.host_sampler.sample(scheduled, logits));
    } else {
      result.outputs.push_back(sched::SequenceOutput{
          .seq = scheduled.seq, .samples = {{.token = tokens[row], .logprob = logprobs[row]}}, .top_logprobs = {}});
    }
  }

  // A decode size seen for the first time ran eagerly (warming up every kernel and cuBLAS's
  // choice for its shapes); its graph is captured now, for the next steps of that size.
  if (bucket > 0 && graph == s.graphs.end()) capture_graph(s, bucket, shape);

  result.elapsed_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace pagedllm::cuda
