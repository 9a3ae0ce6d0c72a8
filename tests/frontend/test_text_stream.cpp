#include <boost/test/unit_test.hpp>
#include <string>
#include <vector>

#include "core/frontend/text_stream.h"
#include "tests/tokenizer/tiny_tokenizers.h"

namespace pagedllm::frontend {
namespace {

// Byte tokens only: token id = byte value, so a test spells its tokens as text.
tokenizer::Tokenizer byte_tokenizer() { return tokenizer::Tokenizer(tokenizer::testing::byte_level_spec({})); }

std::vector<TokenId> tokens_of(const std::string& text) {
  std::vector<TokenId> ids;
  for (const char c : text) ids.push_back(static_cast<unsigned char>(c));
  return ids;
}

// What each push() returned, then finish().
std::vector<std::string> run(TextStream& stream, const std::string& text) {
  std::vector<std::string> sent;
  for (const TokenId id : tokens_of(text)) sent.push_back(stream.push(id));
  sent.push_back(stream.finish());
  return sent;
}

std::string joined(const std::vector<std::string>& parts) {
  std::string all;
  for (const std::string& part : parts) all += part;
  return all;
}

BOOST_AUTO_TEST_CASE(without_stop_strings_the_text_is_the_decoded_tokens_as_they_come) {
  TextStream stream(byte_tokenizer(), {});
  const std::vector<std::string> sent = run(stream, "hello, world");
  BOOST_TEST(joined(sent) == "hello, world");
  BOOST_TEST(sent.front() == "h");  // nothing held back
  BOOST_TEST(!stream.stopped());
}

BOOST_AUTO_TEST_CASE(a_character_split_over_tokens_is_sent_whole) {
  TextStream stream(byte_tokenizer(), {});
  BOOST_TEST(stream.push(0xC3) == "");
  BOOST_TEST(stream.push(0xA9) == "\xC3\xA9");  // é
  BOOST_TEST(stream.push(0xE2) == "");
  BOOST_TEST(stream.finish() == "\xEF\xBF\xBD");  // an unfinished character ends as U+FFFD
}

BOOST_AUTO_TEST_CASE(the_text_ends_before_the_stop_string_and_its_start_is_never_sent) {
  TextStream stream(byte_tokenizer(), {.stop = {"END"}});
  const std::vector<std::string> sent = run(stream, "abcENDxyz");
  BOOST_TEST(joined(sent) == "abc");
  BOOST_TEST(sent[3] == "");  // "E": could start "END"
  BOOST_TEST(sent[4] == "");  // "EN"
  BOOST_TEST(stream.stopped());
  BOOST_TEST(stream.matched_stop() == "END");
  BOOST_TEST(stream.push('q') == "");  // nothing after a stop
}

BOOST_AUTO_TEST_CASE(held_back_text_is_released_once_it_cannot_become_a_stop_string) {
  TextStream stream(byte_tokenizer(), {.stop = {"END"}});
  const std::vector<std::string> sent = run(stream, "aENx");
  BOOST_TEST(sent[0] == "a");
  BOOST_TEST(sent[1] == "");
  BOOST_TEST(sent[2] == "");
  BOOST_TEST(sent[3] == "ENx");
  BOOST_TEST(!stream.stopped());
  TextStream at_end(byte_tokenizer(), {.stop = {"END"}});
  BOOST_TEST(joined(run(at_end, "abEN")) == "abEN");  // finish() releases what was held
}

BOOST_AUTO_TEST_CASE(a_stop_string_counts_only_where_it_ends_after_the_first_min_tokens) {
  // "END" is complete at the 5th token: with min_tokens 5 it stays in the text; the second one,
  // complete at the 11th, stops it.
  TextStream held(byte_tokenizer(), {.stop = {"END"}, .min_tokens = 5});
  BOOST_TEST(joined(run(held, "abENDxyENDq")) == "abENDxy");
  BOOST_TEST(held.stopped());
  // With min_tokens 4 the first one ends in the 5th token's text: it stops there.
  TextStream counted(byte_tokenizer(), {.stop = {"END"}, .min_tokens = 4});
  BOOST_TEST(joined(run(counted, "abENDxyENDq")) == "ab");
  // A stop string begun under min_tokens and completed after it counts (its start was held back).
  TextStream straddling(byte_tokenizer(), {.stop = {"END"}, .min_tokens = 3});
  const std::vector<std::string> sent = run(straddling, "abENDx");
  BOOST_TEST(joined(sent) == "ab");
  BOOST_TEST(sent[2] == "");  // "E" held back although no stop string could match yet
  // One stop string complete under min_tokens inside the held-back start of a longer one does
  // not count later: only a match ending in the new token's text does.
  TextStream nested(byte_tokenizer(), {.stop = {"ab", "xaby"}, .min_tokens = 3});
  BOOST_TEST(joined(run(nested, "xabz")) == "xabz");
  BOOST_TEST(!nested.stopped());
}

BOOST_AUTO_TEST_CASE(the_earliest_of_several_stop_strings_wins) {
  TextStream stream(byte_tokenizer(), {.stop = {"xyz", "b"}});
  BOOST_TEST(joined(run(stream, "abxyz")) == "a");
  BOOST_TEST(stream.matched_stop() == "b");
  TextStream overlapping(byte_tokenizer(), {.stop = {"cd", "abcde"}});
  BOOST_TEST(joined(run(overlapping, "xxabcdef")) == "xxab");
}

BOOST_AUTO_TEST_CASE(an_empty_stop_string_is_refused) {
  BOOST_CHECK_THROW(TextStream(byte_tokenizer(), {.stop = {"ok", ""}}), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(include_stop_ends_the_text_after_the_stop_string) {
  TextStream stream(byte_tokenizer(), {.stop = {"END", "xyz"}, .include_stop = true});
  const std::vector<std::string> sent = run(stream, "abENDxyz");
  BOOST_TEST(joined(sent) == "abEND");
  BOOST_TEST(sent[4] == "END");  // released whole once it matched
  BOOST_TEST(stream.matched_stop() == "END");
}

BOOST_AUTO_TEST_CASE(special_tokens_are_kept_or_skipped_as_asked) {
  // Byte tokens, then one special token (id 256).
  tokenizer::TokenizerSpec spec = tokenizer::testing::byte_level_spec({}, {"<|end|>"});
  spec.added_tokens = {{.id = 256, .content = "<|end|>", .special = true}};
  const tokenizer::Tokenizer with_special(spec);
  const std::vector<TokenId> ids{'h', 'i', 256, '!'};
  TextStream skipping(with_special, {.decode = {.skip_special_tokens = true}});
  TextStream keeping(with_special, {.decode = {.skip_special_tokens = false}});
  std::string skipped, kept;
  for (const TokenId id : ids) {
    skipped += skipping.push(id);
    kept += keeping.push(id);
  }
  BOOST_TEST(skipped + skipping.finish() == "hi!");
  BOOST_TEST(kept + keeping.finish() == "hi<|end|>!");
}

}  // namespace
}  // namespace pagedllm::frontend
