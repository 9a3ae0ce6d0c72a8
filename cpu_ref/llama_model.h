// The Llama-family forward pass of the CPU reference engine, over the paged KV cache.
//
// One call runs a flat batch of tokens from any number of sequences (decode tokens and prompt
// chunks mixed, each with its own position and block table) through every layer, writes their
// keys and values into the cache, and returns logits for the rows asked for. Every per-token
// computation (projections, norms, rotary, attention over the cache) is done with a fixed
// sequence of fp32 operations that does not depend on the other tokens in the batch or on the
// thread count: a token's logits are bit-identical whatever it is batched with.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/common/types.h"
#include "core/kv/block_pool.h"
#include "core/model/model_weights.h"
#include "cpu_ref/host_kv_store.h"
#include "cpu_ref/rotary.h"
#include "cpu_ref/weight_matrix.h"

namespace pagedllm::cpu_ref {

// A flat batch. Token i belongs to sequence sequence_index[i], whose block table maps its
// positions to cache blocks; all of a sequence's earlier positions must already be in the cache
// or in this batch.
struct ForwardBatch {
  std::vector<TokenId> tokens;                             // [num_tokens]
  std::vector<int32_t> positions;                          // [num_tokens]
  std::vector<int32_t> sequence_index;                     // [num_tokens]
  std::vector<std::span<const kv::BlockId>> block_tables;  // [num_sequences] (not owned)
  std::vector<int32_t> logits_rows;                        // tokens whose logits are returned

  int32_t num_tokens() const noexcept { return static_cast<int32_t>(tokens.size()); }
  void clear();
};

class LlamaModel {
 public:
  // Takes weights loaded as WeightDType::stored (matrices computed from in their stored type) or
  // WeightDType::f32 (dequantized at load: the test oracle; bit-identical logits); throws
  // std::invalid_argument for bf16.
  explicit LlamaModel(model::ModelWeights weights);
  LlamaModel(const LlamaModel&) = delete;  // layers_ points into weights_
  LlamaModel& operator=(const LlamaModel&) = delete;

  const model::ModelConfig& config() const noexcept { return weights_.config; }
  int32_t vocab_size() const noexcept { return static_cast<int32_t>(weights_.config.vocab_size); }
  model::WeightMemory weight_memory() const noexcept { return weights_.memory(); }

  // Runs the batch; returns logits [logits_rows.size(), vocab_size], row-major.
  std::vector<float> forward(const ForwardBatch& batch, HostKvStore& cache) const;

 private:
  struct Layer {
    const float* input_norm;  // [hidden]
    WeightMatrix q_proj;      // [q_dim, hidden]
    WeightMatrix k_proj;      // [kv_dim, hidden]
    WeightMatrix v_proj;      // [kv_dim, hidden]
    const float* q_bias;      // [q_dim] or nullptr
    const float* k_bias;      // [kv_dim] or nullptr
    const float* v_bias;      // [kv_dim] or nullptr
    WeightMatrix o_proj;      // [hidden, q_dim]
    const float* post_norm;   // [hidden]
    WeightMatrix gate_proj;   // [intermediate, hidden]
    WeightMatrix up_proj;     // [intermediate, hidden]
    WeightMatrix down_proj;   // [hidden, intermediate]
  };

  // Activations of one forward call, sized once for its batch and reused by every layer.
  struct Buffers {
    std::vector<float> normed;    // [num_tokens, hidden]
    std::vector<float> q;         // [num_tokens, q_dim]
    std::vector<float> k;         // [num_tokens, kv_dim]
    std::vector<float> v;         // [num_tokens, kv_dim]
    std::vector<float> attended;  // [num_tokens, q_dim]
    std::vector<float> gate;      // [num_tokens, intermediate]
    std::vector<float> up;        // [num_tokens, intermediate]
    std::vector<float> output;    // [num_tokens, hidden]: a block's contribution to the residual
  };

  void attention_block(const Layer& layer, int32_t layer_index, const ForwardBatch& batch, HostKvStore& cache,
                       std::vector<float>& residual, Buffers& buffers) const;
  void mlp_block(const Layer& layer, std::vector<float>& residual, Buffers& buffers) const;

  model::ModelWeights weights_;  // owns (or maps) every tensor the views below point into
  std::vector<Layer> layers_;
  WeightMatrix embedding_;  // [vocab, hidden]: only the rows of a batch's tokens are decoded
  model::DequantizeBlocksFn embedding_dequantizer_ = nullptr;
  std::int64_t embedding_block_size_ = 1;
  const float* final_norm_;  // [hidden]
  WeightMatrix lm_head_;     // [vocab, hidden] (the embedding when tied)
  RotaryEmbedding rotary_;
};

}  // namespace pagedllm::cpu_ref
