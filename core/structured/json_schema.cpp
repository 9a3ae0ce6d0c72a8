#include "core/structured/json_schema.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <string_view>
#include <utility>
#include <vector>

#include "core/structured/code_point_set.h"
#include "core/structured/regex_compiler.h"
#include "core/structured/regex_escape.h"
#include "core/tokenizer/utf8.h"

namespace pagedllm::structured {
namespace {

using SchemaJson = nlohmann::ordered_json;

// The layout's defaults, from compile_regex's automata (release build, a 2-core machine).
// json_object_regex, max_whitespace 16, by max_any_depth:
//   2: 1,222 states, 0.02 s; 3 (the default): 4,934 states, 0.06-0.08 s; 4: 19,782 states,
//   0.3-0.45 s (at the 20,000-state limit); 5: past it.
// Depth 3 in json.dumps' layout: 2,929 states, 0.05 s; at max_whitespace 8: 3,910 states. A
// schema-less value in a schema ({}, depth 3) is an array or an object: 9,797 states, 0.2 s, so
// depth 4 would leave no room for one.

// One character between a JSON string's quotes: anything but '"', '\', the control characters
// and DEL, or an escape; a surrogate escape only as a high-low pair (one character). Spellings JSON
// allows are left out where llguidance leaves them out, so that the masks match
// (tests/pypi/check_token_masks.py): a raw DEL ("\u007f" spells it), the escape "\/" ('/' stands
// as itself, as json.dumps writes it) and a lone surrogate (no character). XGrammar allows them.
constexpr std::string_view kJsonRawChar = R"([^"\\\x00-\x1f\x7f])";
constexpr std::string_view kJsonStringChar =
    R"((?:[^"\\\x00-\x1f\x7f]|\\["\\bfnrt]|\\u(?:[0-9a-cA-Ce-fE-F][0-9a-fA-F]{3}|[dD][0-7][0-9a-fA-F]{2}|)"
    R"([dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2})))";
constexpr std::string_view kJsonNumber = R"(-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)";
constexpr std::string_view kJsonInteger = R"(-?(?:0|[1-9][0-9]*))";
// The class items of what a JSON string must escape, to exclude from a class.
constexpr std::string_view kJsonEscapedItems = R"("\\\x00-\x1f\x7f)";

constexpr std::string_view kDatePattern = R"([0-9]{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12][0-9]|3[01]))";
constexpr std::string_view kTimePattern =
    R"((?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\.[0-9]+)?(?:Z|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9]))";
constexpr std::string_view kUuidPattern =
    R"([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})";
constexpr std::string_view kIpv4Octet = R"((?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9]))";
// A simple address: dot-separated atoms of RFC 5322's atext, '@', dot-separated labels of letters,
// digits and inner hyphens, and a top-level label of 2 or more letters. No quoted local parts, no
// IP-literal domains.
constexpr std::string_view kEmailPattern = R"([A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*)"
                                           R"(@(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?\.)+[A-Za-z]{2,})";

// Keyword lists, space-separated. Annotations are ignored wherever they appear: they describe,
// they do not constrain ("discriminator" is OpenAPI's and Pydantic's hint for a union whose anyOf
// or oneOf carries the constraint; $defs and definitions are read through $ref).
constexpr std::string_view kAnnotationKeywords =
    "title description default examples $schema $id $comment $anchor deprecated readOnly writeOnly "
    "contentMediaType contentEncoding discriminator $defs definitions";
constexpr std::string_view kSupportedKeywords =
    "type enum const anyOf oneOf allOf $ref minLength maxLength pattern format minimum maximum exclusiveMinimum "
    "exclusiveMaximum properties required additionalProperties items prefixItems minItems maxItems";
// JSON Schema keywords outside the subset (refused as "not supported"; any other as "unknown").
constexpr std::string_view kUnsupportedKeywords =
    "multipleOf minProperties maxProperties patternProperties propertyNames dependentRequired dependentSchemas "
    "dependencies uniqueItems contains minContains maxContains not if then else unevaluatedProperties "
    "unevaluatedItems additionalItems $dynamicRef $dynamicAnchor $recursiveRef $recursiveAnchor contentSchema "
    "nullable";

struct TypeKeywords {
  std::string_view type;
  std::vector<std::string_view> keywords;
};
const std::vector<TypeKeywords>& keywords_by_type() {
  static const std::vector<TypeKeywords> table = {
      {"string", {"minLength", "maxLength", "pattern", "format"}},
      {"integer", {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}},
      {"number", {}},
      {"boolean", {}},
      {"null", {}},
      {"object", {"properties", "required", "additionalProperties"}},
      {"array", {"items", "prefixItems", "minItems", "maxItems"}},
  };
  return table;
}

bool is_listed(std::string_view word, std::string_view list) {
  if (word.empty() || word.find(' ') != std::string_view::npos) return false;
  for (std::size_t at = list.find(word); at != std::string_view::npos; at = list.find(word, at + 1)) {
    const std::size_t end = at + word.size();
    if ((at == 0 || list[at - 1] == ' ') && (end == list.size() || list[end] == ' ')) return true;
  }
  return false;
}

bool applies_to(std::string_view keyword, std::string_view type) {
  for (const TypeKeywords& entry : keywords_by_type()) {
    if (entry.type == type) {
      return std::find(entry.keywords.begin(), entry.keywords.end(), keyword) != entry.keywords.end();
    }
  }
  return false;
}

std::string in_quotes(std::string_view word) { return "'" + std::string(word) + "'"; }

// One step of a JSON pointer: ~ and / escaped (RFC 6901).
std::string pointer_step(std::string_view key) {
  std::string out = "/";
  for (const char c : key) {
    if (c == '~')
      out += "~0";
    else if (c == '/')
      out += "~1";
    else
      out += c;
  }
  return out;
}

std::string pattern_alternation(const std::vector<std::string>& options) {
  std::vector<std::string> unique;
  for (const std::string& option : options) {
    if (std::find(unique.begin(), unique.end(), option) == unique.end()) unique.push_back(option);
  }
  if (unique.size() == 1) return unique.front();
  std::string out = "(?:";
  for (std::size_t i = 0; i < unique.size(); ++i) out += (i ? "|" : "") + unique[i];
  return out + ")";
}

std::string optional_group(const std::string& pattern) { return pattern.empty() ? "" : "(?:" + pattern + ")?"; }

// `pattern` repeated min to max times (max < 0: no upper bound).
std::string pattern_repeat(std::string_view pattern, int64_t min, int64_t max) {
  if (max == 0) return "";
  const std::string group = "(?:" + std::string(pattern) + ")";
  if (min == 0 && max < 0) return group + "*";
  if (min == 1 && max < 0) return group + "+";
  if (min == 0 && max == 1) return group + "?";
  if (min == 1 && max == 1) return group;
  if (min == max) return group + "{" + std::to_string(min) + "}";
  return group + "{" + std::to_string(min) + "," + (max < 0 ? "" : std::to_string(max)) + "}";
}

// --- integer ranges ----------------------------------------------------------------------------

std::string digit_span(char first, char last) {
  if (first == last) return std::string(1, first);
  return "[" + std::string(1, first) + "-" + std::string(1, last) + "]";
}

std::string any_digits(std::size_t count) {
  if (count == 0) return "";
  if (count == 1) return "[0-9]";
  return "[0-9]{" + std::to_string(count) + "}";
}

// Digit strings of one length from `low` to `high` (leading zeros allowed: these are tails).
std::string same_length_span(std::string_view low, std::string_view high) {
  if (low.empty()) return "";
  if (low[0] == high[0]) return std::string(1, low[0]) + same_length_span(low.substr(1), high.substr(1));
  const std::size_t rest = low.size() - 1;
  const bool low_tail_zeros = low.find_first_not_of('0', 1) == std::string_view::npos;
  const bool high_tail_nines = high.find_first_not_of('9', 1) == std::string_view::npos;
  std::vector<std::string> options;
  char first = low[0];
  char last = high[0];
  if (!low_tail_zeros) {
    options.push_back(std::string(1, low[0]) + same_length_span(low.substr(1), std::string(rest, '9')));
    ++first;
  }
  std::string high_option;
  if (!high_tail_nines) {
    high_option = std::string(1, high[0]) + same_length_span(std::string(rest, '0'), high.substr(1));
    --last;
  }
  if (first <= last) options.push_back(digit_span(first, last) + any_digits(rest));
  if (!high_option.empty()) options.push_back(high_option);
  return pattern_alternation(options);
}

// Numerals without leading zeros of [low, high], 1 <= low; no `high`: no upper bound.
std::string positive_span(uint64_t low, std::optional<uint64_t> high) {
  const std::string low_text = std::to_string(low);
  std::vector<std::string> options;
  if (!high) {
    options.push_back(same_length_span(low_text, std::string(low_text.size(), '9')));
    options.push_back("[1-9][0-9]{" + std::to_string(low_text.size()) + ",}");
    return pattern_alternation(options);
  }
  const std::string high_text = std::to_string(*high);
  for (std::size_t length = low_text.size(); length <= high_text.size(); ++length) {
    const std::string from = length == low_text.size() ? low_text : "1" + std::string(length - 1, '0');
    const std::string to = length == high_text.size() ? high_text : std::string(length, '9');
    options.push_back(same_length_span(from, to));
  }
  return pattern_alternation(options);
}

uint64_t magnitude(int64_t negative) { return static_cast<uint64_t>(-(negative + 1)) + 1; }

// Integers in [low, high] (a missing bound: none), low <= high.
std::string integer_span(std::optional<int64_t> low, std::optional<int64_t> high) {
  std::vector<std::string> options;
  if (!low || *low < 0) {
    const uint64_t smallest = high && *high < 0 ? magnitude(*high) : 1;
    options.push_back("-" + positive_span(smallest, low ? std::optional(magnitude(*low)) : std::nullopt));
  }
  // "-0" is zero too. It is taken where llguidance takes it, so that the masks match: in a range
  // bounded on both sides that holds negative numbers (and without bounds: kJsonInteger).
  if ((!low || *low <= 0) && (!high || *high >= 0)) options.push_back(low && high && *low < 0 ? "-?0" : "0");
  if (!high || *high > 0) {
    const uint64_t smallest = low && *low > 1 ? static_cast<uint64_t>(*low) : 1;
    options.push_back(positive_span(smallest, high ? std::optional(static_cast<uint64_t>(*high)) : std::nullopt));
  }
  return pattern_alternation(options);
}

// --- string patterns -----------------------------------------------------------------------------

// What dump() writes for one character inside a string: itself, or its escape (DEL too, which
// dump() leaves raw: see kJsonRawChar).
std::string canonical_spelling(char32_t code_point) {
  if (code_point == 0x7F) return "\\u007f";
  std::string text;
  tokenizer::append_utf8(text, code_point);
  const std::string dumped = SchemaJson(text).dump();
  return dumped.substr(1, dumped.size() - 2);
}

std::string class_item(char32_t code_point) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string digits;
  for (char32_t rest = code_point; digits.empty() || rest != 0; rest >>= 4)
    digits.insert(digits.begin(), kHex[rest & 0xF]);
  return "\\u{" + digits + "}";
}

std::string class_of(const CodePointSet& set) {
  std::string out = "[";
  for (const auto& [lo, hi] : set.ranges()) out += lo == hi ? class_item(lo) : class_item(lo) + "-" + class_item(hi);
  return out + "]";
}

// The characters a one-character automaton accepts (a lead byte it refuses skips its block).
CodePointSet accepted_characters(const ByteDfa& dfa) {
  CodePointSet set;
  std::optional<char32_t> run_start;
  const auto close_run = [&](char32_t last) {
    if (run_start) set.add(*run_start, last);
    run_start.reset();
  };
  char32_t code_point = 0;
  while (code_point <= kMaxCodePoint) {
    if (code_point == 0xD800) {
      close_run(code_point - 1);
      code_point = 0xE000;
      continue;
    }
    std::string bytes;
    tokenizer::append_utf8(bytes, code_point);
    const int32_t after_lead = dfa.step(dfa.start, static_cast<std::uint8_t>(bytes[0]));
    if (after_lead == ByteDfa::kDead) {
      close_run(code_point - 1);
      static constexpr char32_t kBlockBits[] = {0, 0, 0x3F, 0xFFF, 0x3FFFF};
      code_point = (code_point | kBlockBits[bytes.size()]) + 1;
      continue;
    }
    const int32_t end = dfa.walk(after_lead, std::string_view(bytes).substr(1));
    if (end != ByteDfa::kDead && dfa.accepting[static_cast<std::size_t>(end)]) {
      if (!run_start) run_start = code_point;
    } else {
      close_run(code_point - 1);
    }
    ++code_point;
  }
  close_run(kMaxCodePoint);
  return set;
}

// Length of the escape at pattern[at] (a backslash), in a pattern compile_regex accepted.
std::size_t escape_length(std::string_view pattern, std::size_t at) {
  if (at + 1 >= pattern.size()) return 1;
  const char kind = pattern[at + 1];
  if (kind == 'x') return 4;
  if (kind == 'u') {
    if (at + 2 < pattern.size() && pattern[at + 2] == '{') return pattern.find('}', at) - at + 1;
    return 6;
  }
  char32_t code_point = 0;
  return 1 + std::max<std::size_t>(1, tokenizer::decode_utf8(pattern.substr(at + 1), code_point));
}

std::size_t class_length(std::string_view pattern, std::size_t at) {
  std::size_t i = at + 1;
  if (i < pattern.size() && pattern[i] == '^') ++i;
  if (i < pattern.size() && pattern[i] == ']') ++i;  // a ']' first is a member
  while (i < pattern.size() && pattern[i] != ']') i += pattern[i] == '\\' ? escape_length(pattern, i) : 1;
  return i + 1 - at;
}

// The characters a JSON string must escape: '"', '\\', the control characters and DEL.
CodePointSet json_escaped_characters() {
  CodePointSet set = CodePointSet::of(0, 0x1F);
  set.add(0x7F, 0x7F);
  set.add('"', '"');
  set.add('\\', '\\');
  return set;
}

CodePointSet intersection(const CodePointSet& a, const CodePointSet& b) {
  CodePointSet out;
  for (const auto& [a_lo, a_hi] : a.ranges()) {
    for (const auto& [b_lo, b_hi] : b.ranges()) {
      if (std::max(a_lo, b_lo) <= std::min(a_hi, b_hi)) out.add(std::max(a_lo, b_lo), std::min(a_hi, b_hi));
    }
  }
  return out;
}

// One character of a pattern (a literal, an escape, a class or '.') as the JSON spellings of
// the characters it matches: unchanged where none of them needs an escape.
std::string json_spelled_atom(std::string_view atom) {
  const ByteDfa dfa = compile_regex(atom);
  std::vector<char32_t> escaped;
  const CodePointSet must_escape = json_escaped_characters();
  for (const auto& [lo, hi] : must_escape.ranges()) {
    for (char32_t code_point = lo; code_point <= hi; ++code_point) {
      std::string text;
      tokenizer::append_utf8(text, code_point);
      if (dfa.matches(text)) escaped.push_back(code_point);
    }
  }
  if (escaped.empty()) return std::string(atom);
  // The members that stand as themselves: a negation gets the escaped characters added to what
  // it excludes; any other set is read off its automaton.
  std::vector<std::string> options;
  if (atom == ".") {
    options.emplace_back(kJsonRawChar);
  } else if (atom.substr(0, 2) == "[^") {
    std::string_view members = atom.substr(2, atom.size() - 3);
    std::string rewritten = "[^" + std::string(kJsonEscapedItems);
    if (!members.empty() && members[0] == ']') {  // no longer first, so no longer a member as it stands
      rewritten += "\\]";
      members.remove_prefix(1);
    }
    options.push_back(rewritten + std::string(members) + "]");
  } else if (atom == "\\D" || atom == "\\W" || atom == "\\S") {
    options.push_back("[^" + std::string(kJsonEscapedItems) + "\\" + static_cast<char>(atom[1] - 'A' + 'a') + "]");
  } else {
    const CodePointSet plain = intersection(accepted_characters(dfa), must_escape.complement());
    if (!plain.empty()) options.push_back(class_of(plain));
  }
  for (const char32_t code_point : escaped) options.push_back(escape_regex(canonical_spelling(code_point)));
  return "(?:" + pattern_alternation(options) + ")";
}

// --- keys that are not a declared name -------------------------------------------------------

// The canonical spelling of a name, one JSON character (a raw character or an escape) a unit.
std::vector<std::string> spelled_units(const std::string& name) {
  std::vector<std::string> units;
  for (std::size_t at = 0; at < name.size();) {
    char32_t code_point = 0;
    const std::size_t length = tokenizer::decode_utf8(std::string_view(name).substr(at), code_point);
    units.push_back(canonical_spelling(code_point));
    at += std::max<std::size_t>(length, 1);
  }
  return units;
}

struct NameTrie {
  bool is_name = false;
  std::map<std::string, NameTrie> children;  // by unit
};

// `length` hex digits other than the `excluded` ones (each `length` long).
std::string hex_digits_except(const std::set<std::string>& excluded, std::size_t length) {
  static constexpr std::string_view kHexDigits = "0123456789abcdefABCDEF";
  const auto any_hex = [](std::size_t count) {
    return count == 0 ? std::string() : count == 1 ? "[0-9a-fA-F]" : "[0-9a-fA-F]{" + std::to_string(count) + "}";
  };
  if (excluded.empty()) return any_hex(length);
  std::map<char, std::set<std::string>> by_first;
  for (const std::string& digits : excluded) by_first[digits[0]].insert(digits.substr(1));
  std::string free_first;
  for (const char c : kHexDigits) {
    if (by_first.count(c) == 0) free_first += c;
  }
  std::vector<std::string> options;
  if (!free_first.empty()) options.push_back("[" + free_first + "]" + any_hex(length - 1));
  if (length > 1) {
    for (const auto& [c, rest] : by_first) options.push_back(std::string(1, c) + hex_digits_except(rest, length - 1));
  }
  return pattern_alternation(options);  // never empty: the spellings excluded are lower case
}

// String contents (between the quotes) that spell none of the names of `node`'s subtree from
// here on; a name spelled with other escapes (a backslash-u escape for a letter) is not caught.
std::string contents_except(const NameTrie& node) {
  std::vector<std::string> continuations;
  CodePointSet raw_taken;
  std::string short_taken;
  std::set<std::string> hex_taken;
  for (const auto& [unit, child] : node.children) {
    continuations.push_back(escape_regex(unit) + contents_except(child));
    if (unit[0] != '\\') {
      char32_t code_point = 0;
      tokenizer::decode_utf8(unit, code_point);
      raw_taken.add(code_point, code_point);
    } else if (unit[1] == 'u') {
      hex_taken.insert(unit.substr(2));
    } else {
      short_taken += unit[1];
    }
  }
  // Or a character that leaves the names, then anything.
  std::vector<std::string> other;
  std::string raw_other = "[^" + std::string(kJsonEscapedItems);
  for (const auto& [lo, hi] : raw_taken.ranges()) raw_other += class_item(lo) + (lo == hi ? "" : "-" + class_item(hi));
  other.push_back(raw_other + "]");
  std::string short_other;
  for (const char c : std::string_view("\"\\bfnrt")) {
    if (short_taken.find(c) == std::string::npos)
      short_other += (c == '"' || c == '\\' ? "\\" : "") + std::string(1, c);
  }
  if (!short_other.empty()) other.push_back("\\\\[" + short_other + "]");
  other.push_back("\\\\u" + hex_digits_except(hex_taken, 4));
  continuations.push_back(pattern_alternation(other) + std::string(kJsonStringChar) + "*");
  const std::string choice = pattern_alternation(continuations);
  return node.is_name ? choice : optional_group(choice);
}

// --- the compiler ----------------------------------------------------------------------------

class SchemaPatternBuilder {
 public:
  static constexpr std::size_t kMaxPatternBytes = std::size_t{1} << 20;

  SchemaPatternBuilder(const SchemaJson& root, const JsonLayout& layout) : root_(root), layout_(layout) {
    if (layout.max_whitespace < 0) throw std::invalid_argument("JsonLayout: max_whitespace must not be negative");
    if (layout.max_any_depth < 1) throw std::invalid_argument("JsonLayout: max_any_depth must be at least 1");
    std::string gap;
    if (layout.whitespace_pattern) {
      gap = "(?:" + *layout.whitespace_pattern + ")";
    } else if (layout.any_whitespace && layout.max_whitespace > 0) {
      gap = pattern_repeat("[ \\t\\n\\r]", 0, layout.max_whitespace);
    }
    if (layout.whitespace_pattern || layout.any_whitespace) {
      gap_ = gap;
      tail_ = gap;
      comma_ = "," + gap;
      colon_ = gap + ":" + gap;
    } else {
      comma_ = ", ";
      colon_ = ": ";
    }
  }

  // A subschema's pattern, bounded in size: an array's pattern holds its items' twice (the first
  // and the rest), so nesting doubles it per level, and a few dozen levels of arrays would take
  // more memory than the machine has before the automaton's own limits could refuse it.
  std::string schema(const SchemaJson& node, const std::string& path) {
    std::string pattern = schema_pattern(node, path);
    if (pattern.size() > kMaxPatternBytes) {
      fail(path, "the schema is too large: its pattern passes " + std::to_string(kMaxPatternBytes >> 20) +
                     " MiB (each level of nested arrays doubles it)");
    }
    return pattern;
  }

  std::string schema_pattern(const SchemaJson& node, const std::string& path) {
    if (node.is_boolean()) {
      if (node.get<bool>()) return any_value(layout_.max_any_depth);
      fail(path, "the schema false matches nothing");
    }
    if (!node.is_object()) fail(path, "a schema must be an object or a boolean, got " + std::string(node.type_name()));
    std::vector<std::string> keywords;  // the constraining ones, in order
    for (const auto& [key, value] : node.items()) {
      if (is_listed(key, kAnnotationKeywords)) continue;
      if (is_listed(key, kUnsupportedKeywords)) fail(path, in_quotes(key) + " is not supported");
      if (!is_listed(key, kSupportedKeywords)) fail(path, "unknown keyword " + in_quotes(key));
      keywords.push_back(key);
    }
    const auto has = [&](std::string_view key) { return node.contains(std::string(key)); };
    for (const std::string_view alone : {"$ref", "anyOf", "oneOf", "allOf"}) {
      if (!has(alone)) continue;
      for (const std::string& other : keywords) {
        if (other != alone) fail(path, in_quotes(other) + " next to " + in_quotes(alone) + " is not supported");
      }
    }
    if (has("$ref")) return reference(node["$ref"], path + "/$ref");
    if (has("anyOf")) return union_of(node["anyOf"], path + "/anyOf");
    if (has("oneOf")) return union_of(node["oneOf"], path + "/oneOf");  // "exactly one" not checked
    if (has("allOf")) {
      const SchemaJson& all = node["allOf"];
      if (!all.is_array() || all.size() != 1) fail(path + "/allOf", "'allOf' is supported with exactly one schema");
      return schema(all[0], path + "/allOf/0");
    }

    const std::vector<std::string> types = types_of(node, keywords, path);
    if (has("enum") || has("const")) return enumeration(node, keywords, types, path);
    if (types.empty()) return any_value(layout_.max_any_depth);
    std::vector<std::string> options;
    for (const std::string& type : types) options.push_back(typed(node, type, path));
    return pattern_alternation(options);
  }

  std::string any_value(int32_t depth) {
    if (any_values_.empty()) {
      any_values_.push_back(pattern_alternation(
          {"\"" + std::string(kJsonStringChar) + "*\"", std::string(kJsonNumber), "true", "false", "null"}));
    }
    while (static_cast<int32_t>(any_values_.size()) <= depth) {
      const std::string inner = any_values_.back();
      const std::string item = inner + tail_;
      const std::string array = "\\[" + gap_ + optional_group(item + "(?:" + comma_ + item + ")*") + "\\]";
      any_values_.push_back(pattern_alternation({any_values_.front(), array, any_object(inner)}));
    }
    return any_values_[static_cast<std::size_t>(depth)];
  }

  // An object of string keys and `value`s.
  std::string any_object(const std::string& value) const {
    const std::string member = "\"" + std::string(kJsonStringChar) + "*\"" + colon_ + value + tail_;
    return "\\{" + gap_ + optional_group(member + "(?:" + comma_ + member + ")*") + "\\}";
  }

 private:
  [[noreturn]] static void fail(const std::string& path, const std::string& problem) {
    throw JsonSchemaError(path, problem);
  }

  // The types a schema allows: its "type", or the one type its keywords belong to; none: any.
  std::vector<std::string> types_of(const SchemaJson& node, const std::vector<std::string>& keywords,
                                    const std::string& path) const {
    std::vector<std::string> types;
    if (node.contains("type")) {
      const SchemaJson& type = node["type"];
      const std::vector<SchemaJson> names = type.is_array() ? type.get<std::vector<SchemaJson>>() : std::vector{type};
      if (names.empty()) fail(path + "/type", "'type' lists no type");
      for (const SchemaJson& name : names) {
        const auto& table = keywords_by_type();
        const bool known = name.is_string() && std::any_of(table.begin(), table.end(), [&](const TypeKeywords& entry) {
                             return entry.type == name.get_ref<const std::string&>();
                           });
        if (!known) fail(path + "/type", "unknown type " + name.dump());
        if (std::find(types.begin(), types.end(), name.get<std::string>()) == types.end()) {
          types.push_back(name.get<std::string>());
        }
      }
    } else {
      // As XGrammar does, {"properties": ...} without a type is taken for an object (the schema
      // also allows any value that is not an object: narrower, and what was meant).
      for (const std::string& keyword : keywords) {
        if (applies_to(keyword, "integer")) fail(path, in_quotes(keyword) + " needs \"type\": \"integer\"");
        for (const std::string_view type : {"string", "object", "array"}) {
          if (!applies_to(keyword, type)) continue;
          if (!types.empty() && types.front() != type) {
            fail(path,
                 in_quotes(keyword) + " next to keywords of type " + in_quotes(types.front()) + " needs a 'type'");
          }
          types.assign(1, std::string(type));
        }
      }
    }
    for (const std::string& keyword : keywords) {
      if (keyword == "type" || keyword == "enum" || keyword == "const") continue;
      if (std::any_of(types.begin(), types.end(), [&](const std::string& type) { return applies_to(keyword, type); })) {
        continue;
      }
      if (std::find(types.begin(), types.end(), "number") != types.end() && applies_to(keyword, "integer")) {
        fail(path, in_quotes(keyword) + " is not supported for type 'number' (only for 'integer')");
      }
      std::string listed;
      for (const std::string& type : types) listed += (listed.empty() ? "" : ", ") + in_quotes(type);
      fail(path, in_quotes(keyword) + " does not apply to type " + listed);
    }
    return types;
  }

  std::string typed(const SchemaJson& node, const std::string& type, const std::string& path) {
    if (type == "string") return string_value(node, path);
    if (type == "integer") return integer_value(node, path);
    if (type == "number") return std::string(kJsonNumber);
    if (type == "boolean") return "(?:true|false)";
    if (type == "null") return "null";
    if (type == "object") return object_value(node, path);
    return array_value(node, path);
  }

  std::string reference(const SchemaJson& ref, const std::string& path) {
    if (!ref.is_string()) fail(path, "'$ref' must be a string");
    const std::string& target = ref.get_ref<const std::string&>();
    if (target.empty() || target[0] != '#')
      fail(path, "only a $ref into this schema ('#...') is supported, got " + in_quotes(target));
    if (std::find(ref_stack_.begin(), ref_stack_.end(), target) != ref_stack_.end()) {
      fail(path, "recursive $ref " + in_quotes(target) + " is not supported");
    }
    if (const auto it = ref_patterns_.find(target); it != ref_patterns_.end()) return it->second;
    const std::string pointer = target.substr(1);
    const SchemaJson* resolved = nullptr;
    try {
      resolved = &root_.at(SchemaJson::json_pointer(pointer));
    } catch (const nlohmann::json::exception&) {
      fail(path, "$ref " + in_quotes(target) + " does not name a schema in this document");
    }
    ref_stack_.push_back(target);
    std::string pattern = schema(*resolved, pointer);
    ref_stack_.pop_back();
    ref_patterns_.emplace(target, pattern);
    return pattern;
  }

  std::string union_of(const SchemaJson& options, const std::string& path) {
    if (!options.is_array() || options.empty()) fail(path, "must be a non-empty array of schemas");
    std::vector<std::string> patterns;
    for (std::size_t i = 0; i < options.size(); ++i)
      patterns.push_back(schema(options[i], path + "/" + std::to_string(i)));
    return pattern_alternation(patterns);
  }

  // --- literals ---

  std::string literal(const SchemaJson& value) const {
    if (value.is_object()) {
      std::vector<std::string> members;
      for (const auto& [key, member] : value.items()) {
        members.push_back(escape_regex(SchemaJson(key).dump()) + colon_ + literal(member) + tail_);
      }
      return "\\{" + gap_ + joined(members) + "\\}";
    }
    if (value.is_array()) {
      std::vector<std::string> items;
      for (const SchemaJson& item : value) items.push_back(literal(item) + tail_);
      return "\\[" + gap_ + joined(items) + "\\]";
    }
    return escape_regex(value.dump());
  }

  std::string joined(const std::vector<std::string>& items) const {
    std::string out;
    for (std::size_t i = 0; i < items.size(); ++i) out += (i ? comma_ : "") + items[i];
    return out;
  }

  static bool has_type(const SchemaJson& value, const std::string& type) {
    if (type == "integer") {
      return value.is_number_integer() ||
             (value.is_number_float() && std::trunc(value.get<double>()) == value.get<double>());
    }
    return type == value.type_name();  // nlohmann's names: "number" for every number
  }

  std::string enumeration(const SchemaJson& node, const std::vector<std::string>& keywords,
                          const std::vector<std::string>& types, const std::string& path) {
    for (const std::string& keyword : keywords) {
      if (keyword != "type" && keyword != "enum" && keyword != "const") {
        fail(path, in_quotes(keyword) + " next to " + in_quotes(node.contains("enum") ? "enum" : "const") +
                       " is not supported");
      }
    }
    if (node.contains("enum") && node.contains("const")) fail(path, "'enum' next to 'const' is not supported");
    std::vector<SchemaJson> values;
    if (node.contains("const")) {
      values.push_back(node["const"]);
    } else {
      if (!node["enum"].is_array() || node["enum"].empty()) fail(path + "/enum", "'enum' must be a non-empty array");
      values = node["enum"].get<std::vector<SchemaJson>>();
    }
    std::vector<std::string> options;
    for (const SchemaJson& value : values) {
      const bool typed_ok = types.empty() || std::any_of(types.begin(), types.end(), [&](const std::string& type) {
                              return has_type(value, type);
                            });
      if (typed_ok) options.push_back(literal(value));  // a value of another type can never validate
    }
    if (options.empty())
      fail(path, "no value of " + in_quotes(node.contains("enum") ? "enum" : "const") + " has the schema's type");
    return pattern_alternation(options);
  }

  // --- strings ---

  // A count keyword (minLength, maxItems, ...); past 2^40 it is as good as unbounded.
  static std::optional<int64_t> count_keyword(const SchemaJson& node, const char* key, const std::string& path) {
    if (!node.contains(key)) return std::nullopt;
    const SchemaJson& value = node[key];
    if (!value.is_number_integer() || (!value.is_number_unsigned() && value.get<int64_t>() < 0)) {
      fail(path + "/" + key, in_quotes(key) + " must be a non-negative integer");
    }
    return static_cast<int64_t>(std::min<uint64_t>(value.get<uint64_t>(), uint64_t{1} << 40));
  }

  std::string string_value(const SchemaJson& node, const std::string& path) {
    const std::optional<int64_t> min_length = count_keyword(node, "minLength", path);
    const std::optional<int64_t> max_length = count_keyword(node, "maxLength", path);
    const bool has_length = min_length || max_length;
    if (node.contains("pattern")) {
      if (has_length) fail(path, "'pattern' together with 'minLength' or 'maxLength' is not supported");
      if (node.contains("format")) fail(path, "'pattern' together with 'format' is not supported");
      if (!node["pattern"].is_string()) fail(path + "/pattern", "'pattern' must be a string");
      return "\"" + json_spelled_pattern(node["pattern"].get<std::string>(), path + "/pattern") + "\"";
    }
    if (node.contains("format")) {
      if (has_length) fail(path, "'format' together with 'minLength' or 'maxLength' is not supported");
      if (!node["format"].is_string()) fail(path + "/format", "'format' must be a string");
      const std::string& format = node["format"].get_ref<const std::string&>();
      std::string pattern;
      if (format == "date") {
        pattern = kDatePattern;
      } else if (format == "time") {
        pattern = kTimePattern;
      } else if (format == "date-time") {
        pattern = std::string(kDatePattern) + "T" + std::string(kTimePattern);
      } else if (format == "uuid") {
        pattern = kUuidPattern;
      } else if (format == "ipv4") {
        pattern = std::string(kIpv4Octet) + "(?:\\." + std::string(kIpv4Octet) + "){3}";
      } else if (format == "email") {
        pattern = kEmailPattern;
      } else {
        fail(path + "/format", "format " + in_quotes(format) + " is not supported");
      }
      return "\"" + pattern + "\"";
    }
    const int64_t min = min_length.value_or(0);
    if (max_length && *max_length < min) fail(path, "'maxLength' is below 'minLength'");
    return "\"" + pattern_repeat(kJsonStringChar, min, max_length.value_or(-1)) + "\"";
  }

  // The pattern with every character it matches spelled as dump() would inside a string; a
  // leading ^ and a trailing $ dropped (the match is whole anyway).
  static std::string json_spelled_pattern(std::string_view pattern, const std::string& path) {
    try {
      compile_regex(pattern);
    } catch (const RegexError& error) {
      fail(path, "'pattern' is not a supported regex: " + std::string(error.what()));
    }
    std::string out;
    std::size_t at = !pattern.empty() && pattern[0] == '^' ? 1 : 0;
    while (at < pattern.size()) {
      const char c = pattern[at];
      if (c == '$' && at + 1 == pattern.size()) break;
      std::size_t length = 0;
      if (c == '\\')
        length = escape_length(pattern, at);
      else if (c == '[')
        length = class_length(pattern, at);
      else if (c == '.' || c == '"' || static_cast<unsigned char>(c) < 0x20)
        length = 1;
      if (length == 0) {
        out += c;  // syntax, or a character that stands as itself
        ++at;
        continue;
      }
      out += json_spelled_atom(pattern.substr(at, length));
      at += length;
    }
    return out;
  }

  // --- integers ---

  // A bound as the integer it makes inclusive (a fraction rounded inward); nothing: none.
  std::optional<int64_t> integer_bound(const SchemaJson& node, const char* key, bool lower, bool exclusive,
                                       const std::string& path) const {
    if (!node.contains(key)) return std::nullopt;
    const SchemaJson& value = node[key];
    if (!value.is_number()) fail(path + "/" + key, in_quotes(key) + " must be a number (draft 2020-12)");
    constexpr double kLimit = 9.2e18;
    if (value.is_number_integer()) {
      if (value.is_number_unsigned() && value.get<uint64_t>() > uint64_t{std::numeric_limits<int64_t>::max()}) {
        fail(path + "/" + key, in_quotes(key) + " is outside the 64-bit integer range");
      }
      const int64_t bound = value.get<int64_t>();
      if (!exclusive) return bound;
      if (lower ? bound == std::numeric_limits<int64_t>::max() : bound == std::numeric_limits<int64_t>::min()) {
        fail(path, "no integer is within the bounds");
      }
      return lower ? bound + 1 : bound - 1;
    }
    const double bound = value.get<double>();
    if (!(std::abs(bound) < kLimit)) fail(path + "/" + key, in_quotes(key) + " is outside the 64-bit integer range");
    const double inward = lower ? (exclusive ? std::floor(bound) + 1 : std::ceil(bound))
                                : (exclusive ? std::ceil(bound) - 1 : std::floor(bound));
    return static_cast<int64_t>(inward);
  }

  std::string integer_value(const SchemaJson& node, const std::string& path) const {
    std::optional<int64_t> low;
    std::optional<int64_t> high;
    for (const auto& [key, exclusive] : {std::pair{"minimum", false}, std::pair{"exclusiveMinimum", true}}) {
      const std::optional<int64_t> bound = integer_bound(node, key, true, exclusive, path);
      if (bound && (!low || *bound > *low)) low = bound;
    }
    for (const auto& [key, exclusive] : {std::pair{"maximum", false}, std::pair{"exclusiveMaximum", true}}) {
      const std::optional<int64_t> bound = integer_bound(node, key, false, exclusive, path);
      if (bound && (!high || *bound < *high)) high = bound;
    }
    if (!low && !high) return std::string(kJsonInteger);
    if (low && high && *low > *high) fail(path, "no integer is within the bounds");
    return integer_span(low, high);
  }

  // --- objects ---

  struct Member {
    std::string pattern;  // with its trailing gap
    bool required = false;
    bool repeated = false;  // the additional properties, last: any number of them
  };

  std::string object_value(const SchemaJson& node, const std::string& path) {
    std::vector<std::string> names;
    std::vector<std::string> values;
    if (node.contains("properties")) {
      const SchemaJson& properties = node["properties"];
      if (!properties.is_object()) fail(path + "/properties", "'properties' must be an object");
      for (const auto& [name, property] : properties.items()) {
        names.push_back(name);
        values.push_back(schema(property, path + "/properties" + pointer_step(name)));
      }
    }
    std::optional<std::string> extra_value;  // none: closed
    const std::string extra_path = path + "/additionalProperties";
    if (node.contains("additionalProperties")) {
      const SchemaJson& additional = node["additionalProperties"];
      if (!additional.is_boolean() || additional.get<bool>()) extra_value = schema(additional, extra_path);
    } else if (layout_.allow_additional_properties) {
      extra_value = any_value(layout_.max_any_depth);
    }
    std::vector<bool> required(names.size(), false);
    if (node.contains("required")) {
      const SchemaJson& list = node["required"];
      if (!list.is_array()) fail(path + "/required", "'required' must be an array of names");
      for (const SchemaJson& name : list) {
        if (!name.is_string()) fail(path + "/required", "'required' must be an array of names");
        const auto it = std::find(names.begin(), names.end(), name.get<std::string>());
        if (it != names.end()) {
          required[static_cast<std::size_t>(it - names.begin())] = true;
        } else if (extra_value) {  // an additional property that must be there: declared last
          names.push_back(name.get<std::string>());
          values.push_back(*extra_value);
          required.push_back(true);
        } else {
          fail(path + "/required", "required property " + in_quotes(name.get<std::string>()) +
                                       " is not in 'properties' and additional properties are not allowed");
        }
      }
    }
    std::vector<Member> members;
    for (std::size_t i = 0; i < names.size(); ++i) {
      members.push_back({escape_regex(SchemaJson(names[i]).dump()) + colon_ + values[i] + tail_, required[i]});
    }
    if (extra_value) {
      NameTrie declared;
      for (const std::string& name : names) {
        NameTrie* node_at = &declared;
        for (const std::string& unit : spelled_units(name)) node_at = &node_at->children[unit];
        node_at->is_name = true;
      }
      members.push_back({"\"" + contents_except(declared) + "\"" + colon_ + *extra_value + tail_, false, true});
    }
    return "\\{" + gap_ + member_sequence(members) + "\\}";
  }

  // The members in order, the optional ones each present or not, joined by commas. Optional
  // members before the first required one are written "member," and those after it ",member";
  // with none required, each optional member but the last occurs twice (see below), so the
  // pattern stays linear in the number of members.
  std::string member_sequence(const std::vector<Member>& members) const {
    const auto first_required =
        std::find_if(members.begin(), members.end(), [](const Member& member) { return member.required; });
    if (first_required != members.end()) {
      std::string out;
      for (auto it = members.begin(); it != first_required; ++it) out += optional_group(it->pattern + comma_);
      out += first_required->pattern;
      for (auto it = first_required + 1; it != members.end(); ++it) {
        if (it->repeated)
          out += "(?:" + comma_ + it->pattern + ")*";
        else
          out += it->required ? comma_ + it->pattern : optional_group(comma_ + it->pattern);
      }
      return out;
    }
    if (members.empty()) return "";
    // Some members from k on, the first written without a comma:
    // from(k) = (?:member_k,)? from(k+1) | member_k, and from(last) = member_last.
    const Member& last = members.back();
    std::string from = last.pattern + (last.repeated ? "(?:" + comma_ + last.pattern + ")*" : "");
    for (std::size_t k = members.size() - 1; k-- > 0;) {
      from = "(?:" + optional_group(members[k].pattern + comma_) + from + "|" + members[k].pattern + ")";
    }
    return optional_group(from);
  }

  // --- arrays ---

  std::string array_value(const SchemaJson& node, const std::string& path) {
    std::vector<std::string> prefix;
    if (node.contains("prefixItems")) {
      const SchemaJson& items = node["prefixItems"];
      if (!items.is_array()) fail(path + "/prefixItems", "'prefixItems' must be an array of schemas");
      for (std::size_t i = 0; i < items.size(); ++i) {
        prefix.push_back(schema(items[i], path + "/prefixItems/" + std::to_string(i)) + tail_);
      }
    }
    std::optional<std::string> rest;  // none: no more items
    if (node.contains("items")) {
      const SchemaJson& items = node["items"];
      if (items.is_array())
        fail(path + "/items", "'items' as an array (draft 7 tuples) is not supported; use 'prefixItems'");
      if (!items.is_boolean() || items.get<bool>()) rest = schema(items, path + "/items") + tail_;
    } else if (prefix.empty() || layout_.allow_additional_properties) {
      rest = any_value(layout_.max_any_depth) + tail_;
    }
    const int64_t min = count_keyword(node, "minItems", path).value_or(0);
    const std::optional<int64_t> max = count_keyword(node, "maxItems", path);
    if (max && *max < min) fail(path, "'maxItems' is below 'minItems'");
    const int64_t num_prefix = static_cast<int64_t>(prefix.size());
    if (!rest && min > num_prefix) fail(path, "'minItems' asks for more items than the array may hold");

    // The items after the prefix, each after a comma.
    std::string body;
    if (rest && (!max || *max > num_prefix)) {
      const int64_t more_min = std::max<int64_t>(min - num_prefix, 0);
      const int64_t more_max = max ? *max - num_prefix : -1;
      if (prefix.empty()) {  // the first has no comma
        const std::string others =
            pattern_repeat(comma_ + *rest, std::max<int64_t>(more_min - 1, 0), more_max < 0 ? -1 : more_max - 1);
        body = more_min > 0 ? *rest + others : optional_group(*rest + others);
      } else {
        body = pattern_repeat(comma_ + *rest, more_min, more_max);
      }
    }
    // Then the prefix from its end: item i may be the end of the array when i >= minItems.
    for (int64_t i = num_prefix - 1; i >= 0; --i) {
      if (max && i >= *max) continue;
      const std::string item = (i > 0 ? comma_ : "") + prefix[static_cast<std::size_t>(i)] + body;
      body = i >= min ? optional_group(item) : item;
    }
    return "\\[" + gap_ + body + "\\]";
  }

  const SchemaJson& root_;
  const JsonLayout& layout_;
  std::string gap_;    // between tokens where json.dumps writes nothing: after [ and {
  std::string tail_;   // after an item, before , ] or }
  std::string comma_;  // between items
  std::string colon_;  // between a key and its value
  std::vector<std::string> ref_stack_;
  std::map<std::string, std::string> ref_patterns_;
  std::vector<std::string> any_values_;  // by nesting depth
};

}  // namespace

std::string json_schema_regex(const nlohmann::ordered_json& schema, const JsonLayout& layout) {
  SchemaPatternBuilder builder(schema, layout);
  return builder.schema(schema, "");
}

std::string json_object_regex(const JsonLayout& layout) {
  const SchemaJson no_schema = SchemaJson::object();
  SchemaPatternBuilder builder(no_schema, layout);
  return builder.any_object(builder.any_value(layout.max_any_depth - 1));
}

}  // namespace pagedllm::structured
