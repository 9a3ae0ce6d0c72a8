#include <algorithm>
#include <stdexcept>

#include "core/common/json_value.h"
#include "core/model/model_errors.h"
#include "core/tokenizer/regex.h"
#include "core/tokenizer/tokenizer_json.h"

namespace pagedllm::tokenizer {
namespace {

[[noreturn]] void unsupported(const JsonValue& type, const std::string& name) {
  type.fail("unsupported '" + name + "'");
}

nlohmann::json parse_document(std::string_view text, const std::string& source) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& error) {
    throw model::ModelFormatError(source, "", std::string("not valid JSON: ") + error.what());
  }
}

std::vector<AddedTokenSpec> read_added_tokens(const JsonValue& root) {
  std::vector<AddedTokenSpec> tokens;
  const auto list = root.find("added_tokens");
  if (!list) return tokens;
  for (std::size_t i = 0; i < list->size(); ++i) {
    const JsonValue entry = list->at(i);
    AddedTokenSpec token;
    const JsonValue id = entry.at("id");
    const std::int64_t value = id.integer();
    if (value < 0 || value > INT32_MAX) id.fail("id " + std::to_string(value) + " out of range");
    token.id = static_cast<TokenId>(value);
    token.content = entry.at("content").string();
    token.special = entry.flag("special", false);
    token.single_word = entry.flag("single_word", false);
    token.lstrip = entry.flag("lstrip", false);
    token.rstrip = entry.flag("rstrip", false);
    token.normalized = entry.flag("normalized", !token.special);  // HF's default
    tokens.push_back(std::move(token));
  }
  return tokens;
}

// Only NFC (alone or in Sequences) is supported.
void read_normalizer(const JsonValue& normalizer, bool& nfc) {
  normalizer.expect_object();
  const JsonValue type = normalizer.at("type");
  const std::string name = type.string();
  if (name == "NFC") {
    nfc = true;
  } else if (name == "Sequence") {
    const JsonValue list = normalizer.at("normalizers");
    for (std::size_t i = 0; i < list.size(); ++i) read_normalizer(list.at(i), nfc);
  } else {
    unsupported(type, name);
  }
}

SplitBehavior read_behavior(const JsonValue& field) {
  const std::string name = field.string();
  if (name == "Isolated") return SplitBehavior::isolated;
  if (name == "Removed") return SplitBehavior::removed;
  if (name == "MergedWithPrevious") return SplitBehavior::merged_with_previous;
  if (name == "MergedWithNext") return SplitBehavior::merged_with_next;
  if (name == "Contiguous") return SplitBehavior::contiguous;
  unsupported(field, name);
}

void check_pattern(const JsonValue& field, const std::string& pattern, Regex::Syntax syntax) {
  try {
    Regex compiled(pattern, syntax);
  } catch (const std::invalid_argument& error) {
    field.fail(error.what());
  }
}

void read_pre_tokenizer(const JsonValue& pre, std::vector<PreTokenizerStep>& steps) {
  pre.expect_object();
  const JsonValue type = pre.at("type");
  const std::string name = type.string();
  if (name == "Sequence") {
    const JsonValue list = pre.at("pretokenizers");
    for (std::size_t i = 0; i < list.size(); ++i) read_pre_tokenizer(list.at(i), steps);
  } else if (name == "Split") {
    SplitStep split;
    const JsonValue pattern = pre.at("pattern");
    pattern.expect_object();
    if (const auto regex = pattern.find("Regex")) {
      split.pattern = regex->string();
      check_pattern(*regex, split.pattern, Regex::Syntax::pattern);
    } else if (const auto literal = pattern.find("String")) {
      split.pattern = literal->string();
      split.is_regex = false;
      check_pattern(*literal, split.pattern, Regex::Syntax::literal);
    } else {
      pattern.fail("expected {\"Regex\": ...} or {\"String\": ...}");
    }
    split.behavior = read_behavior(pre.at("behavior"));
    split.invert = pre.flag("invert", false);
    steps.push_back(std::move(split));
  } else if (name == "ByteLevel") {
    steps.push_back(
        ByteLevelStep{pre.flag("add_prefix_space", true), pre.flag("trim_offsets", true), pre.flag("use_regex", true)});
  } else if (name == "Digits") {
    steps.push_back(DigitsStep{pre.flag("individual_digits", false)});
  } else {
    unsupported(type, name);
  }
}

std::vector<PreTokenizerStep> read_pre_tokenizer_root(const JsonValue& root) {
  const auto pre = root.find("pre_tokenizer");
  if (!pre) root.at("pre_tokenizer").fail("missing or null: pagedllm needs a ByteLevel pre-tokenizer");
  std::vector<PreTokenizerStep> steps;
  read_pre_tokenizer(*pre, steps);
  const auto num_byte_level = std::count_if(steps.begin(), steps.end(), [](const PreTokenizerStep& step) {
    return std::holds_alternative<ByteLevelStep>(step);
  });
  if (num_byte_level != 1) {
    pre->fail(num_byte_level == 0 ? "no ByteLevel step (pagedllm reads byte-level BPE tokenizers only)"
                                  : "more than one ByteLevel step");
  }
  return steps;
}

void expect_empty_or_null(const JsonValue& model, std::string_view key, std::string_view why) {
  const auto field = model.find(key);
  if (!field) return;
  if (field->json().is_string() && field->json().get<std::string>().empty()) return;
  field->fail("unsupported " + field->json().dump() + " (" + std::string(why) + ")");
}

BpeSpec read_model(const JsonValue& root) {
  const JsonValue model = root.at("model");
  model.expect_object();
  if (const auto type = model.find("type"); type && type->string() != "BPE") unsupported(*type, type->string());
  expect_empty_or_null(model, "continuing_subword_prefix", "byte-level BPE has no subword prefix");
  expect_empty_or_null(model, "end_of_word_suffix", "byte-level BPE has no word suffix");
  if (const auto dropout = model.find("dropout"); dropout && dropout->json() != 0.0) {
    dropout->fail("unsupported " + dropout->json().dump() + " (dropout is for training)");
  }
  if (model.flag("byte_fallback", false)) {
    model.at("byte_fallback").fail("unsupported true (byte-level BPE needs no byte fallback)");
  }
  BpeSpec bpe;
  bpe.fuse_unk = model.flag("fuse_unk", false);
  bpe.ignore_merges = model.flag("ignore_merges", false);
  if (const auto unk = model.find("unk_token")) bpe.unk_token = unk->string();

  // The vocabulary is an object token -> id; the ids must be 0..N-1, each once.
  const JsonValue vocab = model.at("vocab");
  vocab.expect_object();
  const std::size_t num_tokens = vocab.json().size();
  bpe.vocab.resize(num_tokens);
  std::vector<bool> seen(num_tokens, false);
  for (const auto& [token, id_value] : vocab.json().items()) {
    const JsonValue id = vocab.derived(id_value, vocab.path() + "[\"" + token + "\"]");
    const std::int64_t value = id.integer();
    if (value < 0 || static_cast<std::uint64_t>(value) >= num_tokens) {
      id.fail("id " + std::to_string(value) + " outside 0.." + std::to_string(num_tokens - 1) +
              " (the vocabulary's ids must be 0..N-1)");
    }
    if (seen[static_cast<std::size_t>(value)]) id.fail("id " + std::to_string(value) + " given twice");
    seen[static_cast<std::size_t>(value)] = true;
    bpe.vocab[static_cast<std::size_t>(value)] = token;
  }

  // Merges: "left right" strings (older files) or [left, right] pairs.
  const JsonValue merges = model.at("merges");
  const std::size_t num_merges = merges.size();
  bpe.merges.reserve(num_merges);
  for (std::size_t i = 0; i < num_merges; ++i) {
    const JsonValue merge = merges.at(i);
    if (merge.json().is_string()) {
      const std::string line = merge.string();
      const std::size_t space = line.find(' ');
      if (space == std::string::npos || line.find(' ', space + 1) != std::string::npos) {
        merge.fail("expected two tokens separated by one space, found '" + line + "'");
      }
      bpe.merges.emplace_back(line.substr(0, space), line.substr(space + 1));
    } else {
      if (!merge.json().is_array() || merge.size() != 2) merge.fail("expected \"left right\" or [left, right]");
      bpe.merges.emplace_back(merge.at(std::size_t{0}).string(), merge.at(std::size_t{1}).string());
    }
  }
  return bpe;
}

std::vector<TemplateItem> read_template(const JsonValue& list) {
  std::vector<TemplateItem> items;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const JsonValue entry = list.at(i);
    TemplateItem item;
    std::optional<JsonValue> body = entry.find("SpecialToken");
    if (body) {
      item.is_sequence = false;
    } else if ((body = entry.find("Sequence"))) {
      item.is_sequence = true;
    } else {
      entry.fail("expected {\"SpecialToken\": ...} or {\"Sequence\": ...}");
    }
    item.id = body->at("id").string();
    if (item.is_sequence && item.id != "A" && item.id != "B") body->at("id").fail("expected \"A\" or \"B\"");
    const std::int64_t type_id = body->find("type_id") ? body->at("type_id").integer() : 0;
    item.type_id = static_cast<int>(std::clamp<std::int64_t>(type_id, 0, INT32_MAX));
    items.push_back(std::move(item));
  }
  return items;
}

TemplateStep read_template_processing(const JsonValue& processor) {
  TemplateStep step;
  step.single = read_template(processor.at("single"));
  if (const auto pair = processor.find("pair")) step.pair = read_template(*pair);
  if (const auto special = processor.find("special_tokens")) {
    special->expect_object();
    for (const auto& [key, value] : special->json().items()) {
      const JsonValue entry = special->derived(value, special->path() + "[\"" + key + "\"]");
      TemplateSpecialToken token;
      token.key = key;
      const JsonValue ids = entry.at("ids");
      for (std::size_t i = 0; i < ids.size(); ++i) {
        const std::int64_t id = ids.at(i).integer();
        if (id < 0 || id > INT32_MAX) ids.at(i).fail("id " + std::to_string(id) + " out of range");
        token.ids.push_back(static_cast<TokenId>(id));
      }
      if (const auto tokens = entry.find("tokens")) {
        for (std::size_t i = 0; i < tokens->size(); ++i) token.tokens.push_back(tokens->at(i).string());
      }
      step.special_tokens.push_back(std::move(token));
    }
  }
  for (const auto* items : {&step.single, &step.pair}) {
    for (const TemplateItem& item : *items) {
      if (item.is_sequence) continue;
      const bool known = std::any_of(step.special_tokens.begin(), step.special_tokens.end(),
                                     [&](const TemplateSpecialToken& token) { return token.key == item.id; });
      if (!known) processor.at("special_tokens").fail("no entry for the template's token '" + item.id + "'");
    }
  }
  return step;
}

void read_post_processor(const JsonValue& processor, std::vector<PostProcessorStep>& steps) {
  processor.expect_object();
  const JsonValue type = processor.at("type");
  const std::string name = type.string();
  if (name == "Sequence") {
    const JsonValue list = processor.at("processors");
    for (std::size_t i = 0; i < list.size(); ++i) read_post_processor(list.at(i), steps);
  } else if (name == "TemplateProcessing") {
    steps.push_back(read_template_processing(processor));
  } else if (name == "ByteLevel") {
    steps.push_back(ByteLevelProcessorStep{processor.flag("add_prefix_space", true),
                                           processor.flag("trim_offsets", true), processor.flag("use_regex", true)});
  } else {
    unsupported(type, name);
  }
}

// The decoder must be ByteLevel (alone or as the only step of a Sequence).
void check_decoder(const JsonValue& root) {
  const auto decoder = root.find("decoder");
  if (!decoder) root.at("decoder").fail("missing or null: pagedllm decodes with the ByteLevel decoder only");
  decoder->expect_object();
  const JsonValue type = decoder->at("type");
  const std::string name = type.string();
  if (name == "ByteLevel") return;
  if (name == "Sequence") {
    const JsonValue list = decoder->at("decoders");
    for (std::size_t i = 0; i < list.size(); ++i) {
      const JsonValue inner = list.at(i).at("type");
      if (inner.string() != "ByteLevel") unsupported(inner, inner.string());
    }
    if (list.size() == 1) return;
    list.fail("expected exactly one ByteLevel decoder");
  }
  unsupported(type, name);
}

// BOS / EOS as the post-processor's single template places them: a special token before $A
// is BOS, one after it EOS.
void special_ids_from_template(TokenizerSpec& spec) {
  for (const PostProcessorStep& step : spec.post_processor) {
    const auto* templ = std::get_if<TemplateStep>(&step);
    if (templ == nullptr) continue;
    bool after_sequence = false;
    for (const TemplateItem& item : templ->single) {
      if (item.is_sequence) {
        after_sequence = true;
        continue;
      }
      for (const TemplateSpecialToken& token : templ->special_tokens) {
        if (token.key != item.id || token.ids.size() != 1) continue;
        (after_sequence ? spec.special_ids.eos : spec.special_ids.bos) = token.ids.front();
      }
    }
  }
}

std::optional<TokenId> find_token(const TokenizerSpec& spec, const std::string& content) {
  for (const AddedTokenSpec& token : spec.added_tokens) {
    if (token.content == content) return token.id;
  }
  const auto it = std::find(spec.model.vocab.begin(), spec.model.vocab.end(), content);
  if (it == spec.model.vocab.end()) return std::nullopt;
  return static_cast<TokenId>(it - spec.model.vocab.begin());
}

// A JsonError names the field; the file is ours to add.
[[noreturn]] void rethrow_in(const JsonError& error, const std::string& source) {
  throw model::ModelFormatError(source, error.path().empty() ? "" : "field '" + error.path() + "'", error.problem());
}

TokenizerSpec read_tokenizer_json_document(const nlohmann::json& document, const std::string& source) {
  const JsonValue root(document);
  root.expect_object();
  TokenizerSpec spec;
  spec.source = source;
  spec.added_tokens = read_added_tokens(root);
  if (const auto normalizer = root.find("normalizer")) read_normalizer(*normalizer, spec.nfc);
  spec.pre_tokenizer = read_pre_tokenizer_root(root);
  spec.model = read_model(root);
  if (const auto processor = root.find("post_processor")) read_post_processor(*processor, spec.post_processor);
  check_decoder(root);
  special_ids_from_template(spec);
  if (spec.model.unk_token) spec.special_ids.unk = find_token(spec, *spec.model.unk_token);
  return spec;
}

void read_tokenizer_config_document(const nlohmann::json& document, TokenizerSpec& spec) {
  const JsonValue root(document);
  root.expect_object();
  // BOS and EOS must name tokens of the vocabulary; a PAD or UNK that does not (transformers
  // would add it) is left unset, as nothing here needs it.
  const auto resolve = [&](std::string_view key, std::optional<TokenId>& id, bool required) {
    const auto field = root.find(key);
    if (!field) return;
    const JsonValue content = field->json().is_object() ? field->at("content") : *field;
    const std::string name = content.string();
    const auto found = find_token(spec, name);
    if (!found && required) content.fail("'" + name + "' is not in the vocabulary");
    if (found) id = found;
  };
  resolve("bos_token", spec.special_ids.bos, true);
  resolve("eos_token", spec.special_ids.eos, true);
  resolve("pad_token", spec.special_ids.pad, false);
  resolve("unk_token", spec.special_ids.unk, false);
}

}  // namespace

TokenizerSpec read_tokenizer_json(std::string_view text, const std::string& source) {
  try {
    return read_tokenizer_json_document(parse_document(text, source), source);
  } catch (const JsonError& error) {
    rethrow_in(error, source);
  }
}

void read_tokenizer_config(std::string_view text, const std::string& source, TokenizerSpec& spec) {
  try {
    read_tokenizer_config_document(parse_document(text, source), spec);
  } catch (const JsonError& error) {
    rethrow_in(error, source);
  }
}

}  // namespace pagedllm::tokenizer
