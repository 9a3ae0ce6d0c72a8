// HF tokenizer.json <-> TokenizerSpec.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "core/tokenizer/tokenizer_spec.h"

namespace pagedllm::tokenizer {

// Parses a tokenizer.json document. Throws model::ModelFormatError naming `source` and the
// field at fault (bad JSON, a missing field, an unsupported component: "pre_tokenizer.
// pretokenizers[1].type: unsupported 'Metaspace'"). Truncation and padding are ignored.
TokenizerSpec read_tokenizer_json(std::string_view text, const std::string& source);

// Takes bos_token / eos_token / pad_token / unk_token (a string or {"content": ...}) from a
// tokenizer_config.json into spec.special_ids. A BOS or EOS that is not in the vocabulary is an
// error; such a PAD or UNK is ignored.
void read_tokenizer_config(std::string_view text, const std::string& source, TokenizerSpec& spec);

// The spec as a tokenizer.json document HF `tokenizers` loads.
nlohmann::json write_tokenizer_json(const TokenizerSpec& spec);

}  // namespace pagedllm::tokenizer
