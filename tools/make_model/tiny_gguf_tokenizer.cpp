#include "tools/make_model/tiny_gguf_tokenizer.h"

#include <stdexcept>
#include <variant>

namespace pagedllm::make_model {
namespace {

// llama.cpp's token types (llama_token_type).
constexpr std::int32_t kTokenNormal = 1;
constexpr std::int32_t kTokenControl = 3;
constexpr std::int32_t kTokenUserDefined = 4;

// GGUF names pre-tokenizers by the model family they come from; the two byte-level ones the
// trainer can produce are GPT-2's (ByteLevel with its regex) and SmolLM2's (digits split first).
std::string gguf_pre_tokenizer_name(const tokenizer::TokenizerSpec& spec) {
  const auto& steps = spec.pre_tokenizer;
  const auto* byte_level = steps.empty() ? nullptr : std::get_if<tokenizer::ByteLevelStep>(&steps.back());
  if (byte_level != nullptr && byte_level->use_regex && !byte_level->add_prefix_space) {
    if (steps.size() == 1) return "gpt2";
    const auto* digits = std::get_if<tokenizer::DigitsStep>(&steps.front());
    if (steps.size() == 2 && digits != nullptr && digits->individual_digits) return "smollm";
  }
  throw std::invalid_argument("make-model: this pre-tokenizer has no GGUF name");
}

}  // namespace

void add_gguf_tokenizer(model::GgufWriter& gguf, const tokenizer::TokenizerSpec& spec,
                        const model::ModelConfig& config) {
  std::vector<std::int32_t> types(spec.model.vocab.size(), kTokenNormal);
  std::vector<std::string> tokens = spec.model.vocab;
  for (const tokenizer::AddedTokenSpec& added : spec.added_tokens) {
    const auto id = static_cast<std::size_t>(added.id);
    if (id >= tokens.size()) {
      tokens.resize(id + 1);
      types.resize(id + 1, kTokenNormal);
    }
    tokens[id] = added.content;
    types[id] = added.special ? kTokenControl : kTokenUserDefined;
  }
  std::vector<std::string> merges;
  merges.reserve(spec.model.merges.size());
  for (const auto& [left, right] : spec.model.merges) merges.push_back(left + " " + right);

  gguf.add_string("tokenizer.ggml.model", "gpt2");
  gguf.add_string("tokenizer.ggml.pre", gguf_pre_tokenizer_name(spec));
  gguf.add_string_array("tokenizer.ggml.tokens", tokens);
  gguf.add_i32_array("tokenizer.ggml.token_type", types);
  gguf.add_string_array("tokenizer.ggml.merges", merges);
  if (config.bos_token_id)
    gguf.add_u32("tokenizer.ggml.bos_token_id", static_cast<std::uint32_t>(*config.bos_token_id));
  if (!config.eos_token_ids.empty()) {
    gguf.add_u32("tokenizer.ggml.eos_token_id", static_cast<std::uint32_t>(config.eos_token_ids.front()));
  }
  if (spec.special_ids.unk)
    gguf.add_u32("tokenizer.ggml.unknown_token_id", static_cast<std::uint32_t>(*spec.special_ids.unk));
  gguf.add_bool("tokenizer.ggml.add_bos_token", false);
  gguf.add_bool("tokenizer.ggml.add_space_prefix", false);
}

}  // namespace pagedllm::make_model
