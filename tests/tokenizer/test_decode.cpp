// Decoding as HF's ByteLevel decoder does, and streaming detokenization.
#include <boost/test/unit_test.hpp>

#include <random>
#include <string>
#include <vector>

#include "core/tokenizer/incremental_detokenizer.h"
#include "core/tokenizer/tokenizer.h"
#include "core/tokenizer/utf8.h"
#include "tests/tokenizer/tiny_tokenizers.h"

namespace pagedllm::tokenizer {
namespace {

using Ids = std::vector<TokenId>;
using testing::kFffd;

// Bytes, the merges of "é" (C3 A9) and "😀" (F0 9F 98 80) in pieces, and added tokens whose
// content is (id 262) or is not (263: holds a space) spelled with byte-level characters.
Tokenizer decoding_tokenizer() {
  TokenizerSpec spec = testing::byte_level_spec({{"\xC3\x83", "\xC2\xA9"},    // Ã + © = bytes C3 A9 (256)
                                                 {"\xC3\xB0", "\xC5\x81"},    // ð + Ł = bytes F0 9F (257)
                                                 {"\xC4\xBA", "\xC4\xA2"}});  // ĺ + Ģ = bytes 98 80 (258)
  spec.model.vocab.push_back("<\xC3\xA9>");                                   // 259: '<é>': é stands for byte E9
  spec.model.vocab.push_back("<e x>");                                        // 260
  spec.added_tokens = {{259, "<\xC3\xA9>", true, false, false, false, false},
                       {260, "<e x>", false, false, false, false, true}};
  return Tokenizer(spec);
}

std::string decode_streamed(const Tokenizer& tokenizer, const Ids& ids, DecodeOptions options = {}) {
  IncrementalDetokenizer detokenizer(tokenizer, options);
  std::string text;
  for (const TokenId id : ids) {
    const std::string chunk = detokenizer.push(id);
    BOOST_TEST_REQUIRE(is_valid_utf8(chunk));
    text += chunk;
  }
  return text + detokenizer.flush();
}

}  // namespace

BOOST_AUTO_TEST_SUITE(decoding)

BOOST_AUTO_TEST_CASE(tokens_join_into_bytes_that_decode_lossily) {
  const Tokenizer tokenizer = decoding_tokenizer();
  BOOST_TEST(tokenizer.decode(Ids{'h', 256, 'l'}) == "h\xC3\xA9l");
  BOOST_TEST(tokenizer.decode(Ids{257, 258}) == "\xF0\x9F\x98\x80");
  BOOST_TEST(tokenizer.decode(Ids{257}) == kFffd);  // a truncated emoji
  BOOST_TEST(tokenizer.decode(Ids{257, 'x', 258}) == kFffd + "x" + kFffd + kFffd);
  BOOST_TEST(tokenizer.decode(Ids{0xFF, 0xC0, 'a'}) == kFffd + kFffd + "a");
}

BOOST_AUTO_TEST_CASE(added_tokens_decode_through_the_byte_map_when_they_can) {
  // HF: '<é>' maps through the byte map (é = byte E9, invalid alone); '<e x>' holds ' ', which
  // is outside the map, so it is taken as text.
  const Tokenizer tokenizer = decoding_tokenizer();
  BOOST_TEST(tokenizer.decode(Ids{'a', 259, 260}) == "a<" + kFffd + "><e x>");
  BOOST_TEST(tokenizer.decode(Ids{'a', 259, 260}, {true}) == "a<e x>");  // only 259 is special
  BOOST_CHECK_THROW(tokenizer.decode(Ids{261}), std::out_of_range);
}

BOOST_AUTO_TEST_CASE(the_detokenizer_holds_back_partial_characters) {
  const Tokenizer tokenizer = decoding_tokenizer();
  IncrementalDetokenizer detokenizer(tokenizer);
  BOOST_TEST(detokenizer.push('a') == "a");
  BOOST_TEST(detokenizer.push(257) == "");
  BOOST_TEST(detokenizer.num_pending_bytes() == 2u);
  BOOST_TEST(detokenizer.push(258) == "\xF0\x9F\x98\x80");
  BOOST_TEST(detokenizer.push(257) == "");
  BOOST_TEST(detokenizer.push('b') == kFffd + "b");  // the sequence broke: one U+FFFD
  BOOST_TEST(detokenizer.push(0xE2) == "");
  BOOST_TEST(detokenizer.flush() == kFffd);
}

BOOST_AUTO_TEST_CASE(streamed_random_ids_are_valid_utf8_and_equal_decode) {
  const Tokenizer tokenizer = decoding_tokenizer();
  std::mt19937 random(11);
  // Mostly bytes that start or continue multi-byte sequences, plus the merged and added tokens.
  const Ids pool{'a', ' ', 0x80, 0x9F, 0xA9, 0xBF, 0xC3, 0xE2, 0xED, 0xF0, 0xF4, 0xFF, 256, 257, 258, 259, 260};
  for (int trial = 0; trial < 3000; ++trial) {
    Ids ids(random() % 20);
    for (TokenId& id : ids) id = pool[random() % pool.size()];
    for (const bool skip : {false, true}) {
      const DecodeOptions options{skip};
      BOOST_TEST_REQUIRE(decode_streamed(tokenizer, ids, options) == tokenizer.decode(ids, options));
    }
  }
}

BOOST_AUTO_TEST_CASE(encode_then_decode_gives_the_text_back) {
  const Tokenizer tokenizer = decoding_tokenizer();
  for (const std::string text : {"h\xC3\xA9llo  w\xF0\x9F\x98\x80rld\n", "a<e x>b", "  \t\r\n"}) {
    BOOST_TEST(tokenizer.decode(tokenizer.encode(text)) == text);
  }
  // Invalid input is repaired before encoding.
  BOOST_TEST(tokenizer.decode(tokenizer.encode("a\xFF"
                                               "b")) == "a" + kFffd + "b");
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace pagedllm::tokenizer
