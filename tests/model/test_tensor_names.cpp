// Internal tensor naming and llama.cpp's rotary row order.
#include <boost/test/unit_test.hpp>

#include <numeric>

#include "core/model/tensor_names.h"

namespace pagedllm::model {

BOOST_AUTO_TEST_SUITE(tensor_names)

BOOST_AUTO_TEST_CASE(gguf_names_map_to_internal_names_and_back) {
  const std::pair<const char*, const char*> pairs[] = {
      {"token_embd.weight", "model.embed_tokens.weight"},
      {"blk.12.attn_q.weight", "model.layers.12.self_attn.q_proj.weight"},
      {"blk.0.attn_k.bias", "model.layers.0.self_attn.k_proj.bias"},
      {"blk.3.attn_output.weight", "model.layers.3.self_attn.o_proj.weight"},
      {"blk.3.ffn_norm.weight", "model.layers.3.post_attention_layernorm.weight"},
      {"blk.29.ffn_down.weight", "model.layers.29.mlp.down_proj.weight"},
      {"output_norm.weight", "model.norm.weight"},
      {"output.weight", "lm_head.weight"},
  };
  for (const auto& [gguf, internal] : pairs) {
    BOOST_TEST(internal_name_from_gguf(gguf).value_or("?") == internal);
    BOOST_TEST(gguf_name_from_internal(internal) == gguf);
  }
  BOOST_TEST(!internal_name_from_gguf("rope_freqs.weight").has_value());
  BOOST_TEST(!internal_name_from_gguf("blk.x.attn_q.weight").has_value());
  BOOST_TEST(!internal_name_from_gguf("blk.1.unknown.weight").has_value());
  BOOST_CHECK_THROW(gguf_name_from_internal("model.layers.1.unknown"), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(interleaving_puts_rotary_pairs_side_by_side_per_head) {
  // 2 heads of head_dim 4, rows of length 1: Hugging Face rows (per head) r0 r1 | r2 r3 pair
  // (r0, r2) and (r1, r3); llama.cpp's order is r0 r2 r1 r3.
  std::vector<float> rows = {0, 1, 2, 3, 10, 11, 12, 13};
  interleave_rotary_rows(rows, 2, 4, 1);
  BOOST_TEST(rows == (std::vector<float>{0, 2, 1, 3, 10, 12, 11, 13}), boost::test_tools::per_element());
  deinterleave_rotary_rows(rows, 2, 4, 1);
  BOOST_TEST(rows == (std::vector<float>{0, 1, 2, 3, 10, 11, 12, 13}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(deinterleaving_undoes_interleaving_for_wide_rows) {
  std::vector<float> rows(3 * 8 * 5);
  std::iota(rows.begin(), rows.end(), 0.0f);
  const std::vector<float> original = rows;
  interleave_rotary_rows(rows, 3, 8, 5);
  BOOST_TEST(rows != original);
  deinterleave_rotary_rows(rows, 3, 8, 5);
  BOOST_TEST(rows == original, boost::test_tools::per_element());
  BOOST_CHECK_THROW(interleave_rotary_rows(rows, 3, 7, 5), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(expected_tensors_follow_the_config) {
  ModelConfig config;
  config.architecture = "qwen2";
  config.hidden_size = 8;
  config.num_layers = 2;
  config.num_heads = 2;
  config.num_kv_heads = 1;
  config.head_dim = 4;
  config.intermediate_size = 16;
  config.vocab_size = 10;
  config.attention_bias = true;
  config.tie_word_embeddings = true;
  const auto specs = expected_tensors(config);
  BOOST_TEST(specs.size() == 1u + 2u * 12u + 1u);  // no lm_head when tied
  BOOST_TEST(specs.front().name == "model.embed_tokens.weight");
  BOOST_TEST(specs[2].name == "model.layers.0.self_attn.q_proj.weight");
  BOOST_TEST(specs[3].shape == (std::vector<std::int64_t>{4, 8}), boost::test_tools::per_element());
  BOOST_TEST(specs[5].name == "model.layers.0.self_attn.q_proj.bias");
  config.tie_word_embeddings = false;
  BOOST_TEST(expected_tensors(config).back().name == "lm_head.weight");
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace pagedllm::model
