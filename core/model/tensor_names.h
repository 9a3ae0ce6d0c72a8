// One internal naming for the weights of a Llama-family model, whatever file they came from.
//
// The internal names are those of Hugging Face checkpoints, shapes row-major, outermost first:
//   model.embed_tokens.weight                         [vocab, hidden]
//   model.layers.{i}.input_layernorm.weight           [hidden]
//   model.layers.{i}.self_attn.q_proj.weight          [num_heads * head_dim, hidden]
//   model.layers.{i}.self_attn.k_proj.weight          [num_kv_heads * head_dim, hidden]   (v alike)
//   model.layers.{i}.self_attn.o_proj.weight          [hidden, num_heads * head_dim]
//   model.layers.{i}.self_attn.{q,k,v}_proj.bias      [rows of the matching weight]  (qwen2 only)
//   model.layers.{i}.post_attention_layernorm.weight  [hidden]
//   model.layers.{i}.mlp.{gate,up}_proj.weight        [intermediate, hidden]
//   model.layers.{i}.mlp.down_proj.weight             [hidden, intermediate]
//   model.norm.weight                                 [hidden]
//   lm_head.weight                                    [vocab, hidden]  (absent when tied)
// Query and key rows are in Hugging Face order: each head's rotary pairs are (j, j + head_dim/2)
// ("rotate half"); GGUF llama files store them interleaved and are un-permuted at load.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/model/model_config.h"

namespace pagedllm::model {

struct TensorSpec {
  std::string name;                 // internal name
  std::vector<std::int64_t> shape;  // row-major, outermost first
};

// Every tensor a model with this config needs, in a fixed order (embedding, layers, norm, head).
std::vector<TensorSpec> expected_tensors(const ModelConfig& config);

// "blk.3.attn_q.weight" -> "model.layers.3.self_attn.q_proj.weight"; nullopt for a name that is
// not part of a Llama-family model (e.g. "rope_freqs.weight", which pagedllm recomputes).
std::optional<std::string> internal_name_from_gguf(const std::string& gguf_name);
// The inverse, for writers: "model.norm.weight" -> "output_norm.weight".
std::string gguf_name_from_internal(const std::string& internal_name);

// llama.cpp's converter reorders the rows of q_proj / k_proj of "llama" architectures so that
// rotary pairs are adjacent; these map between the two row orders for one projection matrix
// of `num_heads` heads (rows = num_heads * head_dim, each row `row_length` values).
void interleave_rotary_rows(std::vector<float>& rows, std::int64_t num_heads, std::int64_t head_dim,
                            std::int64_t row_length);
void deinterleave_rotary_rows(std::vector<float>& rows, std::int64_t num_heads, std::int64_t head_dim,
                              std::int64_t row_length);
// The same on rows of any stored type (each row `row_bytes` bytes of whole blocks), into a copy.
std::vector<std::byte> deinterleave_rotary_rows(std::span<const std::byte> rows, std::int64_t num_heads,
                                                std::int64_t head_dim, std::int64_t row_bytes);

}  // namespace pagedllm::model
