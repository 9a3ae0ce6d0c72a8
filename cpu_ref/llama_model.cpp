#include "cpu_ref/llama_model.h"

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>

#include "core/common/check.h"
#include "cpu_ref/activation.h"
#include "cpu_ref/linear.h"
#include "cpu_ref/paged_attention.h"
#include "cpu_ref/rms_norm.h"
#include "cpu_ref/weight_decode.h"

namespace pagedllm::cpu_ref {
namespace {

const float* tensor_data(const model::ModelWeights& weights, const std::string& name) {
  const model::HostTensor& tensor = weights.at(name);
  if (tensor.dtype != model::WeightDType::f32) {
    throw std::invalid_argument("cpu_ref: tensor '" + name + "' must be loaded as fp32");
  }
  return tensor.f32.data();
}

// A matrix, fp32 or in its stored type.
WeightMatrix matrix(const model::ModelWeights& weights, const std::string& name) {
  const model::HostTensor& tensor = weights.at(name);
  if (tensor.shape.size() != 2) throw std::invalid_argument("cpu_ref: tensor '" + name + "' is not a matrix");
  switch (tensor.dtype) {
    case model::WeightDType::f32:
      return WeightMatrix::f32(tensor.f32.data(), tensor.shape[1]);
    case model::WeightDType::stored:
      return WeightMatrix{tensor.stored_type, tensor.stored.data(),
                          static_cast<std::int64_t>(tensor.stored.size()) / tensor.shape[0]};
    case model::WeightDType::bf16:
      break;
  }
  throw std::invalid_argument("cpu_ref: tensor '" + name + "' must be loaded as stored or fp32, not bf16");
}

const float* optional_tensor_data(const model::ModelWeights& weights, const std::string& name) {
  return weights.tensors.count(name) != 0 ? tensor_data(weights, name) : nullptr;
}

// y[rows, out] = x[rows, in] W^T (+ b), as linear's arguments.
LinearArgs projection(const float* x, std::int64_t rows, std::int64_t in, const WeightMatrix& weight, const float* bias,
                      std::int64_t out, float* y) {
  return LinearArgs{
      .x = x, .weight = weight, .bias = bias, .y = y, .num_rows = rows, .in_features = in, .out_features = out};
}

void project(const float* x, std::int64_t rows, std::int64_t in, const WeightMatrix& weight, const float* bias,
             std::int64_t out, float* y) {
  linear(projection(x, rows, in, weight, bias, out, y));
}

}  // namespace

void ForwardBatch::clear() {
  tokens.clear();
  positions.clear();
  sequence_index.clear();
  block_tables.clear();
  logits_rows.clear();
}

LlamaModel::LlamaModel(model::ModelWeights weights)
    : weights_(std::move(weights)), rotary_(rotary_config(weights_.config)) {
  const model::ModelConfig& config = weights_.config;
  for (std::int64_t i = 0; i < config.num_layers; ++i) {
    const std::string prefix = "model.layers." + std::to_string(i) + ".";
    layers_.push_back(Layer{
        .input_norm = tensor_data(weights_, prefix + "input_layernorm.weight"),
        .q_proj = matrix(weights_, prefix + "self_attn.q_proj.weight"),
        .k_proj = matrix(weights_, prefix + "self_attn.k_proj.weight"),
        .v_proj = matrix(weights_, prefix + "self_attn.v_proj.weight"),
        .q_bias = optional_tensor_data(weights_, prefix + "self_attn.q_proj.bias"),
        .k_bias = optional_tensor_data(weights_, prefix + "self_attn.k_proj.bias"),
        .v_bias = optional_tensor_data(weights_, prefix + "self_attn.v_proj.bias"),
        .o_proj = matrix(weights_, prefix + "self_attn.o_proj.weight"),
        .post_norm = tensor_data(weights_, prefix + "post_attention_layernorm.weight"),
        .gate_proj = matrix(weights_, prefix + "mlp.gate_proj.weight"),
        .up_proj = matrix(weights_, prefix + "mlp.up_proj.weight"),
        .down_proj = matrix(weights_, prefix + "mlp.down_proj.weight"),
    });
  }
  embedding_ = matrix(weights_, "model.embed_tokens.weight");
  final_norm_ = tensor_data(weights_, "model.norm.weight");
  lm_head_ = config.tie_word_embeddings ? embedding_ : matrix(weights_, "lm_head.weight");
  embedding_dequantizer_ =
      weight_dequantizer(embedding_.type, resolve_linear_kernel(LinearKernel::best) != LinearKernel::generic);
  const std::optional<model::GgmlTypeTraits> traits =
      model::ggml_type_traits(static_cast<std::uint32_t>(embedding_.type));
  if (embedding_dequantizer_ == nullptr || !traits || config.hidden_size % traits->block_size != 0) {
    throw std::invalid_argument("cpu_ref: the embedding's type cannot be decoded by rows");
  }
  embedding_block_size_ = traits->block_size;
}

std::vector<float> LlamaModel::forward(const ForwardBatch& batch, HostKvStore& cache) const {
  const model::ModelConfig& config = weights_.config;
  const std::int64_t hidden = config.hidden_size;
  const std::int64_t num_tokens = batch.num_tokens();
  PAGEDLLM_ASSERT(batch.positions.size() == batch.tokens.size() && batch.sequence_index.size() == batch.tokens.size(),
                  "forward batch: tokens, positions and sequence indices differ in length");

  // Residual stream [num_tokens, hidden], from the embedding rows.
  std::vector<float> residual(static_cast<std::size_t>(num_tokens * hidden));
  for (std::int64_t t = 0; t < num_tokens; ++t) {
    const TokenId token = batch.tokens[static_cast<std::size_t>(t)];
    PAGEDLLM_ASSERT(token >= 0 && token < config.vocab_size, "forward batch: token id outside the vocabulary");
    PAGEDLLM_ASSERT(batch.positions[static_cast<std::size_t>(t)] < config.max_position_embeddings,
                    "forward batch: position beyond the model's context");
    decode_rows(embedding_, embedding_dequantizer_, embedding_block_size_, token, 1, hidden,
                residual.data() + t * hidden);
  }
  const auto rows = static_cast<std::size_t>(num_tokens);
  Buffers buffers{
      .normed = std::vector<float>(residual.size()),
      .q = std::vector<float>(rows * static_cast<std::size_t>(config.q_dim())),
      .k = std::vector<float>(rows * static_cast<std::size_t>(config.kv_dim())),
      .v = std::vector<float>(rows * static_cast<std::size_t>(config.kv_dim())),
      .attended = std::vector<float>(rows * static_cast<std::size_t>(config.q_dim())),
      .gate = std::vector<float>(rows * static_cast<std::size_t>(config.intermediate_size)),
      .up = std::vector<float>(rows * static_cast<std::size_t>(config.intermediate_size)),
      .output = std::vector<float>(residual.size()),
  };
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    attention_block(layers_[i], static_cast<std::int32_t>(i), batch, cache, residual, buffers);
    mlp_block(layers_[i], residual, buffers);
  }

  // Final norm and output head, only for the rows asked for.
  const auto num_rows = static_cast<std::int64_t>(batch.logits_rows.size());
  std::vector<float> normed(static_cast<std::size_t>(num_rows * hidden));
  for (std::int64_t r = 0; r < num_rows; ++r) {
    const std::int32_t row = batch.logits_rows[static_cast<std::size_t>(r)];
    PAGEDLLM_ASSERT(row >= 0 && row < num_tokens, "forward batch: logits row outside the batch");
    rms_norm(RmsNormArgs{.x = residual.data() + row * hidden,
                         .weight = final_norm_,
                         .y = normed.data() + r * hidden,
                         .num_rows = 1,
                         .dim = hidden,
                         .eps = static_cast<float>(config.rms_norm_eps)});
  }
  std::vector<float> logits(static_cast<std::size_t>(num_rows * config.vocab_size));
  project(normed.data(), num_rows, hidden, lm_head_, nullptr, config.vocab_size, logits.data());
  return logits;
}

void LlamaModel::attention_block(const Layer& layer, std::int32_t layer_index, const ForwardBatch& batch,
                                 HostKvStore& cache, std::vector<float>& residual, Buffers& buffers) const {
  const model::ModelConfig& config = weights_.config;
  const std::int64_t hidden = config.hidden_size;
  const std::int64_t num_tokens = batch.num_tokens();
  const std::int64_t q_dim = config.q_dim();
  const std::int64_t kv_dim = config.kv_dim();
  const kv::KvLayout& layout = cache.device_layout();

  std::vector<float>& normed = buffers.normed;
  std::vector<float>& q = buffers.q;
  std::vector<float>& k = buffers.k;
  std::vector<float>& v = buffers.v;
  rms_norm(RmsNormArgs{.x = residual.data(),
                       .weight = layer.input_norm,
                       .y = normed.data(),
                       .num_rows = num_tokens,
                       .dim = hidden,
                       .eps = static_cast<float>(config.rms_norm_eps)});
  const LinearArgs qkv[] = {
      projection(normed.data(), num_tokens, hidden, layer.q_proj, layer.q_bias, q_dim, q.data()),
      projection(normed.data(), num_tokens, hidden, layer.k_proj, layer.k_bias, kv_dim, k.data()),
      projection(normed.data(), num_tokens, hidden, layer.v_proj, layer.v_bias, kv_dim, v.data()),
  };
  linear_each(qkv);

  // Rotary on q and k, then every token's K and V into its cache slot: all of this batch's
  // positions are in the cache before any token attends.
  for (std::int64_t t = 0; t < num_tokens; ++t) {
    const std::int32_t position = batch.positions[static_cast<std::size_t>(t)];
    rotary_.apply(q.data() + t * q_dim, static_cast<std::int32_t>(config.num_heads), position);
    rotary_.apply(k.data() + t * kv_dim, static_cast<std::int32_t>(config.num_kv_heads), position);
    const auto& table = batch.block_tables[static_cast<std::size_t>(batch.sequence_index[static_cast<std::size_t>(t)])];
    const auto block_index = static_cast<std::size_t>(position / layout.block_size);
    PAGEDLLM_ASSERT(block_index < table.size(), "forward batch: position beyond the block table");
    PAGEDLLM_ASSERT(table[block_index] != kv::kNoBlock, "forward batch: a new token's block was released");
    cache.write(layer_index, table[block_index], position % layout.block_size, k.data() + t * kv_dim,
                v.data() + t * kv_dim);
  }

  std::vector<float>& attended = buffers.attended;
  const float* kv_cache = cache.device_data();
  // Tokens attend over different lengths (a prompt chunk is causal): hand out (token, heads)
  // units dynamically. A unit is a KV head's query group when there are at least two groups per
  // thread, else a contiguous share of a token's heads, about one per thread (so even a single
  // decode token spreads over the threads). Contiguous heads share KV heads: a group's keys and
  // values, read from memory by its first head, are in cache for the next. Each head is computed
  // whole by one thread, so the results do not change.
  const auto num_heads = static_cast<std::int32_t>(config.num_heads);
  const auto num_kv_heads = static_cast<std::int32_t>(config.num_kv_heads);
  const auto num_threads = static_cast<std::int64_t>(omp_get_max_threads());
  std::int32_t heads_per_unit = num_heads / num_kv_heads;
  if (num_tokens * num_kv_heads < 2 * num_threads) {
    const auto shares = static_cast<std::int32_t>(
        std::min<std::int64_t>(num_heads, (num_threads + num_tokens - 1) / num_tokens));  // per token
    heads_per_unit = (num_heads + shares - 1) / shares;
  }
  const std::int32_t units_per_token = (num_heads + heads_per_unit - 1) / heads_per_unit;
#pragma omp parallel for schedule(dynamic, 1)
  for (std::int64_t unit = 0; unit < num_tokens * units_per_token; ++unit) {
    const std::int64_t t = unit / units_per_token;
    const auto head = static_cast<std::int32_t>(unit % units_per_token) * heads_per_unit;
    paged_attention(PagedAttentionArgs{
        .layout = layout,
        .kv_cache = kv_cache,
        .layer = layer_index,
        .num_heads = num_heads,
        .block_table = batch.block_tables[static_cast<std::size_t>(batch.sequence_index[static_cast<std::size_t>(t)])],
        .position = batch.positions[static_cast<std::size_t>(t)],
        .sliding_window = config.attention_window(),
        .q = q.data() + t * q_dim,
        .out = attended.data() + t * q_dim,
        .head_begin = head,
        .head_end = std::min(head + heads_per_unit, num_heads),
    });
  }
  std::vector<float>& output = buffers.output;
  project(attended.data(), num_tokens, q_dim, layer.o_proj, nullptr, hidden, output.data());
  for (std::size_t i = 0; i < residual.size(); ++i) residual[i] += output[i];
}

void LlamaModel::mlp_block(const Layer& layer, std::vector<float>& residual, Buffers& buffers) const {
  const model::ModelConfig& config = weights_.config;
  const std::int64_t hidden = config.hidden_size;
  const std::int64_t inter = config.intermediate_size;
  const auto num_tokens = static_cast<std::int64_t>(residual.size()) / hidden;

  std::vector<float>& normed = buffers.normed;
  std::vector<float>& gate = buffers.gate;
  std::vector<float>& up = buffers.up;
  std::vector<float>& output = buffers.output;
  rms_norm(RmsNormArgs{.x = residual.data(),
                       .weight = layer.post_norm,
                       .y = normed.data(),
                       .num_rows = num_tokens,
                       .dim = hidden,
                       .eps = static_cast<float>(config.rms_norm_eps)});
  const LinearArgs gate_up[] = {
      projection(normed.data(), num_tokens, hidden, layer.gate_proj, nullptr, inter, gate.data()),
      projection(normed.data(), num_tokens, hidden, layer.up_proj, nullptr, inter, up.data()),
  };
  linear_each(gate_up);
  swiglu(SwigluArgs{
      .gate = gate.data(), .up = up.data(), .out = gate.data(), .n = static_cast<std::int64_t>(gate.size())});
  project(gate.data(), num_tokens, inter, layer.down_proj, nullptr, hidden, output.data());
  for (std::size_t i = 0; i < residual.size(); ++i) residual[i] += output[i];
}

}  // namespace pagedllm::cpu_ref
