// BPE merges on a hand-built vocabulary. Expected values checked against HF tokenizers 0.23
// with the same vocabulary and merges.
#include <boost/test/unit_test.hpp>

#include <vector>

#include "core/model/model_errors.h"
#include "core/tokenizer/tokenizer.h"
#include "tests/tokenizer/tiny_tokenizers.h"

namespace pagedllm::tokenizer {
namespace {

using Ids = std::vector<TokenId>;
using testing::byte_level_spec;

// Ids: bytes 0..255, then ab = 256, bc = 257, abc = 258, cc = 259, then the extras.
const testing::Merges kMerges{{"a", "b"}, {"b", "c"}, {"ab", "c"}, {"c", "c"}};

Ids encode(const Tokenizer& tokenizer, const std::string& text) { return tokenizer.encode(text, {false, true}); }

}  // namespace

BOOST_AUTO_TEST_SUITE(bpe_merges)

BOOST_AUTO_TEST_CASE(lowest_rank_merges_first_and_leftmost_among_equals) {
  const Tokenizer tokenizer(byte_level_spec(kMerges, {"cab"}));
  BOOST_TEST(encode(tokenizer, "abc") == (Ids{258}), boost::test_tools::per_element());
  BOOST_TEST(encode(tokenizer, "bcc") == (Ids{257, 'c'}), boost::test_tools::per_element());  // bc before cc
  BOOST_TEST(encode(tokenizer, "ccc") == (Ids{259, 'c'}), boost::test_tools::per_element());  // leftmost cc
  BOOST_TEST(encode(tokenizer, "abab") == (Ids{256, 256}), boost::test_tools::per_element());
  BOOST_TEST(encode(tokenizer, "xabcx") == (Ids{'x', 258, 'x'}), boost::test_tools::per_element());
  BOOST_TEST(encode(tokenizer, "cab") == (Ids{'c', 256}), boost::test_tools::per_element());
  // Merges stay inside pre-tokenized words: " abc" is one word, "ab c" two.
  BOOST_TEST(encode(tokenizer, "ab c") == (Ids{256, ' ', 'c'}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(ignore_merges_takes_a_word_that_is_a_token_whole) {
  TokenizerSpec spec = byte_level_spec(kMerges, {"cab"});
  spec.model.ignore_merges = true;
  const Tokenizer tokenizer(spec);
  BOOST_TEST(encode(tokenizer, "cab") == (Ids{260}), boost::test_tools::per_element());
  BOOST_TEST(encode(tokenizer, "bcc") == (Ids{257, 'c'}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(bytes_without_a_token_become_unk_or_are_dropped) {
  // Without 'z' the ids shift: bytes below 'z' keep their value, ab..cc are 255..258.
  TokenizerSpec spec = byte_level_spec(kMerges, {"<unk>"}, "z");
  spec.model.unk_token = "<unk>";
  BOOST_TEST(encode(Tokenizer(spec), "azzb") == (Ids{'a', 259, 259, 'b'}), boost::test_tools::per_element());
  spec.model.fuse_unk = true;
  BOOST_TEST(encode(Tokenizer(spec), "azzb") == (Ids{'a', 259, 'b'}), boost::test_tools::per_element());
  spec.model.unk_token.reset();
  spec.model.fuse_unk = false;
  BOOST_TEST(encode(Tokenizer(spec), "azzb") == (Ids{255}), boost::test_tools::per_element());  // "ab" after the drop
}

BOOST_AUTO_TEST_CASE(a_merge_outside_the_vocabulary_names_the_merge) {
  TokenizerSpec spec = byte_level_spec(kMerges);
  spec.model.merges.push_back({"q", "zz"});
  try {
    Tokenizer tokenizer(spec);
    BOOST_FAIL("expected ModelFormatError");
  } catch (const model::ModelFormatError& error) {
    BOOST_TEST(error.subject() == "field 'model.merges[4]'");
    BOOST_TEST(std::string(error.what()).find("'zz' is not in the vocabulary") != std::string::npos);
  }
  spec = byte_level_spec(kMerges);
  spec.model.vocab.pop_back();  // "cc" is gone but its merge remains
  BOOST_CHECK_THROW(Tokenizer{spec}, model::ModelFormatError);
}

BOOST_AUTO_TEST_CASE(long_words_merge_like_short_ones) {
  const Tokenizer tokenizer(byte_level_spec(kMerges));
  std::string word;
  Ids expected;
  for (int i = 0; i < 5000; ++i) {
    word += "abc";
    expected.push_back(258);
  }
  BOOST_TEST(encode(tokenizer, word) == expected);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace pagedllm::tokenizer
