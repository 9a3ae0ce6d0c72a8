// What a byte-level BPE tokenizer is made of, as plain data: the parts of a HF tokenizer.json
// that pagedllm supports. Loaders (tokenizer.json, GGUF) and the BPE trainer produce a
// TokenizerSpec; Tokenizer compiles it and writes it back out as tokenizer.json.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "core/common/types.h"

namespace pagedllm::tokenizer {

// HF SplitDelimiterBehavior: what becomes of a pattern match when a piece is split.
enum class SplitBehavior { removed, isolated, merged_with_previous, merged_with_next, contiguous };

struct SplitStep {
  std::string pattern;
  bool is_regex = true;  // false: `pattern` is a literal string
  SplitBehavior behavior = SplitBehavior::isolated;
  bool invert = false;  // the matches are the pieces and the rest are the delimiters
};

struct ByteLevelStep {
  bool add_prefix_space = false;  // prepend ' ' to each piece that does not start with one
  bool trim_offsets = true;       // offsets only; kept for the written tokenizer.json
  bool use_regex = true;          // split with the GPT-2 pattern first
};

struct DigitsStep {
  bool individual_digits = false;  // true: every digit alone; false: runs of digits
};

// One step of the pre-tokenizer; a HF Sequence is the list of its steps (nested ones flattened).
using PreTokenizerStep = std::variant<SplitStep, ByteLevelStep, DigitsStep>;

struct BpeSpec {
  std::vector<std::string> vocab;                           // by id, from 0: tokens in byte-level form ("Ġthe")
  std::vector<std::pair<std::string, std::string>> merges;  // in rank order
  std::optional<std::string> unk_token;                     // replaces bytes with no token (else they are dropped)
  bool fuse_unk = false;
  bool ignore_merges = false;  // a word that is itself a token is taken whole (Llama 3)
};

// HF AddedToken: matched in the raw text before pre-tokenization.
struct AddedTokenSpec {
  TokenId id = 0;
  std::string content;
  bool special = false;      // skipped by decode(skip_special_tokens); not matched when
                             // special tokens are not parsed
  bool single_word = false;  // only where no word character touches it
  bool lstrip = false;       // takes the whitespace before it
  bool rstrip = false;       // takes the whitespace after it
  bool normalized = false;   // matched in the normalized text rather than the raw text
};

// HF TemplateProcessing.
struct TemplateItem {
  bool is_sequence = false;  // true: $A / $B; false: a special token
  std::string id;            // "A" / "B", or the key of a special token
  int type_id = 0;
};

struct TemplateSpecialToken {
  std::string key;
  std::vector<TokenId> ids;
  std::vector<std::string> tokens;
};

struct TemplateStep {
  std::vector<TemplateItem> single;
  std::vector<TemplateItem> pair;
  std::vector<TemplateSpecialToken> special_tokens;
};

// HF ByteLevel post-processor: changes offsets only.
struct ByteLevelProcessorStep {
  bool add_prefix_space = true;
  bool trim_offsets = true;
  bool use_regex = true;
};

using PostProcessorStep = std::variant<TemplateStep, ByteLevelProcessorStep>;

struct SpecialTokenIds {
  std::optional<TokenId> bos;
  std::optional<TokenId> eos;
  std::optional<TokenId> unk;
  std::optional<TokenId> pad;
};

// Where the parts came from, for error messages: "field 'model.merges'" in a tokenizer.json,
// "key 'tokenizer.ggml.merges'" in a GGUF file.
struct SpecFieldNames {
  std::string kind = "field";
  std::string vocab = "model.vocab";
  std::string merges = "model.merges";
  std::string added_tokens = "added_tokens";
  std::string pre_tokenizer = "pre_tokenizer";
  std::string post_processor = "post_processor";
};

// The subject of a ModelFormatError about `name` ("field 'model.merges[3]'").
inline std::string field_subject(const SpecFieldNames& fields, const std::string& name) {
  return fields.kind + " '" + name + "'";
}

struct TokenizerSpec {
  std::string source;  // the file it came from (every error names it)
  SpecFieldNames fields;
  bool nfc = false;                             // the normalizer: none, or Unicode NFC
  std::vector<PreTokenizerStep> pre_tokenizer;  // must hold exactly one ByteLevel step
  BpeSpec model;
  std::vector<AddedTokenSpec> added_tokens;
  std::vector<PostProcessorStep> post_processor;  // applied in order; empty: none
  SpecialTokenIds special_ids;
};

}  // namespace pagedllm::tokenizer
