// The evaluator: statements (for and its loop variable, if, set and its scoping, namespace,
// macros, generation), expressions with Python's semantics, and methods on str and dict.
#include <boost/test/unit_test.hpp>

#include "tests/chat/jinja_cases.h"

namespace pagedllm::chat::jinja {
namespace {

// StatementCases: expected texts are Jinja2 3.1's under transformers' settings.
const RenderCase kStatementCases[] = {
    {"{% for x in xs %}{{ loop.index }}/{{ loop.length }}{{ ',' if not loop.last }}{% endfor %}", "{\"xs\": [5, 6, 7]}",
     "1/3,2/3,3/3"},
    {"{% for x in xs %}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.first }}|{% endfor %}",
     "{\"xs\": [5, 6]}", "021True|110False|"},
    {"{% for x in xs %}{{ loop.previtem }}<{{ x }}>{{ loop.nextitem }};{% endfor %}", "{\"xs\": [1, 2, 3]}",
     "<1>2;1<2>3;2<3>;"},
    {"{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}{% for k in d %}{{ k }}{% endfor %}",
     "{\"d\": {\"a\": 1, \"b\": [2, 3]}}", "a=1;b=[2, 3];ab"},
    {"{% for x in xs if x > 1 %}{{ x }}:{{ loop.length }} {% endfor %}", "{\"xs\": [1, 2, 3]}", "2:2 3:2 "},
    {"{% for x in [] %}a{% else %}empty{% endfor %}", "", "empty"},
    {"{% for x in [1, 2, 3, 4] %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 4 %}{% break %}{% endif %}{{ x "
     "}}{% endfor %}",
     "", "13"},
    {"{% for c in 'hé' %}[{{ c }}]{% endfor %}", "", "[h][é]"},
    {"{% for a, b in [[1, 2], [3, 4]] %}{{ a + b }} {% endfor %}", "", "3 7 "},
    {"{% for x in xs %}{{ loop.cycle('odd', 'even') }} {% endfor %}", "{\"xs\": [1, 2, 3]}", "odd even odd "},
    {"{% set x = 1 %}{% for i in [1, 2] %}{% set x = i %}{{ x }}{% endfor %}{{ x }}", "", "121"},
    {"{% for i in [1, 2, 3] %}{% if loop.first %}{% set y = 1 %}{% endif %}[{{ y }}]{% endfor %}", "", "[1][][]"},
    {"{% if true %}{% set x = 'set in if' %}{% endif %}{{ x }}", "", "set in if"},
    {"{% set ns = namespace(found=false, n=0) %}{% for i in [1, 2] %}{% set ns.n = ns.n + i %}{% if i == 2 %}{% set "
     "ns.found = true %}{% endif %}{% endfor %}{{ ns.found }} {{ ns.n }}",
     "", "True 3"},
    {"{% set x %}a{{ 1 + 1 }}{% endset %}[{{ x }}]", "", "[a2]"},
    {"{% set a, b = [1, 2] %}{{ b }}{{ a }}", "", "21"},
    {"{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}{{ greet('A') }} {{ greet('B', "
     "punct='?') }} {{ greet(name='C') }}",
     "", "Hi A! Hi B? Hi C!"},
    {"{% macro show(x) %}{{ x }}{{ later }}{% endmacro %}{% set later = '+' %}{{ show(1) }}", "", "1+"},
    {"{% macro r(n) %}{% if n > 0 %}{{ n }}{{ r(n - 1) }}{% endif %}{% endmacro %}{{ r(3) }}", "", "321"},
    {"{% generation %}kept{% endgeneration %}!", "", "kept!"},
    {"{% macro wrap(tag) %}<{{ tag }}>{{ caller() }}</{{ tag }}>{% endmacro %}{% call wrap('b') %}bold {{ x }}{% "
     "endcall %}",
     "{\"x\": 1}", "<b>bold 1</b>"},
    {"{% macro each(xs) %}{% for x in xs %}{{ caller(x) }};{% endfor %}{% endmacro %}{% call(item, sep='-') "
     "each([1, 2]) %}[{{ item }}{{ sep }}]{% endcall %}",
     "", "[1-];[2-];"},
    {"{% if a %}A{% elif b %}B{% else %}C{% endif %}", "{\"a\": false, \"b\": true}", "B"},
    {"{{ 'a' if false else 'b' }}|{{ 'a' if false }}|{{ 'x' if 1 }}", "", "b||x"},
    {"{{ m.role }}{{ m['role'] }}{{ m.missing }}{{ ms[0].content }}{{ ms[-1]['content'] }}",
     "{\"m\": {\"role\": \"user\", \"content\": \"Hi\"}, \"ms\": [{\"role\": \"system\", \"content\": \"S\"}, "
     "{\"role\": \"user\", \"content\": \"b\"}, {\"role\": \"assistant\", \"content\": \"a\"}, {\"role\": \"user\", "
     "\"content\": \"c\"}]}",
     "useruserSc"},
    {"{{ missing }}|{{ missing is defined }}|{{ m.nothing is undefined }}|{% for x in missing %}x{% endfor %}|{{ "
     "missing|length }}|{{ not missing }}|{{ missing == missing }}",
     "{\"m\": {\"role\": \"user\", \"content\": \"Hi\"}}", "|False|True||0|True|True"},
    {"{{ none }} {{ true }} {{ false }} {{ none == None }} {{ tools is none }}", "{\"tools\": null}",
     "None True False True True"},
    {"{{ range(3)|list }} {{ range(1, 7, 2)|list }} {{ dict(a=1) }}", "", "[0, 1, 2] [1, 3, 5] {'a': 1}"},
    {"{{ messages[0]['content'] if messages[0]['role'] == 'system' else '' }}{% for m in messages[1:] %}{{ m.role[0] "
     "}}{% endfor %}",
     "{\"messages\": [{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": \"b\"}, {\"role\": "
     "\"assistant\", \"content\": \"a\"}, {\"role\": \"user\", \"content\": \"c\"}]}",
     "Suau"},
};
// ExpressionCases: expected texts are Jinja2 3.1's under transformers' settings.
const RenderCase kExpressionCases[] = {
    {"{{ '%s and %d, %5.2f %r %%' % ('a', 3, 2.5, 'x') }}|{{ '%s' % [1, 2] }}|{{ 'x=%s' % none }}|{{ '%03d' % 7 }}|"
     "{{ '%-4s|' % 'ab' }}",
     "", "a and 3,  2.50 'x' %|[1, 2]|x=None|007|ab  |"},
    {"{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 2 ** 8 }} {{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} "
     "{{ 7.5 // 2 }} {{ -2 ** 2 }}",
     "", "3 -4 1 2 3.5 256 7 9 3.0 4"},
    {"{{ 'ab' ~ 1 ~ none }} {{ 'a' + 'b' * 2 }} {{ [1] + [2] }} {{ 1 + true }} {{ 2 * 'xy' }}", "",
     "ab1None abb [1, 2] 2 xyxy"},
    {"{{ 1 < 2 and 'b' > 'a' }} {{ 1 == 1.0 }} {{ [1, 2] == [1, 2] }} {{ 'x' in 'xyz' }} {{ 'k' in {'k': 1} }} {{ 3 "
     "not in [1, 2] }} {{ 1 <= 1 < 2 }}",
     "", "True True True True True True True"},
    {"{{ not none }} {{ none or 'fallback' }} {{ 0 and 1 }} {{ 'a' and 'b' }} {{ not 'x' in 'y' }}", "",
     "True fallback 0 b True"},
    {"{{ [1, 2, 3, 4][::-1] }} {{ 'hello'[1:] }} {{ [1, 2, 3][-1] }} {{ 'héllo'[1] }} {{ [1, 2, 3, 4, 5][1:4:2] }} {{ "
     "'abc'[:-1] }} {{ (1, 2, 3)[1:] }} {{ [1, 2][5:] }}",
     "", "[4, 3, 2, 1] ello 3 é [2, 4] ab (2, 3) []"},
    {"{{ x | length + 1 }} {{ -(x | length) }} {{ x|length > 1 }}", "{\"x\": [1, 2]}", "3 -2 True"},
    {"{{ 'abc' is string and 3 is number }} {{ x is not none }} {{ not x is none }}", "{\"x\": 1}", "True True True"},
    {"{{ ' x '.strip() }}|{{ 'a,b'.split(',') }}|{{ 'a b  c'.split() }}|{{ 'a b c'.split(' ', 1) }}|{{ "
     "'abc'.startswith('a') }}|{{ 'abc'.endswith(('x', 'c')) }}|{{ 'Ab'.upper() }}{{ 'Ab'.lower() }}|{{ "
     "'aXa'.replace('a', 'b') }}|{{ 'hello wORLD'.title() }}|{{ '{} and {name}'.format(1, name='n') }}|{{ "
     "'xxhixx'.lstrip('x') }}{{ 'xxhixx'.rstrip('x') }}|{{ 'hello'.capitalize() }}|{{ ', '.join(['a', 'b']) }}|{{ "
     "'a\\nb\\n'.splitlines() }}|{{ 'abcb'.find('b') }}{{ 'abcb'.count('b') }}",
     "",
     "x|['a', 'b']|['a', 'b', 'c']|['a', 'b c']|True|True|ABab|bXb|Hello World|1 and n|hixxxxhi|Hello|a, b|['a', "
     "'b']|12"},
    {"{{ d.get('a') }} {{ d.get('z', 'dflt') }} {{ d.get('z') }} {{ d.keys()|list }} {{ d.values()|list }} {{ "
     "d.items()|list }}",
     "{\"d\": {\"a\": 1, \"b\": [2, 3]}}", "1 dflt None ['a', 'b'] [1, [2, 3]] [('a', 1), ('b', [2, 3])]"},
};

}  // namespace

BOOST_AUTO_TEST_SUITE(jinja_render)

BOOST_AUTO_TEST_CASE(statements_and_scoping_match_jinja2) { check_cases(kStatementCases); }

BOOST_AUTO_TEST_CASE(expressions_and_methods_match_python) { check_cases(kExpressionCases); }

BOOST_AUTO_TEST_CASE(a_template_renders_many_times_with_fresh_state) {
  const Template parsed = Template::parse("{% set ns = namespace(n=0) %}{% set ns.n = ns.n + x %}{{ ns.n }}", "t");
  BOOST_TEST(parsed.render({{"x", Value(1)}}) == "1");
  BOOST_TEST(parsed.render({{"x", Value(2)}}) == "2");
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace pagedllm::chat::jinja
