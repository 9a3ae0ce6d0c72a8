#include "tests/tokenizer/tiny_tokenizers.h"

#include <algorithm>

#include "core/tokenizer/byte_level.h"
#include "core/tokenizer/pre_tokenizer.h"

namespace pagedllm::tokenizer::testing {

TokenizerSpec byte_level_spec(const Merges& merges, const std::vector<std::string>& extra, const std::string& drop,
                              std::vector<PreTokenizerStep> pre_tokenizer) {
  TokenizerSpec spec;
  spec.source = "tiny.json";
  spec.pre_tokenizer = std::move(pre_tokenizer);
  auto& vocab = spec.model.vocab;
  for (unsigned byte = 0; byte < 256; ++byte) {
    if (drop.find(static_cast<char>(byte)) != std::string::npos) continue;
    vocab.push_back(to_byte_level(std::string(1, static_cast<char>(byte))));
  }
  for (const auto& [left, right] : merges) {
    if (std::find(vocab.begin(), vocab.end(), left + right) == vocab.end()) vocab.push_back(left + right);
  }
  vocab.insert(vocab.end(), extra.begin(), extra.end());
  spec.model.merges = merges;
  return spec;
}

std::vector<std::string> pre_tokenize(const std::vector<PreTokenizerStep>& steps, const std::string& text) {
  const PreTokenizer pre(steps);
  PieceBuffers buffers;
  pre.split(text, buffers);
  return {buffers.pieces.begin(), buffers.pieces.end()};
}

}  // namespace pagedllm::tokenizer::testing
