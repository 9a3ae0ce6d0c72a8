// `pagedllm make-model`: writes the tiny deterministic Llama-family checkpoint (tiny_model.h).
#include <boost/program_options.hpp>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "tools/make_model/tiny_model.h"
#include "tools/pagedllm/cli_options.h"
#include "tools/pagedllm/subcommands.h"

namespace pagedllm::cli {
namespace {

namespace po = boost::program_options;

model::SafetensorsDtype parse_safetensors_dtype_option(const std::string& text) {
  static const std::map<std::string, model::SafetensorsDtype> kDtypes = {{"f32", model::SafetensorsDtype::f32},
                                                                         {"f16", model::SafetensorsDtype::f16},
                                                                         {"bf16", model::SafetensorsDtype::bf16}};
  const auto it = kDtypes.find(text);
  if (it == kDtypes.end()) throw po::error("--safetensors-dtype: expected f32, f16 or bf16, got '" + text + "'");
  return it->second;
}

model::GgmlType parse_gguf_type_option(const std::string& text) {
  static const std::map<std::string, model::GgmlType> kTypes = {
      {"f32", model::GgmlType::f32},   {"f16", model::GgmlType::f16},   {"bf16", model::GgmlType::bf16},
      {"q8_0", model::GgmlType::q8_0}, {"q4_0", model::GgmlType::q4_0}, {"q4_1", model::GgmlType::q4_1},
      {"q5_0", model::GgmlType::q5_0}, {"q5_1", model::GgmlType::q5_1}};
  const auto it = kTypes.find(text);
  if (it == kTypes.end()) {
    throw po::error("--gguf-type: expected one of f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1, got '" + text + "'");
  }
  return it->second;
}

}  // namespace

int run_make_model(const std::vector<std::string>& args) {
  make_model::TinyModelSpec spec;
  std::string out;
  std::string safetensors_dtype = "f32";
  std::string gguf_type = "f32";
  po::options_description options(
      "pagedllm make-model: write a tiny Llama-family checkpoint "
      "(safetensors + config.json + tokenizer.json, and GGUF)");
  // clang-format off
  options.add_options()
      ("help,h", "show this help")
      ("out,o", po::value(&out)->required(), "output directory")
      ("seed", po::value(&spec.seed)->default_value(spec.seed), "weights seed")
      ("vocab-size", po::value(&spec.vocab_size)->default_value(spec.vocab_size), "BPE vocabulary size (special tokens included)")
      ("hidden-size", po::value(&spec.hidden_size)->default_value(spec.hidden_size), "")
      ("layers", po::value(&spec.num_layers)->default_value(spec.num_layers), "")
      ("heads", po::value(&spec.num_heads)->default_value(spec.num_heads), "query heads")
      ("kv-heads", po::value(&spec.num_kv_heads)->default_value(spec.num_kv_heads), "key/value heads")
      ("head-dim", po::value(&spec.head_dim)->default_value(spec.head_dim), "")
      ("intermediate-size", po::value(&spec.intermediate_size)->default_value(spec.intermediate_size), "MLP width")
      ("max-positions", po::value(&spec.max_position_embeddings)->default_value(spec.max_position_embeddings), "context length")
      ("rope-theta", po::value(&spec.rope_theta)->default_value(spec.rope_theta), "")
      ("tie-embeddings", po::bool_switch(&spec.tie_word_embeddings), "share the embedding with the output head")
      ("sliding-window", po::value<std::int64_t>(), "sliding-window attention over this many positions (a query included): architecture mistral in config.json, llama.attention.sliding_window in the GGUF")
      ("safetensors-dtype", po::value(&safetensors_dtype)->default_value(safetensors_dtype), "f32 | f16 | bf16")
      ("gguf-type", po::value(&gguf_type)->default_value(gguf_type), "2-D weights in the GGUF: f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1");
  // clang-format on
  po::variables_map values;
  if (!parse_options(args, options, values)) return 0;
  spec.safetensors_dtype = parse_safetensors_dtype_option(safetensors_dtype);
  spec.gguf_type = parse_gguf_type_option(gguf_type);
  if (values.count("sliding-window")) spec.sliding_window = values["sliding-window"].as<std::int64_t>();

  const make_model::TinyModelFiles files = make_model::write_tiny_model(spec, out);
  std::cout << "wrote " << files.directory << "/{config.json, model.safetensors, tokenizer.json, "
            << "tokenizer_config.json} and " << files.gguf << '\n';
  return 0;
}

}  // namespace pagedllm::cli
