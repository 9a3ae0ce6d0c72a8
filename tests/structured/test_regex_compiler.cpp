// The regex compiler (core/structured/regex_compiler.h): random patterns over a small alphabet
// against std::regex (ECMAScript) on every short text, UTF-8 handling of ".", classes and
// negations (well-formed encodings only), dead ends refused at their first byte, and errors that
// name the unsupported feature and its offset.
#include <boost/test/unit_test.hpp>

#include <random>
#include <regex>
#include <string>
#include <vector>

#include "core/structured/code_point_set.h"
#include "core/structured/regex_compiler.h"
#include "core/tokenizer/utf8.h"

namespace structured = pagedllm::structured;

namespace {

// A random pattern over a, b, 1 and space, of the syntax both engines read alike.
std::string random_pattern(std::mt19937& rng, int depth) {
  const auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  const char* atoms[] = {"a", "b", "1", " ", ".", "[ab]", "[^a]", "[a-b1]", "\\d", "\\s", "\\w", "\\W", "(?:ab)"};
  std::string out;
  const int pieces = 1 + pick(3);
  for (int i = 0; i < pieces; ++i) {
    std::string atom;
    if (depth < 2 && pick(4) == 0) {
      atom = "(" + random_pattern(rng, depth + 1) + (pick(2) ? "|" + random_pattern(rng, depth + 1) : "") + ")";
    } else {
      atom = atoms[pick(static_cast<int>(std::size(atoms)))];
    }
    const char* quantifiers[] = {"", "", "", "*", "+", "?", "{2}", "{1,2}", "{0,}", "*?"};
    out += atom + quantifiers[pick(static_cast<int>(std::size(quantifiers)))];
  }
  return out;
}

std::vector<std::string> all_texts(const std::string& alphabet, std::size_t max_length) {
  std::vector<std::string> texts{""};
  for (std::size_t begin = 0, length = 0; length < max_length; ++length) {
    const std::size_t end = texts.size();
    for (std::size_t i = begin; i < end; ++i) {
      for (const char c : alphabet) texts.push_back(texts[i] + c);
    }
    begin = end;
  }
  return texts;
}

std::string error_of(const std::string& pattern) {
  try {
    structured::compile_regex(pattern);
  } catch (const structured::RegexError& error) {
    return error.what();
  }
  return "(compiled)";
}

}  // namespace

BOOST_AUTO_TEST_SUITE(regex_compiler)

BOOST_AUTO_TEST_CASE(random_patterns_match_what_std_regex_matches) {
  std::mt19937 rng(7);
  const std::vector<std::string> texts = all_texts("ab1 ", 4);  // 341 texts
  int64_t matched = 0;
  for (int p = 0; p < 150; ++p) {
    const std::string pattern = random_pattern(rng, 0);
    const structured::ByteDfa dfa = structured::compile_regex(pattern);
    const std::regex oracle(pattern, std::regex::ECMAScript);
    for (const std::string& text : texts) {
      const bool expected = std::regex_match(text, oracle);
      matched += expected;
      BOOST_TEST_REQUIRE(dfa.matches(text) == expected, "pattern '" << pattern << "' on '" << text << "'");
    }
  }
  BOOST_TEST_MESSAGE("random patterns: " << matched << " of " << 150 * texts.size() << " (pattern, text) pairs match");
  BOOST_TEST(matched > 2'000);  // the patterns are not all trivial
}

BOOST_AUTO_TEST_CASE(dot_classes_and_negations_take_whole_utf8_characters) {
  const structured::ByteDfa dot2 = structured::compile_regex(".{2}");
  BOOST_TEST(
      dot2.matches("\xC3\xA9"
                   "a"));                                    // é a
  BOOST_TEST(!dot2.matches("\xC3\xA9"));                     // one character in two bytes
  BOOST_TEST(dot2.matches("\xF0\x9F\x98\x80\xE2\x82\xAC"));  // 😀 €
  BOOST_TEST(!dot2.matches("a\n"));
  const structured::ByteDfa not_quote = structured::compile_regex("[^\"\\\\]*");
  BOOST_TEST(not_quote.matches("caf\xC3\xA9 \xE4\xB8\xAD"));
  BOOST_TEST(!not_quote.matches("a\"b"));
  // Only well-formed UTF-8: overlong forms, surrogates, stray continuation bytes and code points
  // past U+10FFFF are refused.
  for (const char* bad : {"\xC0\x80", "\xE0\x80\x80", "\xED\xA0\x80", "\x80", "\xF4\x90\x80\x80", "\xC3"}) {
    BOOST_TEST(!not_quote.matches(bad), "accepted " << std::string(bad).size() << " bad bytes");
  }
  const structured::ByteDfa range = structured::compile_regex("[\\u00e0-\\u00ff\\u{1F600}]+");
  BOOST_TEST(range.matches("\xC3\xA9\xF0\x9F\x98\x80"));
  BOOST_TEST(!range.matches("\xC3\x9F"));  // ß is U+00DF, below the range
}

BOOST_AUTO_TEST_CASE(utf8_sequences_cover_exactly_the_set) {
  // Every code point of a few sets (and a sample of their complements) is accepted exactly when
  // it is a member: checked through the compiled class, character by character.
  const structured::CodePointSet set = [] {
    structured::CodePointSet s;
    s.add(0x41, 0x5A);
    s.add(0x7F0, 0x812);
    s.add(0xD7F0, 0xE010);  // across the surrogates, which are never members
    s.add(0xFFF0, 0x10010);
    return s;
  }();
  for (const structured::CodePointSet& tested : {set, set.complement()}) {
    // Build the class as a pattern of \u{...} ranges.
    std::string pattern = "[";
    for (const auto& [lo, hi] : tested.ranges()) {
      char buffer[40];
      std::snprintf(buffer, sizeof buffer, "\\u{%X}-\\u{%X}", static_cast<unsigned>(lo), static_cast<unsigned>(hi));
      pattern += buffer;
    }
    pattern += "]";
    const structured::ByteDfa dfa = structured::compile_regex(pattern);
    for (char32_t c = 0; c <= 0x10100; c += (c < 0x11000 ? 1 : 97)) {
      if (c >= 0xD800 && c <= 0xDFFF) continue;
      std::string encoded;
      pagedllm::tokenizer::append_utf8(encoded, c);
      BOOST_TEST_REQUIRE(dfa.matches(encoded) == tested.contains(c), "U+" << std::hex << static_cast<unsigned>(c));
    }
  }
}

BOOST_AUTO_TEST_CASE(a_prefix_that_cannot_complete_is_refused_at_its_first_byte) {
  const structured::ByteDfa dfa = structured::compile_regex("(yes|no)[^\\x00-\\u{10FFFF}]?");
  BOOST_TEST(dfa.walk(dfa.start, "ye") != structured::ByteDfa::kDead);
  BOOST_TEST(dfa.walk(dfa.start, "yn") == structured::ByteDfa::kDead);
  BOOST_TEST(dfa.walk(dfa.start, "x") == structured::ByteDfa::kDead);
  // An empty class can never be matched: "a[^\x00-\u{10FFFF}]" matches nothing, so even "a" is dead.
  const structured::ByteDfa never = structured::compile_regex("a[^\\x00-\\u{10FFFF}]");
  BOOST_TEST(never.walk(never.start, "a") == structured::ByteDfa::kDead);
}

BOOST_AUTO_TEST_CASE(unsupported_syntax_is_refused_naming_the_feature_and_offset) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"(a)\\1", "offset 3: backreferences are not supported"},
      {"a(?=b)", "offset 1: lookaround assertions are not supported"},
      {"(?<name>a)", "offset 0: named groups are not supported"},
      {"(?i)a", "offset 0: group syntax (?i...) is not supported"},
      {"(ab", "offset 0: missing ')'"},
      {"ab)", "offset 2: unbalanced ')'"},
      {"[ab", "offset 0: missing ']'"},
      {"*a", "offset 0: nothing to repeat"},
      {"a**", "offset 2: multiple repeat"},
      {"a{3,2}", "offset 1: repeat bounds {3,2} are out of order"},
      {"a{5000}", "repeat bound 5000 is over 1000"},
      {"[z-a]", "offset 1: range out of order"},
      {"a\\bb", "offset 1: word boundaries"},
      {"\\q", "offset 0: unknown escape \\q"},
      {"a^b", "offset 1: '^' inside the pattern"},
      {"\\p{L}", "offset 0: Unicode property classes"},
      {"(a{1000}){1000}", "the pattern is too large"},
      {"a\xC0\x80", "offset 1: the pattern is not valid UTF-8"},  // overlong
      {"\xF8\x88\x80\x80\x80", "offset 0: the pattern is not valid UTF-8"},
  };
  for (const auto& [pattern, expected] : cases) {
    const std::string error = error_of(pattern);
    BOOST_TEST(error.find(expected) != std::string::npos, "'" << pattern << "': " << error);
  }
  // Nesting is bounded (the parser and the construction recurse per level): a client's deep
  // pattern is refused, not a stack overflow in the server.
  std::string deep;
  deep.append(100'000, '(').append("a").append(100'000, ')');
  BOOST_TEST(error_of(deep) == "regex, offset 500: groups nest more than 500 deep");
  std::string fine;
  fine.append(500, '(').append("a").append(500, ')');
  BOOST_TEST(structured::compile_regex(fine).matches("a"));
  // What is accepted: anchors at the ends, braces that are not a count, lazy quantifiers.
  BOOST_TEST(structured::compile_regex("^a{,2}$").matches("a{,2}"));
  BOOST_TEST(structured::compile_regex("^ab*?$").matches("abbb"));
}

BOOST_AUTO_TEST_SUITE_END()
