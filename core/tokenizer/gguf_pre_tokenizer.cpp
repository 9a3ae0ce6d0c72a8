#include "core/tokenizer/gguf_pre_tokenizer.h"

#include <array>

#include "core/tokenizer/pre_tokenizer.h"

namespace pagedllm::tokenizer {
namespace {

enum class Family { default_bpe, gpt2, llama3, smollm, qwen2 };

struct Name {
  std::string_view name;
  Family family;
};

constexpr std::array kNames{
    Name{"default", Family::default_bpe},    Name{"gpt2", Family::gpt2},        Name{"gpt-2", Family::gpt2},
    Name{"llama3", Family::llama3},          Name{"llama-v3", Family::llama3},  Name{"llama-bpe", Family::llama3},
    Name{"smollm", Family::smollm},          Name{"starcoder", Family::smollm}, Name{"qwen2", Family::qwen2},
    Name{"deepseek-r1-qwen", Family::qwen2},
};

SplitStep isolate(std::string_view pattern) {
  return SplitStep{std::string(pattern), true, SplitBehavior::isolated, false};
}

// A split pattern, then the byte-level mapping without its own pattern (the Llama 3 layout).
GgufPreTokenizer pattern_then_bytes(std::string_view pattern) {
  return {{isolate(pattern), ByteLevelStep{false, true, false}}, false, false};
}

}  // namespace

std::optional<GgufPreTokenizer> gguf_pre_tokenizer(std::string_view name) {
  for (const Name& entry : kNames) {
    if (entry.name != name) continue;
    switch (entry.family) {
      case Family::default_bpe:
        // llama.cpp's fallback: four patterns applied in turn, each isolating its matches.
        return GgufPreTokenizer{{isolate(R"([\p{P}\$\+<=>\^~\|]+)"), isolate(kGpt2Pattern), isolate(R"(\p{N}+)"),
                                 isolate("[0-9][0-9][0-9]"), ByteLevelStep{false, true, false}},
                                false,
                                false};
      case Family::gpt2:
        return GgufPreTokenizer{{ByteLevelStep{false, true, true}}, false, false};
      case Family::llama3: {
        GgufPreTokenizer pre = pattern_then_bytes(kLlama3Pattern);
        pre.ignore_merges = true;
        pre.add_bos = true;
        return pre;
      }
      case Family::smollm:
        // SmolLM2's tokenizer.json: Sequence[Digits(individual_digits), ByteLevel(use_regex)].
        return GgufPreTokenizer{{DigitsStep{true}, ByteLevelStep{false, true, true}}, false, false};
      case Family::qwen2:
        // Qwen2's tokenizer.json also normalizes with NFC; llama.cpp does not, nor does this.
        return pattern_then_bytes(kQwen2Pattern);
    }
  }
  return std::nullopt;
}

std::string known_gguf_pre_tokenizers() {
  std::string names;
  for (const Name& entry : kNames) {
    if (!names.empty()) names += ", ";
    names += entry.name;
  }
  return names;
}

}  // namespace pagedllm::tokenizer
