#include "sim/roofline_cost_model.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>
#include <string>

#include "core/kv/kv_cache_config.h"

namespace pagedllm::sim {
namespace {

template <class... Parts>
std::string concat(const Parts&... parts) {
  std::ostringstream out;
  (out << ... << parts);
  return out.str();
}

void require(bool ok, const std::string& field, const std::string& rule) {
  if (!ok) throw std::invalid_argument("roofline config: " + field + " " + rule);
}

void require_fraction(double value, const std::string& field) {
  require(value > 0.0 && value <= 1.0, field, concat("must be in (0, 1], got ", value));
}

void require_non_negative(double value, const std::string& field) {
  require(value >= 0.0, field, concat("must not be negative, got ", value));
}

// Query positions [start, end) each attend to every position up to their own (causal): the sum
// of (p + 1) over the span. A decode token at position p attends to p + 1 tokens; with a sliding
// window (> 0) to min(p + 1, window) (kv/attention_window.h).
double attended_pairs(int64_t start, int64_t end, int64_t window) {
  const auto causal = [](int64_t from, int64_t to) {
    return static_cast<double>(to * (to + 1) - from * (from + 1)) / 2.0;
  };
  if (window <= 0) return causal(start, end);
  const int64_t growing_end = std::clamp(window, start, end);  // queries p < window still see p + 1 keys
  return causal(start, growing_end) + static_cast<double>(window) * static_cast<double>(end - growing_end);
}

// The KV positions the queries [start, end) read: [0, end), or with a window from the first
// position the earliest query sees.
int64_t positions_read(int64_t start, int64_t end, int64_t window) {
  if (window <= 0 || start < window) return end;
  return end - (start - window + 1);
}

int32_t blocks_that_fit(double bytes, double bytes_per_block) {
  if (!(bytes > 0.0)) return 0;
  const double blocks = std::floor(bytes / bytes_per_block);
  return static_cast<int32_t>(std::min(blocks, static_cast<double>(kv::kMaxBlocksPerTier)));
}

}  // namespace

void validate(const RooflineConfig& config) {
  validate(config.hardware);
  validate(config.model);
  const int64_t n = config.tensor_parallel;
  const model::ModelShape& model = config.model;
  require(n >= 1, "tensor_parallel", concat("must be at least 1, got ", n));
  require(model.num_heads % n == 0, "tensor_parallel",
          concat("(", n, ") must divide num_heads (", model.num_heads, ")"));
  require(model.num_kv_heads >= n ? model.num_kv_heads % n == 0 : n % model.num_kv_heads == 0, "tensor_parallel",
          concat("(", n, ") and num_kv_heads (", model.num_kv_heads, ") must divide one another"));
  require(config.block_size >= 1 && config.block_size <= kv::kMaxBlockSize, "block_size",
          concat("must be in [1, ", kv::kMaxBlockSize, "], got ", config.block_size));
  require(config.activation_bytes_per_element > 0.0, "activation_bytes_per_element", "must be positive");
  const RooflineEfficiency& e = config.efficiency;
  require_fraction(e.linear_compute, "efficiency.linear_compute");
  require_fraction(e.linear_memory, "efficiency.linear_memory");
  require_fraction(e.attention_compute, "efficiency.attention_compute");
  require_fraction(e.attention_memory, "efficiency.attention_memory");
  require_fraction(e.host_link, "efficiency.host_link");
  require_fraction(e.gpu_link, "efficiency.gpu_link");
  require_non_negative(config.overheads.step_seconds, "overheads.step_seconds");
  require_non_negative(config.overheads.layer_seconds, "overheads.layer_seconds");
  require_non_negative(config.overheads.all_reduce_latency_seconds, "overheads.all_reduce_latency_seconds");
  validate(config.gemm);
}

LinearModel parse_linear_model(std::string_view text) {
  if (text == "roofline") return LinearModel::roofline;
  if (text == "per-gemm") return LinearModel::per_gemm;
  throw std::invalid_argument("unknown GEMM model '" + std::string(text) + "' (roofline, per-gemm)");
}

const char* to_string(LinearModel model) { return model == LinearModel::roofline ? "roofline" : "per-gemm"; }

int64_t num_kv_heads_per_gpu(const RooflineConfig& config) {
  return std::max<int64_t>(1, config.model.num_kv_heads / config.tensor_parallel);
}

double kv_bytes_per_token_per_gpu(const RooflineConfig& config) {
  const model::ModelShape& model = config.model;
  return 2.0 * static_cast<double>(model.num_layers * num_kv_heads_per_gpu(config) * model.head_dim) *
         model.kv_bytes_per_element;
}

double kv_bytes_per_block(const RooflineConfig& config) {
  return kv_bytes_per_token_per_gpu(config) * config.block_size;
}

int32_t num_device_blocks(const RooflineConfig& config, double gpu_memory_utilization, int64_t activation_reserve_bytes,
                          const RooflineConfig* draft) {
  validate(config);
  require_fraction(gpu_memory_utilization, "gpu_memory_utilization");
  require(activation_reserve_bytes >= 0, "activation_reserve_bytes", "must not be negative");
  const double usable = static_cast<double>(config.hardware.memory_bytes) * gpu_memory_utilization;
  double weights = config.model.weight_bytes() / config.tensor_parallel;
  double bytes_per_block = kv_bytes_per_block(config);
  if (draft != nullptr) {
    validate(*draft);
    require(draft->tensor_parallel == config.tensor_parallel && draft->block_size == config.block_size &&
                draft->hardware.name == config.hardware.name,
            "draft", "must run on the same hardware, tensor parallel size and block size");
    weights += draft->model.weight_bytes() / draft->tensor_parallel;
    bytes_per_block += kv_bytes_per_block(*draft);
  }
  return blocks_that_fit(usable - weights - static_cast<double>(activation_reserve_bytes), bytes_per_block);
}

int32_t num_host_blocks(const RooflineConfig& config, int64_t swap_space_bytes) {
  validate(config);
  require(swap_space_bytes >= 0, "swap_space_bytes", "must not be negative");
  return blocks_that_fit(static_cast<double>(swap_space_bytes), kv_bytes_per_block(config));
}

RooflineCostModel::RooflineCostModel(const RooflineConfig& config) : config_(config) {
  validate(config_);
  kv_bytes_per_token_ = kv_bytes_per_token_per_gpu(config_);
  const HardwareSpec& hw = config_.hardware;
  sustained_linear_flops_ = hw.peak_flops * config_.efficiency.linear_compute;
  sustained_linear_bandwidth_ = hw.memory_bandwidth * config_.efficiency.linear_memory;
  sustained_attention_flops_ = hw.peak_flops * config_.efficiency.attention_compute;
  sustained_attention_bandwidth_ = hw.memory_bandwidth * config_.efficiency.attention_memory;
}

StepCost RooflineCostModel::step_cost(const sched::StepPlan& plan) const {
  StepCost cost;
  add_block_operations(plan, cost);
  cost.overhead_seconds = config_.overheads.step_seconds;
  if (!plan.sequences.empty()) {
    cost.overhead_seconds += static_cast<double>(config_.model.num_layers) * config_.overheads.layer_seconds;
    add_linear(plan, cost);
    for (const sched::ScheduledSequence& scheduled : plan.sequences) add_attention(scheduled, cost);
    add_all_reduce(plan, cost);
  }
  cost.seconds = cost.linear_seconds + cost.attention_seconds + cost.swap_seconds + cost.copy_seconds +
                 cost.all_reduce_seconds + cost.overhead_seconds;
  return cost;
}

// Every weight is read once per step whatever the batch; each batched token costs 2 FLOPs per
// matmul parameter; the lm_head runs only on the rows that sample (one row per sampled
// sequence: parallel samples and beam candidates come from the same logits; k + 1 for a verify
// pass of k proposals).
void RooflineCostModel::add_linear(const sched::StepPlan& plan, StepCost& cost) const {
  const model::ModelShape& model = config_.model;
  int64_t num_tokens = 0;
  int64_t num_sampled_rows = 0;
  for (const sched::ScheduledSequence& scheduled : plan.sequences) {
    num_tokens += scheduled.num_new_tokens();
    if (scheduled.sample) num_sampled_rows += 1 + scheduled.num_proposed_tokens;  // a verify pass: k + 1 rows
  }
  if (num_tokens <= 0) return;
  if (config_.linear_model == LinearModel::per_gemm) {
    add_linear_per_gemm(num_tokens, num_sampled_rows, cost);
    return;
  }
  const double n = config_.tensor_parallel;
  const auto lm_head_params = static_cast<double>(model.num_lm_head_params());
  // The layers and the final norm; the lm_head only when a row samples.
  const auto body_params = static_cast<double>(model.num_layers * model.num_params_per_layer() + model.hidden_size);
  const double params_read = body_params + (num_sampled_rows > 0 ? lm_head_params : 0.0);
  const double bytes = params_read * model.weight_bytes_per_param / n;
  const auto matmul_params = static_cast<double>(model.num_layers * model.num_matmul_params_per_layer());
  const auto rows = static_cast<double>(num_sampled_rows);
  const double flops = 2.0 * (matmul_params * static_cast<double>(num_tokens) + lm_head_params * rows) / n;
  const double compute = flops / sustained_linear_flops_;
  const double memory = bytes / sustained_linear_bandwidth_;
  cost.weight_bytes += bytes;
  cost.flops += flops;
  cost.compute_seconds += compute;
  cost.memory_seconds += memory;
  cost.linear_seconds += std::max(compute, memory);
}

// A layer's four GEMMs per GPU (layer_gemm_shapes), each priced on its own shape, times the layers;
// the lm_head on the sampled rows.
void RooflineCostModel::add_linear_per_gemm(int64_t num_tokens, int64_t num_sampled_rows, StepCost& cost) const {
  const model::ModelShape& model = config_.model;
  const int64_t n = config_.tensor_parallel;
  const LayerDims dims{.hidden_size = model.hidden_size,
                       .num_heads = model.num_heads,
                       .num_kv_heads = model.num_kv_heads,
                       .head_dim = model.head_dim,
                       .intermediate_size = model.intermediate_size};
  const auto add = [&](const GemmShape& shape, double times) {
    const GemmCost gemm = gemm_cost(shape, config_.hardware, config_.gemm, model.weight_bytes_per_param,
                                    config_.activation_bytes_per_element);
    cost.weight_bytes += times * gemm.weight_bytes;
    cost.flops += times * gemm.flops;
    cost.compute_seconds += times * gemm.compute_seconds;
    cost.memory_seconds += times * gemm.memory_seconds;
    cost.linear_seconds += times * gemm.seconds;
  };
  for (const GemmShape& shape : layer_gemm_shapes(num_tokens, dims, n))
    add(shape, static_cast<double>(model.num_layers));
  if (num_sampled_rows > 0) add({num_sampled_rows, model.vocab_size / n, model.hidden_size}, 1.0);
}

// Each sequence reads the KV of its whole context [0, end) once per layer (a query-head group
// shares its KV head's tiles; a windowed model only the window of its earliest query, so a
// decode reads min(context, window) positions) and writes the KV of its new tokens; QK^T and PV cost 4 x
// head_dim FLOPs per query head per attended position. Sequences are summed, each at its own
// bound: a prefill chunk is compute bound while the decodes beside it are memory bound.
void RooflineCostModel::add_attention(const sched::ScheduledSequence& scheduled, StepCost& cost) const {
  if (scheduled.num_new_tokens() <= 0) return;
  const model::ModelShape& model = config_.model;
  const int64_t window = model.sliding_window;
  const double read = kv_bytes_per_token_ * static_cast<double>(positions_read(scheduled.start, scheduled.end, window));
  const double written = kv_bytes_per_token_ * scheduled.num_new_tokens();
  const double heads_per_gpu = static_cast<double>(model.num_heads / config_.tensor_parallel);
  const double flops = 4.0 * heads_per_gpu * static_cast<double>(model.head_dim * model.num_layers) *
                       attended_pairs(scheduled.start, scheduled.end, window);
  const double compute = flops / sustained_attention_flops_;
  const double memory = (read + written) / sustained_attention_bandwidth_;
  cost.kv_bytes_read += read;
  cost.kv_bytes_written += written;
  cost.flops += flops;
  cost.attention_flops += flops;
  cost.compute_seconds += compute;
  cost.memory_seconds += memory;
  cost.attention_seconds += std::max(compute, memory);
}

// Swaps cross the host link (each GPU moves its own shard over its own link, in parallel);
// a copy-on-write reads and writes one block in device memory.
void RooflineCostModel::add_block_operations(const sched::StepPlan& plan, StepCost& cost) const {
  const double block_bytes = kv_bytes_per_token_ * config_.block_size;
  const auto num_swapped = static_cast<double>(plan.swap_out.size() + plan.swap_in.size());
  cost.swap_bytes = num_swapped * block_bytes;
  cost.swap_seconds = cost.swap_bytes / (config_.hardware.host_link_bandwidth * config_.efficiency.host_link);
  cost.copy_seconds = static_cast<double>(plan.copies.size()) * 2.0 * block_bytes / sustained_linear_bandwidth_;
}

// Megatron-style tensor parallelism all-reduces the activations twice per layer (after the
// attention output projection and after the MLP down projection); a ring all-reduce moves
// 2 (N - 1) / N of the payload over each GPU's link.
void RooflineCostModel::add_all_reduce(const sched::StepPlan& plan, StepCost& cost) const {
  const int32_t n = config_.tensor_parallel;
  if (n <= 1) return;
  int64_t num_tokens = 0;
  for (const sched::ScheduledSequence& scheduled : plan.sequences) num_tokens += scheduled.num_new_tokens();
  if (num_tokens <= 0) return;
  const double payload =
      static_cast<double>(num_tokens * config_.model.hidden_size) * config_.activation_bytes_per_element;
  const double ring = 2.0 * (n - 1) / n * payload / (config_.hardware.gpu_link_bandwidth * config_.efficiency.gpu_link);
  const double per_all_reduce = config_.overheads.all_reduce_latency_seconds + ring;
  cost.all_reduce_seconds = 2.0 * static_cast<double>(config_.model.num_layers) * per_all_reduce;
}

}  // namespace pagedllm::sim
