#include "tools/server/openai_structured_outputs.h"

#include <utility>

#include "tools/server/openai_errors.h"

namespace pagedllm::server {

using nlohmann::json;
using structured::ConstraintKind;

namespace {

[[noreturn]] void refuse_constraint(const std::string& path, const std::string& what) { throw JsonError(path, what); }

OutputConstraintRequest constraint_of(ConstraintKind kind, const std::string& field) {
  OutputConstraintRequest constraint;
  constraint.spec.kind = kind;
  constraint.field = field;
  return constraint;
}

// A schema given as an object (its place in the body kept), or as JSON text (vLLM takes both).
OutputConstraintRequest schema_constraint(const JsonValue& schema, std::vector<std::string> path_in_body) {
  OutputConstraintRequest constraint = constraint_of(ConstraintKind::json_schema, schema.path());
  if (schema.json().is_string()) {
    if (const std::size_t at = json_nesting_past(schema.string(), kMaxJsonDepth); at != 0) {
      schema.fail("the schema nests deeper than " + std::to_string(kMaxJsonDepth) + " levels (at byte " +
                  std::to_string(at) + ")");
    }
    try {
      constraint.spec.schema = nlohmann::ordered_json::parse(schema.string());
    } catch (const nlohmann::json::exception& error) {  // a syntax error, or a number past a double's range
      schema.fail(std::string("the schema is not valid JSON text: ") + error.what());
    }
    return constraint;
  }
  if (!schema.json().is_object() && !schema.json().is_boolean()) schema.fail_type("a JSON schema (an object)");
  constraint.spec.schema = nlohmann::ordered_json::parse(schema.json().dump());  // sorted until re-read
  constraint.schema_path = std::move(path_in_body);
  return constraint;
}

OutputConstraintRequest regex_constraint(const JsonValue& regex) {
  const std::string& pattern = regex.string();
  if (pattern.empty()) regex.fail("the regex must not be empty");
  OutputConstraintRequest constraint = constraint_of(ConstraintKind::regex, regex.path());
  constraint.spec.regex = pattern;
  return constraint;
}

// GBNF / XGrammar EBNF text; its syntax is checked when the server compiles it (the 400 names the
// line and column).
OutputConstraintRequest grammar_constraint(const JsonValue& grammar) {
  const std::string& text = grammar.string();
  if (text.empty()) grammar.fail("the grammar must not be empty");
  OutputConstraintRequest constraint = constraint_of(ConstraintKind::grammar, grammar.path());
  constraint.spec.grammar = text;
  return constraint;
}

OutputConstraintRequest choice_constraint(const JsonValue& choices) {
  choices.expect_array();
  if (choices.size() == 0) choices.fail("must list at least one choice");
  OutputConstraintRequest constraint = constraint_of(ConstraintKind::choice, choices.path());
  for (size_t i = 0; i < choices.size(); ++i) {
    const std::string& choice = choices.at(i).string();
    if (choice.empty()) choices.at(i).fail("a choice must not be empty");
    constraint.spec.choices.push_back(choice);
  }
  return constraint;
}

}  // namespace

void read_response_format(const JsonValue& value, StructuredOutputFields& out) {
  value.expect_object();
  const std::optional<JsonValue> type = value.find("type");
  if (!type) refuse_constraint(value.path() + ".type", "required");
  const std::string& kind = type->string();
  for (const auto& [key, member] : value.json().items()) {
    if (key != "type" && key != "json_schema" && !member.is_null()) {
      value.derived(member, value.path() + "." + key).fail("unknown field of response_format");
    }
  }
  if (kind == "text") return;
  if (kind == "json_object") {
    out.constraints.push_back(constraint_of(ConstraintKind::json_object, value.path()));
    return;
  }
  if (kind != "json_schema") {
    type->fail("must be \"text\", \"json_object\" or \"json_schema\" (structural tags are not supported yet), got \"" +
               kind + "\"");
  }
  const std::optional<JsonValue> json_schema = value.find("json_schema");
  if (!json_schema) refuse_constraint(value.path() + ".json_schema", "required when type is \"json_schema\"");
  json_schema->expect_object();
  const std::optional<JsonValue> name = json_schema->find("name");
  if (!name) refuse_constraint(json_schema->path() + ".name", "required");
  name->string();
  if (const auto description = json_schema->find("description")) description->string();
  // strict is accepted and changes nothing: the schema is always enforced (as in vLLM).
  if (const auto strict = json_schema->find("strict")) strict->boolean();
  for (const auto& [key, member] : json_schema->json().items()) {
    if (key != "name" && key != "description" && key != "strict" && key != "schema" && !member.is_null()) {
      json_schema->derived(member, json_schema->path() + "." + key).fail("unknown field of json_schema");
    }
  }
  if (const auto schema = json_schema->find("schema")) {
    out.constraints.push_back(schema_constraint(*schema, {"response_format", "json_schema", "schema"}));
  } else {
    // No schema: any JSON value, as the empty schema says.
    OutputConstraintRequest any = constraint_of(ConstraintKind::json_schema, json_schema->path());
    any.spec.schema = nlohmann::ordered_json::object();
    out.constraints.push_back(std::move(any));
  }
}

void read_structured_outputs(const JsonValue& value, StructuredOutputFields& out) {
  value.expect_object();
  for (const auto& [key, member] : value.json().items()) {
    if (member.is_null()) continue;
    const JsonValue field = value.derived(member, value.path() + "." + key);
    if (key == "json") {
      out.constraints.push_back(schema_constraint(field, {value.path(), "json"}));
    } else if (key == "regex") {
      out.constraints.push_back(regex_constraint(field));
    } else if (key == "choice") {
      out.constraints.push_back(choice_constraint(field));
    } else if (key == "json_object") {
      if (field.boolean()) out.constraints.push_back(constraint_of(ConstraintKind::json_object, field.path()));
    } else if (key == "grammar") {
      out.constraints.push_back(grammar_constraint(field));
    } else if (key == "structural_tag") {
      field.fail("not supported by this server yet (regex, choice, json, json_object and grammar are)");
    } else if (key == "disable_any_whitespace") {
      out.disable_any_whitespace = field.boolean();
    } else if (key == "disable_additional_properties") {
      out.disable_additional_properties = field.boolean();
    } else if (key == "whitespace_pattern") {
      out.whitespace_pattern = field.string();
    } else {
      field.fail("unknown field of structured_outputs");
    }
  }
}

void read_guided_json(const JsonValue& value, StructuredOutputFields& out) {
  out.constraints.push_back(schema_constraint(value, {value.path()}));
}
void read_guided_regex(const JsonValue& value, StructuredOutputFields& out) {
  out.constraints.push_back(regex_constraint(value));
}
void read_guided_grammar(const JsonValue& value, StructuredOutputFields& out) {
  out.constraints.push_back(grammar_constraint(value));
}
void read_guided_choice(const JsonValue& value, StructuredOutputFields& out) {
  out.constraints.push_back(choice_constraint(value));
}
void read_guided_whitespace_pattern(const JsonValue& value, StructuredOutputFields& out) {
  out.whitespace_pattern = value.string();
}

std::optional<OutputConstraintRequest> resolve_output_constraint(StructuredOutputFields fields) {
  if (fields.constraints.empty()) return std::nullopt;
  if (fields.constraints.size() > 1) {
    refuse_constraint(fields.constraints[1].field,
                      "only one output constraint per request; " + fields.constraints[0].field + " gives one already");
  }
  OutputConstraintRequest constraint = std::move(fields.constraints.front());
  structured::JsonLayout& layout = constraint.spec.layout;
  if (fields.disable_any_whitespace) layout.any_whitespace = !*fields.disable_any_whitespace;
  // Objects are closed unless their schema opens them, so disable_additional_properties (vLLM's
  // switch to that rule) has nothing left to change.
  if (fields.disable_additional_properties) layout.allow_additional_properties = false;
  if (fields.whitespace_pattern) layout.whitespace_pattern = fields.whitespace_pattern;
  return constraint;
}

}  // namespace pagedllm::server
