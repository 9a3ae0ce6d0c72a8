// Byte-level BPE tokenizer (GPT-2, Llama 3, SmolLM2, Qwen2 families), compatible with HF
// `tokenizers`: the same ids for the same text, the same text for the same ids.
//
// encode: invalid UTF-8 in the input becomes U+FFFD first; added tokens are split off the raw
// text; the rest is normalized (none or NFC), pre-tokenized and BPE-encoded word by word; the
// post-processor then adds BOS / EOS as configured. decode: each token's bytes (byte-level
// characters mapped back; a token with a character outside the map as its own UTF-8), joined and
// decoded lossily (each invalid subsequence becomes U+FFFD), as HF's ByteLevel decoder does.
//
// A Tokenizer is immutable once built: encode and decode may run on many threads at once.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/common/types.h"
#include "core/tokenizer/tokenizer_spec.h"

namespace pagedllm::model {
class GgufFile;
}

namespace pagedllm::tokenizer {

struct EncodeOptions {
  bool add_special_tokens = true;  // apply the post-processor (BOS / EOS), as HF's option of that name
  bool parse_special = true;       // match special added tokens in the text; false: encode their text
                                   // like any other (HF encode_special_tokens, llama.cpp parse_special)
};

struct DecodeOptions {
  bool skip_special_tokens = false;
};

class Tokenizer {
 public:
  // Compiles a spec; throws model::ModelFormatError naming spec.source and the field at fault.
  explicit Tokenizer(TokenizerSpec spec);

  // A HF tokenizer.json (`path` is the file, or a directory holding tokenizer.json). BOS / EOS /
  // PAD ids come from a tokenizer_config.json beside it when there is one, BOS also from the
  // post-processor template, UNK from the model.
  static Tokenizer from_tokenizer_json(const std::string& path);
  // The same from JSON text; `source` names it in errors.
  static Tokenizer from_tokenizer_json_text(std::string_view text, const std::string& source);
  // The vocabulary of a GGUF file (tokenizer.ggml.model must be "gpt2").
  static Tokenizer from_gguf(const model::GgufFile& gguf);
  // By path: a .gguf file, a tokenizer.json, or a directory holding tokenizer.json.
  static Tokenizer from_path(const std::string& path);

  std::vector<TokenId> encode(std::string_view text, const EncodeOptions& options = {}) const;
  std::string decode(std::span<const TokenId> ids, const DecodeOptions& options = {}) const;

  // The bytes token `id` decodes to (possibly part of a UTF-8 sequence). Throws
  // std::out_of_range for an id outside [0, num_tokens()).
  std::string_view token_bytes(TokenId id) const;
  // The token's text as stored in the vocabulary ("Ġthe"; added tokens as their content).
  const std::string& token_text(TokenId id) const;
  std::optional<TokenId> token_to_id(std::string_view token_text) const;
  bool is_special(TokenId id) const;

  std::int32_t num_tokens() const noexcept;
  const SpecialTokenIds& special_ids() const noexcept;
  const TokenizerSpec& spec() const noexcept;

  // The tokenizer as a HF tokenizer.json document.
  nlohmann::json to_tokenizer_json() const;

 private:
  struct Impl;
  std::shared_ptr<const Impl> impl_;
};

// The lowest id that is not a special token: where synthetic prompt tokens start, so that a
// made-up prompt never holds a BOS, EOS or chat marker. num_tokens() when every token is special.
TokenId first_ordinary_token(const Tokenizer& tokenizer);

}  // namespace pagedllm::tokenizer
