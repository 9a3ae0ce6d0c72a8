// UTF-8 helpers and the byte-level character map.
#include <boost/test/unit_test.hpp>

#include <random>
#include <set>
#include <string>

#include "core/tokenizer/byte_level.h"
#include "core/tokenizer/utf8.h"
#include "tests/tokenizer/tiny_tokenizers.h"

namespace pagedllm::tokenizer {
namespace {

using testing::kFffd;

std::uint32_t code_point_of(unsigned byte) { return byte_to_code_point(static_cast<std::uint8_t>(byte)); }

std::string repeat(const std::string& text, int count) {
  std::string out;
  for (int i = 0; i < count; ++i) out += text;
  return out;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(byte_level_map)

BOOST_AUTO_TEST_CASE(maps_the_256_bytes_to_256_distinct_characters_and_back) {
  std::set<char32_t> seen;
  for (unsigned byte = 0; byte < 256; ++byte) {
    const char32_t code_point = byte_to_code_point(static_cast<std::uint8_t>(byte));
    BOOST_TEST(seen.insert(code_point).second);
    BOOST_TEST(code_point_to_byte(code_point).value() == byte);
  }
  // Every character outside the map is rejected.
  for (char32_t code_point = 0; code_point < 0x200; ++code_point) {
    BOOST_TEST(code_point_to_byte(code_point).has_value() == (seen.count(code_point) == 1));
  }
}

BOOST_AUTO_TEST_CASE(printable_latin1_maps_to_itself_and_the_rest_follows_gpt2) {
  BOOST_TEST(code_point_of('A') == 0x41u);
  BOOST_TEST(code_point_of('~') == 0x7Eu);
  BOOST_TEST(code_point_of(0xE9) == 0xE9u);
  BOOST_TEST(code_point_of(0x00) == 0x100u);
  BOOST_TEST(code_point_of('\n') == 0x10Au);  // 'Ċ'
  BOOST_TEST(code_point_of(' ') == 0x120u);   // 'Ġ'
  BOOST_TEST(code_point_of(0x7F) == 0x121u);
  BOOST_TEST(code_point_of(0xAD) == 0x143u);  // the last of the 68 remapped bytes
}

BOOST_AUTO_TEST_CASE(strings_round_trip_and_foreign_characters_are_refused) {
  std::string all;
  for (unsigned byte = 0; byte < 256; ++byte) all.push_back(static_cast<char>(byte));
  BOOST_TEST(from_byte_level(to_byte_level(all)).value() == all);
  BOOST_TEST(to_byte_level(" the\n") == "\xC4\xA0the\xC4\x8A");
  BOOST_TEST(!from_byte_level("a b").has_value());           // ' ' itself is not in the map
  BOOST_TEST(!from_byte_level("\xE2\x82\xAC").has_value());  // nor is '€'
  BOOST_TEST(!from_byte_level("\xC4").has_value());          // broken UTF-8
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(utf8_lossy_decoding)

// Expected values: HF tokenizers' ByteLevel decoder (Rust String::from_utf8_lossy).
BOOST_AUTO_TEST_CASE(each_maximal_invalid_subpart_becomes_one_replacement_character) {
  BOOST_TEST(utf8_lossy("plain \xE2\x82\xAC text") == "plain \xE2\x82\xAC text");
  BOOST_TEST(utf8_lossy("\xF0\x9F\x98") == kFffd);  // truncated 4-byte sequence
  BOOST_TEST(utf8_lossy("a\xF0\x9F\x98"
                        "b") == "a" + kFffd + "b");
  BOOST_TEST(utf8_lossy("\xE0\x80\x80") == repeat(kFffd, 3));      // overlong
  BOOST_TEST(utf8_lossy("\xED\xA0\x80") == repeat(kFffd, 3));      // surrogate
  BOOST_TEST(utf8_lossy("\xF4\x90\x80\x80") == repeat(kFffd, 4));  // above U+10FFFF
  BOOST_TEST(utf8_lossy("\xC0\xAF") == repeat(kFffd, 2));
  BOOST_TEST(utf8_lossy("\xE2\x82") == kFffd);
  BOOST_TEST(utf8_lossy("\xF1\x80\x80\xE1\x80\xC2") == repeat(kFffd, 3));
  BOOST_TEST(utf8_lossy("\xFF\xFE") == repeat(kFffd, 2));
  BOOST_TEST(utf8_lossy("\xE2\x82\xAC\x80") == "\xE2\x82\xAC" + kFffd);
}

BOOST_AUTO_TEST_CASE(decodes_and_validates_code_points) {
  char32_t code_point = 0;
  BOOST_TEST(decode_utf8("\xF0\x9F\x98\x80", code_point) == 4u);
  BOOST_TEST(static_cast<std::uint32_t>(code_point) == 0x1F600u);
  BOOST_TEST(decode_utf8("\xF0\x9F\x98", code_point) == 0u);
  BOOST_TEST(is_valid_utf8("h\xC3\xA9llo \xE4\xB8\xAD"));
  BOOST_TEST(!is_valid_utf8("h\xC3"));
  std::string encoded;
  for (const char32_t c : {U'a', U'\u00E9', U'\u4E2D', U'\U0001F600'}) append_utf8(encoded, c);
  BOOST_TEST(encoded == "a\xC3\xA9\xE4\xB8\xAD\xF0\x9F\x98\x80");
}

BOOST_AUTO_TEST_CASE(whitespace_is_the_unicode_white_space_property) {
  for (const char32_t c : {U'\t', U'\n', U'\r', U' ', U'\u0085', U'\u00A0', U'\u2028', U'\u3000'}) {
    BOOST_TEST(is_unicode_whitespace(c));
  }
  for (const char32_t c : {U'a', U'\u001C', U'\u180E', U'\u200B', U'\uFEFF'}) BOOST_TEST(!is_unicode_whitespace(c));
}

BOOST_AUTO_TEST_CASE(streamed_bytes_give_valid_chunks_that_join_to_the_whole_decoding) {
  std::mt19937 random(7);
  // Bytes drawn mostly from UTF-8 lead and continuation ranges, so sequences often break.
  const std::string alphabet = "ab \xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80\x80\xBF\xC0\xED\xA0\xF4\x90\xFF";
  for (int trial = 0; trial < 2000; ++trial) {
    std::string bytes;
    const int length = static_cast<int>(random() % 24);
    for (int i = 0; i < length; ++i) bytes.push_back(alphabet[random() % alphabet.size()]);
    Utf8LossyStream stream;
    std::string joined;
    std::size_t position = 0;
    while (position < bytes.size()) {
      const std::size_t chunk = 1 + random() % 4;
      const std::string out = stream.push(std::string_view(bytes).substr(position, chunk));
      BOOST_TEST_REQUIRE(is_valid_utf8(out));
      BOOST_TEST_REQUIRE(stream.num_pending() <= 3u);
      joined += out;
      position += chunk;
    }
    joined += stream.finish();
    BOOST_TEST_REQUIRE(joined == utf8_lossy(bytes));
  }
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace pagedllm::tokenizer
