#include "core/tokenizer/gguf_tokenizer.h"

#include "core/model/model_errors.h"
#include "core/tokenizer/gguf_pre_tokenizer.h"

namespace pagedllm::tokenizer {
namespace {

using model::ModelFormatError;

std::string key_subject(const std::string& key) { return "key '" + key + "'"; }

constexpr const char* kModelKey = "tokenizer.ggml.model";
constexpr const char* kPreKey = "tokenizer.ggml.pre";
constexpr const char* kTokensKey = "tokenizer.ggml.tokens";
constexpr const char* kMergesKey = "tokenizer.ggml.merges";
constexpr const char* kTokenTypeKey = "tokenizer.ggml.token_type";

std::optional<TokenId> read_token_id(const model::GgufFile& gguf, const std::string& key, std::size_t num_tokens) {
  const auto value = gguf.find_u64(key);
  if (!value) return std::nullopt;
  if (*value >= num_tokens) {
    throw ModelFormatError(gguf.path(), key_subject(key),
                           "id " + std::to_string(*value) + " outside the vocabulary of " + std::to_string(num_tokens));
  }
  return static_cast<TokenId>(*value);
}

// BOS / EOS around $A (and around $B, type 1, for pairs), as HF's Llama 3 template does.
TemplateStep bos_eos_template(const TokenizerSpec& spec, bool add_bos, bool add_eos) {
  TemplateStep step;
  const auto add_special = [&](TokenId id, std::vector<TemplateItem>& items, int type_id) {
    const std::string& content = spec.model.vocab[static_cast<std::size_t>(id)];
    items.push_back({false, content, type_id});
    for (const TemplateSpecialToken& token : step.special_tokens) {
      if (token.key == content) return;
    }
    step.special_tokens.push_back({content, {id}, {content}});
  };
  for (int part = 0; part < 2; ++part) {
    if (add_bos) add_special(*spec.special_ids.bos, step.pair, part);
    step.pair.push_back({true, part == 0 ? "A" : "B", part});
    if (add_eos) add_special(*spec.special_ids.eos, step.pair, part);
  }
  if (add_bos) add_special(*spec.special_ids.bos, step.single, 0);
  step.single.push_back({true, "A", 0});
  if (add_eos) add_special(*spec.special_ids.eos, step.single, 0);
  return step;
}

}  // namespace

TokenizerSpec read_gguf_tokenizer(const model::GgufFile& gguf) {
  const std::string& path = gguf.path();
  const std::string model_name = gguf.get_string(kModelKey);
  if (model_name != "gpt2") {
    throw ModelFormatError(path, key_subject(kModelKey),
                           "unsupported '" + model_name + "' (pagedllm reads byte-level BPE vocabularies: 'gpt2')");
  }
  // llama.cpp falls back to "default" when the key is absent (older conversions).
  const std::string pre_name = gguf.find_string(kPreKey).value_or("default");
  auto pre = gguf_pre_tokenizer(pre_name);
  if (!pre) {
    throw ModelFormatError(path, key_subject(kPreKey),
                           "unknown pre-tokenizer '" + pre_name + "' (known: " + known_gguf_pre_tokenizers() + ")");
  }

  TokenizerSpec spec;
  spec.source = path;
  spec.fields = {"key", kTokensKey, kMergesKey, kTokenTypeKey, kPreKey, "tokenizer.ggml.add_bos_token"};
  spec.pre_tokenizer = std::move(pre->steps);
  spec.model.ignore_merges = pre->ignore_merges;
  spec.model.vocab = gguf.get_string_array(kTokensKey);
  std::vector<std::string>& vocab = spec.model.vocab;
  for (std::size_t id = 0; id < vocab.size(); ++id) {
    if (vocab[id].empty()) vocab[id] = "[EMPTY_" + std::to_string(id) + "]";  // as llama.cpp names them
  }

  const std::vector<std::string> merges = gguf.get_string_array(kMergesKey);
  spec.model.merges.reserve(merges.size());
  for (std::size_t i = 0; i < merges.size(); ++i) {
    const std::string& line = merges[i];
    const std::size_t space = line.find(' ');
    if (space == std::string::npos || line.find(' ', space + 1) != std::string::npos) {
      throw ModelFormatError(path, key_subject(std::string(kMergesKey) + "[" + std::to_string(i) + "]"),
                             "expected two tokens separated by one space, found '" + line + "'");
    }
    spec.model.merges.emplace_back(line.substr(0, space), line.substr(space + 1));
  }

  if (gguf.find(kTokenTypeKey) != nullptr) {
    const std::vector<std::int64_t> types = gguf.get_int_array(kTokenTypeKey);
    if (types.size() != vocab.size()) {
      throw ModelFormatError(path, key_subject(kTokenTypeKey),
                             std::to_string(types.size()) + " types for " + std::to_string(vocab.size()) + " tokens");
    }
    for (std::size_t id = 0; id < types.size(); ++id) {
      const auto type = static_cast<GgufTokenType>(types[id]);
      if (type != GgufTokenType::control && type != GgufTokenType::unknown && type != GgufTokenType::user_defined) {
        continue;
      }
      AddedTokenSpec token;
      token.id = static_cast<TokenId>(id);
      token.content = vocab[id];
      token.special = type != GgufTokenType::user_defined;
      spec.added_tokens.push_back(std::move(token));
    }
  }

  spec.special_ids.bos = read_token_id(gguf, "tokenizer.ggml.bos_token_id", vocab.size());
  spec.special_ids.eos = read_token_id(gguf, "tokenizer.ggml.eos_token_id", vocab.size());
  spec.special_ids.unk = read_token_id(gguf, "tokenizer.ggml.unknown_token_id", vocab.size());
  spec.special_ids.pad = read_token_id(gguf, "tokenizer.ggml.padding_token_id", vocab.size());

  const bool add_bos = gguf.find_bool("tokenizer.ggml.add_bos_token").value_or(pre->add_bos);
  const bool add_eos = gguf.find_bool("tokenizer.ggml.add_eos_token").value_or(false);
  if (add_bos && !spec.special_ids.bos) {
    throw ModelFormatError(path, key_subject("tokenizer.ggml.add_bos_token"),
                           "BOS is to be added but tokenizer.ggml.bos_token_id is missing");
  }
  if (add_eos && !spec.special_ids.eos) {
    throw ModelFormatError(path, key_subject("tokenizer.ggml.add_eos_token"),
                           "EOS is to be added but tokenizer.ggml.eos_token_id is missing");
  }
  if (add_bos || add_eos) spec.post_processor.push_back(bos_eos_template(spec, add_bos, add_eos));
  return spec;
}

}  // namespace pagedllm::tokenizer
