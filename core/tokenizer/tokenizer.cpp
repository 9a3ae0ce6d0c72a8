#include "core/tokenizer/tokenizer.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

#include "core/model/gguf_file.h"
#include "core/model/model_errors.h"
#include "core/tokenizer/added_vocabulary.h"
#include "core/tokenizer/bpe_model.h"
#include "core/tokenizer/byte_level.h"
#include "core/tokenizer/gguf_tokenizer.h"
#include "core/tokenizer/normalizer.h"
#include "core/tokenizer/pre_tokenizer.h"
#include "core/tokenizer/tokenizer_json.h"
#include "core/tokenizer/utf8.h"

namespace pagedllm::tokenizer {
namespace {

using model::ModelFormatError;

PreTokenizer compile_pre_tokenizer(const TokenizerSpec& spec) {
  try {
    return PreTokenizer(spec.pre_tokenizer);
  } catch (const std::invalid_argument& error) {
    throw ModelFormatError(spec.source, field_subject(spec.fields, spec.fields.pre_tokenizer), error.what());
  }
}

// The first part built that normalizes (NFC contents of normalized added tokens), so the place
// to refuse NFC in a build without ICU.
AddedVocabulary compile_added_vocabulary(const TokenizerSpec& spec) {
  if (spec.nfc && !nfc_available()) {
    throw ModelFormatError(spec.source, field_subject(spec.fields, "normalizer"),
                           "NFC is not available in this build (built without ICU: install libicu-dev and rebuild)");
  }
  return AddedVocabulary(spec.added_tokens, spec.nfc);
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ModelFormatError(path, "", "cannot open the file");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw ModelFormatError(path, "", "cannot read the file");
  return std::move(text).str();
}

}  // namespace

struct Tokenizer::Impl {
  explicit Impl(TokenizerSpec spec_in)
      : spec(std::move(spec_in)),
        model(spec.model, spec.source, spec.fields),
        pre_tokenizer(compile_pre_tokenizer(spec)),
        added(compile_added_vocabulary(spec)) {
    build_token_table();
    check_special_ids();
    check_templates();
  }

  void build_token_table();
  void check_special_ids() const;
  void check_templates() const;
  void apply_templates(std::vector<TokenId>& ids) const;
  void encode_plain(std::string_view text, bool parse_special, std::vector<TokenId>& ids) const;

  TokenizerSpec spec;
  BpeModel model;
  PreTokenizer pre_tokenizer;
  AddedVocabulary added;
  std::vector<std::string> texts;  // by id: vocabulary text, or an added token's content
  std::vector<std::string> bytes;  // by id: what the ByteLevel decoder makes of the text
  std::vector<bool> special;       // by id
  std::unordered_map<std::string, TokenId> ids_by_text;
};

void Tokenizer::Impl::build_token_table() {
  const std::string& source = spec.source;
  std::size_t num_tokens = spec.model.vocab.size();
  for (const AddedTokenSpec& token : spec.added_tokens) {
    num_tokens = std::max(num_tokens, static_cast<std::size_t>(token.id) + 1);
  }
  texts.assign(spec.model.vocab.begin(), spec.model.vocab.end());
  texts.resize(num_tokens);
  special.assign(num_tokens, false);
  std::vector<bool> is_added(num_tokens, false);
  for (std::size_t i = 0; i < spec.added_tokens.size(); ++i) {
    const AddedTokenSpec& token = spec.added_tokens[i];
    const auto id = static_cast<std::size_t>(token.id);
    if (is_added[id]) {
      throw ModelFormatError(source, field_subject(spec.fields, spec.fields.added_tokens),
                             "id " + std::to_string(id) + " is added twice");
    }
    is_added[id] = true;
    texts[id] = token.content;
    special[id] = token.special;
  }
  for (std::size_t id = spec.model.vocab.size(); id < num_tokens; ++id) {
    if (!is_added[id]) {
      throw ModelFormatError(source, field_subject(spec.fields, spec.fields.added_tokens),
                             "id " + std::to_string(id) + " is neither in the vocabulary (" +
                                 std::to_string(spec.model.vocab.size()) + " tokens) nor an added token");
    }
  }
  bytes.resize(num_tokens);
  ids_by_text.reserve(num_tokens);
  for (std::size_t id = 0; id < num_tokens; ++id) {
    // HF's ByteLevel decoder: the bytes the characters stand for, or the text itself when a
    // character is outside the byte map.
    bytes[id] = from_byte_level(texts[id]).value_or(texts[id]);
    if (!is_added[id]) ids_by_text.emplace(texts[id], static_cast<TokenId>(id));
  }
  for (const AddedTokenSpec& token : spec.added_tokens) ids_by_text[token.content] = token.id;  // added first, as HF
}

void Tokenizer::Impl::check_special_ids() const {
  const auto check = [&](const std::optional<TokenId>& id, const char* name) {
    if (id && (*id < 0 || static_cast<std::size_t>(*id) >= texts.size())) {
      throw ModelFormatError(
          spec.source, field_subject(spec.fields, name),
          "id " + std::to_string(*id) + " outside the vocabulary of " + std::to_string(texts.size()));
    }
  };
  check(spec.special_ids.bos, "bos_token");
  check(spec.special_ids.eos, "eos_token");
  check(spec.special_ids.unk, "unk_token");
  check(spec.special_ids.pad, "pad_token");
}

void Tokenizer::Impl::check_templates() const {
  for (const PostProcessorStep& step : spec.post_processor) {
    const auto* templ = std::get_if<TemplateStep>(&step);
    if (templ == nullptr) continue;
    for (const TemplateSpecialToken& token : templ->special_tokens) {
      for (const TokenId id : token.ids) {
        if (id < 0 || static_cast<std::size_t>(id) >= texts.size()) {
          throw ModelFormatError(spec.source, field_subject(spec.fields, spec.fields.post_processor),
                                 "special token '" + token.key + "' has id " + std::to_string(id) +
                                     ", outside the vocabulary of " + std::to_string(texts.size()));
        }
      }
    }
    for (const TemplateItem& item : templ->single) {
      const bool known =
          item.is_sequence || std::any_of(templ->special_tokens.begin(), templ->special_tokens.end(),
                                          [&](const TemplateSpecialToken& t) { return t.key == item.id; });
      if (!known) {
        throw ModelFormatError(spec.source, field_subject(spec.fields, spec.fields.post_processor),
                               "the template names '" + item.id + "', which has no special_tokens entry");
      }
    }
  }
}

void Tokenizer::Impl::apply_templates(std::vector<TokenId>& ids) const {
  for (const PostProcessorStep& step : spec.post_processor) {
    const auto* templ = std::get_if<TemplateStep>(&step);
    if (templ == nullptr) continue;  // the ByteLevel processor changes offsets only
    std::vector<TokenId> out;
    out.reserve(ids.size() + templ->single.size());
    for (const TemplateItem& item : templ->single) {
      if (item.is_sequence) {
        if (item.id == "A") out.insert(out.end(), ids.begin(), ids.end());
        continue;
      }
      for (const TemplateSpecialToken& token : templ->special_tokens) {
        if (token.key == item.id) out.insert(out.end(), token.ids.begin(), token.ids.end());
      }
    }
    ids.swap(out);
  }
}

// Text between raw-matched added tokens: normalize, match the normalized added tokens,
// pre-tokenize and encode the rest.
void Tokenizer::Impl::encode_plain(std::string_view text, bool parse_special, std::vector<TokenId>& ids) const {
  std::string normalized_text;
  if (spec.nfc) {
    to_nfc(text, normalized_text);
    text = normalized_text;
  }
  std::vector<TextSegment> segments;
  if (added.empty(AddedVocabulary::Pass::normalized)) {
    segments.push_back({text, -1});
  } else {
    added.split(text, AddedVocabulary::Pass::normalized, parse_special, segments);
  }
  PieceBuffers pieces;
  BpeScratch scratch;
  for (const TextSegment& segment : segments) {
    if (segment.id >= 0) {
      ids.push_back(segment.id);
      continue;
    }
    pieces.clear();
    pre_tokenizer.split(segment.text, pieces);
    for (const std::string_view word : pieces.pieces) model.encode_word(word, ids, scratch);
  }
}

Tokenizer::Tokenizer(TokenizerSpec spec) : impl_(std::make_shared<const Impl>(std::move(spec))) {}

Tokenizer Tokenizer::from_tokenizer_json_text(std::string_view text, const std::string& source) {
  return Tokenizer(read_tokenizer_json(text, source));
}

Tokenizer Tokenizer::from_tokenizer_json(const std::string& path) {
  namespace fs = std::filesystem;
  const fs::path file = fs::is_directory(path) ? fs::path(path) / "tokenizer.json" : fs::path(path);
  TokenizerSpec spec = read_tokenizer_json(read_file(file.string()), file.string());
  const fs::path config = file.parent_path() / "tokenizer_config.json";
  if (fs::is_regular_file(config)) read_tokenizer_config(read_file(config.string()), config.string(), spec);
  return Tokenizer(std::move(spec));
}

Tokenizer Tokenizer::from_gguf(const model::GgufFile& gguf) { return Tokenizer(read_gguf_tokenizer(gguf)); }

Tokenizer Tokenizer::from_path(const std::string& path) {
  namespace fs = std::filesystem;
  if (!fs::is_directory(path) && fs::path(path).extension() == ".gguf") return from_gguf(model::GgufFile(path));
  return from_tokenizer_json(path);
}

std::vector<TokenId> Tokenizer::encode(std::string_view text, const EncodeOptions& options) const {
  const Impl& impl = *impl_;
  std::string repaired;
  if (!is_valid_utf8(text)) {
    repaired = utf8_lossy(text);
    text = repaired;
  }
  std::vector<TokenId> ids;
  ids.reserve(text.size() / 3 + 4);
  if (impl.added.empty(AddedVocabulary::Pass::raw)) {
    impl.encode_plain(text, options.parse_special, ids);
  } else {
    std::vector<TextSegment> segments;
    impl.added.split(text, AddedVocabulary::Pass::raw, options.parse_special, segments);
    for (const TextSegment& segment : segments) {
      if (segment.id >= 0) {
        ids.push_back(segment.id);
      } else {
        impl.encode_plain(segment.text, options.parse_special, ids);
      }
    }
  }
  if (options.add_special_tokens) impl.apply_templates(ids);
  return ids;
}

std::string Tokenizer::decode(std::span<const TokenId> ids, const DecodeOptions& options) const {
  std::string bytes;
  for (const TokenId id : ids) {
    if (options.skip_special_tokens && is_special(id)) continue;
    bytes.append(token_bytes(id));
  }
  return utf8_lossy(bytes);
}

std::string_view Tokenizer::token_bytes(TokenId id) const {
  if (id < 0 || id >= num_tokens()) {
    throw std::out_of_range("token id " + std::to_string(id) + " outside the vocabulary of " +
                            std::to_string(num_tokens()));
  }
  return impl_->bytes[static_cast<std::size_t>(id)];
}

const std::string& Tokenizer::token_text(TokenId id) const {
  if (id < 0 || id >= num_tokens()) {
    throw std::out_of_range("token id " + std::to_string(id) + " outside the vocabulary of " +
                            std::to_string(num_tokens()));
  }
  return impl_->texts[static_cast<std::size_t>(id)];
}

std::optional<TokenId> Tokenizer::token_to_id(std::string_view token_text) const {
  const auto it = impl_->ids_by_text.find(std::string(token_text));
  if (it == impl_->ids_by_text.end()) return std::nullopt;
  return it->second;
}

bool Tokenizer::is_special(TokenId id) const {
  if (id < 0 || id >= num_tokens()) {
    throw std::out_of_range("token id " + std::to_string(id) + " outside the vocabulary of " +
                            std::to_string(num_tokens()));
  }
  return impl_->special[static_cast<std::size_t>(id)];
}

std::int32_t Tokenizer::num_tokens() const noexcept { return static_cast<std::int32_t>(impl_->texts.size()); }

const SpecialTokenIds& Tokenizer::special_ids() const noexcept { return impl_->spec.special_ids; }

const TokenizerSpec& Tokenizer::spec() const noexcept { return impl_->spec; }

nlohmann::json Tokenizer::to_tokenizer_json() const { return write_tokenizer_json(impl_->spec); }

TokenId first_ordinary_token(const Tokenizer& tokenizer) {
  TokenId token = 0;
  while (token < tokenizer.num_tokens() && tokenizer.is_special(token)) ++token;
  return token;
}

}  // namespace pagedllm::tokenizer
