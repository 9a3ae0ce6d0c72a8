#include "cuda/forward_pass.h"

#include <algorithm>
#include <cmath>

#include "cuda/cuda_check.h"
#include "cuda/kernels/activation.h"
#include "cuda/kernels/bias_add.h"
#include "cuda/kernels/cache_ops.h"
#include "cuda/kernels/decode_attention.h"
#include "cuda/kernels/embedding.h"
#include "cuda/kernels/prefill_attention.h"
#include "cuda/kernels/rms_norm.h"
#include "cuda/kernels/rotary.h"

namespace pagedllm::cuda {

namespace {

std::size_t elements_bytes(int64_t rows, int64_t width) {
  return static_cast<std::size_t>(rows) * static_cast<std::size_t>(width) * kDTypeBytes;
}

// What the decode kernel's split-KV path needs at most: every batch size up to max_seqs, every
// length up to max_model_len (the partition size it picks depends on both).
std::size_t worst_decode_workspace(const model::ModelConfig& config, const ForwardLimits& limits) {
  DecodeAttentionParams params;
  params.layout = kv::KvLayout{.num_layers = static_cast<int32_t>(config.num_layers),
                               .num_kv_heads = static_cast<int32_t>(config.num_kv_heads),
                               .head_dim = static_cast<int32_t>(config.head_dim),
                               .block_size = limits.block_size,
                               .num_blocks = 1};
  params.num_heads = static_cast<int32_t>(config.num_heads);
  std::vector<int32_t> lengths{limits.max_model_len};
  for (int32_t length = kMinDecodePartitionTokens; length < limits.max_model_len; length *= 2)
    lengths.push_back(length);
  std::size_t worst = 0;
  for (int32_t num_seqs = 1; num_seqs <= limits.max_seqs; ++num_seqs) {
    for (const int32_t length : lengths) {
      params.num_seqs = num_seqs;
      params.max_seq_len = length;
      params.partition_tokens =
          choose_decode_partition_tokens(params.layout.num_kv_heads, num_seqs, length, limits.num_sms);
      worst = std::max(worst, decode_attention_workspace_bytes(params));
    }
  }
  return worst;
}

}  // namespace

ForwardShape forward_shape(const StepBatch& batch, const StepInputsView& inputs) {
  return ForwardShape{.inputs = inputs,
                      .num_tokens = batch.num_tokens(),
                      .num_decode_seqs = batch.num_decode_seqs,
                      .num_prefill_seqs = batch.num_prefill_seqs(),
                      .table_width = batch.table_width,
                      .max_decode_seq_len = batch.max_decode_seq_len,
                      .max_query_len = batch.max_query_len,
                      .num_logits_rows = static_cast<int32_t>(batch.logits_rows.size())};
}

ForwardPass::ForwardPass(const DeviceModel& model, GemmRunner& gemm, const ForwardLimits& limits)
    : model_(model), gemm_(gemm), limits_(limits) {
  const model::ModelConfig& c = model.config();
  const int64_t tokens = limits.max_tokens;
  residual_ = DeviceBuffer(elements_bytes(tokens, c.hidden_size));
  hidden_ = DeviceBuffer(elements_bytes(tokens, c.hidden_size));
  normed_ = DeviceBuffer(elements_bytes(tokens, c.hidden_size));
  qkv_ = DeviceBuffer(elements_bytes(tokens, c.q_dim() + 2 * c.kv_dim()));
  attended_ = DeviceBuffer(elements_bytes(tokens, c.q_dim()));
  gate_up_ = DeviceBuffer(elements_bytes(tokens, 2 * c.intermediate_size));
  activated_ = DeviceBuffer(elements_bytes(tokens, c.intermediate_size));
  const int64_t logits_rows = limits.max_logits_rows > 0 ? limits.max_logits_rows : limits.max_seqs;
  logits_hidden_ = DeviceBuffer(elements_bytes(logits_rows, c.hidden_size));
  logits_ =
      DeviceBuffer(static_cast<std::size_t>(logits_rows) * static_cast<std::size_t>(c.vocab_size) * sizeof(float));
  const std::size_t workspace = worst_decode_workspace(c, limits);
  if (workspace > 0) decode_workspace_ = DeviceBuffer(workspace);
}

void ForwardPass::attention(const ForwardShape& shape, const kv::KvLayout& layout, const void* kv_cache, int32_t layer,
                            cudaStream_t stream) {
  const model::ModelConfig& c = model_.config();
  const DType dtype = model_.dtype();
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  const auto num_heads = static_cast<int32_t>(c.num_heads);
  // The kernels read q in place from the fused qkv rows (rotary applied there).
  const int64_t qkv_dim = c.q_dim() + 2 * c.kv_dim();
  if (shape.num_decode_seqs > 0) {
    DecodeAttentionParams params{
        .dtype = dtype,
        .layout = layout,
        .kv_cache = kv_cache,
        .layer = layer,
        .num_seqs = shape.num_decode_seqs,
        .num_heads = num_heads,
        .q = qkv_.get(),
        .q_stride = qkv_dim,
        .out = attended_.get(),
        .block_tables = shape.inputs.block_tables,
        .max_blocks_per_seq = shape.table_width,
        .seq_lens = shape.inputs.seq_lens,
        .max_seq_len = shape.max_decode_seq_len,
        .scale = scale,
        .sliding_window = c.attention_window(),
        .partition_tokens = choose_decode_partition_tokens(layout.num_kv_heads, shape.num_decode_seqs,
                                                           shape.max_decode_seq_len, limits_.num_sms),
        .workspace = decode_workspace_.get(),
        .workspace_bytes = decode_workspace_.bytes()};
    decode_attention(params, stream);
  }
  if (shape.num_prefill_seqs > 0) {
    const auto decode_rows = static_cast<std::size_t>(shape.num_decode_seqs);
    PrefillAttentionParams params{
        .dtype = dtype,
        .layout = layout,
        .kv_cache = kv_cache,
        .layer = layer,
        .num_seqs = shape.num_prefill_seqs,
        .num_heads = num_heads,
        .q = qkv_.as<char>() + decode_rows * static_cast<std::size_t>(qkv_dim) * kDTypeBytes,
        .q_stride = qkv_dim,
        .out = attended_.as<char>() + decode_rows * static_cast<std::size_t>(c.q_dim()) * kDTypeBytes,
        .query_starts = shape.inputs.query_starts,
        .context_starts = shape.inputs.context_starts,
        .block_tables =
            shape.inputs.block_tables + static_cast<std::ptrdiff_t>(shape.num_decode_seqs) * shape.table_width,
        .max_blocks_per_seq = shape.table_width,
        .max_query_len = shape.max_query_len,
        .scale = scale,
        .sliding_window = c.attention_window()};
    prefill_attention(params, stream);
  }
}

void ForwardPass::enqueue(const ForwardShape& shape, const kv::KvLayout& layout, void* kv_cache, cudaStream_t stream) {
  const model::ModelConfig& c = model_.config();
  const DType dtype = model_.dtype();
  const int64_t n = shape.num_tokens;
  const int64_t qkv_dim = c.q_dim() + 2 * c.kv_dim();
  const auto eps = static_cast<float>(c.rms_norm_eps);
  const auto& layers = model_.layers();
  if (n == 0) return;

  embedding(EmbeddingParams{.dtype = dtype,
                            .num_tokens = static_cast<int32_t>(n),
                            .vocab_size = static_cast<int32_t>(c.vocab_size),
                            .hidden_size = c.hidden_size,
                            .token_ids = shape.inputs.token_ids,
                            .table = model_.embedding(),
                            .out = residual_.get()},
            stream);
  rms_norm(RmsNormParams{.dtype = dtype,
                         .num_rows = n,
                         .dim = c.hidden_size,
                         .x = residual_.get(),
                         .residual = nullptr,
                         .weight = layers.front().input_norm,
                         .out = normed_.get(),
                         .eps = eps},
           stream);

  for (std::size_t index = 0; index < layers.size(); ++index) {
    const DeviceLayer& layer = layers[index];
    const auto layer_index = static_cast<int32_t>(index);
    gemm_.linear(LinearParams{.dtype = dtype,
                              .num_rows = n,
                              .in_features = c.hidden_size,
                              .out_features = qkv_dim,
                              .x = normed_.get(),
                              .weight = layer.qkv,
                              .y = qkv_.get()},
                 stream);
    if (layer.qkv_bias != nullptr) {
      bias_add(
          BiasAddParams{
              .dtype = dtype, .num_rows = n, .dim = qkv_dim, .x = qkv_.get(), .x_stride = 0, .bias = layer.qkv_bias},
          stream);
    }
    char* q = qkv_.as<char>();
    char* k = q + static_cast<std::size_t>(c.q_dim()) * kDTypeBytes;
    char* v = k + static_cast<std::size_t>(c.kv_dim()) * kDTypeBytes;
    apply_rotary(RotaryParams{.dtype = dtype,
                              .num_tokens = static_cast<int32_t>(n),
                              .num_heads = static_cast<int32_t>(c.num_heads),
                              .num_kv_heads = static_cast<int32_t>(c.num_kv_heads),
                              .head_dim = static_cast<int32_t>(c.head_dim),
                              .q = q,
                              .k = k,
                              .q_stride = qkv_dim,
                              .k_stride = qkv_dim,
                              .positions = shape.inputs.positions,
                              .inv_freq = model_.inv_freq()},
                 stream);
    write_kv_cache(WriteKvCacheParams{.dtype = dtype,
                                      .layout = layout,
                                      .kv_cache = kv_cache,
                                      .layer = layer_index,
                                      .num_tokens = static_cast<int32_t>(n),
                                      .key = k,
                                      .value = v,
                                      .key_stride = qkv_dim,
                                      .value_stride = qkv_dim,
                                      .slot_mapping = shape.inputs.slot_mapping},
                   stream);
    attention(shape, layout, kv_cache, layer_index, stream);
    gemm_.linear(LinearParams{.dtype = dtype,
                              .num_rows = n,
                              .in_features = c.q_dim(),
                              .out_features = c.hidden_size,
                              .x = attended_.get(),
                              .weight = layer.o_proj,
                              .y = hidden_.get()},
                 stream);
    rms_norm(RmsNormParams{.dtype = dtype,
                           .num_rows = n,
                           .dim = c.hidden_size,
                           .x = hidden_.get(),
                           .residual = residual_.get(),
                           .weight = layer.post_norm,
                           .out = normed_.get(),
                           .eps = eps},
             stream);
    gemm_.linear(LinearParams{.dtype = dtype,
                              .num_rows = n,
                              .in_features = c.hidden_size,
                              .out_features = 2 * c.intermediate_size,
                              .x = normed_.get(),
                              .weight = layer.gate_up,
                              .y = gate_up_.get()},
                 stream);
    silu_and_mul(SiluAndMulParams{.dtype = dtype,
                                  .num_rows = n,
                                  .dim = c.intermediate_size,
                                  .input = gate_up_.get(),
                                  .out = activated_.get()},
                 stream);
    gemm_.linear(LinearParams{.dtype = dtype,
                              .num_rows = n,
                              .in_features = c.intermediate_size,
                              .out_features = c.hidden_size,
                              .x = activated_.get(),
                              .weight = layer.down,
                              .y = hidden_.get()},
                 stream);
    const void* next_norm = index + 1 < layers.size() ? layers[index + 1].input_norm : model_.final_norm();
    rms_norm(RmsNormParams{.dtype = dtype,
                           .num_rows = n,
                           .dim = c.hidden_size,
                           .x = hidden_.get(),
                           .residual = residual_.get(),
                           .weight = next_norm,
                           .out = normed_.get(),
                           .eps = eps},
             stream);
  }

  if (shape.num_logits_rows == 0) return;
  // Gathers the logits rows of the final hidden states (an embedding lookup into `normed`).
  embedding(EmbeddingParams{.dtype = dtype,
                            .num_tokens = shape.num_logits_rows,
                            .vocab_size = static_cast<int32_t>(n),
                            .hidden_size = c.hidden_size,
                            .token_ids = shape.inputs.logits_rows,
                            .table = normed_.get(),
                            .out = logits_hidden_.get()},
            stream);
  gemm_.linear(LinearParams{.dtype = dtype,
                            .fp32_output = true,
                            .num_rows = shape.num_logits_rows,
                            .in_features = c.hidden_size,
                            .out_features = c.vocab_size,
                            .x = logits_hidden_.get(),
                            .weight = model_.lm_head(),
                            .y = logits_.get()},
               stream);
}

}  // namespace pagedllm::cuda
