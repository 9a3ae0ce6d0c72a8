#include "core/tokenizer/added_vocabulary.h"

#include <algorithm>

#include "core/tokenizer/normalizer.h"
#include "core/tokenizer/regex.h"
#include "core/tokenizer/utf8.h"

namespace pagedllm::tokenizer {
namespace {

// Rust regex `\w` (HF's single_word test; UTS #18): Alphabetic, marks, decimal digits,
// connector punctuation, Join_Control. Not Oniguruma's `\w` of the split patterns: '½' is a
// number but no word character here.
bool is_word_character(std::string_view character) {
  static const Regex word("^[\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}\\p{Join_Control}]$");
  std::vector<RegexMatch> matches;
  word.find_all(character, matches);
  return !matches.empty();
}

bool ends_with_word(std::string_view text) {
  if (text.empty()) return false;
  std::size_t start = text.size() - 1;
  while (start > 0 && (static_cast<std::uint8_t>(text[start]) & 0xC0) == 0x80) --start;
  return is_word_character(text.substr(start));
}

bool starts_with_word(std::string_view text) {
  if (text.empty()) return false;
  char32_t code_point = 0;
  const std::size_t length = decode_utf8(text, code_point);
  return length > 0 && is_word_character(text.substr(0, length));
}

// Start of the whitespace that ends `text` (text.size() when none).
std::size_t trailing_whitespace_start(std::string_view text) {
  std::size_t start = text.size();
  while (start > 0) {
    std::size_t lead = start - 1;
    while (lead > 0 && (static_cast<std::uint8_t>(text[lead]) & 0xC0) == 0x80) --lead;
    char32_t code_point = 0;
    if (decode_utf8(text.substr(lead, start - lead), code_point) == 0 || !is_unicode_whitespace(code_point)) break;
    start = lead;
  }
  return start;
}

std::size_t leading_whitespace_length(std::string_view text) {
  std::size_t length = 0;
  while (length < text.size()) {
    char32_t code_point = 0;
    const std::size_t char_length = decode_utf8(text.substr(length), code_point);
    if (char_length == 0 || !is_unicode_whitespace(code_point)) break;
    length += char_length;
  }
  return length;
}

}  // namespace

AddedVocabulary::AddedVocabulary(const std::vector<AddedTokenSpec>& tokens, bool nfc) : tokens_(tokens) {
  std::string normalized;
  for (std::size_t index = 0; index < tokens_.size(); ++index) {
    const AddedTokenSpec& token = tokens_[index];
    if (token.content.empty()) continue;  // HF ignores empty added tokens
    if (!token.normalized) {
      insert(raw_, token.content, static_cast<std::int32_t>(index));
    } else if (nfc) {
      to_nfc(token.content, normalized);
      insert(normalized_, normalized, static_cast<std::int32_t>(index));
    } else {
      insert(normalized_, token.content, static_cast<std::int32_t>(index));
    }
  }
}

void AddedVocabulary::insert(Matcher& matcher, std::string_view content, std::int32_t token) {
  std::int32_t node = 0;
  for (const char c : content) {
    const auto byte = static_cast<std::uint8_t>(c);
    auto& children = matcher.nodes[static_cast<std::size_t>(node)].children;
    const auto it = std::lower_bound(children.begin(), children.end(), byte,
                                     [](const auto& child, std::uint8_t value) { return child.first < value; });
    if (it != children.end() && it->first == byte) {
      node = it->second;
      continue;
    }
    const auto child = static_cast<std::int32_t>(matcher.nodes.size());
    children.insert(it, {byte, child});
    matcher.nodes.emplace_back();  // invalidates `children`: not used after this
    node = child;
  }
  // A repeated content keeps its first token.
  if (matcher.nodes[static_cast<std::size_t>(node)].token < 0)
    matcher.nodes[static_cast<std::size_t>(node)].token = token;
  matcher.first_bytes[static_cast<std::uint8_t>(content.front())] = true;
}

std::pair<std::size_t, std::int32_t> AddedVocabulary::longest_match(const Matcher& matcher, std::string_view text,
                                                                    std::size_t position) {
  std::pair<std::size_t, std::int32_t> best{0, -1};
  std::size_t node = 0;
  for (std::size_t i = position; i < text.size(); ++i) {
    const auto byte = static_cast<std::uint8_t>(text[i]);
    const auto& children = matcher.nodes[node].children;
    const auto it = std::lower_bound(children.begin(), children.end(), byte,
                                     [](const auto& child, std::uint8_t value) { return child.first < value; });
    if (it == children.end() || it->first != byte) break;
    node = static_cast<std::size_t>(it->second);
    if (matcher.nodes[node].token >= 0) best = {i + 1 - position, matcher.nodes[node].token};
  }
  return best;
}

void AddedVocabulary::split(std::string_view text, Pass pass, bool parse_special, std::vector<TextSegment>& out) const {
  const Matcher& tokens = matcher(pass);
  std::size_t emitted = 0;  // text before this is in `out`
  std::size_t position = 0;
  while (position < text.size()) {
    if (!tokens.first_bytes[static_cast<std::uint8_t>(text[position])]) {
      ++position;
      continue;
    }
    const auto [length, index] = longest_match(tokens, text, position);
    if (length == 0) {
      ++position;
      continue;
    }
    const AddedTokenSpec& token = tokens_[static_cast<std::size_t>(index)];
    std::size_t start = position;
    std::size_t stop = position + length;
    position = stop;  // the search goes on after this match, taken or not
    if (token.special && !parse_special) continue;
    if (token.single_word && ((start > 0 && ends_with_word(text.substr(0, start))) ||
                              (stop < text.size() && starts_with_word(text.substr(stop))))) {
      continue;
    }
    if (token.lstrip) start = std::max(trailing_whitespace_start(text.substr(0, start)), emitted);
    if (token.rstrip) stop += leading_whitespace_length(text.substr(stop));
    if (emitted < start) out.push_back({text.substr(emitted, start - emitted), -1});
    out.push_back({text.substr(start, stop - start), token.id});
    emitted = stop;
    position = stop;
  }
  if (emitted < text.size()) out.push_back({text.substr(emitted), -1});
}

}  // namespace pagedllm::tokenizer
