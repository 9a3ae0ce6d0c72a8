// Hardware and model presets: datasheet and config.json figures, lookups that name the valid
// presets, shapes from a config.json, and KV cache sizing as vLLM does it.
#include <boost/test/unit_test.hpp>

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "core/model/model_config.h"
#include "core/model/model_shape.h"
#include "sim/hardware.h"
#include "sim/roofline_cost_model.h"

namespace pagedllm::test {
namespace {

// The message of the std::invalid_argument that `lookup` throws, or "" when it does not throw.
template <class Lookup>
std::string error_of(Lookup lookup) {
  try {
    lookup();
  } catch (const std::invalid_argument& error) {
    return error.what();
  }
  return "";
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

BOOST_AUTO_TEST_SUITE(sim_presets)

BOOST_AUTO_TEST_CASE(hardware_presets_carry_dense_datasheet_figures) {
  const sim::HardwareSpec h100 = sim::find_hardware("h100-sxm");
  BOOST_TEST(h100.peak_flops == 989e12);
  BOOST_TEST(h100.memory_bandwidth == 3.35e12);
  BOOST_TEST(h100.memory_bytes == 80LL << 30);
  BOOST_TEST(h100.host_link_bandwidth == 64e9);  // PCIe Gen5 x16, one direction
  const sim::HardwareSpec h200 = sim::find_hardware("h200");
  BOOST_TEST(h200.peak_flops == h100.peak_flops);
  BOOST_TEST(h200.memory_bandwidth == 4.8e12);
  BOOST_TEST(h200.memory_bytes == 141LL << 30);
  BOOST_TEST(sim::find_hardware("a100-40gb").memory_bandwidth == 1555e9);
  BOOST_TEST(sim::find_hardware("a100-80gb").memory_bandwidth == 2039e9);
  BOOST_TEST(sim::find_hardware("a100-80gb").peak_flops == 312e12);
  BOOST_TEST(sim::find_hardware("l4").peak_flops == 121e12);  // 242 is the sparse figure
  BOOST_TEST(sim::find_hardware("a10g").memory_bandwidth == 600e9);
  for (const sim::HardwareSpec& preset : sim::hardware_presets()) {
    BOOST_TEST_CONTEXT(preset.name) {
      BOOST_CHECK_NO_THROW(sim::validate(preset));
      BOOST_TEST(preset.usd_per_gpu_hour > 0.0);
      // Decode-relevant ratio: every preset does tens to hundreds of FLOPs per byte.
      BOOST_TEST(preset.peak_flops / preset.memory_bandwidth > 50.0);
      BOOST_TEST(preset.peak_flops / preset.memory_bandwidth < 500.0);
    }
  }
}

BOOST_AUTO_TEST_CASE(hardware_names_match_ignoring_case) {
  BOOST_TEST(sim::find_hardware("H100-SXM").name == "h100-sxm");
}

BOOST_AUTO_TEST_CASE(an_unknown_hardware_name_lists_the_valid_ones) {
  const std::string message = error_of([] { sim::find_hardware("h100-pcie"); });
  BOOST_TEST(contains(message, "h100-pcie"));
  for (const char* name : {"h100-sxm", "h200", "a100-40gb", "a100-80gb", "a10g", "l4"}) {
    BOOST_TEST(contains(message, name), name);
  }
}

BOOST_AUTO_TEST_CASE(model_presets_have_the_published_parameter_counts) {
  BOOST_TEST(model::find_model_shape("llama-2-7b").num_params() == 6738415616);
  BOOST_TEST(model::find_model_shape("llama-3-8b").num_params() == 8030261248);
  BOOST_TEST(model::find_model_shape("mistral-7b").num_params() == 7241732096);
  BOOST_TEST(model::find_model_shape("smollm2-135m").num_params() == 134515008);
  const auto about = boost::test_tools::tolerance(0.01);
  BOOST_TEST(static_cast<double>(model::find_model_shape("llama-2-13b").num_params()) == 13.0e9, about);
  BOOST_TEST(static_cast<double>(model::find_model_shape("llama-2-70b").num_params()) == 69.0e9, about);
  BOOST_TEST(static_cast<double>(model::find_model_shape("llama-3-70b").num_params()) == 70.6e9, about);
  BOOST_TEST(static_cast<double>(model::find_model_shape("llama-3.2-1b").num_params()) == 1.236e9, about);
  for (const model::ModelShape& preset : model::model_shape_presets()) {
    BOOST_TEST_CONTEXT(preset.name) { BOOST_CHECK_NO_THROW(model::validate(preset)); }
  }
}

BOOST_AUTO_TEST_CASE(kv_bytes_per_token_follow_the_kv_heads) {
  // 2 (K and V) x layers x kv heads x head_dim x 2 bytes.
  BOOST_TEST(model::find_model_shape("llama-2-7b").kv_bytes_per_token() == 2.0 * 32 * 32 * 128 * 2);  // 512 KiB
  BOOST_TEST(model::find_model_shape("llama-3-8b").kv_bytes_per_token() == 2.0 * 32 * 8 * 128 * 2);   // GQA: 128 KiB
  BOOST_TEST(model::find_model_shape("smollm2-135m").kv_bytes_per_token() == 2.0 * 30 * 3 * 64 * 2);
}

BOOST_AUTO_TEST_CASE(an_unknown_model_name_lists_the_valid_ones) {
  const std::string message = error_of([] { model::find_model_shape("llama-4"); });
  BOOST_TEST(contains(message, "llama-4"));
  for (const model::ModelShape& preset : model::model_shape_presets()) {
    BOOST_TEST(contains(message, preset.name), preset.name);
  }
}

BOOST_AUTO_TEST_CASE(a_config_json_gives_the_same_shape_as_the_preset) {
  // SmolLM2-135M's config.json, the fields that matter.
  const nlohmann::json config_json = {{"architectures", {"LlamaForCausalLM"}},
                                      {"hidden_size", 576},
                                      {"num_hidden_layers", 30},
                                      {"num_attention_heads", 9},
                                      {"num_key_value_heads", 3},
                                      {"intermediate_size", 1536},
                                      {"vocab_size", 49152},
                                      {"max_position_embeddings", 8192},
                                      {"tie_word_embeddings", true},
                                      {"rope_theta", 100000},
                                      {"rms_norm_eps", 1e-5}};
  const model::ModelConfig config = model::parse_hf_config(config_json, "config.json");
  const model::ModelShape shape = model::model_shape_from_config(config, "smollm2");
  const model::ModelShape preset = model::find_model_shape("smollm2-135m");
  BOOST_TEST(shape.name == "smollm2");
  BOOST_TEST(shape.head_dim == 64);
  BOOST_TEST(shape.num_params() == preset.num_params());
  BOOST_TEST(shape.num_matmul_params_per_layer() == preset.num_matmul_params_per_layer());
  BOOST_TEST(shape.kv_bytes_per_token() == preset.kv_bytes_per_token());
  BOOST_TEST(shape.tie_word_embeddings);
}

BOOST_AUTO_TEST_CASE(device_blocks_follow_vllm_sizing) {
  sim::RooflineConfig config;
  config.hardware = sim::find_hardware("h100-sxm");
  config.model = model::find_model_shape("llama-2-7b");
  // (80 GiB x 0.9 - 13.48 GB of weights) / (16 tokens x 512 KiB) = 7609.4
  BOOST_TEST(sim::num_device_blocks(config, 0.9, 0) == 7609);
  // A 1 GiB activation reserve costs 1 GiB / 8 MiB = 128 blocks.
  BOOST_TEST(sim::num_device_blocks(config, 0.9, 1LL << 30) == 7609 - 128);
  // vLLM's default 4 GiB of swap space holds 512 blocks of 8 MiB.
  BOOST_TEST(sim::num_host_blocks(config, 4LL << 30) == 512);
  // Tensor parallel 2: half the weights and half of each block per GPU.
  config.tensor_parallel = 2;
  BOOST_TEST(sim::kv_bytes_per_block(config) == 16.0 * 256 * 1024);
  BOOST_TEST(sim::num_device_blocks(config, 0.9, 0) == 16825);  // (77.31e9 - 6.74e9) / 4 MiB
}

BOOST_AUTO_TEST_CASE(a_draft_model_shares_the_gpu) {
  // llama-3-8b with llama-3.2-1b as its draft: both models' weights come off the memory, and each
  // block holds both caches' KV (the draft's cache has the target's block count).
  sim::RooflineConfig target;
  target.hardware = sim::find_hardware("h100-sxm");
  target.model = model::find_model_shape("llama-3-8b");
  sim::RooflineConfig draft = target;
  draft.model = model::find_model_shape("llama-3.2-1b");
  BOOST_TEST(sim::num_device_blocks(target, 0.9, 0) == 29205);  // (77.31e9 - 16.06e9) / 2 MiB
  // (77.31e9 - 16.06e9 - 2.47e9) / (2 MiB + 512 KiB) = 22421.7
  BOOST_TEST(sim::num_device_blocks(target, 0.9, 0, &draft) == 22421);
  draft.tensor_parallel = 2;
  BOOST_CHECK_THROW(static_cast<void>(sim::num_device_blocks(target, 0.9, 0, &draft)), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(a_model_that_does_not_fit_gets_no_blocks) {
  sim::RooflineConfig config;
  config.hardware = sim::find_hardware("l4");
  config.model = model::find_model_shape("llama-2-70b");
  BOOST_TEST(sim::num_device_blocks(config, 0.9, 0) == 0);
  config.tensor_parallel = 8;  // 17 GB of weights per GPU: fits 24 GiB
  BOOST_TEST(sim::num_device_blocks(config, 0.9, 0) > 0);
}

BOOST_AUTO_TEST_CASE(kv_heads_are_replicated_when_gpus_outnumber_them) {
  sim::RooflineConfig config;
  config.hardware = sim::find_hardware("h100-sxm");
  config.model = model::find_model_shape("llama-3-70b");  // 8 KV heads
  config.tensor_parallel = 4;
  BOOST_TEST(sim::num_kv_heads_per_gpu(config) == 2);
  config.tensor_parallel = 16;
  BOOST_TEST(sim::num_kv_heads_per_gpu(config) == 1);
}

BOOST_AUTO_TEST_CASE(bad_sizing_arguments_are_refused) {
  sim::RooflineConfig config;
  config.hardware = sim::find_hardware("h100-sxm");
  config.model = model::find_model_shape("llama-2-7b");
  BOOST_TEST(contains(error_of([&] { sim::num_device_blocks(config, 1.5, 0); }), "gpu_memory_utilization"));
  BOOST_TEST(contains(error_of([&] { sim::num_device_blocks(config, 0.9, -1); }), "activation_reserve_bytes"));
  BOOST_TEST(contains(error_of([&] { sim::num_host_blocks(config, -1); }), "swap_space_bytes"));
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace pagedllm::test
