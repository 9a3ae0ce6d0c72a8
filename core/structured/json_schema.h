// JSON Schema (the `json_schema` response format, `guided_json`) and plain JSON objects (the
// `json_object` response format) to a regular expression for compile_regex, whose automaton
// accepts the JSON texts, in a chosen layout, that validate against the schema.
//
// The supported subset, and where the automaton is narrower than the schema:
// - true, {} and schemas with only annotations: any JSON value, with at most max_any_depth nested
//   arrays and objects (a regular language cannot count brackets). false: refused. Keywords of one
//   type without "type" ({"properties": ...}) are taken for that type, as XGrammar does.
// - type (a name or a list), enum and const (each value as nlohmann's dump() writes it: its
//   escapes, raw UTF-8, object keys in the schema's order; values not of a sibling "type" dropped),
//   anyOf and oneOf (alternations: oneOf's "exactly one" is not checked), allOf of one schema,
//   $ref to "#" or a JSON pointer in the schema ("#/$defs/Name", "#/definitions/Name"). Keywords
//   next to $ref, anyOf, oneOf, allOf, enum and const must be annotations. No recursive $ref.
// - string: minLength, maxLength (characters, an escape is one: a surrogate-pair escape counts
//   two), pattern (a whole match of the text between the quotes: unanchored patterns are read as
//   anchored; not with a length bound), format date (YYYY-MM-DD, day 01-31 in any month), time
//   (hh:mm:ss, a fraction, Z or +hh:mm / -hh:mm; no leap second), date-time (date T time), uuid,
//   ipv4 (no leading zeros), email (kEmailPattern in json_schema.cpp). Under a pattern or a format,
//   as in enum and const, a string is written in the one spelling dump() writes; otherwise any.
// - integer: minimum, maximum, exclusiveMinimum, exclusiveMaximum (numbers, draft 2020-12; a
//   fractional bound rounded inward), within the 64-bit range. Written without a fraction or an
//   exponent ("2", not "2.0"); "-0" is accepted where 0 is (JSON allows it, and it reads as 0).
// - number (no bounds), boolean, null.
// - object: properties in their declared order (the pattern fixes the order, as XGrammar does:
//   parse the schema with nlohmann::ordered_json to keep it), required, additionalProperties
//   (false, true or a schema: members after the declared ones whose keys are not a declared name
//   as dump() writes it). Without additionalProperties the layout decides. A required name that is
//   not declared is an additional property that must be there (after the declared ones).
// - array: items, prefixItems (a tuple that may end early, as in JSON Schema; then items for the
//   rest, or nothing more if items is false, or absent while the layout closes objects), minItems,
//   maxItems.
// Bounds are counted repeats, so size grows with them: past about maxLength 700 or maxItems 500
// (of integers) the automaton passes compile_regex's 20,000-state limit and it throws RegexError.
// Annotations (title, description, default, examples, $schema, $id, $comment, ...) are ignored;
// any other keyword is refused with JsonSchemaError naming it and where it is.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>

namespace pagedllm::structured {

struct JsonLayout {
  // true: between JSON tokens (after { [ , : and before } ] , :) any of " \t\n\r", at most
  // max_whitespace characters a gap, so that a model cannot spend max_tokens on whitespace;
  // false: json.dumps' default layout exactly: ", " between items, ": " after keys, nothing else
  // (XGrammar's any_whitespace=false, vLLM's disable_any_whitespace).
  bool any_whitespace = true;
  // A gap costs up to max_whitespace + 1 automaton states where it occurs: 16 leaves room for a
  // newline and 4-space indentation three levels deep (json_schema.cpp has the sizes).
  int32_t max_whitespace = 16;
  // A pattern for the gap instead (vLLM's whitespace_pattern), whatever any_whitespace says.
  std::optional<std::string> whitespace_pattern;
  // For objects whose schema says nothing of additionalProperties (and tuples nothing of items):
  // false = closed (XGrammar's strict mode, OpenAI's strict schemas), true = JSON Schema's default,
  // extra members (any value) after the declared ones.
  bool allow_additional_properties = false;
  // Arrays and objects nested in a schema-less value (json_object_regex's object counts as one).
  // Each level multiplies the pattern and its automaton by about 4 (a value occurs twice in an
  // array and twice in an object, and compile_regex does not minimize); sizes in json_schema.cpp.
  int32_t max_any_depth = 3;
};

// what(): "json schema at /properties/age: 'multipleOf' is not supported".
class JsonSchemaError : public std::invalid_argument {
 public:
  JsonSchemaError(const std::string& path, const std::string& problem)
      : std::invalid_argument("json schema at " + (path.empty() ? std::string("the root") : path) + ": " + problem),
        path_(path),
        problem_(problem) {}
  const std::string& path() const noexcept { return path_; }  // a JSON pointer; "" = the root
  const std::string& problem() const noexcept { return problem_; }

 private:
  std::string path_;
  std::string problem_;
};

// The pattern for `schema` (a nlohmann::json converts implicitly, its keys then in sorted order).
// No whitespace before or after the top-level value. Throws JsonSchemaError, or
// std::invalid_argument for a layout out of range (max_whitespace < 0, max_any_depth < 1).
std::string json_schema_regex(const nlohmann::ordered_json& schema, const JsonLayout& layout = {});

// Any JSON object (the json_object response format), nested at most layout.max_any_depth deep.
std::string json_object_regex(const JsonLayout& layout = {});

}  // namespace pagedllm::structured
