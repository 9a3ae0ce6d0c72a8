// JSON Schema to regex (core/structured/json_schema.h), judged by the compiled automaton: texts of
// hand-written schemas that must and must not match; random schemas with valid instances written
// in each layout (random whitespace up to the bound) that must match and mutations of them known to
// be invalid that must not; integer ranges against every integer of [-2000, 2000]; errors naming
// the keyword and its path; json_object's nesting bound and size; escape_regex.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "core/structured/json_schema.h"
#include "core/structured/regex_compiler.h"
#include "core/structured/regex_escape.h"

namespace structured = pagedllm::structured;
using OrderedJson = nlohmann::ordered_json;

namespace {

// json.dumps' layout; schema-less values nest 2 deep (3 is the default: a larger automaton, slow
// to build under the sanitizers).
structured::JsonLayout compact_layout() {
  structured::JsonLayout layout;
  layout.any_whitespace = false;
  layout.max_any_depth = 2;
  return layout;
}

structured::ByteDfa schema_automaton(const OrderedJson& schema, const structured::JsonLayout& layout,
                                     const structured::RegexLimits& limits = {}) {
  return structured::compile_regex(structured::json_schema_regex(schema, layout), limits);
}

struct SchemaCase {
  std::string name;
  std::string schema;
  std::vector<std::string> valid;
  std::vector<std::string> invalid;
  bool any_whitespace = false;  // else json.dumps' layout
};

// Each feature on its own, then schemas as Pydantic and OpenAI's strict mode write them.
const std::vector<SchemaCase>& schema_cases() {
  static const std::vector<SchemaCase> cases = {
      {"plain string",
       R"({"type": "string"})",
       {R"("abc")", R"("")", R"("a\"b\\c/")", R"("\u00e9\n\t\b\f\r\u007f")", "\"\xC3\xA9\xE4\xB8\xAD\xF0\x9F\x98\x80\"",
        R"("\uD83D\uDE00")"},
       // A raw DEL, the escape \/ and lone surrogates are left out, as llguidance leaves them out
       // (json_schema.cpp).
       {"abc", R"("a"b")", R"("a\qb")", R"("\u12")", "\"a\x01\"", "\"", R"("a" )", "\"\xC3\"", R"("a\/b")", "\"\x7f\"",
        R"("\uDE00")", R"("\uD83Dx")", R"("\uD83D\u0041")"}},
      {"string lengths count characters, an escape as one",
       R"({"type": "string", "minLength": 2, "maxLength": 3})",
       {R"("ab")", R"("abc")", R"("\n\t")", "\"\xC3\xA9\xE4\xB8\xAD\"", R"("\u0041bc")"},
       {R"("a")", R"("abcd")", R"("\\")", R"("")", R"("\u0041bcd")"}},
      {"pattern over the text between the quotes",
       R"({"type": "string", "pattern": "^[a-z]+@[a-z]+\\.com$"})",
       {R"("ab@cd.com")", R"("x@y.com")"},
       {R"("AB@cd.com")", R"("ab@cd.org")", R"("ab@cdxcom")", R"("")"}},
      {"pattern characters that JSON escapes are written escaped",
       R"({"type": "string", "pattern": "a.c"})",
       {R"("abc")", R"("a\"c")", R"("a\\c")", R"("a\tc")", "\"a\xC3\xA9\x63\"", R"("a/c")"},
       {R"("a\nc")", R"("a"c")", R"("a\u0022c")", R"("ac")", "\"a\tc\""}},
      {"pattern classes and escapes with quotes, backslashes and controls",
       R"({"type": "string", "pattern": "^[\"x]\\\\[^a]\\s\\S\\d{2}$"})",
       {R"("\"\\b 012")", R"("x\\\"\n\\12")", R"("x\\\\\t\"99")"},
       {R"(""\\b 012")", R"("x\\a 012")", R"("x\\b\\012")", R"("x\\b 0a2")"}},
      {"pattern with a negated class that starts with ]",
       R"({"type": "string", "pattern": "[^]a]+"})",
       {R"("bc")", R"("\"\\")", R"("\u0001")"},
       {R"("]")", R"("ba")", R"("")"}},
      {"format date",
       R"({"type": "string", "format": "date"})",
       {R"("2024-02-29")", R"("1999-12-31")", R"("0001-01-01")"},
       {R"("2024-13-01")", R"("2024-1-01")", R"("2024-01-32")", R"("2024-00-10")", R"(2024-01-01)"}},
      {"format time and date-time",
       R"({"type": "array", "prefixItems": [{"type": "string", "format": "time"},
                                             {"type": "string", "format": "date-time"}], "minItems": 2})",
       {R"(["23:59:59Z", "2024-05-01T12:00:00.123+02:00"])", R"(["00:00:00.5-11:30", "2024-05-01T00:00:00Z"])"},
       {R"(["24:00:00Z", "2024-05-01T12:00:00Z"])", R"(["12:00:00", "2024-05-01T12:00:00Z"])",
        R"(["12:00:00Z", "2024-05-01 12:00:00Z"])", R"(["12:60:00Z", "2024-05-01T12:00:00Z"])"}},
      {"format uuid, ipv4 and email",
       R"({"type": "object", "properties": {"id": {"type": "string", "format": "uuid"},
                                            "ip": {"type": "string", "format": "ipv4"},
                                            "to": {"type": "string", "format": "email"}},
           "required": ["id", "ip", "to"]})",
       {R"({"id": "123e4567-e89b-12d3-a456-426614174000", "ip": "192.168.0.255", "to": "a.b+c@mail.example.org"})",
        R"({"id": "123E4567-E89B-12D3-A456-426614174000", "ip": "0.0.0.0", "to": "x@y.io"})"},
       {R"({"id": "123e4567e89b12d3a456426614174000", "ip": "1.2.3.4", "to": "x@y.io"})",
        R"({"id": "123e4567-e89b-12d3-a456-426614174000", "ip": "256.1.1.1", "to": "x@y.io"})",
        R"({"id": "123e4567-e89b-12d3-a456-426614174000", "ip": "01.1.1.1", "to": "x@y.io"})",
        R"({"id": "123e4567-e89b-12d3-a456-426614174000", "ip": "1.1.1.1", "to": "x@y"})",
        R"({"id": "123e4567-e89b-12d3-a456-426614174000", "ip": "1.1.1.1", "to": "a..b@y.io"})"}},
      {"integer",
       R"({"type": "integer"})",
       {"0", "-0", "12", "-7", "9223372036854775807123"},
       {"01", "1.0", "+1", "\"1\"", "-", "1e3", "", " 1"}},
      {"integer with fractional and exclusive bounds",
       R"({"type": "integer", "exclusiveMinimum": 0.5, "maximum": 10.7})",
       {"1", "5", "10"},
       {"0", "-0", "11", "-1"}},
      {"number",
       R"({"type": "number"})",
       {"0", "-1.5", "1e10", "2.5E-3", "-0.0", "10", "1E+2"},
       {".5", "1.", "01", "+1", "NaN", "Infinity", "1e", "--1", "0x10"}},
      {"boolean and null in a union of types",
       R"({"type": ["boolean", "null"]})",
       {"true", "false", "null"},
       {"True", "0", "\"null\"", "nul"}},
      {"enum of mixed values as dump() writes them",
       R"({"enum": ["a", 1, null, true, -2.5, {"k": [1, 2]}, "\u00e9\"x"]})",
       {R"("a")", "1", "null", "true", "-2.5", R"({"k": [1, 2]})", "\"\xC3\xA9\\\"x\""},
       {R"("b")", "2", "false", R"({"k":[1,2]})", R"({"k": [1, 2] })", R"("\u00e9\"x")", "1.0"}},
      {"enum with a type keeps the values of that type",
       R"({"type": "string", "enum": ["a", 1, "b"]})",
       {R"("a")", R"("b")"},
       {"1", R"("1")"}},
      {"const object with any whitespace",
       R"({"const": {"a": [1, {}], "b": "x"}})",
       {R"({"a":[1,{}],"b":"x"})", "{ \"a\" :\n[ 1 ,{ } ] , \"b\":\"x\"\t}", R"({"a": [1, {}], "b": "x"})"},
       {R"({"b":"x","a":[1,{}]})", R"({"a":[1,{}]})", R"( {"a":[1,{}],"b":"x"})", R"({"a":[1,{}],"b":"x"} )"},
       true},
      {"nullable string as anyOf",
       R"({"anyOf": [{"type": "string", "maxLength": 2}, {"type": "null"}], "default": null, "title": "Nick"})",
       {R"("ab")", "null"},
       {R"("abc")", "\"null", "0"}},
      {"object with a required subset, in declared order",
       R"({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"},
                                            "c": {"type": "boolean"}}, "required": ["b"]})",
       {R"({"b": "x"})", R"({"a": 1, "b": "x"})", R"({"b": "x", "c": true})", R"({"a": 1, "b": "x", "c": false})"},
       {R"({})", R"({"a": 1})", R"({"b": "x", "a": 1})", R"({"a": 1, "b": "x", "d": 1})", R"({"b": "x",})",
        R"({, "b": "x"})", R"({"b":"x"})", R"({"b": "x", "c": true, "c": true})"}},
      {"object with only optional properties",
       R"({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"},
                                            "c": {"type": "integer"}}})",
       {"{}", R"({"a": 1})", R"({"b": 2})", R"({"c": 3})", R"({"a": 1, "c": 3})", R"({"b": 2, "c": 3})",
        R"({"a": 1, "b": 2, "c": 3})"},
       {R"({,})", R"({"a": 1,})", R"({, "c": 3})", R"({"c": 3, "a": 1})", R"({"a": 1 "b": 2})", R"({"d": 1})"}},
      {"additional properties after the declared ones, never a declared name",
       R"({"type": "object", "properties": {"a": {"type": "integer"}, "\u00e9\"": {"type": "integer"}},
           "additionalProperties": true})",
       {"{}", R"({"a": 1, "x": [1]})", R"({"z": null})", R"({"ab": 1, "": 2})",
        "{\"\xC3\xA9\\\"\": 1, \"\xC3\xA9\": 2}", R"({"a": 1, "\u0061": "escaped spellings are not caught"})"},
       {R"({"a": 1, "a": 2})", R"({"z": 1, "a": 1})", "{\"a\": 1, \"\xC3\xA9\\\"\": 2, \"a\": 3}", R"({"a": "x"})"}},
      {"a map: additionalProperties alone",
       R"({"type": "object", "additionalProperties": {"type": "integer", "minimum": 0}})",
       {"{}", R"({"x": 1, "y": 2})", R"({"x": 1, "x": 2})"},
       {R"({"x": "s"})", R"({"x": -1})", R"({"x": 1,})"}},
      {"a required name not declared is an additional property that must be there",
       R"({"required": ["id"], "additionalProperties": {"type": "integer"}})",
       {R"({"id": 1})", R"({"id": 1, "n": 2})"},
       {"{}", R"({"n": 2})", R"({"id": "1"})", "[]"}},
      {"nested objects and arrays",
       R"({"type": "object", "properties": {
             "user": {"type": "object", "properties": {"name": {"type": "string"},
                      "tags": {"type": "array", "items": {"type": "string"}}}, "required": ["name", "tags"]},
             "scores": {"type": "array", "items": {"type": "array", "items": {"type": "number"}}}},
           "required": ["user"]})",
       {R"({"user": {"name": "a", "tags": []}})",
        R"({"user": {"name": "a", "tags": ["x", "y"]}, "scores": [[1, 2.5], []]})"},
       {R"({"user": {"name": "a"}})", R"({"user": {"name": "a", "tags": [1]}})",
        R"({"user": {"name": "a", "tags": []}, "scores": [1]})"}},
      {"array lengths",
       R"({"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 3})",
       {"[1, 2]", "[1, 2, 3]"},
       {"[]", "[1]", "[1, 2, 3, 4]", "[1,2]", "[1, 2,]", "[1, \"2\"]"}},
      {"array without item schema holds any values",
       R"({"type": "array", "maxItems": 2})",
       {"[]", "[1]", R"([{"a": null}, "x"])"},
       {"[1, 2, 3]", "[1,]"}},
      {"a tuple may stop early; closed without items",
       R"({"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}]})",
       {"[]", "[1]", R"([1, "a"])"},
       {R"([1, "a", 2])", R"(["a"])", R"([1, 2])"}},
      {"a tuple with items for the rest and minItems",
       R"({"type": "array", "prefixItems": [{"type": "integer"}], "items": {"type": "boolean"}, "minItems": 2})",
       {"[1, true]", "[1, true, false]"},
       {"[1]", "[]", "[true, true]", "[1, 2]"}},
      {"oneOf as anyOf, allOf of one",
       R"({"oneOf": [{"allOf": [{"type": "integer"}]}, {"type": "string", "maxLength": 1}]})",
       {"1", R"("a")"},
       {R"("ab")", "1.5", "null"}},
      {"$ref to $defs and definitions, a pointer with escapes",
       R"({"type": "object", "properties": {"p": {"$ref": "#/$defs/Point"}, "q": {"$ref": "#/definitions/a~1b"}},
           "required": ["p", "q"],
           "$defs": {"Point": {"type": "array", "items": {"type": "integer"}, "maxItems": 2}},
           "definitions": {"a/b": {"const": "x"}}})",
       {R"({"p": [1, 2], "q": "x"})", R"({"p": [], "q": "x"})"},
       {R"({"p": [1, 2, 3], "q": "x"})", R"({"p": [1], "q": "y"})"}},
      {"a schema with no type: any value, nesting bounded",
       R"({"title": "anything"})",
       {"1", "null", R"("s")", R"([1, {"a": true}])", R"({"a": [1]})", "[]", "{}"},
       {R"([[[1]]])", R"({"a": {"b": {}}})", R"([{"a": [true]}])", "", "nul", "[1,]"}},
      {"keywords of one type without a type: that type",
       R"({"properties": {"a": {"type": "integer"}}, "required": ["a"]})",
       {R"({"a": 1})"},
       {"1", R"("a")", "{}"}},
      {"property names that need escapes",
       R"({"type": "object", "properties": {"a\"b": {"type": "integer"}, "x/y\\z": {"type": "integer"},
                                            "\u00e9": {"type": "null"}}, "required": ["a\"b", "x/y\\z", "\u00e9"]})",
       {"{\"a\\\"b\": 1, \"x/y\\\\z\": 2, \"\xC3\xA9\": null}"},
       {"{\"a\\\"b\": 1, \"x\\/y\\\\z\": 2, \"\xC3\xA9\": null}", "{\"ab\": 1, \"x/y\\\\z\": 2, \"\xC3\xA9\": null}"}},
      {"Pydantic v2 model_json_schema()",
       R"({"$defs": {
             "Color": {"enum": ["red", "green"], "title": "Color", "type": "string"},
             "Item": {"properties": {"name": {"title": "Name", "type": "string"},
                                     "price": {"title": "Price", "type": "number"},
                                     "color": {"$ref": "#/$defs/Color"}},
                      "required": ["name", "price", "color"], "title": "Item", "type": "object"}},
           "properties": {"id": {"title": "Id", "type": "integer", "minimum": 1},
                          "items": {"items": {"$ref": "#/$defs/Item"}, "title": "Items", "type": "array"},
                          "note": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": null, "title": "Note"}},
           "required": ["id", "items"], "title": "Order", "type": "object"})",
       {R"({"id": 1, "items": []})",
        R"({"id": 7, "items": [{"name": "pen", "price": 1.5, "color": "red"}], "note": null})",
        R"({"id": 2, "items": [], "note": "rush"})"},
       {R"({"id": 0, "items": []})", R"({"id": 1, "items": [{"name": "pen", "price": 1.5, "color": "blue"}]})",
        R"({"id": 1, "items": [{"name": "pen", "price": 1.5}]})", R"({"id": 1})", R"({"items": [], "id": 1})"}},
      {"an OpenAI strict schema",
       R"({"type": "object", "additionalProperties": false, "required": ["city", "unit", "days"],
           "properties": {"city": {"type": "string", "description": "City name"},
                          "unit": {"type": ["string", "null"], "enum": ["c", "f", null]},
                          "days": {"type": "array", "items": {"type": "object", "additionalProperties": false,
                                   "required": ["day"], "properties": {"day": {"type": "integer"}}}}}})",
       {R"({"city": "Paris", "unit": "c", "days": [{"day": 1}, {"day": 2}]})",
        R"({"city": "", "unit": null, "days": []})"},
       {R"({"city": "Paris", "unit": "k", "days": []})", R"({"city": "Paris", "unit": "c"})",
        R"({"city": "Paris", "unit": "c", "days": [{"day": 1, "x": 2}]})"}},
      {"any whitespace between tokens, at most max_whitespace a gap, none around the value",
       R"({"type": "object", "properties": {"a": {"type": "array", "items": {"type": "integer"}}}, "required": ["a"]})",
       {R"({"a":[1,2]})", "{\n  \"a\": [\n    1,\n    2\n  ]\n}", "{\t\"a\"\r:[ ]}", "{                \"a\":[]}"},
       {" {\"a\":[]}", "{\"a\":[]}\n", "{                 \"a\":[]}", "{\"a\":[1 2]}", "{\"a\":[1,\f2]}"},
       true},
  };
  return cases;
}

const SchemaCase& schema_case_named(const std::string& name) {
  for (const SchemaCase& schema_case : schema_cases()) {
    if (schema_case.name == name) return schema_case;
  }
  throw std::invalid_argument("no schema case named " + name);
}

std::string error_of_schema(const std::string& schema) {
  try {
    structured::json_schema_regex(OrderedJson::parse(schema));
  } catch (const structured::JsonSchemaError& error) {
    return error.what();
  }
  return "(compiled)";
}

// --- random schemas and their instances ----------------------------------------------------

int uniform_int(std::mt19937& rng, int low, int high) { return std::uniform_int_distribution<int>(low, high)(rng); }
bool one_in(std::mt19937& rng, int n) { return uniform_int(rng, 1, n) == 1; }

OrderedJson random_schema(std::mt19937& rng, int depth) {
  const int kind = uniform_int(rng, 0, depth > 0 ? 11 : 6);
  OrderedJson schema = OrderedJson::object();
  if (one_in(rng, 4)) schema["title"] = "T";
  switch (kind) {
    case 0:
    case 1: {
      schema["type"] = "string";
      const int min = uniform_int(rng, 0, 3);
      if (one_in(rng, 2)) schema["minLength"] = min;
      if (one_in(rng, 2)) schema["maxLength"] = min + uniform_int(rng, 0, 4);
      break;
    }
    case 2: {
      schema["type"] = "integer";
      const int low = uniform_int(rng, -60, 60);
      if (one_in(rng, 2)) schema[one_in(rng, 3) ? "exclusiveMinimum" : "minimum"] = low;
      if (one_in(rng, 2)) schema[one_in(rng, 3) ? "exclusiveMaximum" : "maximum"] = low + uniform_int(rng, 2, 150);
      break;
    }
    case 3:
      schema["type"] = one_in(rng, 2) ? "number" : "boolean";
      break;
    case 4:
      schema["type"] = "null";
      break;
    case 5: {
      const std::vector<OrderedJson> pool = {"red", "gr\"een", "bl\\ue", "\xC3\xA9t\xC3\xA9", 1, -2.5, true, nullptr};
      OrderedJson values = OrderedJson::array();
      for (const OrderedJson& value : pool) {
        if (one_in(rng, 3)) values.push_back(value);
      }
      if (values.empty()) values.push_back(pool[static_cast<std::size_t>(uniform_int(rng, 0, 7))]);
      schema["enum"] = values;
      break;
    }
    case 6:
      if (one_in(rng, 2)) return OrderedJson(true);
      break;  // {} or {"title": ...}: any value
    case 7:
    case 8: {
      schema["type"] = "object";
      const std::vector<std::string> names = {"id", "name", "a b", "\xC3\xA9", "x/y", "q\"t"};
      OrderedJson properties = OrderedJson::object();
      OrderedJson required = OrderedJson::array();
      const int count = uniform_int(rng, 0, 4);
      for (int i = 0; i < count; ++i) {
        const std::string& name = names[static_cast<std::size_t>(uniform_int(rng, 0, 5))];
        if (properties.contains(name)) continue;
        properties[name] = random_schema(rng, depth - 1);
        if (one_in(rng, 2)) required.push_back(name);
      }
      schema["properties"] = properties;
      if (!required.empty()) schema["required"] = required;
      const int additional = uniform_int(rng, 0, 5);
      if (additional == 0) schema["additionalProperties"] = false;
      if (additional == 1) schema["additionalProperties"] = true;
      if (additional == 2) schema["additionalProperties"] = {{"type", "integer"}};
      break;
    }
    case 9:
    case 10: {
      schema["type"] = "array";
      int min = uniform_int(rng, 0, 2);
      if (one_in(rng, 3)) {
        const int num_prefix = uniform_int(rng, 1, 2);
        schema["prefixItems"] = OrderedJson::array();
        for (int i = 0; i < num_prefix; ++i) schema["prefixItems"].push_back(random_schema(rng, depth - 1));
        const int rest = uniform_int(rng, 0, 2);
        if (rest == 1) schema["items"] = false;
        if (rest == 2) schema["items"] = random_schema(rng, depth - 1);
        min = std::min(min, num_prefix);  // the rest may be closed
      } else if (!one_in(rng, 5)) {
        schema["items"] = random_schema(rng, depth - 1);
      }
      if (one_in(rng, 2)) schema["minItems"] = min;
      if (one_in(rng, 2)) schema["maxItems"] = min + uniform_int(rng, 0, 3);
      break;
    }
    default:
      schema["anyOf"] = {random_schema(rng, depth - 1), random_schema(rng, depth - 1)};
      break;
  }
  return schema;
}

// Writes a random instance of a schema (the subset random_schema makes) in a layout; or, at the
// mutation site countdown reaches (when it is set), a text that cannot validate.
class InstanceWriter {
 public:
  // countdown: the mutation site, counting only whitespace sites or only value sites; < 0: none.
  InstanceWriter(std::mt19937& rng, const structured::JsonLayout& layout, int countdown, bool in_whitespace)
      : rng_(rng), layout_(layout), countdown_(countdown), in_whitespace_(in_whitespace) {}

  bool mutated() const { return mutated_; }
  const std::string& mutation() const { return mutation_; }

  std::string value(const OrderedJson& schema, bool in_union) {
    if (schema.is_boolean() || (!schema.contains("type") && !schema.contains("enum") && !schema.contains("anyOf"))) {
      return any(layout_.max_any_depth, in_union);
    }
    if (schema.contains("anyOf")) {
      return value(schema["anyOf"][static_cast<std::size_t>(uniform_int(rng_, 0, 1))], true);
    }
    if (schema.contains("enum")) {
      if (!in_union && site("enum")) return "\"zz\"";
      const OrderedJson& values = schema["enum"];
      return values[static_cast<std::size_t>(uniform_int(rng_, 0, static_cast<int>(values.size()) - 1))].dump();
    }
    const std::string type = schema["type"].get<std::string>();
    if (type == "string") return string(schema, in_union);
    if (type == "integer") return integer(schema, in_union);
    if (type == "number") {
      if (!in_union && site("type")) return "\"1\"";
      const char* numbers[] = {"0", "-0.5", "12", "3e5", "1.25E-3", "-7", "0.0"};
      return numbers[uniform_int(rng_, 0, 6)];
    }
    if (type == "boolean") {
      if (!in_union && site("type")) return "1";
      return one_in(rng_, 2) ? "true" : "false";
    }
    if (type == "null") {
      if (!in_union && site("type")) return "0";
      return "null";
    }
    if (type == "object") return object(schema, in_union);
    return array(schema, in_union);
  }

 private:
  // A site a mutation may take; true once, where the countdown runs out.
  bool site(const char* kind) {
    if (countdown_ < 0 || mutated_ || (std::string_view(kind) == "whitespace") != in_whitespace_) return false;
    if (countdown_-- > 0) return false;
    mutated_ = true;
    mutation_ = kind;
    return true;
  }

  // Whitespace where json.dumps writes none; a mutation writes one character too many.
  std::string gap() {
    if (site("whitespace"))
      return std::string(layout_.any_whitespace ? static_cast<std::size_t>(layout_.max_whitespace) + 1 : 1, ' ');
    if (!layout_.any_whitespace) return "";
    std::string out;
    const int length = one_in(rng_, 2) ? 0 : uniform_int(rng_, 0, layout_.max_whitespace);
    for (int i = 0; i < length; ++i) out += " \t\n\r"[uniform_int(rng_, 0, 3)];
    return out;
  }
  std::string comma() {
    if (layout_.any_whitespace) return "," + gap();
    return site("whitespace") ? "," : ", ";
  }
  std::string colon() {
    if (layout_.any_whitespace) return gap() + ":" + gap();
    return site("whitespace") ? ":" : ": ";
  }

  std::string container(char open, const std::vector<std::string>& items, char close) {
    std::string out = std::string(1, open) + gap();
    for (std::size_t i = 0; i < items.size(); ++i) out += (i ? comma() : "") + items[i] + gap();
    return out + close;
  }

  std::string any(int depth, bool in_union) {
    if (!in_union && site("nesting")) {  // nested one level past the bound
      return std::string(static_cast<std::size_t>(layout_.max_any_depth) + 1, '[') + "1" +
             std::string(static_cast<std::size_t>(layout_.max_any_depth) + 1, ']');
    }
    const int kind = uniform_int(rng_, 0, depth > 0 ? 5 : 3);
    if (kind == 0) return "\"s\"";
    if (kind == 1) return "-1.5e3";
    if (kind == 2) return "null";
    if (kind == 3) return "true";
    std::vector<std::string> items;
    for (int i = uniform_int(rng_, 0, 2); i > 0; --i) {
      items.push_back((kind == 5 ? "\"k" + std::to_string(i) + "\"" + colon() : "") + any(depth - 1, true));
    }
    return container(kind == 5 ? '{' : '[', items, kind == 5 ? '}' : ']');
  }

  std::string string(const OrderedJson& schema, bool in_union) {
    int min = schema.value("minLength", 0);
    int max = schema.contains("maxLength") ? schema["maxLength"].get<int>() : min + 5;
    if (!in_union && site("length")) {
      if (schema.contains("maxLength")) {
        min = max = max + 1;
      } else if (min > 0) {
        min = max = min - 1;
      } else {
        mutation_ = "type";
        return "12";
      }
    }
    const char* spellings[] = {"a",       "Z",       " ",       "/",        "\\u002F",      "\\\"",
                               "\\\\",    "\\n",     "\\t",     "\\b",      "\\f",          "\\r",
                               "\\u0041", "\\u00e9", "\\u4E2D", "\xC3\xA9", "\xE4\xB8\xAD", "\xF0\x9F\x98\x80",
                               "~"};
    std::string out = "\"";
    for (int i = uniform_int(rng_, min, max); i > 0; --i) out += spellings[uniform_int(rng_, 0, 18)];
    return out + "\"";
  }

  std::string integer(const OrderedJson& schema, bool in_union) {
    int64_t low = -1000;
    int64_t high = 1000;
    if (schema.contains("minimum")) low = schema["minimum"].get<int64_t>();
    if (schema.contains("exclusiveMinimum")) low = schema["exclusiveMinimum"].get<int64_t>() + 1;
    if (schema.contains("maximum")) high = schema["maximum"].get<int64_t>();
    if (schema.contains("exclusiveMaximum")) high = schema["exclusiveMaximum"].get<int64_t>() - 1;
    const bool bounded_low = schema.contains("minimum") || schema.contains("exclusiveMinimum");
    const bool bounded_high = schema.contains("maximum") || schema.contains("exclusiveMaximum");
    if (!in_union && site("range")) {
      if (bounded_high) return std::to_string(high + 1);
      if (bounded_low) return std::to_string(low - 1);
      mutation_ = "type";
      return "1.5";
    }
    const int64_t value = std::uniform_int_distribution<int64_t>(low, high)(rng_);
    const bool minus_zero = bounded_low ? bounded_high && low < 0 : !bounded_high;  // llguidance's rule
    return value == 0 && minus_zero && one_in(rng_, 4) ? "-0" : std::to_string(value);
  }

  std::string member(const std::string& name, const std::string& value) {
    return OrderedJson(name).dump() + colon() + value;
  }

  std::string object(const OrderedJson& schema, bool in_union) {
    const OrderedJson properties = schema.value("properties", OrderedJson::object());
    const OrderedJson required = schema.value("required", OrderedJson::array());
    const bool open = schema.contains("additionalProperties") ? schema["additionalProperties"] != false
                                                              : layout_.allow_additional_properties;
    const auto is_required = [&](const std::string& name) {
      return std::find(required.begin(), required.end(), name) != required.end();
    };
    int mutation = -1;
    if (!in_union && site("object")) mutation = uniform_int(rng_, 0, 4) % 3;
    if (mutation == 0 && required.empty()) mutation = 2;
    if (mutation >= 0)
      mutation_ = mutation == 0 ? "required" : mutation == 1 ? (open ? "duplicate key" : "extra") : "type";
    std::vector<std::string> members;
    bool dropped = false;
    for (const auto& [name, property] : properties.items()) {
      if (mutation == 0 && !dropped && is_required(name)) {
        dropped = true;
        continue;
      }
      // Mutation 1 repeats the first property as an extra, so it is written in its place too.
      const bool first = name == properties.begin().key();
      if (is_required(name) || (mutation == 1 && first) || one_in(rng_, 2)) {
        members.push_back(member(name, value(property, in_union)));
      }
    }
    if (mutation == 1) {  // an extra in a closed object, or an extra with a declared name
      if (!open) {
        members.push_back(member("zz_extra", "1"));
      } else if (!properties.empty()) {
        members.push_back(member(properties.begin().key(), value(properties.begin().value(), true)));
      } else {
        mutation = 2;
        mutation_ = "type";
      }
    }
    if (mutation == 2) return "[]";
    if (open && mutation < 0) {
      const OrderedJson& additional = schema.value("additionalProperties", OrderedJson(true));
      for (int i = uniform_int(rng_, 0, 2); i > 0; --i) {
        members.push_back(member("zz" + std::to_string(i), value(additional, in_union)));
      }
    }
    return container('{', members, '}');
  }

  std::string array(const OrderedJson& schema, bool in_union) {
    const OrderedJson prefix = schema.value("prefixItems", OrderedJson::array());
    const int num_prefix = static_cast<int>(prefix.size());
    const bool closed =
        schema.contains("items") ? schema["items"] == false : num_prefix > 0 && !layout_.allow_additional_properties;
    const OrderedJson rest = schema.contains("items") ? schema["items"] : OrderedJson(true);
    const int min = schema.value("minItems", 0);
    int max = schema.contains("maxItems") ? schema["maxItems"].get<int>() : min + 3;
    if (closed) max = std::min(max, num_prefix);
    int count = uniform_int(rng_, min, max);
    if (!in_union && site("items")) {
      if (schema.contains("maxItems") || closed) {
        count = max + 1;
      } else if (min > 0) {
        count = min - 1;
      } else {
        mutation_ = "type";
        return "{}";
      }
    }
    std::vector<std::string> items;
    for (int i = 0; i < count; ++i) {
      if (i < num_prefix)
        items.push_back(value(prefix[static_cast<std::size_t>(i)], in_union));
      else if (i >= max)  // the mutation's one too many: any value will do
        items.push_back("1");
      else
        items.push_back(value(rest, in_union));
    }
    return container('[', items, ']');
  }

  std::mt19937& rng_;
  const structured::JsonLayout& layout_;
  int countdown_;
  bool in_whitespace_;
  bool mutated_ = false;
  std::string mutation_;  // what the mutation was
};

// The integers the bounds allow, as JSON Schema reads them.
bool within_bounds(const OrderedJson& schema, int64_t value) {
  const auto bound = [&](const char* key) { return schema[key].get<double>(); };
  const double v = static_cast<double>(value);
  if (schema.contains("minimum") && v < bound("minimum")) return false;
  if (schema.contains("exclusiveMinimum") && v <= bound("exclusiveMinimum")) return false;
  if (schema.contains("maximum") && v > bound("maximum")) return false;
  if (schema.contains("exclusiveMaximum") && v >= bound("exclusiveMaximum")) return false;
  return true;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(json_schema)

BOOST_AUTO_TEST_CASE(hand_written_schemas_match_exactly_their_valid_texts) {
  int num_checked = 0;
  for (const SchemaCase& schema_case : schema_cases()) {
    structured::JsonLayout layout = compact_layout();
    layout.any_whitespace = schema_case.any_whitespace;
    structured::ByteDfa dfa;
    try {
      dfa = schema_automaton(OrderedJson::parse(schema_case.schema), layout);
    } catch (const std::exception& error) {
      BOOST_TEST_FAIL(schema_case.name << ": " << error.what());
    }
    for (const std::string& text : schema_case.valid) {
      BOOST_TEST(nlohmann::json::accept(text), schema_case.name << ": the valid text " << text << " is not JSON");
      BOOST_TEST(dfa.matches(text), schema_case.name << ": refused " << text);
      ++num_checked;
    }
    for (const std::string& text : schema_case.invalid) {
      BOOST_TEST(!dfa.matches(text), schema_case.name << ": accepted " << text);
      ++num_checked;
    }
  }
  BOOST_TEST(schema_cases().size() >= 25u);
  BOOST_TEST_MESSAGE(schema_cases().size() << " schemas, " << num_checked << " texts");
}

BOOST_AUTO_TEST_CASE(random_schemas_accept_their_instances_and_refuse_invalid_mutations) {
  std::mt19937 rng(23);
  structured::RegexLimits limits;
  limits.max_dfa_states = 100'000;  // a correctness test: room for the larger random schemas
  int num_valid = 0;
  int num_invalid = 0;
  int32_t max_states = 0;
  std::map<std::string, int> mutations;  // by kind
  for (int round = 0; round < 120; ++round) {
    const OrderedJson schema = random_schema(rng, uniform_int(rng, 1, 3));
    structured::JsonLayout layout;
    layout.any_whitespace = round % 2 == 0;
    layout.max_whitespace = one_in(rng, 8) ? 16 : uniform_int(rng, 1, 5);
    layout.allow_additional_properties = one_in(rng, 3);
    layout.max_any_depth = 1;
    structured::ByteDfa dfa;
    try {
      dfa = schema_automaton(schema, layout, limits);
    } catch (const std::exception& error) {
      BOOST_TEST_FAIL("schema " << schema.dump() << ": " << error.what());
    }
    max_states = std::max(max_states, dfa.num_states());
    for (int sample = 0; sample < 30; ++sample) {
      const bool mutate = sample % 2 == 1;
      const bool in_whitespace = sample % 6 == 1;
      InstanceWriter writer(rng, layout, mutate ? uniform_int(rng, 0, in_whitespace ? 10 : 4) : -1, in_whitespace);
      std::string text = writer.value(schema, false);
      InstanceWriter first_site(rng, layout, 0, in_whitespace);
      if (mutate && !writer.mutated()) text = first_site.value(schema, false);  // fewer sites than the countdown
      const InstanceWriter& used = writer.mutated() || !mutate ? writer : first_site;
      if (mutate && !used.mutated()) continue;
      if (!mutate) {
        BOOST_TEST_REQUIRE(nlohmann::json::accept(text), "the writer's text is not JSON: " << text);
        BOOST_TEST_REQUIRE(dfa.matches(text), "schema " << schema.dump() << " refused " << text);
        ++num_valid;
      } else {
        BOOST_TEST_REQUIRE(!dfa.matches(text),
                           "schema " << schema.dump() << " accepted the " << used.mutation() << " mutation " << text);
        ++num_invalid;
        ++mutations[used.mutation()];
      }
    }
  }
  BOOST_TEST_MESSAGE("random schemas: " << num_valid << " valid and " << num_invalid
                                        << " invalid texts checked, largest automaton " << max_states << " states");
  std::string tally;
  for (const auto& [kind, count] : mutations) tally += " " + kind + " " + std::to_string(count);
  BOOST_TEST_MESSAGE("mutations:" << tally);
  BOOST_TEST(num_valid > 1500);
  BOOST_TEST(num_invalid > 1000);
  for (const char* kind :
       {"whitespace", "enum", "type", "length", "range", "required", "extra", "duplicate key", "items", "nesting"}) {
    BOOST_TEST(mutations[kind] >= 10, kind << ": " << mutations[kind]);
  }
}

BOOST_AUTO_TEST_CASE(integer_ranges_match_exactly_the_integers_within_the_bounds) {
  std::mt19937 rng(5);
  std::vector<OrderedJson> schemas = {
      {{"type", "integer"}, {"minimum", 0}},
      {{"type", "integer"}, {"maximum", -1}},
      {{"type", "integer"}, {"minimum", -1999}, {"maximum", 1999}},
      {{"type", "integer"}, {"minimum", 0}, {"maximum", 0}},
      {{"type", "integer"}, {"exclusiveMinimum", -10}, {"exclusiveMaximum", 10}},
      {{"type", "integer"}, {"minimum", -2.5}, {"maximum", 99.5}},
      {{"type", "integer"}, {"exclusiveMinimum", 1.5}, {"exclusiveMaximum", 1000.0}},
  };
  const char* lower_keys[] = {"minimum", "exclusiveMinimum"};
  const char* upper_keys[] = {"maximum", "exclusiveMaximum"};
  while (schemas.size() < 80) {
    OrderedJson schema = {{"type", "integer"}};
    const bool fractional = one_in(rng, 5);
    const auto draw = [&] {
      const int whole = uniform_int(rng, -2100, 2100) / (one_in(rng, 2) ? 1 : 10);
      return fractional ? OrderedJson(whole + 0.25 * uniform_int(rng, 1, 3)) : OrderedJson(whole);
    };
    OrderedJson low = draw();
    OrderedJson high = draw();
    if (low.get<double>() > high.get<double>()) std::swap(low, high);
    if (!one_in(rng, 4)) schema[lower_keys[uniform_int(rng, 0, 1)]] = low;
    if (!one_in(rng, 4)) schema[upper_keys[uniform_int(rng, 0, 1)]] = high;
    bool any_within = false;
    for (int64_t v = -3000; v <= 3000 && !any_within; ++v) any_within = within_bounds(schema, v);
    if (any_within) schemas.push_back(schema);
  }
  int64_t num_within = 0;
  for (const OrderedJson& schema : schemas) {
    const structured::ByteDfa dfa = schema_automaton(schema, compact_layout());
    for (int64_t v = -2000; v <= 2000; ++v) {
      const bool expected = within_bounds(schema, v);
      num_within += expected;
      if (dfa.matches(std::to_string(v)) != expected) BOOST_TEST_FAIL(schema.dump() << " on " << v);
    }
    // "-0" is zero in a range bounded on both sides that holds negative numbers (and without
    // bounds), as llguidance takes it; leading zeros, a plus sign and fractions are never written.
    const bool bounded_low = schema.contains("minimum") || schema.contains("exclusiveMinimum");
    const bool bounded_high = schema.contains("maximum") || schema.contains("exclusiveMaximum");
    const bool minus_zero = bounded_low ? bounded_high && within_bounds(schema, -1) : !bounded_high;
    BOOST_TEST(dfa.matches("-0") == (within_bounds(schema, 0) && minus_zero), schema.dump());
    for (const char* never : {"007", "-01", "+5", "1.0", "00", "-", ""}) {
      BOOST_TEST(!dfa.matches(never), schema.dump() << " on " << never);
    }
  }
  BOOST_TEST(num_within > 20'000);

  // Large bounds, across digit-length boundaries, to the ends of the 64-bit range.
  const std::vector<std::pair<int64_t, int64_t>> ranges = {
      {123456, 98765432}, {-98765432, -123456}, {-1000000007, 999999999999}, {INT64_MIN, INT64_MAX}, {INT64_MIN, -5}};
  for (const auto& [low, high] : ranges) {
    const OrderedJson schema = {{"type", "integer"}, {"minimum", low}, {"maximum", high}};
    const structured::ByteDfa dfa = schema_automaton(schema, compact_layout());
    std::vector<int64_t> probes = {low, high};
    if (low > INT64_MIN) probes.push_back(low - 1);
    if (high < INT64_MAX) probes.push_back(high + 1);
    int64_t power = 1;
    for (int digits = 0; digits <= 18; ++digits) {
      for (const int64_t v : {power - 1, power, power + 1, -power + 1, -power, -power - 1}) probes.push_back(v);
      if (digits < 18) power *= 10;
    }
    for (int i = 0; i < 2000; ++i) {
      probes.push_back(std::uniform_int_distribution<int64_t>(low, high)(rng));
      probes.push_back(std::uniform_int_distribution<int64_t>(INT64_MIN, INT64_MAX)(rng) >> uniform_int(rng, 0, 62));
    }
    for (const int64_t v : probes) {
      if (dfa.matches(std::to_string(v)) != (v >= low && v <= high)) BOOST_TEST_FAIL(schema.dump() << " on " << v);
    }
    BOOST_TEST(!dfa.matches("9223372036854775808"));
    BOOST_TEST(!dfa.matches("-9223372036854775809"));
  }
}

BOOST_AUTO_TEST_CASE(unsupported_keywords_name_the_keyword_and_its_path) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"type": "object", "properties": {"age": {"type": "integer", "multipleOf": 2}}})",
       "json schema at /properties/age: 'multipleOf' is not supported"},
      {R"({"type": "object", "minProperties": 1})", "at the root: 'minProperties' is not supported"},
      {R"({"type": "object", "maxProperties": 1})", "'maxProperties' is not supported"},
      {R"({"type": "object", "patternProperties": {"^a": {}}})", "'patternProperties' is not supported"},
      {R"({"type": "object", "propertyNames": {"maxLength": 3}})", "'propertyNames' is not supported"},
      {R"({"type": "object", "dependentRequired": {"a": ["b"]}})", "'dependentRequired' is not supported"},
      {R"({"type": "array", "items": {"type": "array", "uniqueItems": true}})",
       "json schema at /items: 'uniqueItems' is not supported"},
      {R"({"type": "array", "contains": {"type": "integer"}})", "'contains' is not supported"},
      {R"({"not": {"type": "null"}})", "'not' is not supported"},
      {R"({"if": {}, "then": {}})", "'if' is not supported"},
      {R"({"type": "string", "frobnicate": 1})", "at the root: unknown keyword 'frobnicate'"},
      {R"({"type": "number", "minimum": 0})", "'minimum' is not supported for type 'number'"},
      {R"({"type": "string", "minimum": 0})", "'minimum' does not apply to type 'string'"},
      {R"({"minimum": 0})", "'minimum' needs \"type\": \"integer\""},
      {R"({"type": "string", "format": "hostname"})", "json schema at /format: format 'hostname' is not supported"},
      {R"({"type": "string", "pattern": "a", "maxLength": 3})", "'pattern' together with 'minLength' or 'maxLength'"},
      {R"({"type": "string", "pattern": "(?=a)b"})", "/pattern: 'pattern' is not a supported regex: regex, offset 0"},
      {R"({"type": "string", "minLength": 3, "maxLength": 2})", "'maxLength' is below 'minLength'"},
      {R"({"type": "integer", "minimum": 5, "maximum": 4})", "no integer is within the bounds"},
      {R"({"type": "integer", "minimum": 1e300})", "/minimum: 'minimum' is outside the 64-bit integer range"},
      {R"({"type": "object", "properties": {"a": {}}, "required": ["b"], "additionalProperties": false})",
       "/required: required property 'b' is not in 'properties'"},
      {R"({"type": "object", "properties": {"a/b": false}})", "json schema at /properties/a~1b: the schema false"},
      {R"(false)", "at the root: the schema false matches nothing"},
      {R"({"allOf": [{"type": "string"}, {"maxLength": 2}]})", "'allOf' is supported with exactly one schema"},
      {R"({"type": "object", "anyOf": [{"required": ["a"]}]})", "'type' next to 'anyOf' is not supported"},
      {R"({"$ref": "#/$defs/A", "type": "string", "$defs": {"A": {}}})", "'type' next to '$ref' is not supported"},
      {R"({"type": "integer", "enum": [1], "minimum": 0})", "'minimum' next to 'enum' is not supported"},
      {R"({"type": "strin"})", "/type: unknown type \"strin\""},
      {R"({"$ref": "#/$defs/Missing"})", "/$ref: $ref '#/$defs/Missing' does not name a schema"},
      {R"({"$ref": "other.json#/a"})", "only a $ref into this schema"},
      {R"({"type": "array", "items": [{"type": "integer"}]})", "'items' as an array (draft 7 tuples)"},
      {R"({"type": "array", "prefixItems": [{}], "items": false, "minItems": 2})", "'minItems' asks for more items"},
      {R"({"$defs": {"Node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/Node"}}}},
           "$ref": "#/$defs/Node"})",
       "json schema at /$defs/Node/properties/next/$ref: recursive $ref '#/$defs/Node' is not supported"},
      {R"({"type": "array", "items": {"$ref": "#"}})", "at /items/$ref: recursive $ref '#' is not supported"},
      {R"({"properties": {"a": {}}, "items": {}})", "'items' next to keywords of type 'object' needs a 'type'"},
  };
  for (const auto& [schema, expected] : cases) {
    const std::string error = error_of_schema(schema);
    BOOST_TEST(error.find(expected) != std::string::npos, schema << "\n  gave: " << error);
  }
  try {
    structured::json_schema_regex(OrderedJson::parse(R"({"properties": {"x": {"type": "integer", "not": {}}}})"));
    BOOST_TEST_FAIL("no error");
  } catch (const structured::JsonSchemaError& error) {
    BOOST_TEST(error.path() == "/properties/x");
    BOOST_TEST(error.problem() == "'not' is not supported");
  }
  // Nested arrays double the pattern per level: refused as too large before it takes the memory.
  std::string nested = R"({"type": "integer"})";
  for (int level = 0; level < 60; ++level) {
    std::string wrapped = R"({"type": "array", "items": )";
    wrapped += nested;
    wrapped += '}';
    nested = std::move(wrapped);
  }
  BOOST_TEST(error_of_schema(nested).find("the schema is too large: its pattern passes 1 MiB") != std::string::npos);
  // A maxItems past what a counted repeat expands to is the regex compiler's refusal.
  const std::string huge = structured::json_schema_regex(
      OrderedJson::parse(R"({"type": "array", "items": {"type": "integer"}, "maxItems": 5000})"));
  BOOST_CHECK_THROW(structured::compile_regex(huge), structured::RegexError);
}

BOOST_AUTO_TEST_CASE(json_object_nests_up_to_the_bound_and_stays_small) {
  for (const bool any_whitespace : {true, false}) {
    structured::JsonLayout layout;
    layout.any_whitespace = any_whitespace;
    const auto started = std::chrono::steady_clock::now();
    const structured::ByteDfa dfa = structured::compile_regex(structured::json_object_regex(layout));
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    BOOST_TEST_MESSAGE("json_object (any_whitespace " << any_whitespace << ", depth " << layout.max_any_depth
                                                      << "): " << dfa.num_states() << " states, " << seconds << " s");
    BOOST_TEST(dfa.num_states() < 10'000);
    BOOST_TEST(layout.max_any_depth == 3);
    const std::string sep = any_whitespace ? "," : ", ";
    const std::string colon = any_whitespace ? ":" : ": ";
    for (const std::string& text :
         {std::string("{}"), "{\"a\"" + colon + "1}",
          "{\"a\"" + colon + "{\"b\"" + colon + "[1" + sep + "2]}" + sep + "\"c\"" + colon + "null}",
          "{\"a\"" + colon + "[[\"x\"" + sep + "-1.5e3]]}"}) {
      BOOST_TEST(dfa.matches(text), text);
    }
    for (const std::string& text :
         {"{\"a\"" + colon + "[[[1]]]}", "{\"a\"" + colon + "{\"b\"" + colon + "{\"c\"" + colon + "{}}}}",
          std::string("[]"), std::string("1"), std::string("\"{}\""), std::string("null"),
          std::string("{1" + colon + "2}"), std::string("{")}) {
      BOOST_TEST(!dfa.matches(text), text);
    }
    if (any_whitespace) {
      BOOST_TEST(dfa.matches("{\n  \"a\": [\n    1,\n    2\n  ]\n}"));
      BOOST_TEST(!dfa.matches(" {}"));
      BOOST_TEST(!dfa.matches("{" + std::string(17, ' ') + "}"));
    }
  }
  structured::JsonLayout custom;
  custom.whitespace_pattern = "[ ]?";
  const structured::ByteDfa dfa = structured::compile_regex(structured::json_object_regex(custom));
  BOOST_TEST(dfa.matches("{\"a\": 1}"));
  BOOST_TEST(dfa.matches("{\"a\":1 }"));
  BOOST_TEST(!dfa.matches("{\"a\":\n1}"));
  BOOST_TEST(!dfa.matches("{\"a\":  1}"));
}

BOOST_AUTO_TEST_CASE(additional_properties_follow_the_layout_when_the_schema_is_silent) {
  const OrderedJson schema =
      OrderedJson::parse(R"({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]})");
  structured::JsonLayout open = compact_layout();
  open.allow_additional_properties = true;
  open.max_any_depth = 1;
  const structured::ByteDfa closed_dfa = schema_automaton(schema, compact_layout());
  const structured::ByteDfa open_dfa = schema_automaton(schema, open);
  BOOST_TEST(closed_dfa.matches(R"({"a": 1})"));
  BOOST_TEST(!closed_dfa.matches(R"({"a": 1, "b": [true]})"));
  BOOST_TEST(open_dfa.matches(R"({"a": 1, "b": [true]})"));
  BOOST_TEST(!open_dfa.matches(R"({"a": 1, "b": [[true]]})"));
  BOOST_TEST(!open_dfa.matches(R"({"a": 1, "a": 2})"));
  const OrderedJson tuple = OrderedJson::parse(R"({"type": "array", "prefixItems": [{"type": "integer"}]})");
  BOOST_TEST(!schema_automaton(tuple, compact_layout()).matches("[1, 2]"));
  BOOST_TEST(schema_automaton(tuple, open).matches("[1, \"x\"]"));
}

BOOST_AUTO_TEST_CASE(schema_automata_stay_within_the_default_limits) {
  // The sizes of a few schemas in the default layout (max_whitespace 16), for the record.
  const std::vector<std::pair<std::string, std::string>> schemas = {
      {"Pydantic order", schema_case_named("Pydantic v2 model_json_schema()").schema},
      {"OpenAI strict", schema_case_named("an OpenAI strict schema").schema},
      {"object with a schema-less property",
       R"({"type": "object", "properties": {"meta": {}, "id": {"type": "integer"}}, "required": ["id"]})"},
      {"20 optional properties",
       [] {
         OrderedJson schema = {{"type", "object"}, {"properties", OrderedJson::object()}};
         for (int i = 0; i < 20; ++i) {
           std::string key = "p";  // not "p" + std::to_string(i): GCC 12 -O3 sees a false overflow there
           key += std::to_string(i);
           schema["properties"][key] = {{"type", "integer"}};
         }
         return schema.dump();
       }()},
  };
  for (const auto& [name, schema] : schemas) {
    const auto started = std::chrono::steady_clock::now();
    const structured::ByteDfa dfa = schema_automaton(OrderedJson::parse(schema), {});
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    BOOST_TEST_MESSAGE(name << ": " << dfa.num_states() << " states, " << seconds << " s");
    BOOST_TEST(dfa.num_states() > 0);
  }
}

BOOST_AUTO_TEST_CASE(escape_regex_matches_exactly_its_literal) {
  std::mt19937 rng(3);
  const std::vector<std::string> pieces = {"\\",
                                           "^",
                                           "$",
                                           ".",
                                           "|",
                                           "?",
                                           "*",
                                           "+",
                                           "(",
                                           ")",
                                           "[",
                                           "]",
                                           "{",
                                           "}",
                                           "-",
                                           "a",
                                           "1",
                                           " ",
                                           "\n",
                                           "\x7F",
                                           "\x01",
                                           "\xC3\xA9",
                                           "\xF0\x9F\x98\x80",
                                           "{2}",
                                           "(?:",
                                           "\\d",
                                           "\""};
  for (int round = 0; round < 300; ++round) {
    std::string literal;
    for (int i = uniform_int(rng, 0, 8); i > 0; --i)
      literal += pieces[static_cast<std::size_t>(uniform_int(rng, 0, 26))];
    const structured::ByteDfa dfa = structured::compile_regex(structured::escape_regex(literal));
    BOOST_TEST_REQUIRE(dfa.matches(literal), "'" << literal << "'");
    BOOST_TEST_REQUIRE(!dfa.matches(literal + "a"));
    if (!literal.empty()) BOOST_TEST_REQUIRE(!dfa.matches(literal.substr(0, literal.size() - 1)));
  }
  BOOST_CHECK_THROW(structured::escape_regex("a\xC3"), std::invalid_argument);
}

BOOST_AUTO_TEST_SUITE_END()
