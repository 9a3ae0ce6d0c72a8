// One dense GEMM's time on a GPU, priced on its own shape: the roofline's linear term with the
// transition between its two bounds modelled (docs/SIMULATOR.md, "Error against measured GPU
// operators").
//
// A step's GEMM Y[m x n] = X[m x k] W[k x n] (m tokens, the weights W stored) costs
//   kernel_latency + (compute^p + memory^p)^(1/p)
//   compute = 2 m n k / (peak FLOP/s x compute_efficiency)
//   memory  = (weight bytes of W + activation bytes of X and Y) / (bandwidth x memory_efficiency)
// The roofline takes max(compute, memory): right where one side dominates (decode: the weights
// stream; long prefills: the FLOPs), but optimistic near the ridge point, where real kernels reach
// neither bound (a Llama-2-7B MLP up projection takes 130 us at 256 tokens on an H100, about its
// FLOP time plus its byte time). The p-norm overlaps the two sides imperfectly there and tends to
// the larger one away from it; the kernel latency is each GEMM's fixed launch and tail time, which
// decides small matrices (tensor parallel shards, small models). The four constants are fitted to
// the GEMMs of Vidur's published H100 and A100 profiles of five models at tensor parallel 1-8
// (tools/bench/bench_gemm_vs_operators.cpp, docs/SIMULATOR.md); fitted with any one of the files
// left out, the constants come out the same or next to them on the grid. Tile and wave
// quantization over the SMs, priced from first principles, lowered the error on those GEMMs by
// 2% only (cuBLAS picks tile shapes and split-K to fill the SMs), so they are not in the price.
#pragma once

#include <array>
#include <cstdint>

#include "sim/hardware.h"

namespace pagedllm::sim {

struct GemmShape {
  int64_t m = 0;  // rows: the step's tokens (or sampled rows, for the lm_head)
  int64_t n = 0;  // output features (per GPU)
  int64_t k = 0;  // input features (per GPU)
};

struct GemmCostConstants {
  double compute_efficiency = 0.75;      // of the dense bf16 peak, on the FLOP side of the p-norm
  double memory_efficiency = 0.90;       // of the datasheet bandwidth, on the byte side
  double overlap_exponent = 1.5;         // p: 1 adds the sides (no overlap), large p takes the max
  double kernel_latency_seconds = 5e-6;  // per GEMM: launch, prologue, epilogue, tail
};

struct GemmCost {
  double seconds = 0.0;          // the GEMM's time, latency included
  double compute_seconds = 0.0;  // the FLOP side alone
  double memory_seconds = 0.0;   // the byte side alone
  double flops = 0.0;
  double weight_bytes = 0.0;
};

// What a transformer layer's GEMMs are made of.
struct LayerDims {
  int64_t hidden_size = 0;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t intermediate_size = 0;
  bool gated_mlp = true;  // SwiGLU: gate and up projections side by side
};

// One layer's four GEMMs per GPU for `tokens` rows, split Megatron-style over `tensor_parallel`
// GPUs (q, k, v and the MLP's up projections by columns, o and down by rows; KV heads replicated
// where there are fewer than GPUs): q/k/v, o, gate and up, down.
std::array<GemmShape, 4> layer_gemm_shapes(int64_t tokens, const LayerDims& layer, int64_t tensor_parallel);

// Throws std::invalid_argument naming the constant at fault (efficiencies in (0, 1], p >= 1,
// latency >= 0).
void validate(const GemmCostConstants& constants);

// `weight_bytes_per_element` for W (2 = bf16, 1 = fp8, 0.5 = 4-bit), `activation_bytes_per_element`
// for X and Y. An empty shape (any side 0) costs nothing.
GemmCost gemm_cost(const GemmShape& shape, const HardwareSpec& hardware, const GemmCostConstants& constants,
                   double weight_bytes_per_element, double activation_bytes_per_element);

}  // namespace pagedllm::sim
