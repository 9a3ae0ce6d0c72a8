// Token masks (core/structured/token_mask.h): the trie walk against a walk of every token on its
// own, in every reachable state of random constraints over a random byte-level vocabulary; the
// matcher's generations always match the constraint; end-of-sequence only on a whole match;
// rollback and fork.
#include <boost/test/unit_test.hpp>

#include <memory>
#include <string>
#include <vector>

#include "core/structured/regex_compiler.h"
#include "core/structured/token_mask.h"
#include "tests/structured/random_vocabulary.h"

namespace structured = pagedllm::structured;
using pagedllm::TokenId;
using pagedllm::testing::kEos;
using pagedllm::testing::random_vocabulary;

namespace {

struct Constraint {
  std::shared_ptr<const structured::ByteDfa> dfa;
  std::shared_ptr<structured::TokenMaskCache> cache;
};

Constraint make_constraint(const std::string& pattern, const std::shared_ptr<const structured::TokenTrie>& trie) {
  auto dfa = std::make_shared<const structured::ByteDfa>(structured::compile_regex(pattern));
  return {dfa, std::make_shared<structured::TokenMaskCache>(dfa, trie)};
}

const std::vector<std::string> kPatterns = {
    "(yes|no)", "[ab]{2,5}", "\\{\"a\": ?\"[^\"]*\"\\}", "(\xC3\xA9|\xF0\x9F\x98\x80)+1", "\\d+(,\\d+)*", "[^1]*1",
};

}  // namespace

BOOST_AUTO_TEST_SUITE(token_mask)

BOOST_AUTO_TEST_CASE(trie_walk_allows_exactly_the_tokens_a_byte_walk_allows) {
  std::mt19937 rng(11);
  const std::vector<std::string> vocab = random_vocabulary(rng, 3000);
  auto trie = std::make_shared<const structured::TokenTrie>(vocab);
  int64_t allowed_total = 0;
  for (const std::string& pattern : kPatterns) {
    Constraint constraint = make_constraint(pattern, trie);
    const structured::ByteDfa& dfa = *constraint.dfa;
    for (int32_t state = 0; state < dfa.num_states(); ++state) {
      const structured::TokenBitmask& mask = constraint.cache->mask(state);
      for (TokenId token = 0; token < static_cast<TokenId>(vocab.size()); ++token) {
        const bool expected = !vocab[static_cast<std::size_t>(token)].empty() &&
                              dfa.walk(state, vocab[static_cast<std::size_t>(token)]) != structured::ByteDfa::kDead;
        allowed_total += expected;
        BOOST_TEST_REQUIRE(structured::is_allowed(mask, token) == expected,
                           "pattern '" << pattern << "' state " << state << " token " << token);
      }
    }
    BOOST_TEST(constraint.cache->num_computed() == dfa.num_states());
  }
  BOOST_TEST(allowed_total > 1000);
}

BOOST_AUTO_TEST_CASE(sampling_only_allowed_tokens_always_yields_a_match) {
  std::mt19937 rng(12);
  const std::vector<std::string> vocab = random_vocabulary(rng, 3000);
  auto trie = std::make_shared<const structured::TokenTrie>(vocab);
  for (const std::string& pattern : kPatterns) {
    Constraint constraint = make_constraint(pattern, trie);
    for (int run = 0; run < 50; ++run) {
      structured::TokenMatcher matcher(constraint.cache, {kEos});
      std::string text;
      structured::TokenBitmask mask;
      while (!matcher.ended()) {
        matcher.fill_next_mask(mask);
        std::vector<TokenId> allowed;
        for (TokenId token = 0; token < static_cast<TokenId>(vocab.size()); ++token) {
          if (structured::is_allowed(mask, token)) allowed.push_back(token);
        }
        BOOST_TEST_REQUIRE(!allowed.empty(), "pattern '" << pattern << "': no token allowed after '" << text << "'");
        // Prefer continuing (1 in 4 picks end-of-sequence when allowed), so texts get long.
        TokenId pick = allowed[rng() % allowed.size()];
        if (matcher.can_end() && rng() % 4 == 0) pick = kEos;
        BOOST_TEST_REQUIRE(matcher.accept(pick));
        if (pick != kEos) text += vocab[static_cast<std::size_t>(pick)];
        BOOST_TEST_REQUIRE(text.size() < 4000u, "pattern '" << pattern << "' never ended");
      }
      BOOST_TEST_REQUIRE(constraint.dfa->matches(text), "pattern '" << pattern << "' generated '" << text << "'");
    }
  }
}

BOOST_AUTO_TEST_CASE(end_of_sequence_refusals_rollback_and_fork) {
  const std::vector<std::string> vocab = {"", "", "y", "e", "s", "ye", "yes", "no", "n", "o", "x"};
  auto trie = std::make_shared<const structured::TokenTrie>(vocab);
  Constraint constraint = make_constraint("(yes|no)", trie);
  structured::TokenMatcher matcher(constraint.cache, {kEos});
  structured::TokenBitmask mask;
  matcher.fill_next_mask(mask);
  for (TokenId token : {2, 5, 6, 7, 8}) BOOST_TEST(structured::is_allowed(mask, token), token);
  for (TokenId token : {0, 1, 3, 4, 9, 10}) BOOST_TEST(!structured::is_allowed(mask, token), token);
  BOOST_TEST(!matcher.accept(kEos));  // nothing matched yet
  BOOST_TEST(!matcher.accept(10));    // "x" is refused and changes nothing
  BOOST_TEST(matcher.num_accepted() == 0);
  BOOST_TEST(matcher.accept(5));            // "ye"
  structured::TokenMatcher fork = matcher;  // a parallel sample from here
  BOOST_TEST(matcher.accept(4));            // "s"
  BOOST_TEST(matcher.can_end());
  BOOST_TEST(matcher.accept(kEos));
  BOOST_TEST(matcher.ended());
  matcher.fill_next_mask(mask);
  BOOST_TEST(!structured::is_allowed(mask, 4));  // nothing after the end
  matcher.rollback(2);                           // undo EOS and "s"
  BOOST_TEST(!matcher.ended());
  BOOST_TEST(!matcher.can_end());
  matcher.fill_next_mask(mask);
  BOOST_TEST(structured::is_allowed(mask, 4));
  BOOST_TEST(!structured::is_allowed(mask, 3));
  BOOST_TEST(fork.num_accepted() == 1);  // the fork kept its own place
  BOOST_TEST(!fork.accept(9));           // "yeo"
  BOOST_TEST(fork.accept(4));
  BOOST_CHECK_THROW(matcher.rollback(5), std::invalid_argument);
  BOOST_CHECK_THROW(structured::TokenMatcher(constraint.cache, {99}), std::invalid_argument);
  BOOST_CHECK_THROW(structured::TokenMatcher(constraint.cache, {}), std::invalid_argument);  // nothing could end it
}

BOOST_AUTO_TEST_SUITE_END()
