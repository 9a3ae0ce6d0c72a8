// `pagedllm inspect MODEL`: what a model file holds (config, tensors, tokenizer, chat format),
// and with --load, that every weight loads and matches the config.
#include <boost/program_options.hpp>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/chat/chat_template_loader.h"
#include "core/model/ggml_type.h"
#include "core/model/gguf_file.h"
#include "core/model/model_config.h"
#include "core/model/model_source.h"
#include "core/model/model_weights.h"
#include "core/model/safetensors_checkpoint.h"
#include "core/tokenizer/tokenizer.h"
#include "tools/pagedllm/cli_options.h"
#include "tools/pagedllm/default_model.h"
#include "tools/pagedllm/subcommands.h"

namespace pagedllm::cli {
namespace {

namespace po = boost::program_options;

void print_config(const model::ModelConfig& config) {
  std::printf("architecture        %s\n", config.architecture.c_str());
  std::printf("layers              %lld\n", static_cast<long long>(config.num_layers));
  std::printf("hidden / mlp        %lld / %lld\n", static_cast<long long>(config.hidden_size),
              static_cast<long long>(config.intermediate_size));
  std::printf("heads / kv heads    %lld / %lld (head dim %lld)\n", static_cast<long long>(config.num_heads),
              static_cast<long long>(config.num_kv_heads), static_cast<long long>(config.head_dim));
  std::printf("vocabulary          %lld\n", static_cast<long long>(config.vocab_size));
  std::printf("context             %lld\n", static_cast<long long>(config.max_position_embeddings));
  std::printf("rope theta          %g%s\n", config.rope_theta,
              config.rope_scaling.kind == model::RopeScaling::Kind::llama3   ? " (llama3 scaling)"
              : config.rope_scaling.kind == model::RopeScaling::Kind::linear ? " (linear scaling)"
                                                                             : "");
  std::printf("rms norm eps        %g\n", config.rms_norm_eps);
  std::printf("tied embeddings     %s\n", config.tie_word_embeddings ? "yes" : "no");
}

void print_gguf_tensors(const model::GgufFile& file) {
  for (const model::GgufTensorInfo& tensor : file.tensors()) {
    std::string dims;
    for (std::uint64_t dim : tensor.dims) dims += (dims.empty() ? "" : " x ") + std::to_string(dim);
    const auto traits = model::ggml_type_traits(static_cast<std::uint32_t>(tensor.type));
    std::printf("  %-40s %-6.*s [%s]\n", tensor.name.c_str(), static_cast<int>(traits->name.size()),
                traits->name.data(), dims.c_str());
  }
}

void print_safetensors_tensors(const model::SafetensorsCheckpoint& checkpoint) {
  for (const std::string& name : checkpoint.tensor_names()) {
    const model::SafetensorsTensorInfo& tensor = checkpoint.tensor(name);
    std::string dims;
    for (std::uint64_t dim : tensor.shape) dims += (dims.empty() ? "" : " x ") + std::to_string(dim);
    const std::string_view dtype = model::to_string(tensor.dtype);
    std::printf("  %-48s %-5.*s [%s]\n", name.c_str(), static_cast<int>(dtype.size()), dtype.data(), dims.c_str());
  }
}

}  // namespace

int run_inspect(const std::vector<std::string>& args) {
  std::string model_argument;
  bool list_tensors = false;
  bool load = false;
  po::options_description options("pagedllm inspect MODEL: config, tensors, tokenizer and chat format");
  // clang-format off
  options.add_options()
      ("help,h", "show this help")
      ("model", po::value(&model_argument)->required(), "a .gguf file, a Hugging Face model directory, a fetched model's name, or 'tiny' (the embedded test model)")
      ("tensors", po::bool_switch(&list_tensors), "list every tensor")
      ("load", po::bool_switch(&load), "load every weight as the CPU engine computes from it (stored types, read in place) and check its type and shape against the config; say what it takes in memory");
  // clang-format on
  po::positional_options_description positional;
  positional.add("model", 1);
  po::variables_map values;
  if (!parse_options(args, options, values, &positional)) return 0;

  const model::ModelSource source = model::resolve_model_source(resolve_model_argument(model_argument));
  std::unique_ptr<model::GgufFile> gguf;
  std::unique_ptr<model::SafetensorsCheckpoint> checkpoint;
  model::ModelConfig config;
  if (source.format == model::ModelFormat::gguf) {
    gguf = std::make_unique<model::GgufFile>(source.path);
    config = model::read_gguf_config(*gguf);
    std::printf("%s: GGUF v%u, %zu tensors\n", source.path.c_str(), gguf->version(), gguf->tensors().size());
  } else {
    config = model::read_hf_config(source.file("config.json"));
    checkpoint = std::make_unique<model::SafetensorsCheckpoint>(source.path);
    std::printf("%s: Hugging Face directory, %zu tensors in %zu safetensors file(s)\n", source.path.c_str(),
                checkpoint->num_tensors(), checkpoint->num_shards());
  }
  print_config(config);

  const tokenizer::Tokenizer tokenizer =
      gguf ? tokenizer::Tokenizer::from_gguf(*gguf) : tokenizer::Tokenizer::from_path(source.path);
  const auto& special = tokenizer.special_ids();
  std::printf("tokenizer           byte-level BPE, %d tokens, %zu merges, bos %s, eos %s\n", tokenizer.num_tokens(),
              tokenizer.spec().model.merges.size(), special.bos ? tokenizer.token_text(*special.bos).c_str() : "none",
              special.eos ? tokenizer.token_text(*special.eos).c_str() : "none");
  const chat::ChatTemplate chat_template =
      gguf ? chat::load_chat_template(*gguf) : chat::load_chat_template(source.path);
  std::printf("chat template       %s\n", chat_template.description().c_str());

  if (list_tensors) {
    std::printf("tensors:\n");
    if (gguf)
      print_gguf_tensors(*gguf);
    else
      print_safetensors_tensors(*checkpoint);
  }
  if (load) {
    const auto start = std::chrono::steady_clock::now();
    const model::ModelWeights weights = gguf ? model::load_weights(*gguf, config, {model::WeightDType::stored})
                                             : model::load_weights(*checkpoint, config, {model::WeightDType::stored});
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("loaded              %llu parameters in %.2f s (%zu tensors ignored); %s\n",
                static_cast<unsigned long long>(weights.num_parameters()), seconds, weights.ignored_tensors.size(),
                model::describe_weight_memory(weights.memory()).c_str());
  }
  return 0;
}

}  // namespace pagedllm::cli
