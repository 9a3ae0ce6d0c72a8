// Pre-tokenizer splits. Expected values come from HF tokenizers 0.23 (pre_tokenize_str), turned
// from byte-level characters back into bytes.
#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

#include "core/tokenizer/gguf_pre_tokenizer.h"
#include "core/tokenizer/pre_tokenizer.h"
#include "core/tokenizer/regex.h"
#include "tests/tokenizer/tiny_tokenizers.h"

namespace pagedllm::tokenizer {
namespace {

using Words = std::vector<std::string>;
using testing::pre_tokenize;

const std::vector<PreTokenizerStep> kGpt2{ByteLevelStep{false, true, true}};
const std::vector<PreTokenizerStep> kLlama3{SplitStep{std::string(kLlama3Pattern)}, ByteLevelStep{false, true, false}};
const std::vector<PreTokenizerStep> kSmollm{DigitsStep{true}, ByteLevelStep{false, true, true}};

Words split_with(SplitBehavior behavior, bool invert, const std::string& text) {
  return pre_tokenize({SplitStep{"-+|x", true, behavior, invert}, ByteLevelStep{false, true, false}}, text);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(pre_tokenizer_splits)

BOOST_AUTO_TEST_CASE(contractions_split_as_each_family_does) {
  const std::string text = "I'm sure they'll say it's DONE'S fine";
  BOOST_TEST(pre_tokenize(kGpt2, text) ==
                 (Words{"I", "'m", " sure", " they", "'ll", " say", " it", "'s", " DONE", "'", "S", " fine"}),
             boost::test_tools::per_element());
  // Llama 3 matches contractions case-insensitively.
  BOOST_TEST(pre_tokenize(kLlama3, text) ==
                 (Words{"I", "'m", " sure", " they", "'ll", " say", " it", "'s", " DONE", "'S", " fine"}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(digits_group_by_family) {
  const std::string text = "price: 12345 dollars";
  BOOST_TEST(pre_tokenize(kGpt2, text) == (Words{"price", ":", " 12345", " dollars"}),
             boost::test_tools::per_element());
  BOOST_TEST(pre_tokenize(kLlama3, text) == (Words{"price", ":", " ", "123", "45", " dollars"}),
             boost::test_tools::per_element());
  BOOST_TEST(pre_tokenize(kSmollm, text) == (Words{"price", ":", " ", "1", "2", "3", "4", "5", " dollars"}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(runs_of_spaces_tabs_and_newlines_keep_the_last_space_for_the_next_word) {
  const std::string text = "a   b\t\tc  \n\n  d";
  BOOST_TEST(pre_tokenize(kGpt2, text) == (Words{"a", "  ", " b", "\t", "\t", "c", "  \n\n ", " d"}),
             boost::test_tools::per_element());
  BOOST_TEST(pre_tokenize(kLlama3, text) == (Words{"a", "  ", " b", "\t", "\tc", "  \n\n", " ", " d"}),
             boost::test_tools::per_element());
  BOOST_TEST(pre_tokenize(kGpt2, "x\r\n\ry") == (Words{"x", "\r\n", "\r", "y"}), boost::test_tools::per_element());
  BOOST_TEST(pre_tokenize(kLlama3, "x\r\n\ry") == (Words{"x", "\r\n\r", "y"}), boost::test_tools::per_element());
  BOOST_TEST(pre_tokenize(kGpt2, "  leading and trailing  ") == (Words{" ", " leading", " and", " trailing", "  "}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(punctuation_emoji_and_cjk) {
  BOOST_TEST(pre_tokenize(kGpt2, "Hello!!! (ok?) ...") == (Words{"Hello", "!!!", " (", "ok", "?)", " ..."}),
             boost::test_tools::per_element());
  const std::string emoji = "emoji \xF0\x9F\x98\x80\xF0\x9F\x91\x8D\xF0\x9F\x8F\xBD ok";
  BOOST_TEST(pre_tokenize(kGpt2, emoji) == (Words{"emoji", " \xF0\x9F\x98\x80\xF0\x9F\x91\x8D\xF0\x9F\x8F\xBD", " ok"}),
             boost::test_tools::per_element());
  // "中文字符测试，好的。"
  const std::string cjk =
      "\xE4\xB8\xAD\xE6\x96\x87\xE5\xAD\x97\xE7\xAC\xA6\xE6\xB5\x8B\xE8\xAF\x95\xEF\xBC\x8C"
      "\xE5\xA5\xBD\xE7\x9A\x84\xE3\x80\x82";
  BOOST_TEST(
      pre_tokenize(kGpt2, cjk) == (Words{cjk.substr(0, 18), cjk.substr(18, 3), cjk.substr(21, 6), cjk.substr(27)}),
      boost::test_tools::per_element());
  BOOST_TEST(pre_tokenize(kLlama3, cjk) == (Words{cjk.substr(0, 18), cjk.substr(18, 9), cjk.substr(27)}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(whitespace_follows_oniguruma_not_pcre2) {
  // U+0085 is white space for HF (so " " and it split apart before 'b'); U+180E is not (it
  // joins the space as punctuation), though PCRE2's own \s holds it.
  BOOST_TEST(pre_tokenize(kGpt2,
                          "a \xC2\x85"
                          "b") == (Words{"a", " ", "\xC2\x85", "b"}),
             boost::test_tools::per_element());
  BOOST_TEST(pre_tokenize(kGpt2, "x \xE1\xA0\x8Ey") == (Words{"x", " \xE1\xA0\x8E", "y"}),
             boost::test_tools::per_element());
  BOOST_TEST(pre_tokenize(kGpt2, "x \xC2\xA0y") == (Words{"x", " ", "\xC2\xA0", "y"}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(split_behaviors_match_hf) {
  const std::string text = "-a-bx--c-";
  using B = SplitBehavior;
  BOOST_TEST(split_with(B::removed, false, text) == (Words{"a", "b", "c"}), boost::test_tools::per_element());
  BOOST_TEST(split_with(B::removed, true, text) == (Words{"-", "-", "x", "--", "-"}), boost::test_tools::per_element());
  BOOST_TEST(split_with(B::isolated, false, text) == (Words{"-", "a", "-", "b", "x", "--", "c", "-"}),
             boost::test_tools::per_element());
  BOOST_TEST(split_with(B::merged_with_previous, false, text) == (Words{"-", "a-", "bx", "--", "c-"}),
             boost::test_tools::per_element());
  BOOST_TEST(split_with(B::merged_with_previous, true, text) == (Words{"-a", "-b", "x", "--c", "-"}),
             boost::test_tools::per_element());
  BOOST_TEST(split_with(B::merged_with_next, false, text) == (Words{"-a", "-b", "x", "--c", "-"}),
             boost::test_tools::per_element());
  BOOST_TEST(split_with(B::merged_with_next, true, text) == (Words{"-", "a-", "bx", "--", "c-"}),
             boost::test_tools::per_element());
  BOOST_TEST(split_with(B::contiguous, false, text) == (Words{"-", "a", "-", "b", "x--", "c", "-"}),
             boost::test_tools::per_element());
  const std::vector<PreTokenizerStep> literal{SplitStep{"--", false, B::isolated, false},
                                              ByteLevelStep{false, true, false}};
  BOOST_TEST(pre_tokenize(literal, "a--b---c") == (Words{"a", "--", "b", "--", "-c"}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(prefix_space_goes_on_every_piece_and_later_steps_see_byte_level_text) {
  // Digits (runs) then ByteLevel(add_prefix_space): each piece gets its own space.
  const std::vector<PreTokenizerStep> digits{DigitsStep{false}, ByteLevelStep{true, true, true}};
  BOOST_TEST(
      pre_tokenize(digits, "ab12 3x\xD9\xA3\xD9\xA4") == (Words{" ab", " 12", " ", " 3", " x", " \xD9\xA3\xD9\xA4"}),
      boost::test_tools::per_element());
  // After ByteLevel a space is 'Ġ', which a later Split can name.
  const std::vector<PreTokenizerStep> after{ByteLevelStep{false, true, false},
                                            SplitStep{"\xC4\xA0", true, SplitBehavior::merged_with_next, false}};
  BOOST_TEST(pre_tokenize(after, "a b  c") == (Words{"a", " b", " ", " c"}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(a_pre_tokenizer_needs_exactly_one_byte_level_step) {
  BOOST_CHECK_THROW(PreTokenizer({DigitsStep{true}}), std::invalid_argument);
  BOOST_CHECK_THROW(PreTokenizer({ByteLevelStep{}, ByteLevelStep{}}), std::invalid_argument);
  BOOST_CHECK_THROW(PreTokenizer({SplitStep{"(unclosed"}, ByteLevelStep{}}), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(a_long_whitespace_run_splits_without_exhausting_the_regex_stack) {
  const std::string text = "a" + std::string(200000, ' ') + "b" + std::string(100000, '\n');
  const Words words = pre_tokenize(kLlama3, text);
  BOOST_TEST(words == (Words{"a", std::string(199999, ' '), " b", std::string(100000, '\n')}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(oniguruma_pattern_translation)

BOOST_AUTO_TEST_CASE(space_and_word_classes_are_rewritten_outside_and_inside_brackets) {
  const std::string translated = translate_oniguruma_pattern(R"(\s+(?!\S)|[^\s\p{L}]|\\s|\w)");
  BOOST_TEST(translated.rfind("[\\t\\n", 0) == 0u);                                 // \s
  BOOST_TEST(translated.find("(?![^\\t\\n") != std::string::npos);                  // \S
  BOOST_TEST(translated.find("|[^\\t\\n") != std::string::npos);                    // \s inside [^...]
  BOOST_TEST(translated.find("|\\\\s|") != std::string::npos);                      // an escaped backslash stays
  BOOST_TEST(translated.find("[\\p{L}\\p{M}\\p{N}\\p{Pc}]") != std::string::npos);  // \w
  BOOST_TEST(translate_oniguruma_pattern(R"([]\s])") ==
             "[]\\t\\n\\x0B\\f\\r\\x20\\x{85}\\x{A0}\\x{1680}\\x{2000}-"
             "\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}]");
  std::vector<RegexMatch> matches;
  Regex(R"(\w+)").find_all("ab\xCC\x81_c d", matches);  // a combining mark is a word character
  BOOST_TEST(matches.size() == 2u);
}

BOOST_AUTO_TEST_CASE(empty_matches_are_not_repeated) {
  std::vector<RegexMatch> matches;
  Regex("a*").find_all("baac", matches);
  // As the onig crate: empty at 0, "aa" at 1, then empty at 4 (the empty match at 3 follows a match).
  BOOST_TEST(matches.size() == 3u);
  BOOST_TEST(matches[1].start == 1u);
  BOOST_TEST(matches[1].end == 3u);
  BOOST_TEST(matches[2].start == 4u);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace pagedllm::tokenizer
