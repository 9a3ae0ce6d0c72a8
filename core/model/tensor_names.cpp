#include "core/model/tensor_names.h"

#include <array>
#include <cstring>
#include <stdexcept>
#include <string_view>
#include <utility>

namespace pagedllm::model {
namespace {

// Per-layer tensors: GGUF suffix after "blk.{i}." and internal suffix after "model.layers.{i}.".
constexpr std::array<std::pair<std::string_view, std::string_view>, 12> kLayerNames = {{
    {"attn_norm.weight", "input_layernorm.weight"},
    {"attn_q.weight", "self_attn.q_proj.weight"},
    {"attn_k.weight", "self_attn.k_proj.weight"},
    {"attn_v.weight", "self_attn.v_proj.weight"},
    {"attn_q.bias", "self_attn.q_proj.bias"},
    {"attn_k.bias", "self_attn.k_proj.bias"},
    {"attn_v.bias", "self_attn.v_proj.bias"},
    {"attn_output.weight", "self_attn.o_proj.weight"},
    {"ffn_norm.weight", "post_attention_layernorm.weight"},
    {"ffn_gate.weight", "mlp.gate_proj.weight"},
    {"ffn_up.weight", "mlp.up_proj.weight"},
    {"ffn_down.weight", "mlp.down_proj.weight"},
}};

constexpr std::array<std::pair<std::string_view, std::string_view>, 3> kGlobalNames = {{
    {"token_embd.weight", "model.embed_tokens.weight"},
    {"output_norm.weight", "model.norm.weight"},
    {"output.weight", "lm_head.weight"},
}};

// Splits "<prefix><digits>.<rest>" into the layer index and rest.
std::optional<std::pair<std::string, std::string_view>> split_layer(std::string_view name, std::string_view prefix) {
  if (!name.starts_with(prefix)) return std::nullopt;
  name.remove_prefix(prefix.size());
  const auto dot = name.find('.');
  if (dot == 0 || dot == std::string_view::npos) return std::nullopt;
  const std::string_view digits = name.substr(0, dot);
  for (char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
  }
  return std::make_pair(std::string(digits), name.substr(dot + 1));
}

// Copies rows of `row_bytes` bytes so that destination row `map(h, r)` receives source row
// `h * head_dim + r`.
template <typename RowMap>
void permute_rows(const std::byte* source_rows, std::size_t num_bytes, std::byte* destination_rows,
                  std::int64_t num_heads, std::int64_t head_dim, std::int64_t row_bytes, RowMap map) {
  if (head_dim % 2 != 0 || static_cast<std::int64_t>(num_bytes) != num_heads * head_dim * row_bytes) {
    throw std::invalid_argument("rotary row permutation: shape does not match the tensor");
  }
  for (std::int64_t head = 0; head < num_heads; ++head) {
    for (std::int64_t r = 0; r < head_dim; ++r) {
      const std::int64_t source = head * head_dim + r;
      const std::int64_t destination = head * head_dim + map(r, head_dim);
      std::memcpy(destination_rows + destination * row_bytes, source_rows + source * row_bytes,
                  static_cast<std::size_t>(row_bytes));
    }
  }
}

template <typename RowMap>
void permute_rows(std::vector<float>& rows, std::int64_t num_heads, std::int64_t head_dim, std::int64_t row_length,
                  RowMap map) {
  std::vector<float> result(rows.size());
  permute_rows(reinterpret_cast<const std::byte*>(rows.data()), rows.size() * sizeof(float),
               reinterpret_cast<std::byte*>(result.data()), num_heads, head_dim,
               row_length * static_cast<std::int64_t>(sizeof(float)), map);
  rows = std::move(result);
}

std::int64_t deinterleaved_row(std::int64_t r, std::int64_t dim) { return (r % 2) * (dim / 2) + r / 2; }

}  // namespace

std::vector<TensorSpec> expected_tensors(const ModelConfig& config) {
  const std::int64_t hidden = config.hidden_size;
  const std::int64_t q_rows = config.num_heads * config.head_dim;
  const std::int64_t kv_rows = config.num_kv_heads * config.head_dim;
  const std::int64_t inter = config.intermediate_size;
  std::vector<TensorSpec> specs;
  specs.push_back({"model.embed_tokens.weight", {config.vocab_size, hidden}});
  for (std::int64_t layer = 0; layer < config.num_layers; ++layer) {
    const std::string prefix = "model.layers." + std::to_string(layer) + ".";
    specs.push_back({prefix + "input_layernorm.weight", {hidden}});
    specs.push_back({prefix + "self_attn.q_proj.weight", {q_rows, hidden}});
    specs.push_back({prefix + "self_attn.k_proj.weight", {kv_rows, hidden}});
    specs.push_back({prefix + "self_attn.v_proj.weight", {kv_rows, hidden}});
    if (config.attention_bias) {
      specs.push_back({prefix + "self_attn.q_proj.bias", {q_rows}});
      specs.push_back({prefix + "self_attn.k_proj.bias", {kv_rows}});
      specs.push_back({prefix + "self_attn.v_proj.bias", {kv_rows}});
    }
    specs.push_back({prefix + "self_attn.o_proj.weight", {hidden, q_rows}});
    specs.push_back({prefix + "post_attention_layernorm.weight", {hidden}});
    specs.push_back({prefix + "mlp.gate_proj.weight", {inter, hidden}});
    specs.push_back({prefix + "mlp.up_proj.weight", {inter, hidden}});
    specs.push_back({prefix + "mlp.down_proj.weight", {hidden, inter}});
  }
  specs.push_back({"model.norm.weight", {hidden}});
  if (!config.tie_word_embeddings) specs.push_back({"lm_head.weight", {config.vocab_size, hidden}});
  return specs;
}

std::optional<std::string> internal_name_from_gguf(const std::string& gguf_name) {
  for (const auto& [gguf, internal] : kGlobalNames) {
    if (gguf_name == gguf) return std::string(internal);
  }
  const auto layer = split_layer(gguf_name, "blk.");
  if (!layer) return std::nullopt;
  for (const auto& [gguf, internal] : kLayerNames) {
    if (layer->second == gguf) return "model.layers." + layer->first + "." + std::string(internal);
  }
  return std::nullopt;
}

std::string gguf_name_from_internal(const std::string& internal_name) {
  for (const auto& [gguf, internal] : kGlobalNames) {
    if (internal_name == internal) return std::string(gguf);
  }
  if (const auto layer = split_layer(internal_name, "model.layers.")) {
    for (const auto& [gguf, internal] : kLayerNames) {
      if (layer->second == internal) return "blk." + layer->first + "." + std::string(gguf);
    }
  }
  throw std::invalid_argument("no GGUF name for tensor '" + internal_name + "'");
}

// Hugging Face row (half, j) of a head <-> GGUF row (j, half): r = half * head_dim/2 + j
// becomes 2 * j + half.
void interleave_rotary_rows(std::vector<float>& rows, std::int64_t num_heads, std::int64_t head_dim,
                            std::int64_t row_length) {
  permute_rows(rows, num_heads, head_dim, row_length, [](std::int64_t r, std::int64_t dim) {
    const std::int64_t half_dim = dim / 2;
    return 2 * (r % half_dim) + r / half_dim;
  });
}

void deinterleave_rotary_rows(std::vector<float>& rows, std::int64_t num_heads, std::int64_t head_dim,
                              std::int64_t row_length) {
  permute_rows(rows, num_heads, head_dim, row_length, deinterleaved_row);
}

std::vector<std::byte> deinterleave_rotary_rows(std::span<const std::byte> rows, std::int64_t num_heads,
                                                std::int64_t head_dim, std::int64_t row_bytes) {
  std::vector<std::byte> result(rows.size());
  permute_rows(rows.data(), rows.size(), result.data(), num_heads, head_dim, row_bytes, deinterleaved_row);
  return result;
}

}  // namespace pagedllm::model
