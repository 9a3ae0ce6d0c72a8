// The lexer and parser: Hugging Face's whitespace settings (trim_blocks, lstrip_blocks, "-" and
// "+" control, no trailing newline) and literals, each rendered as Jinja2 renders it.
#include <boost/test/unit_test.hpp>

#include "tests/chat/jinja_cases.h"

namespace pagedllm::chat::jinja {
namespace {

// WhitespaceCases: expected texts are Jinja2 3.1's under transformers' settings.
const RenderCase kWhitespaceCases[] = {
    {"  {% if true %}\n  x\n  {% endif %}\n", "", "  x\n"},
    {"a {{- ' b ' -}} c", "", "a b c"},
    {"{# a comment #}\nx", "", "x"},
    {"  {# indented comment #}\nx", "", "x"},
    {"{%- if true -%}  x  {%- endif -%}  y", "", "xy"},
    {"{% raw %}{{ not jinja }}{% endraw %}", "", "{{ not jinja }}"},
    {"line\n", "", "line"},
    {"a\r\nb\rc", "", "a\nb\nc"},
    {"  {%+ if true %}x{% endif %}", "", "  x"},
    {"  {{ 'v' }}\n{% if true %}\n  y{% endif %}", "", "  v\n  y"},
    {"{{ 'x' }}  {% if true %}y{% endif %}", "", "x  y"},
    {"{% for i in [1, 2] %}\n    {{ i }}\n{% endfor %}\n", "", "    1\n    2\n"},
    {"{% if true %}a{% endif %}\n\n{{ 'b' }}\n", "", "a\nb"},
    {"{{ 'a' }}\n{{ 'b' }}\n", "", "a\nb"},
    {"{% if true +%}\nx{% endif %}", "", "\nx"},
};
// LiteralCases: expected texts are Jinja2 3.1's under transformers' settings.
const RenderCase kLiteralCases[] = {
    {"{{ 'a' \"b\" }}", "", "ab"},
    {"{{ '\\u00e9\\n\\x41\\'' }}", "", "é\nA'"},
    {"{{ 1_000 }} {{ 1.5e3 }} {{ 2e-5 }} {{ 10 }}", "", "1000 1500.0 2e-05 10"},
    {"{{ [1, 'a', none, True, false, 1.5, {'k': 'v'}] }}", "", "[1, 'a', None, True, False, 1.5, {'k': 'v'}]"},
    {"{{ (1,) }} {{ (1, 2) }} {{ () }}", "", "(1,) (1, 2) ()"},
    {"{{ {'a': 1, 'b': {'c': [1]}} }}", "", "{'a': 1, 'b': {'c': [1]}}"},
    {"{{ \"it's\" }} {{ ['it\\'s', 'say \"x\"', 'both \\' \"'] }}", "", "it's [\"it's\", 'say \"x\"', 'both \\' \"']"},
    {"{{ 1e20 }} {{ 0.1 + 0.2 }} {{ 1.0 }} {{ -0.0 }} {{ 100.0 / 3 }} {{ 1e16 }} {{ 123456789012345678.0 }}", "",
     "1e+20 0.30000000000000004 1.0 -0.0 33.333333333333336 1e+16 1.2345678901234568e+17"},
};

}  // namespace

BOOST_AUTO_TEST_SUITE(jinja_lexer_parser)

BOOST_AUTO_TEST_CASE(whitespace_control_matches_hugging_face_settings) { check_cases(kWhitespaceCases); }

BOOST_AUTO_TEST_CASE(literals_print_as_python_prints_them) { check_cases(kLiteralCases); }

BOOST_AUTO_TEST_CASE(line_numbers_count_every_newline_before_the_tag) {
  try {
    render_jinja("{# one\ntwo #}\n{{ 'three'\n}}{% if\n\nx.y %}{% endif %}{{ z.w }}", R"({"x": {}})");
    BOOST_FAIL("rendered");
  } catch (const JinjaRuntimeError& error) {
    BOOST_TEST(error.line() == 6);  // `x.y` is undefined but only printing z.w fails: z is undefined
  }
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace pagedllm::chat::jinja
