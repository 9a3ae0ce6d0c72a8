// Filters (transformers' tojson included) and tests, as Jinja2 3.1 defines them.
#include <boost/test/unit_test.hpp>

#include "tests/chat/jinja_cases.h"

namespace pagedllm::chat::jinja {
namespace {

// FilterCases: expected texts are Jinja2 3.1's under transformers' settings.
const RenderCase kFilterCases[] = {
    {"{{ '  x  '|trim }}|{{ 'xax'|trim('x') }}|{{ [1, 2, 3]|length }}|{{ 'héllo'|length }}|{{ {'a': 1}|count }}|{{ "
     "'AbC'|lower }}|{{ 'abc'|upper }}|{{ 'hello wORLD-foo(bar'|title }}|{{ 'hello World'|capitalize }}",
     "", "x|a|3|5|1|abc|ABC|Hello World-Foo(Bar|Hello world"},
    {"{{ 'aaa'|replace('a', 'b', 2) }}|{{ [1, 2]|join(', ') }}|{{ ms|join('/', attribute='role') }}|{{ [1, 2, 3]|first "
     "}}{{ [1, 2, 3]|last }}|{{ 'abc'|first }}|{{ []|first }}",
     "{\"ms\": [{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": \"b\"}, {\"role\": "
     "\"assistant\", \"content\": \"a\"}, {\"role\": \"user\", \"content\": \"c\"}]}",
     "bba|1, 2|system/user/assistant/user|13|a|"},
    {"{{ missing|default('d') }}|{{ ''|default('d', true) }}|{{ none|d('x') }}|{{ 0|default(5) }}|{{ missing|default "
     "}}",
     "", "d|d|None|0|"},
    {"{{ 'ab'|list }}|{{ {'a': 1}|items|list }}|{{ {'a': 1}|list }}|{{ 12|string ~ 'x' }}|{{ '42'|int + 1 }}|{{ "
     "'3.5'|int }}|{{ 'x'|int }}|{{ '3.5'|float }}|{{ 4|float }}|{{ -3|abs }}|{{ -2.5|abs }}",
     "", "['a', 'b']|[('a', 1)]|['a']|12x|43|3|0|3.5|4.0|3|2.5"},
    {"{{ 2.5|round }}|{{ 3.5|round }}|{{ 2.567|round(2) }}|{{ 3.2|round(method='ceil') }}|{{ 3.8|round(method='floor') "
     "}}|{{ 3|round }}",
     "", "2.0|4.0|2.57|4.0|3.0|3"},
    {"{{ ms|selectattr('role', 'equalto', 'user')|map(attribute='content')|list }}|{{ ms|rejectattr('role', 'eq', "
     "'user')|list|length }}|{{ [0, 1, 2]|select|list }}|{{ [1, 2, 3, 4]|select('odd')|list }}|{{ [1, 2, "
     "3]|reject('even')|list }}",
     "{\"ms\": [{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": \"b\"}, {\"role\": "
     "\"assistant\", \"content\": \"a\"}, {\"role\": \"user\", \"content\": \"c\"}]}",
     "['b', 'c']|2|[1, 2]|[1, 3]|[1, 3]"},
    {"{{ ['a', 'A', 'b']|unique|list }}|{{ ms|map(attribute='role')|unique|join(',') }}|{{ ['a', "
     "'b']|map('upper')|list }}|{{ ms|selectattr('missing')|list }}|{{ ms|selectattr('role', 'in', ['system'])|list "
     "}}|{{ ms|map(attribute='x', default='-')|join }}",
     "{\"ms\": [{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": \"b\"}, {\"role\": "
     "\"assistant\", \"content\": \"a\"}, {\"role\": \"user\", \"content\": \"c\"}]}",
     "['a', 'b']|system,user,assistant|['A', 'B']|[]|[{'role': 'system', 'content': 'S'}]|----"},
    {"{{ {'b': 1, 'a': 2}|dictsort }}|{{ {'b': 1, 'a': 2}|dictsort(by='value', reverse=true) }}|{{ [3, 1, 2]|sort "
     "}}|{{ [3, 1, 2]|sort(reverse=true) }}|{{ ['b', 'A', 'a']|sort }}|{{ "
     "ms|sort(attribute='content')|map(attribute='content')|join }}",
     "{\"ms\": [{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": \"b\"}, {\"role\": "
     "\"assistant\", \"content\": \"a\"}, {\"role\": \"user\", \"content\": \"c\"}]}",
     "[('a', 2), ('b', 1)]|[('a', 2), ('b', 1)]|[1, 2, 3]|[3, 2, 1]|['A', 'a', 'b']|abcS"},
    {"{{ [1, 2, 3, 4, 5]|batch(2)|list }}|{{ [1, 2, 3]|batch(2, 0)|list }}|{{ [1, 2, 3]|reverse|list }}|{{ "
     "'abc'|reverse }}|{{ [1, 2, 3]|sum }}|{{ [3, 1, 2]|min }}{{ [3, 1, 2]|max }}|{{ 'x'|safe }}",
     "", "[[1, 2], [3, 4], [5]]|[[1, 2], [3, 0]]|[3, 2, 1]|cba|6|13|x"},
    {"{{ 'a\\nb\\n\\nc'|indent(2) }}|{{ 'a\\nb'|indent(2, true) }}|{{ 'a\\n\\nb'|indent(2, blank=true) }}|{{ "
     "'a\\nb\\n'|indent }}|{{ 'a\\nb'|indent('> ') }}",
     "", "a\n  b\n\n  c|  a\n  b|a\n  \n  b|a\n    b\n|a\n> b"},
    {"{{ {'b': 'é\"\\n\\t\\u0001', 'a': [1, 2.0, none, true, 1e20]}|tojson }}", "",
     "{\"b\": \"é\\\"\\n\\t\\u0001\", \"a\": [1, 2.0, null, true, 1e+20]}"},
    {"{{ {'a': {'b': []}, 'c': {}, 'd': [1, [2]]}|tojson(indent=2) }}|{{ [1, {'k': 2}]|tojson(separators=(',', ':')) "
     "}}|{{ {'b': 1, 'a': 2}|tojson(sort_keys=true) }}|{{ 'é😀'|tojson(ensure_ascii=true) }}|{{ tools|tojson(indent=4) "
     "}}",
     "{\"tools\": [{\"type\": \"function\", \"function\": {\"name\": \"f\", \"parameters\": {\"type\": \"object\", "
     "\"properties\": {\"x\": {\"type\": \"string\"}}}}}]}",
     "{\n  \"a\": {\n    \"b\": []\n  },\n  \"c\": {},\n  \"d\": [\n    1,\n    [\n      2\n    ]\n  "
     "]\n}|[1,{\"k\":2}]|{\"a\": 2, \"b\": 1}|\"\\u00e9\\ud83d\\ude00\"|[\n    {\n        \"type\": \"function\",\n    "
     "    \"function\": {\n            \"name\": \"f\",\n            \"parameters\": {\n                \"type\": "
     "\"object\",\n                \"properties\": {\n                    \"x\": {\n                        \"type\": "
     "\"string\"\n                    }\n                }\n            }\n        }\n    }\n]"},
};
// TestCases: expected texts are Jinja2 3.1's under transformers' settings.
const RenderCase kTestCases[] = {
    {"{{ 1 is number }}{{ 'a' is string }}{{ {} is mapping }}{{ [] is iterable }}{{ [] is sequence }}{{ 1 is integer "
     "}}{{ 1.0 is integer }}{{ 1.0 is float }}{{ true is boolean }}{{ true is true }}{{ false is false }}{{ 1 is true "
     "}}{{ none is none }}",
     "", "TrueTrueTrueTrueTrueTrueFalseTrueTrueTrueTrueFalseTrue"},
    {"{{ 1 is eq 1 }}{{ 1 is ne 2 }}{{ 'a' is in ['a'] }}{{ 3 is odd }}{{ 4 is even }}{{ 6 is divisibleby 3 }}{{ 1 is "
     "equalto(1) }}{{ 2 is gt 1 }}{{ 2 is lt 1 }}{{ 'ab' is lower }}{{ 'AB' is upper }}{{ x is mapping }}{{ x is not "
     "string }}{{ range is callable }}",
     "{\"x\": {\"a\": 1}}", "TrueTrueTrueTrueTrueTrueTrueTrueFalseTrueTrueTrueTrueTrue"},
};

}  // namespace

BOOST_AUTO_TEST_SUITE(jinja_filters)

BOOST_AUTO_TEST_CASE(filters_match_jinja2) { check_cases(kFilterCases); }

BOOST_AUTO_TEST_CASE(tests_match_jinja2) { check_cases(kTestCases); }

BOOST_AUTO_TEST_SUITE_END()

}  // namespace pagedllm::chat::jinja
