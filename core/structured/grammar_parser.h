// EBNF grammars as vLLM's `grammar` / `guided_grammar` field and llama.cpp's `grammar` take them:
// GBNF, which XGrammar's EBNF shares, parsed into rules of expressions.
//
//   root   ::= "{" ws pair ("," ws pair)* "}"     # a comment
//   pair   ::= [a-z]+ ":" ws value
//   value  ::= [0-9]+ | "\"" [^"\\]* "\"" | root
//   ws     ::= [ \t\n]*
//
// Terminals are strings ("..."), character classes ([...], [^...], with ranges and escapes) and
// `.` (any character); expressions are sequences, alternatives (|), groups, and the quantifiers
// * + ? {n} {n,} {n,m} {,m}. A rule ends where the next `name ::=` begins, so both one-rule-a-line
// GBNF and rules spanning lines parse. The start rule is `root`. Lookahead assertions and Lark's
// syntax are refused with GrammarError naming the line and column.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "core/structured/code_point_set.h"
#include "core/structured/thompson_nfa.h"

namespace pagedllm::structured {

class GrammarError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

struct GrammarRule {
  std::string name;
  int32_t body = -1;  // an index into Grammar::exprs
  int32_t line = 0;   // where it is defined (1-based), for messages
};

struct Grammar {
  std::vector<GrammarRule> rules;  // in the order the text first names them
  std::vector<PatternExpr> exprs;  // the rules' bodies
  int32_t root = -1;               // the rule named "root"
};

// Throws GrammarError ("grammar, line L, column C: problem") for text outside the syntax above, an
// undefined or twice-defined rule, or a missing root rule.
Grammar parse_grammar(std::string_view text);

}  // namespace pagedllm::structured
