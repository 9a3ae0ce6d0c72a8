// Output constraints as requests state them (a regex, a list of choices, a JSON schema, any JSON
// object, an EBNF grammar), compiled per model into the shared token-mask caches the engine's matchers walk.
//
// One compiler per served model: it holds the vocabulary's trie and keeps the constraints it
// compiled, by their canonical text, so that requests repeating a schema (the usual case: one
// response format or tool set per application) share one automaton and its masks, computed once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/structured/grammar_automaton.h"
#include "core/structured/json_schema.h"
#include "core/structured/regex_compiler.h"
#include "core/structured/token_mask.h"

namespace pagedllm::structured {

enum class ConstraintKind : uint8_t {
  regex,        // the whole output matches `regex`
  choice,       // the output is exactly one of `choices`
  json_schema,  // a JSON text that validates against `schema`, in `layout`
  json_object,  // any JSON object, in `layout`
  grammar,      // the output matches `grammar`'s root rule (GBNF / XGrammar EBNF)
};
const char* to_string(ConstraintKind kind);

struct ConstraintSpec {
  ConstraintKind kind = ConstraintKind::regex;
  std::string regex;                 // regex
  std::vector<std::string> choices;  // choice: at least one
  nlohmann::ordered_json schema;     // json_schema (ordered: properties keep their order)
  JsonLayout layout;                 // json_schema, json_object
  std::string grammar;               // grammar: the EBNF text
};

// A constraint that cannot be compiled: the message names the problem (the regex offset, the
// schema keyword and its path, the automaton's size limit).
class ConstraintError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// The byte automaton of a constraint (any kind but grammar). Throws ConstraintError.
ByteDfa compile_constraint(const ConstraintSpec& spec, const RegexLimits& limits = {});
// A grammar constraint's pushdown automaton. Throws ConstraintError.
PushdownGrammar compile_grammar_constraint(const ConstraintSpec& spec, const RegexLimits& limits = {});

struct ConstraintCompilerConfig {
  RegexLimits limits;           // bound compile time and memory per constraint
  std::size_t max_cached = 64;  // compiled constraints kept (least recently used dropped)
};

// Thread-safe: a server's request threads compile; the caches it hands out are then used on the
// engine's thread only (TokenMaskCache is not thread-safe; the compiler never touches one again).
class ConstraintCompiler {
 public:
  // token_bytes[id]: the bytes of token id over the model's whole vocabulary (its logits' size);
  // empty for special tokens and padding ids, which a constraint never allows.
  ConstraintCompiler(const std::vector<std::string>& token_bytes, ConstraintCompilerConfig config = {});

  // The constraint's mask cache, compiled now or found among those kept. Throws ConstraintError.
  std::shared_ptr<TokenMaskCache> compile(const ConstraintSpec& spec);

  int32_t vocab_size() const { return trie_->vocab_size(); }
  std::size_t num_cached() const;
  int64_t num_compiled() const;  // cache misses so far

 private:
  using Entry = std::pair<std::string, std::shared_ptr<TokenMaskCache>>;  // (canonical text, cache)

  ConstraintCompilerConfig config_;
  std::shared_ptr<const TokenTrie> trie_;
  mutable std::mutex mutex_;  // guards the members below
  std::list<Entry> recent_;   // most recently used first
  std::unordered_map<std::string, std::list<Entry>::iterator> by_key_;
  int64_t num_compiled_ = 0;
};

}  // namespace pagedllm::structured
