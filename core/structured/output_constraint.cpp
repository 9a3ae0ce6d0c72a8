#include "core/structured/output_constraint.h"

#include "core/structured/grammar_parser.h"
#include "core/structured/regex_escape.h"

namespace pagedllm::structured {

const char* to_string(ConstraintKind kind) {
  switch (kind) {
    case ConstraintKind::regex:
      return "regex";
    case ConstraintKind::choice:
      return "choice";
    case ConstraintKind::json_schema:
      return "json_schema";
    case ConstraintKind::json_object:
      return "json_object";
    case ConstraintKind::grammar:
      return "grammar";
  }
  return "?";
}

namespace {

std::string choice_regex(const std::vector<std::string>& choices) {
  if (choices.empty()) throw ConstraintError("choice: the list of choices is empty");
  std::string pattern;
  for (std::size_t i = 0; i < choices.size(); ++i) {
    if (choices[i].empty()) throw ConstraintError("choice " + std::to_string(i) + ": an empty choice");
    if (i > 0) pattern += '|';
    try {
      pattern += "(?:" + escape_regex(choices[i]) + ")";
    } catch (const std::invalid_argument& error) {
      throw ConstraintError("choice " + std::to_string(i) + ": " + error.what());
    }
  }
  return pattern;
}

// The key a compiled constraint is kept under: everything its automaton depends on.
std::string constraint_key(const ConstraintSpec& spec) {
  std::string key = to_string(spec.kind);
  key += '\n';
  const auto add_layout = [&] {
    const JsonLayout& layout = spec.layout;
    key += std::to_string(layout.any_whitespace) + "," + std::to_string(layout.max_whitespace) + "," +
           std::to_string(layout.allow_additional_properties) + "," + std::to_string(layout.max_any_depth) + "," +
           (layout.whitespace_pattern ? "=" + *layout.whitespace_pattern : "-") + "\n";
  };
  switch (spec.kind) {
    case ConstraintKind::regex:
      key += spec.regex;
      break;
    case ConstraintKind::choice:
      key += nlohmann::json(spec.choices).dump();
      break;
    case ConstraintKind::json_schema:
      add_layout();
      key += spec.schema.dump();
      break;
    case ConstraintKind::json_object:
      add_layout();
      break;
    case ConstraintKind::grammar:
      key += spec.grammar;
      break;
  }
  return key;
}

}  // namespace

ByteDfa compile_constraint(const ConstraintSpec& spec, const RegexLimits& limits) {
  std::string pattern;
  try {
    switch (spec.kind) {
      case ConstraintKind::regex:
        pattern = spec.regex;
        break;
      case ConstraintKind::choice:
        pattern = choice_regex(spec.choices);
        break;
      case ConstraintKind::json_schema:
        pattern = json_schema_regex(spec.schema, spec.layout);
        break;
      case ConstraintKind::json_object:
        pattern = json_object_regex(spec.layout);
        break;
      case ConstraintKind::grammar:
        throw ConstraintError("grammar: compiles to a pushdown automaton (compile_grammar_constraint), not a byte one");
    }
  } catch (const JsonSchemaError& error) {
    throw ConstraintError(error.what());
  }
  try {
    return compile_regex(pattern, limits);
  } catch (const RegexError& error) {
    if (spec.kind == ConstraintKind::regex) throw ConstraintError(error.what());
    // The pattern is ours, so its offsets mean nothing to the client; the problem does (a size limit).
    throw ConstraintError(std::string(to_string(spec.kind)) + ": " + error.what());
  }
}

PushdownGrammar compile_grammar_constraint(const ConstraintSpec& spec, const RegexLimits& limits) {
  if (spec.kind != ConstraintKind::grammar) {
    throw ConstraintError(std::string(to_string(spec.kind)) + ": not a grammar (compile_constraint compiles it)");
  }
  try {
    return compile_grammar(spec.grammar, limits);
  } catch (const GrammarError& error) {
    throw ConstraintError(error.what());
  }
}

ConstraintCompiler::ConstraintCompiler(const std::vector<std::string>& token_bytes, ConstraintCompilerConfig config)
    : config_(config), trie_(std::make_shared<TokenTrie>(token_bytes)) {}

std::shared_ptr<TokenMaskCache> ConstraintCompiler::compile(const ConstraintSpec& spec) {
  std::string key = constraint_key(spec);
  {
    const std::lock_guard lock(mutex_);
    if (const auto found = by_key_.find(key); found != by_key_.end()) {
      recent_.splice(recent_.begin(), recent_, found->second);
      return found->second->second;
    }
  }
  // Compiled outside the lock: another request's compile or lookup need not wait for this one.
  auto cache =
      spec.kind == ConstraintKind::grammar
          ? std::make_shared<TokenMaskCache>(
                std::make_shared<const PushdownGrammar>(compile_grammar_constraint(spec, config_.limits)), trie_)
          : std::make_shared<TokenMaskCache>(std::make_shared<const ByteDfa>(compile_constraint(spec, config_.limits)),
                                             trie_);
  const std::lock_guard lock(mutex_);
  ++num_compiled_;
  if (const auto found = by_key_.find(key); found != by_key_.end()) return found->second->second;  // a twin won
  recent_.emplace_front(key, cache);
  by_key_.emplace(std::move(key), recent_.begin());
  while (recent_.size() > config_.max_cached) {
    by_key_.erase(recent_.back().first);
    recent_.pop_back();
  }
  return cache;
}

std::size_t ConstraintCompiler::num_cached() const {
  const std::lock_guard lock(mutex_);
  return recent_.size();
}

int64_t ConstraintCompiler::num_compiled() const {
  const std::lock_guard lock(mutex_);
  return num_compiled_;
}

}  // namespace pagedllm::structured
