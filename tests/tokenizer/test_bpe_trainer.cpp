// BPE training: deterministic, most frequent pair first, ties to the smaller pair, special
// tokens kept out of the counts.
#include <boost/test/unit_test.hpp>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/tokenizer/bpe_trainer.h"
#include "core/tokenizer/gguf_pre_tokenizer.h"
#include "core/tokenizer/tokenizer.h"

namespace pagedllm::tokenizer {
namespace {

using Ids = std::vector<TokenId>;

std::string sample_corpus() {
  std::string corpus;
  for (int i = 0; i < 40; ++i) {
    corpus += "The quick brown fox jumps over the lazy dog " + std::to_string(i * 37) + ".\n";
    corpus += "def add(a, b):\n    return a + b  # sum\n<|endoftext|>";
    corpus += "Caf\xC3\xA9 \xE4\xB8\xAD\xE6\x96\x87 \xF0\x9F\x98\x80 tabs\tand\tspaces   end\n";
  }
  return corpus;
}

BpeTrainerConfig config_of(std::int32_t vocab_size) {
  BpeTrainerConfig config;
  config.vocab_size = vocab_size;
  config.special_tokens = {"<|endoftext|>", "<|im_start|>", "<|im_end|>"};
  config.bos_token = "<|im_start|>";
  config.eos_token = "<|im_end|>";
  return config;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(bpe_training)

BOOST_AUTO_TEST_CASE(the_most_frequent_pair_merges_first_and_ties_go_to_the_smaller_pair) {
  BpeTrainerConfig config;
  config.vocab_size = 256 + 5;
  const TokenizerSpec spec = train_bpe("aaab aaab ab", config);
  // Counts: aa 4 > ab 3; then aa+ab 2; then "Ġab" and "Ġaaab" tie at 1: Ġ+ab (smaller ids) first.
  const std::vector<std::pair<std::string, std::string>> expected{
      {"a", "a"}, {"a", "b"}, {"aa", "ab"}, {"\xC4\xA0", "ab"}, {"\xC4\xA0", "aaab"}};
  BOOST_TEST((spec.model.merges == expected));
  BOOST_TEST(spec.model.vocab.size() == 261u);
  BOOST_TEST(spec.model.vocab[260] ==
             "\xC4\xA0"
             "aaab");
  BOOST_TEST(Tokenizer(spec).encode("aaab aaab") == (Ids{258, 260}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(training_is_deterministic_and_fills_the_vocabulary) {
  const std::string corpus = sample_corpus();
  const TokenizerSpec first = train_bpe(corpus, config_of(400));
  const TokenizerSpec second = train_bpe(corpus, config_of(400));
  BOOST_TEST(first.model.vocab == second.model.vocab);
  BOOST_TEST((first.model.merges == second.model.merges));
  BOOST_TEST(first.model.vocab.size() == 400u);
  BOOST_TEST(first.model.vocab[0] == "<|endoftext|>");
  BOOST_TEST(first.model.vocab[3] == "\xC4\x80");  // then the 256 bytes in byte order: 0 is 'Ā'
  BOOST_TEST(first.model.vocab[3 + 'a'] == "a");
  const Tokenizer tokenizer(first);
  BOOST_TEST(tokenizer.to_tokenizer_json() == Tokenizer(second).to_tokenizer_json());
}

BOOST_AUTO_TEST_CASE(a_trained_tokenizer_round_trips_and_compresses_its_corpus) {
  const std::string corpus = sample_corpus();
  const Tokenizer tokenizer(train_bpe(corpus, config_of(500)));
  const Ids ids = tokenizer.encode(corpus, {false, true});
  BOOST_TEST(tokenizer.decode(ids) == corpus);
  BOOST_TEST(ids.size() * 3 < corpus.size());
  // Special tokens were kept whole and out of the merges; BOS comes from the template.
  BOOST_TEST(tokenizer.encode("<|endoftext|>") == (Ids{1, 0}), boost::test_tools::per_element());
  BOOST_TEST(tokenizer.special_ids().eos.value() == 2);
  for (const auto& [left, right] : tokenizer.spec().model.merges)
    BOOST_TEST((left + right).find("<|") == std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_split_pattern_and_digit_splitting_shape_the_words) {
  BpeTrainerConfig config = config_of(300);
  config.split_pattern = std::string(kLlama3Pattern);
  const TokenizerSpec llama = train_bpe(sample_corpus(), config);
  BOOST_TEST(llama.pre_tokenizer.size() == 2u);
  config.split_pattern.clear();
  config.individual_digits = true;
  const Tokenizer smol(train_bpe(sample_corpus(), config));
  for (const TokenId id : smol.encode("12345", {false, true})) BOOST_TEST(smol.token_bytes(id).size() == 1u);
}

BOOST_AUTO_TEST_CASE(impossible_configurations_are_refused) {
  BOOST_CHECK_THROW(train_bpe("abc", config_of(200)), std::invalid_argument);  // below 3 + 256
  BpeTrainerConfig config = config_of(300);
  config.bos_token = "<s>";
  BOOST_CHECK_THROW(train_bpe("abc", config), std::invalid_argument);
  config = config_of(300);
  config.special_tokens.push_back("<|im_end|>");
  BOOST_CHECK_THROW(train_bpe("abc", config), std::invalid_argument);
  config = config_of(300);
  config.split_pattern = "(";
  BOOST_CHECK_THROW(train_bpe("abc", config), std::invalid_argument);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace pagedllm::tokenizer
