// The request fields that constrain an output, read into one constraint:
// - OpenAI's response_format: {"type": "text"}, {"type": "json_object"}, or
//   {"type": "json_schema", "json_schema": {"name", "schema", "strict", "description"}};
// - vLLM's structured_outputs: {"json" | "regex" | "choice" | "grammar" | "json_object": true, and the options
//   "disable_any_whitespace", "disable_additional_properties", "whitespace_pattern"};
// - vLLM's older guided_json / guided_regex / guided_choice / guided_grammar, guided_whitespace_pattern and
//   guided_decoding_backend (vLLM 0.12 dropped them and now ignores them silently; here they
//   still constrain, so that clients written for vLLM before 0.12 get what they asked for).
// At most one constraint per request. Grammars are GBNF / XGrammar EBNF (`root ::= ...`, as vLLM's
// default backend takes them); Lark grammars and structural tags are refused.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/common/json_value.h"
#include "core/structured/output_constraint.h"

namespace pagedllm::server {

// A constraint as the request gave it, before the server compiles it for the model.
struct OutputConstraintRequest {
  structured::ConstraintSpec spec;
  std::string field;  // the field it came from ("response_format", "structured_outputs.json"): errors name it
  // Where the schema is in the request body (keys from the root) when given as an object: the
  // server reads it again from the body in its written order (`spec.schema` then has the keys
  // sorted, as nlohmann::json keeps them). Empty when the schema came as JSON text.
  std::vector<std::string> schema_path;
};

// What the fields said, before the rule that one constraint at most is given.
struct StructuredOutputFields {
  std::vector<OutputConstraintRequest> constraints;
  std::optional<bool> disable_any_whitespace;
  std::optional<bool> disable_additional_properties;
  std::optional<std::string> whitespace_pattern;
};

// Each throws JsonError naming the field at fault.
void read_response_format(const JsonValue& value, StructuredOutputFields& out);
void read_structured_outputs(const JsonValue& value, StructuredOutputFields& out);
void read_guided_json(const JsonValue& value, StructuredOutputFields& out);
void read_guided_regex(const JsonValue& value, StructuredOutputFields& out);
void read_guided_choice(const JsonValue& value, StructuredOutputFields& out);
void read_guided_grammar(const JsonValue& value, StructuredOutputFields& out);
void read_guided_whitespace_pattern(const JsonValue& value, StructuredOutputFields& out);

// The one constraint, its layout set from the options; nullopt when none. Throws JsonError when
// more than one is given.
std::optional<OutputConstraintRequest> resolve_output_constraint(StructuredOutputFields fields);

}  // namespace pagedllm::server
