// EBNF grammars (core/structured/grammar_*.h): the parser's errors name their line and column; left
// recursion and empty languages are refused; the masks (each frame's precomputed tokens plus the
// stack-checked ones) equal a token-by-token check in every state a random walk reaches; a regular
// grammar allows exactly what the same language as a regex allows; every text a walk of a JSON
// grammar ends is JSON to nlohmann's parser, and JSON texts nlohmann writes are read back.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "core/structured/grammar_automaton.h"
#include "core/structured/grammar_parser.h"
#include "core/structured/output_constraint.h"
#include "core/structured/regex_compiler.h"
#include "core/structured/token_mask.h"
#include "tests/structured/random_vocabulary.h"

namespace structured = pagedllm::structured;
using pagedllm::TokenId;
using pagedllm::testing::kEos;
using pagedllm::testing::random_vocabulary;

namespace {

const char* const kJsonGrammar = R"(
# JSON (RFC 8259, without \u escapes), one value
root   ::= ws value
value  ::= object | array | string | number | ("true" | "false" | "null") ws
object ::=
  "{" ws (
            member
    ("," ws member)*
  )? "}" ws
member ::= string ":" ws value
array  ::= "[" ws ( value ("," ws value)* )? "]" ws
string ::= "\"" ( [^"\\\x00-\x1f] | "\\" ["\\/bfnrt] )* "\"" ws
number ::= "-"? ("0" | [1-9] [0-9]{0,15}) ("." [0-9]+)? ([eE] [-+]? [0-9]+)? ws
ws     ::= [ \t\n]{0,6}
)";

std::shared_ptr<structured::TokenMaskCache> grammar_cache(const std::string& text,
                                                          const std::shared_ptr<const structured::TokenTrie>& trie) {
  return std::make_shared<structured::TokenMaskCache>(
      std::make_shared<const structured::PushdownGrammar>(structured::compile_grammar(text)), trie);
}

std::string grammar_error(const std::string& text) {
  try {
    structured::compile_grammar(text);
  } catch (const structured::GrammarError& error) {
    return error.what();
  }
  return "(compiled)";
}

// A random walk that takes only masked tokens; at each step the mask must equal what accept()
// says of every token on its own. Returns the texts of the walks that ended.
std::vector<std::string> walk_and_check(const std::shared_ptr<structured::TokenMaskCache>& cache,
                                        const std::vector<std::string>& vocab, std::mt19937& rng, int num_walks,
                                        int max_steps, int64_t& allowed_total) {
  std::vector<std::string> ended;
  for (int walk = 0; walk < num_walks; ++walk) {
    structured::TokenMatcher matcher(cache, {kEos});
    std::string text;
    for (int step = 0; step < max_steps && !matcher.ended(); ++step) {
      structured::TokenBitmask mask;
      matcher.fill_next_mask(mask);
      std::vector<TokenId> allowed;
      for (TokenId token = 0; token < static_cast<TokenId>(vocab.size()); ++token) {
        structured::TokenMatcher probe = matcher;
        const bool accepted = probe.accept(token);
        BOOST_TEST_REQUIRE(structured::is_allowed(mask, token) == accepted,
                           "after '" << text << "' token " << token << " ('" << vocab[static_cast<std::size_t>(token)]
                                     << "'): mask " << structured::is_allowed(mask, token) << ", accept " << accepted);
        if (accepted) allowed.push_back(token);
      }
      allowed_total += static_cast<int64_t>(allowed.size());
      BOOST_TEST_REQUIRE(!allowed.empty(), "a dead end after '" << text << "'");
      TokenId pick = allowed[rng() % allowed.size()];
      if (matcher.can_end() && rng() % 3 == 0) pick = kEos;
      BOOST_TEST_REQUIRE(matcher.accept(pick));
      if (pick != kEos) text += vocab[static_cast<std::size_t>(pick)];
    }
    if (matcher.ended()) ended.push_back(text);
  }
  return ended;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(grammar)

BOOST_AUTO_TEST_CASE(parser_reads_gbnf_and_names_the_line_and_column_of_errors) {
  const structured::Grammar grammar = structured::parse_grammar(kJsonGrammar);
  BOOST_TEST(grammar.rules.size() == 8u);
  BOOST_TEST(grammar.rules[static_cast<std::size_t>(grammar.root)].name == "root");
  const auto object = std::find_if(grammar.rules.begin(), grammar.rules.end(),
                                   [](const structured::GrammarRule& rule) { return rule.name == "object"; });
  BOOST_TEST_REQUIRE((object != grammar.rules.end()));
  BOOST_TEST(object->line == 5);  // its body spans lines

  BOOST_TEST(grammar_error("root ::= item\n") == "grammar, line 1, column 10: rule 'item' is used but never defined");
  BOOST_TEST(grammar_error("start ::= \"a\"\n") == "grammar: no rule named 'root' (the start rule: `root ::= ...`)");
  BOOST_TEST(grammar_error("root ::= \"a\"\nroot ::= \"b\"\n") ==
             "grammar, line 2, column 1: rule 'root' is defined twice (first on line 1)");
  BOOST_TEST(grammar_error("root: \"a\"\n").find("line 1, column 5: expected '::=' after the rule name (Lark's") !=
             std::string::npos);
  BOOST_TEST(grammar_error("root ::= (\"a\"\n") == "grammar, line 1, column 10: missing ')' for the group opened here");
  BOOST_TEST(grammar_error("root ::= \"a\" (= \"b\")") ==
             "grammar, line 1, column 14: lookahead assertions are not supported");
  BOOST_TEST(grammar_error("root ::= \"\\q\"") == "grammar, line 1, column 11: unknown escape \\q");
  BOOST_TEST(grammar_error("root ::= [b-a]") == "grammar, line 1, column 11: range out of order");
  BOOST_TEST(grammar_error("root ::= \"a\"**") ==
             "grammar, line 1, column 14: a quantifier after a quantifier; group the first: (x*)?");
  BOOST_TEST(grammar_error("root ::= \"a\"{1001}").find("repeat bound 1001 is over 1000") != std::string::npos);
  BOOST_TEST(grammar_error("") == "grammar, line 1, column 1: the grammar is empty; it needs a rule `root ::= ...`");
}

BOOST_AUTO_TEST_CASE(left_recursion_and_empty_languages_are_refused) {
  BOOST_TEST(grammar_error("root ::= list\nlist ::= list \",\" item | item\nitem ::= [0-9]\n")
                 .find("rule 'list' is left-recursive") != std::string::npos);
  // Through a rule that matches the empty text: still left recursion.
  BOOST_TEST(grammar_error("root ::= opt root \"a\" | \"b\"\nopt ::= \"x\"?\n").find("rule 'root' is left-recursive") !=
             std::string::npos);
  BOOST_TEST(grammar_error("root ::= \"a\" root\n") == "grammar: the root rule matches no text");
  // Right recursion and recursion behind a byte are fine.
  BOOST_TEST(grammar_error("root ::= \"a\" root | \"b\"\n") == "(compiled)");
  BOOST_TEST(grammar_error("root ::= \"(\" root \")\" root | \"\"\n") == "(compiled)");
  // Bounded nesting: the parser and the expansion recurse, so neither may run off the call stack.
  std::string nested = "root ::= ";
  nested.append(201, '(').append("\"a\"").append(201, ')');
  BOOST_TEST(grammar_error(nested) == "grammar, line 1, column 210: groups nest more than 200 deep");
  std::string chain = "root ::= r0\n";
  for (int i = 0; i < 2500; ++i) {  // appended piece by piece: GCC 12 -O3 sees a false overflow in a + chain
    chain += 'r';
    chain += std::to_string(i);
    chain += " ::= r";
    chain += std::to_string(i + 1);
    chain += '\n';
  }
  chain += "r2500 ::= \"a\"\n";
  BOOST_TEST(grammar_error(chain).find("grammar: too deep: expressions nest more than 2000 levels") !=
             std::string::npos);
  structured::RegexLimits tight;
  tight.max_dfa_states = 20;
  BOOST_CHECK_THROW(structured::compile_grammar("root ::= [a-z]{30}", tight), structured::GrammarError);
}

BOOST_AUTO_TEST_CASE(a_rule_without_recursion_is_expanded_and_only_recursion_stays_a_call) {
  const structured::PushdownGrammar regular =
      structured::compile_grammar("root ::= item (\",\" item)*\nitem ::= [0-9]+ | \"x\"\n");
  BOOST_TEST(regular.rules.size() == 1u);
  const structured::PushdownGrammar json = structured::compile_grammar(kJsonGrammar);
  // value, object, member, array take part in the recursion; string, number, ws are expanded.
  std::vector<std::string> names;
  for (const structured::PushdownRule& rule : json.rules) names.push_back(rule.name);
  std::sort(names.begin(), names.end());
  BOOST_TEST(names == (std::vector<std::string>{"array", "member", "object", "root", "value"}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(rules_on_a_cycle_stay_rules_whatever_their_order) {
  // b and c call each other; d is used by both but is on no cycle; a is used once.
  const structured::PushdownGrammar grammar = structured::compile_grammar(
      "root ::= a b\nc ::= \"(\" b \")\" | d\nb ::= \"[\" c \"]\" | d\nd ::= [0-9]\na ::= \"x\"\n");
  std::vector<std::string> names;
  for (const structured::PushdownRule& rule : grammar.rules) names.push_back(rule.name);
  std::sort(names.begin(), names.end());
  BOOST_TEST(names == (std::vector<std::string>{"b", "c", "root"}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(masks_equal_a_token_by_token_check_in_every_state_walks_reach) {
  std::mt19937 rng(5);
  const std::vector<std::string> vocab = random_vocabulary(rng, 2000);
  auto trie = std::make_shared<const structured::TokenTrie>(vocab);
  const std::vector<std::string> grammars = {
      kJsonGrammar,
      "root ::= \"(\" root \")\" root | \"\"\n",
      "root ::= \"a\" root \"b\" | \"1\"\n",
      "root ::= list\nlist ::= \"{\" (item (\",\" item)*)? \"}\"\nitem ::= \"a\"+ | \"\\\"\" [^\"]* \"\\\"\" | list\n",
      "root ::= (x | y)+\nx ::= \"a\" \"b\"?\ny ::= \"ab\" y? \"1\"\n",  // ambiguous: several parses at once
  };
  int64_t allowed_total = 0;
  for (const std::string& text : grammars) {
    BOOST_TEST_CONTEXT("grammar " << text) {
      const auto cache = grammar_cache(text, trie);
      const std::vector<std::string> ended = walk_and_check(cache, vocab, rng, 6, 25, allowed_total);
      BOOST_TEST(cache->num_computed() > 0);
      (void)ended;
    }
  }
  BOOST_TEST(allowed_total > 1000);
}

BOOST_AUTO_TEST_CASE(a_regular_grammar_allows_what_the_same_regex_allows) {
  std::mt19937 rng(9);
  const std::vector<std::string> vocab = random_vocabulary(rng, 3000);
  auto trie = std::make_shared<const structured::TokenTrie>(vocab);
  const auto grammar = grammar_cache(
      "root ::= \"{\" pair (\",\" ws pair)* \"}\"\npair ::= key \":\" ws [0-9]+\nkey ::= \"\\\"\" [ab]* \"\\\"\"\n"
      "ws ::= \" \"?\n",
      trie);
  const auto regex = std::make_shared<structured::TokenMaskCache>(
      std::make_shared<const structured::ByteDfa>(
          structured::compile_regex("\\{\"[ab]*\": ?[0-9]+(, ?\"[ab]*\": ?[0-9]+)*\\}")),
      trie);
  for (int walk = 0; walk < 20; ++walk) {
    structured::TokenMatcher by_grammar(grammar, {kEos});
    structured::TokenMatcher by_regex(regex, {kEos});
    for (int step = 0; step < 30 && !by_regex.ended(); ++step) {
      structured::TokenBitmask a;
      structured::TokenBitmask b;
      by_grammar.fill_next_mask(a);
      by_regex.fill_next_mask(b);
      BOOST_TEST_REQUIRE(a == b);
      std::vector<TokenId> allowed;
      for (TokenId token = 0; token < static_cast<TokenId>(vocab.size()); ++token) {
        if (structured::is_allowed(b, token)) allowed.push_back(token);
      }
      const TokenId pick = allowed[rng() % allowed.size()];
      BOOST_TEST_REQUIRE(by_grammar.accept(pick));
      BOOST_TEST_REQUIRE(by_regex.accept(pick));
    }
  }
}

BOOST_AUTO_TEST_CASE(json_grammar_walks_end_in_json_and_reads_json_back) {
  std::mt19937 rng(3);
  const std::vector<std::string> vocab = random_vocabulary(rng, 2000);
  auto trie = std::make_shared<const structured::TokenTrie>(vocab);
  const auto cache = grammar_cache(kJsonGrammar, trie);
  int num_ended = 0;
  for (int walk = 0; walk < 200; ++walk) {
    structured::TokenMatcher matcher(cache, {kEos});
    std::string text;
    structured::TokenBitmask mask;
    for (int step = 0; step < 60 && !matcher.ended(); ++step) {
      matcher.fill_next_mask(mask);
      std::vector<TokenId> allowed;
      for (TokenId token = 0; token < static_cast<TokenId>(vocab.size()); ++token) {
        if (structured::is_allowed(mask, token)) allowed.push_back(token);
      }
      TokenId pick = allowed[rng() % allowed.size()];
      if (matcher.can_end()) pick = kEos;  // end as soon as the text is whole
      BOOST_TEST_REQUIRE(matcher.accept(pick));
      if (pick != kEos) text += vocab[static_cast<std::size_t>(pick)];
    }
    if (!matcher.ended()) continue;
    ++num_ended;
    BOOST_TEST_REQUIRE(nlohmann::json::accept(text), "not JSON: " << text);
  }
  BOOST_TEST(num_ended > 20);

  // Texts nlohmann writes, byte by byte (vocabulary ids 2..257 are the single bytes).
  const std::vector<nlohmann::json> values = {
      nlohmann::json::parse(R"({"a": [1, -2.5e3, true, null], "b": {"c": "x\ty"}, "": []})"),
      nlohmann::json::parse(R"([[[[]]], {}, "q\"uote", 0.125])"), nlohmann::json(-0), nlohmann::json("\xC3\xA9")};
  for (const nlohmann::json& value : values) {
    for (const int indent : {-1, 1}) {
      const std::string text = value.dump(indent);
      structured::TokenMatcher matcher(cache, {kEos});
      for (const char c : text) BOOST_TEST_REQUIRE(matcher.accept(2 + static_cast<unsigned char>(c)), text);
      BOOST_TEST(matcher.can_end(), text);
    }
  }
  structured::TokenMatcher matcher(cache, {kEos});
  for (const char c : std::string("{\"a\" 1}")) {
    if (!matcher.accept(2 + static_cast<unsigned char>(c))) {
      BOOST_TEST(c == '1');  // the colon is missing
      return;
    }
  }
  BOOST_FAIL("a text without its colon was read as JSON");
}

BOOST_AUTO_TEST_CASE(a_context_seen_before_reads_its_kept_mask) {
  std::mt19937 rng(8);
  const std::vector<std::string> vocab = random_vocabulary(rng, 2000);
  auto trie = std::make_shared<const structured::TokenTrie>(vocab);
  const auto cache = grammar_cache(kJsonGrammar, trie);
  const std::string text = R"({"a": [1, {"b": "x y"}, [true, null]], "c": -2.5})";
  const auto walk = [&] {
    structured::TokenMatcher matcher(cache, {kEos});
    structured::TokenBitmask mask;
    for (const char c : text) {
      matcher.fill_next_mask(mask);
      BOOST_TEST_REQUIRE(matcher.accept(2 + static_cast<unsigned char>(c)));
    }
    return cache->grammar()->num_stack_masks_computed();
  };
  const int64_t first = walk();
  BOOST_TEST(first > 10);
  BOOST_TEST(walk() == first);  // the same contexts again: no stack's mask computed twice
}

BOOST_AUTO_TEST_CASE(rollback_and_fork_restore_the_parse) {
  const std::vector<std::string> vocab = {"", "", "(", ")", "()", "x"};
  auto trie = std::make_shared<const structured::TokenTrie>(vocab);
  const auto cache = grammar_cache("root ::= \"(\" root \")\" root | \"x\"\n", trie);
  structured::TokenMatcher matcher(cache, {kEos});
  BOOST_TEST(!matcher.can_end());
  BOOST_TEST(matcher.accept(2));   // (
  BOOST_TEST(matcher.accept(2));   // ((
  BOOST_TEST(!matcher.accept(3));  // (() is refused: an "x" must come first
  BOOST_TEST(matcher.accept(5));   // ((x
  structured::TokenMatcher fork = matcher;
  BOOST_TEST(fork.accept(3));  // ((x)
  BOOST_TEST(fork.accept(5));  // ((x)x
  BOOST_TEST(fork.accept(3));  // ((x)x)
  BOOST_TEST(fork.accept(5));  // ((x)x)x
  BOOST_TEST(fork.can_end());
  BOOST_TEST(fork.accept(kEos));
  BOOST_TEST(fork.ended());
  BOOST_TEST(!matcher.can_end());  // the original is where it was
  fork.rollback(3);                // back to ((x)x
  BOOST_TEST(!fork.ended());
  BOOST_TEST(!fork.can_end());
  structured::TokenBitmask mask;
  fork.fill_next_mask(mask);
  BOOST_TEST(structured::is_allowed(mask, 3));   // )
  BOOST_TEST(!structured::is_allowed(mask, 4));  // () needs an x inside
  BOOST_TEST(!structured::is_allowed(mask, kEos));
  BOOST_CHECK_THROW(fork.rollback(7), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(right_recursion_keeps_one_stack_however_long_the_text) {
  const std::vector<std::string> vocab = {"", "", "a", "b", "ab"};
  auto trie = std::make_shared<const structured::TokenTrie>(vocab);
  const auto cache = grammar_cache("root ::= \"a\" root | \"b\"\n", trie);
  structured::TokenMatcher matcher(cache, {kEos});
  for (int i = 0; i < 5000; ++i) BOOST_TEST_REQUIRE(matcher.accept(2));
  structured::TokenBitmask mask;
  matcher.fill_next_mask(mask);
  BOOST_TEST(mask[0] == 0b11100u);  // a, b, ab; not end-of-sequence
  BOOST_TEST(matcher.accept(4));
  BOOST_TEST(matcher.can_end());
}

// Two grammars the grammar fuzzer found hanging the matcher: each "a" (or "(") doubles the parses
// alive, or more. Past GrammarMasks::kMaxLiveStacks the matcher throws at once; a TokenMatcher
// turns that into its failure(), allowing only the stop token from then on.
BOOST_AUTO_TEST_CASE(a_grammar_too_ambiguous_to_follow_fails_at_once_with_the_reason) {
  const std::vector<std::string> vocab = {"", "", "a", "b", "c", "d", "(", ")"};
  auto trie = std::make_shared<const structured::TokenTrie>(vocab);
  const char* const exponential = "root ::= s\ns ::= \"a\" s \"b\" | \"a\" x \"c\" | \"\"\nx ::= s \"d\"\n";
  const char* const catalan = "root ::= \"(\" root root \")\" root | \")\" root | \"\"\n";
  for (const auto& [text, token] : {std::pair{exponential, TokenId{2}}, std::pair{catalan, TokenId{6}}}) {
    BOOST_TEST_CONTEXT(text) {
      const auto cache = grammar_cache(text, trie);
      structured::TokenMatcher matcher(cache, {kEos});
      structured::TokenBitmask mask;
      int accepted = 0;
      for (; accepted < 64; ++accepted) {
        matcher.fill_next_mask(mask);
        if (!matcher.failure().empty() || !matcher.accept(token)) break;
      }
      BOOST_TEST_MESSAGE("failed after " << accepted << " tokens");
      BOOST_TEST(accepted >= 8);  // up to 2^8 parses are followed
      BOOST_TEST(accepted < 64);
      BOOST_TEST(matcher.failure().find("too ambiguous to follow: more than 1024 parses") != std::string::npos,
                 matcher.failure());
      BOOST_TEST(!matcher.accept(token));  // nothing more is read
      matcher.fill_next_mask(mask);
      BOOST_TEST(mask[0] == 1u);  // only the stop token
      BOOST_TEST(matcher.accept(kEos));
      BOOST_TEST(matcher.ended());
    }
  }
  // The grammar's own matcher throws the error and keeps its parse.
  const auto cache = grammar_cache(exponential, trie);
  structured::GrammarMatcher matcher(cache->grammar());
  int accepted = 0;
  BOOST_CHECK_THROW(
      while (accepted < 64) {
        BOOST_TEST_REQUIRE(matcher.accept("a"));
        ++accepted;
      },
      structured::GrammarAmbiguityError);
  BOOST_TEST(matcher.accept("b"));  // the text so far still closes
}

BOOST_AUTO_TEST_CASE(constraint_compiler_compiles_and_keeps_grammars) {
  std::vector<std::string> vocab = {"", "", "a", "b"};
  structured::ConstraintCompiler compiler(vocab);
  structured::ConstraintSpec spec;
  spec.kind = structured::ConstraintKind::grammar;
  spec.grammar = "root ::= \"a\" root | \"b\"";
  const auto first = compiler.compile(spec);
  BOOST_TEST(first->is_grammar());
  BOOST_TEST(compiler.compile(spec) == first);
  BOOST_TEST(compiler.num_compiled() == 1);
  spec.grammar = "root ::= root \"a\" | \"b\"";
  try {
    compiler.compile(spec);
    BOOST_FAIL("a left-recursive grammar compiled");
  } catch (const structured::ConstraintError& error) {
    BOOST_TEST(std::string(error.what()).find("left-recursive") != std::string::npos);
  }
  BOOST_CHECK_THROW(structured::compile_constraint(spec), structured::ConstraintError);
}

BOOST_AUTO_TEST_SUITE_END()
