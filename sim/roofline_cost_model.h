// The analytic roofline cost model: a step costs, per part of the forward pass, the larger of its
// FLOPs over sustained compute and its bytes over sustained bandwidth, plus swaps, copies,
// tensor-parallel all-reduces and fixed overheads. Formulas and the sources of every constant:
// docs/SIMULATOR.md.
#pragma once

#include <cstdint>
#include <string_view>

#include "core/model/model_shape.h"
#include "sim/cost_model.h"
#include "sim/gemm_cost.h"
#include "sim/hardware.h"

namespace pagedllm::sim {

// Fractions of the datasheet peaks that real kernels sustain.
struct RooflineEfficiency {
  // bf16 GEMMs at LLM shapes: cuBLAS sustains about 0.6-0.7 of the dense peak on H100 SXM
  // (600-700 of 989 TFLOP/s; the peak assumes a boost clock that power limits cut).
  double linear_compute = 0.65;
  // Streaming the weights (decode's GEMV-like matmuls): about 0.8 of datasheet bandwidth;
  // a pure device-to-device copy reaches about 0.85-0.9.
  double linear_memory = 0.80;
  // Prefill attention: FlashAttention-2 reaches about 0.35 of H100's peak, FlashAttention-3
  // about 0.75 (740 TFLOP/s bf16, Shah et al. 2024); 0.5 sits between them.
  double attention_compute = 0.50;
  // Decode attention over the paged KV: FlashInfer reaches about 0.88 of 3.35 TB/s on H100;
  // vLLM's paged-attention kernel much less under GQA (docs/SIMULATOR.md).
  double attention_memory = 0.80;
  // Pinned host <-> device copies: about 25 of PCIe Gen4's 32 GB/s per direction, 50 of Gen5's 64.
  double host_link = 0.80;
  // NCCL all-reduce bus bandwidth against the link's per-direction figure (nccl-tests on
  // NVLink reach about 0.8 for large messages).
  double gpu_link = 0.80;
};

// Fixed costs that no byte or FLOP count captures. Assumptions of the right order, to be
// calibrated against measured step times (docs/SIMULATOR.md).
struct RooflineOverheads {
  double step_seconds = 500e-6;               // per step with a forward pass: schedule, prepare inputs, sample
  double layer_seconds = 5e-6;                // per layer: kernel launches and small kernels' minimum time
  double all_reduce_latency_seconds = 10e-6;  // per all-reduce, on top of its bandwidth time
};

// How the linear layers' GEMMs are priced.
enum class LinearModel {
  roofline,  // all of a step's GEMMs at once: max(FLOPs / sustained compute, weight bytes / sustained bandwidth)
  per_gemm,  // each GEMM on its own shape, the transition between the bounds modelled (sim/gemm_cost.h)
};
// "roofline" | "per-gemm"; throws std::invalid_argument listing both.
LinearModel parse_linear_model(std::string_view text);
const char* to_string(LinearModel model);

struct RooflineConfig {
  HardwareSpec hardware;
  model::ModelShape model;
  int32_t tensor_parallel = 1;                // GPUs that split every layer (Megatron-style)
  int32_t block_size = 16;                    // tokens per KV block: must equal the engine's KvCacheConfig
  double activation_bytes_per_element = 2.0;  // bf16 activations (the all-reduce payload)
  RooflineEfficiency efficiency;
  RooflineOverheads overheads;
  LinearModel linear_model = LinearModel::roofline;
  GemmCostConstants gemm;  // with LinearModel::per_gemm (the linear_* efficiencies then go unused)
};

// Throws std::invalid_argument naming the field at fault (including a tensor_parallel that does
// not divide num_heads).
void validate(const RooflineConfig& config);

// KV heads each GPU holds: num_kv_heads / N, at least 1 (replicated when N > num_kv_heads, as vLLM).
int64_t num_kv_heads_per_gpu(const RooflineConfig& config);
// KV bytes per token per GPU, and per block of block_size tokens.
double kv_bytes_per_token_per_gpu(const RooflineConfig& config);
double kv_bytes_per_block(const RooflineConfig& config);

// vLLM's sizing: floor((memory x utilization - weights / N - activation reserve) / bytes per
// block), per GPU; 0 when the weights and reserve leave no room. With a draft model on the same
// GPUs (`draft`, same hardware and N): its weights come off the memory too, and each block's bytes
// include the draft's block (the draft's cache has as many blocks as the target's).
int32_t num_device_blocks(const RooflineConfig& config, double gpu_memory_utilization, int64_t activation_reserve_bytes,
                          const RooflineConfig* draft = nullptr);
// Host (swap-space) blocks for `swap_space_bytes` per GPU (vLLM's default: 4 GiB).
int32_t num_host_blocks(const RooflineConfig& config, int64_t swap_space_bytes);

class RooflineCostModel final : public CostModel {
 public:
  explicit RooflineCostModel(const RooflineConfig& config);  // validates

  StepCost step_cost(const sched::StepPlan& plan) const override;
  const RooflineConfig& config() const { return config_; }

 private:
  void add_linear(const sched::StepPlan& plan, StepCost& cost) const;
  void add_linear_per_gemm(int64_t num_tokens, int64_t num_sampled_rows, StepCost& cost) const;
  void add_attention(const sched::ScheduledSequence& scheduled, StepCost& cost) const;
  void add_block_operations(const sched::StepPlan& plan, StepCost& cost) const;
  void add_all_reduce(const sched::StepPlan& plan, StepCost& cost) const;

  RooflineConfig config_;
  double kv_bytes_per_token_;  // per GPU
  double sustained_linear_flops_;
  double sustained_linear_bandwidth_;
  double sustained_attention_flops_;
  double sustained_attention_bandwidth_;
};

}  // namespace pagedllm::sim
