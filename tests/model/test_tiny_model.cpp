// `make-model` output read back through every loader: both formats give the same model.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "core/model/gguf_file.h"
#include "core/model/gguf_writer.h"
#include "core/model/half.h"
#include "core/model/model_errors.h"
#include "core/model/model_source.h"
#include "core/model/model_weights.h"
#include "core/model/safetensors_checkpoint.h"
#include "core/tokenizer/tokenizer.h"
#include "tools/make_model/tiny_model.h"

namespace pagedllm::model {
namespace {

std::string scratch_dir(const std::string& name) {
  const auto path = std::filesystem::temp_directory_path() / ("pagedllm_test_" + name);
  std::filesystem::remove_all(path);
  return path.string();
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The default tiny model, written once for the whole suite.
const make_model::TinyModelFiles& shared_tiny_model() {
  static const make_model::TinyModelFiles files =
      make_model::write_tiny_model(make_model::TinyModelSpec{}, scratch_dir("tiny_model"));
  return files;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(tiny_model)

BOOST_AUTO_TEST_CASE(both_formats_hold_the_same_config_and_bit_identical_fp32_weights) {
  const auto& files = shared_tiny_model();
  const ModelConfig hf_config = read_hf_config(files.directory + "/config.json");
  const GgufFile gguf(files.gguf);
  const ModelConfig gguf_config = read_gguf_config(gguf);
  BOOST_TEST(hf_config.num_layers == gguf_config.num_layers);
  BOOST_TEST(hf_config.num_kv_heads == gguf_config.num_kv_heads);
  BOOST_TEST(hf_config.vocab_size == gguf_config.vocab_size);
  BOOST_TEST(hf_config.tie_word_embeddings == gguf_config.tie_word_embeddings);
  BOOST_TEST(static_cast<float>(hf_config.rms_norm_eps) == static_cast<float>(gguf_config.rms_norm_eps));

  const ModelWeights from_safetensors =
      load_weights(SafetensorsCheckpoint(files.directory), hf_config, {WeightDType::f32});
  const ModelWeights from_gguf = load_weights(gguf, gguf_config, {WeightDType::f32});
  BOOST_TEST(from_safetensors.tensors.size() == from_gguf.tensors.size());
  BOOST_TEST(from_gguf.ignored_tensors.empty());
  for (const auto& [name, tensor] : from_safetensors.tensors) {
    const HostTensor& other = from_gguf.at(name);
    BOOST_TEST(tensor.shape == other.shape, name);
    BOOST_TEST((tensor.f32 == other.f32), name << ": values differ between safetensors and GGUF");
  }
}

BOOST_AUTO_TEST_CASE(the_same_seed_writes_the_same_bytes_and_another_seed_does_not) {
  const auto& files = shared_tiny_model();
  const auto again = make_model::write_tiny_model(make_model::TinyModelSpec{}, scratch_dir("tiny_again"));
  for (const char* name : {"/model.safetensors", "/tokenizer.json", "/config.json"}) {
    BOOST_TEST((read_bytes(files.directory + name) == read_bytes(again.directory + name)), name);
  }
  BOOST_TEST((read_bytes(files.gguf) == read_bytes(again.gguf)));
  make_model::TinyModelSpec other_seed;
  other_seed.seed = 7;
  const auto other = make_model::write_tiny_model(other_seed, scratch_dir("tiny_seed7"));
  BOOST_TEST(
      (read_bytes(files.directory + "/model.safetensors") != read_bytes(other.directory + "/model.safetensors")));
  BOOST_TEST((read_bytes(files.directory + "/tokenizer.json") ==
              read_bytes(other.directory + "/tokenizer.json")));  // the vocabulary needs no seed
}

BOOST_AUTO_TEST_CASE(the_gguf_vocabulary_encodes_like_the_tokenizer_json) {
  const auto& files = shared_tiny_model();
  const auto from_json = tokenizer::Tokenizer::from_tokenizer_json(files.directory + "/tokenizer.json");
  const auto from_gguf = tokenizer::Tokenizer::from_gguf(GgufFile(files.gguf));
  BOOST_TEST(from_json.num_tokens() == from_gguf.num_tokens());
  for (const char* text :
       {"The scheduler decides, at every step, which requests run.", "int x = 42;\n\tif (x) { return 3.14; }",
        "<|im_start|>user\nhi<|im_end|>", "naïve café 東京 🙂", "   spaces   and\n\n\nnewlines"}) {
    BOOST_TEST(from_json.encode(text) == from_gguf.encode(text), boost::test_tools::per_element());
    BOOST_TEST(from_json.decode(from_json.encode(text)) == text);
  }
}

BOOST_AUTO_TEST_CASE(a_quantized_gguf_loads_close_to_the_fp32_weights) {
  make_model::TinyModelSpec spec;
  spec.gguf_type = GgmlType::q8_0;
  const auto files = make_model::write_tiny_model(spec, scratch_dir("tiny_q8"));
  const GgufFile gguf(files.gguf);
  const ModelWeights quantized = load_weights(gguf, read_gguf_config(gguf), {WeightDType::f32});
  const ModelWeights exact =
      load_weights(GgufFile(shared_tiny_model().gguf), read_gguf_config(gguf), {WeightDType::f32});
  const HostTensor& q = quantized.at("model.layers.1.self_attn.k_proj.weight");
  const HostTensor& e = exact.at("model.layers.1.self_attn.k_proj.weight");
  BOOST_REQUIRE(q.f32.size() == e.f32.size());
  double max_error = 0;
  double max_value = 0;
  for (std::size_t i = 0; i < q.f32.size(); ++i) {
    max_error = std::max(max_error, static_cast<double>(std::fabs(q.f32[i] - e.f32[i])));
    max_value = std::max(max_value, static_cast<double>(std::fabs(e.f32[i])));
  }
  BOOST_TEST(max_error > 0.0);                 // it really was quantized
  BOOST_TEST(max_error <= max_value / 127.0);  // Q8_0: half a step of amax/127, with slack
}

BOOST_AUTO_TEST_CASE(a_bf16_load_rounds_every_weight) {
  const GgufFile gguf(shared_tiny_model().gguf);
  const ModelConfig config = read_gguf_config(gguf);
  const ModelWeights bf16 = load_weights(gguf, config, {WeightDType::bf16});
  const HostTensor& tensor = bf16.at("model.norm.weight");
  BOOST_TEST((tensor.dtype == WeightDType::bf16));
  BOOST_TEST(tensor.bf16.size() == static_cast<std::size_t>(config.hidden_size));
  BOOST_TEST(tensor.f32.empty());
}

// A bf16 load of a checkpoint reads each tensor straight into bf16 (bf16 tensors copied as
// stored): every value must equal the fp32 load's, rounded to bf16, for each stored dtype.
BOOST_AUTO_TEST_CASE(a_bf16_load_of_safetensors_is_the_fp32_load_rounded_for_every_stored_dtype) {
  for (const SafetensorsDtype stored : {SafetensorsDtype::f32, SafetensorsDtype::f16, SafetensorsDtype::bf16}) {
    make_model::TinyModelSpec spec;
    spec.safetensors_dtype = stored;
    const auto files = make_model::write_tiny_model(spec, scratch_dir("bf16_load_" + std::string(to_string(stored))));
    const ModelConfig config = read_hf_config(files.directory + "/config.json");
    const SafetensorsCheckpoint checkpoint(files.directory);
    const ModelWeights f32 = load_weights(checkpoint, config, {WeightDType::f32});
    const ModelWeights bf16 = load_weights(checkpoint, config, {WeightDType::bf16});
    BOOST_TEST(bf16.tensors.size() == f32.tensors.size());
    for (const auto& [name, tensor] : bf16.tensors) {
      const HostTensor& reference = f32.at(name);
      BOOST_TEST((tensor.dtype == WeightDType::bf16), name);
      BOOST_TEST(tensor.shape == reference.shape, name);
      BOOST_TEST(tensor.f32.empty(), name);
      BOOST_REQUIRE_EQUAL(tensor.bf16.size(), reference.f32.size());
      std::size_t differing = 0;
      for (std::size_t i = 0; i < tensor.bf16.size(); ++i) {
        differing += tensor.bf16[i] != float_to_bf16(reference.f32[i]) ? 1 : 0;
      }
      BOOST_TEST(differing == 0u, to_string(stored) << " " << name << ": " << differing << " values differ");
    }
  }
}

BOOST_AUTO_TEST_CASE(a_config_that_disagrees_with_the_weights_names_the_tensor_and_shapes) {
  const GgufFile gguf(shared_tiny_model().gguf);
  ModelConfig config = read_gguf_config(gguf);
  config.intermediate_size += 32;
  try {
    load_weights(gguf, config);
    BOOST_FAIL("expected a shape error");
  } catch (const ModelFormatError& error) {
    const std::string message = error.what();
    BOOST_TEST(message.find("blk.0.ffn_gate.weight") != std::string::npos, message);
    BOOST_TEST(message.find("expected shape [224, 64]") != std::string::npos, message);
  }
  config = read_gguf_config(gguf);
  config.num_layers += 1;
  try {
    load_weights(gguf, config);
    BOOST_FAIL("expected a missing-tensor error");
  } catch (const ModelFormatError& error) {
    BOOST_TEST(std::string(error.what()).find("blk.2.") != std::string::npos, error.what());
  }
}

BOOST_AUTO_TEST_CASE(a_truncated_gguf_names_the_file_and_what_is_cut) {
  const std::string original = read_bytes(shared_tiny_model().gguf);
  const std::string cut_path = scratch_dir("cut.gguf");
  {
    std::ofstream out(cut_path, std::ios::binary);
    out.write(original.data(), static_cast<std::streamsize>(original.size() - 100));
  }
  try {
    GgufFile file(cut_path);
    BOOST_FAIL("expected an error");
  } catch (const ModelFormatError& error) {
    BOOST_TEST(error.file() == cut_path);
    BOOST_TEST(std::string(error.what()).find("truncated") != std::string::npos, error.what());
  }
}

// A tensor of a type the engine cannot compute from is refused at load, stored or fp32, naming the
// tensor and the type (Q8_1: ggml's activation type, never a weight type pagedllm decodes).
BOOST_AUTO_TEST_CASE(a_weight_of_a_type_the_engine_cannot_compute_from_is_named_at_load) {
  const ModelConfig config = make_model::tiny_model_config(make_model::TinyModelSpec{}, 128);
  GgufWriter writer;
  writer.add_string("general.architecture", "llama");
  const auto rows = static_cast<std::size_t>(config.vocab_size);
  const auto row_length = static_cast<std::size_t>(config.hidden_size);
  writer.add_tensor("token_embd.weight", {row_length, rows}, GgmlType::q8_1,
                    std::vector<std::byte>(rows * row_length / 32 * 40));  // 40-byte blocks of 32
  const std::string path = scratch_dir("q8_1.gguf");
  writer.write(path);
  const GgufFile file(path);
  for (const WeightDType dtype : {WeightDType::stored, WeightDType::f32}) {
    try {
      load_weights(file, config, {dtype});
      BOOST_FAIL("expected a type error");
    } catch (const ModelFormatError& error) {
      const std::string message = error.what();
      BOOST_TEST(message.find("token_embd.weight") != std::string::npos, message);
      BOOST_TEST(message.find("Q8_1") != std::string::npos, message);
    }
  }
}

BOOST_AUTO_TEST_CASE(model_sources_resolve_directories_gguf_files_and_say_what_is_wrong) {
  const auto& files = shared_tiny_model();
  BOOST_TEST((resolve_model_source(files.directory).format == ModelFormat::hf_directory));
  BOOST_TEST((resolve_model_source(files.gguf).format == ModelFormat::gguf));
  BOOST_CHECK_THROW(resolve_model_source(files.directory + "/config.json"), ModelFormatError);
  BOOST_CHECK_THROW(resolve_model_source("/nonexistent/model"), ModelFormatError);
  BOOST_CHECK_THROW(resolve_model_source(std::filesystem::temp_directory_path().string()), ModelFormatError);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace pagedllm::model
