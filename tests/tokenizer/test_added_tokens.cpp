// Added tokens are matched in the raw text before pre-tokenization, as HF's AddedVocabulary
// does. Expected values checked against HF tokenizers 0.23 with the same tokens and flags.
#include <boost/test/unit_test.hpp>

#include <vector>

#include "core/model/model_errors.h"
#include "core/tokenizer/tokenizer.h"
#include "tests/tokenizer/tiny_tokenizers.h"

namespace pagedllm::tokenizer {
namespace {

using Ids = std::vector<TokenId>;

constexpr TokenId kImStart = 260;
constexpr TokenId kMask = 261;
constexpr TokenId kCat = 262;
constexpr TokenId kImPrefix = 263;
constexpr TokenId kImEnd = 264;

TokenizerSpec spec_with_added_tokens() {
  TokenizerSpec spec = testing::byte_level_spec({{"a", "b"}, {"b", "c"}, {"ab", "c"}, {"c", "c"}});  // ids to 259
  spec.added_tokens = {
      {kImStart, "<|im_start|>", true, false, false, false, false},
      {kMask, "<mask>", false, false, true, true, false},
      {kCat, "cat", false, true, false, false, false},
      {kImPrefix, "<|im", false, false, false, false, false},
      {kImEnd, "<|im_end|>", true, false, false, false, false},
  };
  return spec;
}

Ids ids_of(const std::string& text) {
  Ids ids;
  for (const char c : text) ids.push_back(static_cast<std::uint8_t>(c));
  return ids;
}

Ids join(std::initializer_list<Ids> parts) {
  Ids out;
  for (const Ids& part : parts) out.insert(out.end(), part.begin(), part.end());
  return out;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(added_tokens)

BOOST_AUTO_TEST_CASE(special_tokens_are_split_off_before_bpe) {
  const Tokenizer tokenizer(spec_with_added_tokens());
  BOOST_TEST(tokenizer.encode("<|im_start|>abc<|im_end|>") == (Ids{kImStart, 258, kImEnd}),
             boost::test_tools::per_element());
  BOOST_TEST(tokenizer.encode("<<|im_start|>>") == (Ids{'<', kImStart, '>'}), boost::test_tools::per_element());
  // The longest token starting at the leftmost match wins; a prefix alone is matched alone.
  BOOST_TEST(tokenizer.encode("<|im_start") == join({{kImPrefix}, ids_of("_start")}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(unparsed_special_tokens_are_plain_text_and_hide_what_they_overlap) {
  const Tokenizer tokenizer(spec_with_added_tokens());
  const EncodeOptions plain{true, false};
  // "<|im" is not found inside the skipped "<|im_start|>" (the search goes on after it).
  BOOST_TEST(tokenizer.encode("<|im_start|>abc<|im_end|>", plain) ==
                 join({ids_of("<|im_start|>"), {258}, ids_of("<|im_end|>")}),
             boost::test_tools::per_element());
  // Non-special added tokens are still matched.
  BOOST_TEST(tokenizer.encode("<|im_sta", plain) == join({{kImPrefix}, ids_of("_sta")}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(lstrip_and_rstrip_take_the_surrounding_whitespace) {
  const Tokenizer tokenizer(spec_with_added_tokens());
  BOOST_TEST(tokenizer.encode("x <mask>  y") == (Ids{'x', kMask, 'y'}), boost::test_tools::per_element());
  BOOST_TEST(tokenizer.encode("a\n<mask>\tb") == (Ids{'a', kMask, 'b'}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(single_word_tokens_match_only_between_non_word_characters) {
  const Tokenizer tokenizer(spec_with_added_tokens());
  BOOST_TEST(tokenizer.encode("cat concat cat.") == join({{kCat, ' '}, ids_of("concat"), {' ', kCat, '.'}}),
             boost::test_tools::per_element());
  // Word characters as Rust's regex \w: '½' (a number, not a digit) is none, while an
  // Arabic-Indic digit, 'é' and the zero-width joiner are.
  const EncodeOptions options{false, true};
  BOOST_TEST(tokenizer.encode("cat\xC2\xBD", options) == (Ids{kCat, 0xC2, 0xBD}), boost::test_tools::per_element());
  BOOST_TEST(tokenizer.encode("cat\xD9\xA3", options) == ids_of("cat\xD9\xA3"), boost::test_tools::per_element());
  BOOST_TEST(tokenizer.encode("\xC3\xA9"
                              "cat",
                              options) == ids_of("\xC3\xA9"
                                                 "cat"),
             boost::test_tools::per_element());
  BOOST_TEST(tokenizer.encode("cat\xE2\x80\x8D", options) == ids_of("cat\xE2\x80\x8D"),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(the_template_adds_bos_and_eos_only_when_asked) {
  TokenizerSpec spec = spec_with_added_tokens();
  spec.post_processor.push_back(ByteLevelProcessorStep{});
  spec.post_processor.push_back(
      TemplateStep{{{false, "<|im_start|>", 0}, {true, "A", 0}, {false, "<|im_end|>", 0}},
                   {},
                   {{"<|im_start|>", {kImStart}, {"<|im_start|>"}}, {"<|im_end|>", {kImEnd}, {"<|im_end|>"}}}});
  const Tokenizer tokenizer(spec);
  BOOST_TEST(tokenizer.encode("abc") == (Ids{kImStart, 258, kImEnd}), boost::test_tools::per_element());
  BOOST_TEST(tokenizer.encode("abc", {false, true}) == (Ids{258}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(added_ids_must_fill_the_vocabulary_without_gaps) {
  TokenizerSpec spec = spec_with_added_tokens();
  spec.added_tokens.push_back({300, "<far>", true, false, false, false, false});
  BOOST_CHECK_THROW(Tokenizer{spec}, model::ModelFormatError);
  spec = spec_with_added_tokens();
  spec.added_tokens.push_back({kMask, "<again>", true, false, false, false, false});
  BOOST_CHECK_THROW(Tokenizer{spec}, model::ModelFormatError);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace pagedllm::tokenizer
