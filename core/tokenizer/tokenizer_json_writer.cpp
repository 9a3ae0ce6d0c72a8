#include "core/tokenizer/tokenizer_json.h"

namespace pagedllm::tokenizer {
namespace {

using nlohmann::json;

const char* behavior_name(SplitBehavior behavior) {
  switch (behavior) {
    case SplitBehavior::removed:
      return "Removed";
    case SplitBehavior::isolated:
      return "Isolated";
    case SplitBehavior::merged_with_previous:
      return "MergedWithPrevious";
    case SplitBehavior::merged_with_next:
      return "MergedWithNext";
    case SplitBehavior::contiguous:
      return "Contiguous";
  }
  return "Isolated";
}

json pre_tokenizer_step(const PreTokenizerStep& step) {
  if (const auto* split = std::get_if<SplitStep>(&step)) {
    return {{"type", "Split"},
            {"pattern", {{split->is_regex ? "Regex" : "String", split->pattern}}},
            {"behavior", behavior_name(split->behavior)},
            {"invert", split->invert}};
  }
  if (const auto* digits = std::get_if<DigitsStep>(&step)) {
    return {{"type", "Digits"}, {"individual_digits", digits->individual_digits}};
  }
  const auto& byte_level = std::get<ByteLevelStep>(step);
  return {{"type", "ByteLevel"},
          {"add_prefix_space", byte_level.add_prefix_space},
          {"trim_offsets", byte_level.trim_offsets},
          {"use_regex", byte_level.use_regex}};
}

json template_items(const std::vector<TemplateItem>& items) {
  json list = json::array();
  for (const TemplateItem& item : items) {
    list.push_back({{item.is_sequence ? "Sequence" : "SpecialToken", {{"id", item.id}, {"type_id", item.type_id}}}});
  }
  return list;
}

json post_processor_step(const PostProcessorStep& step) {
  if (const auto* byte_level = std::get_if<ByteLevelProcessorStep>(&step)) {
    return {{"type", "ByteLevel"},
            {"add_prefix_space", byte_level->add_prefix_space},
            {"trim_offsets", byte_level->trim_offsets},
            {"use_regex", byte_level->use_regex}};
  }
  const auto& templ = std::get<TemplateStep>(step);
  json special = json::object();
  for (const TemplateSpecialToken& token : templ.special_tokens) {
    special[token.key] = {{"id", token.key}, {"ids", token.ids}, {"tokens", token.tokens}};
  }
  return {{"type", "TemplateProcessing"},
          {"single", template_items(templ.single)},
          {"pair", template_items(templ.pair)},
          {"special_tokens", special}};
}

// One step as itself, several as a Sequence under `list_key`; none as null.
template <typename Step, typename Write>
json one_or_sequence(const std::vector<Step>& steps, const char* list_key, Write write) {
  if (steps.empty()) return nullptr;
  if (steps.size() == 1) return write(steps.front());
  json list = json::array();
  for (const Step& step : steps) list.push_back(write(step));
  return {{"type", "Sequence"}, {list_key, list}};
}

}  // namespace

json write_tokenizer_json(const TokenizerSpec& spec) {
  json added = json::array();
  for (const AddedTokenSpec& token : spec.added_tokens) {
    added.push_back({{"id", token.id},
                     {"content", token.content},
                     {"single_word", token.single_word},
                     {"lstrip", token.lstrip},
                     {"rstrip", token.rstrip},
                     {"normalized", token.normalized},
                     {"special", token.special}});
  }
  json vocab = json::object();
  for (std::size_t id = 0; id < spec.model.vocab.size(); ++id) vocab[spec.model.vocab[id]] = id;
  json merges = json::array();
  for (const auto& [left, right] : spec.model.merges) merges.push_back(json::array({left, right}));

  return {
      {"version", "1.0"},
      {"truncation", nullptr},
      {"padding", nullptr},
      {"added_tokens", added},
      {"normalizer", spec.nfc ? json{{"type", "NFC"}} : json(nullptr)},
      {"pre_tokenizer", one_or_sequence(spec.pre_tokenizer, "pretokenizers", pre_tokenizer_step)},
      {"post_processor", one_or_sequence(spec.post_processor, "processors", post_processor_step)},
      {"decoder", {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}}},
      {"model",
       {{"type", "BPE"},
        {"dropout", nullptr},
        {"unk_token", spec.model.unk_token ? json(*spec.model.unk_token) : json(nullptr)},
        {"continuing_subword_prefix", nullptr},
        {"end_of_word_suffix", nullptr},
        {"fuse_unk", spec.model.fuse_unk},
        {"byte_fallback", false},
        {"ignore_merges", spec.model.ignore_merges},
        {"vocab", vocab},
        {"merges", merges}}},
  };
}

}  // namespace pagedllm::tokenizer
