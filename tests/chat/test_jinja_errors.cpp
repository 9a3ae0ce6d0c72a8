// Errors: syntax errors name the line when a template is parsed, runtime errors carry jinja2's
// message and the line, raise_exception's message arrives verbatim; and through ChatTemplate
// they are ChatTemplateErrors (what the server answers with 400).
#include <boost/test/unit_test.hpp>
#include <string>

#include "core/chat/chat_template.h"
#include "tests/chat/jinja_cases.h"

namespace pagedllm::chat::jinja {
namespace {

struct ErrorCase {
  const char* text;
  const char* variables;
  int line;
  const char* message;  // jinja2's words
};

// Rejected when parsed.
const ErrorCase kSyntaxErrors[] = {
    {"line one\n{% if %}", "", 2, "Expected an expression, got 'end of statement block'"},
    {"{% if true %}x", "", 1,
     "Unexpected end of template. Jinja was looking for the following tags: 'elif' or 'else' or 'endif'. The "
     "innermost block that needs to be closed is 'if'."},
    {"{% for x in y %}\n{% endif %}", "", 2,
     "Encountered unknown tag 'endif'. Jinja was looking for the following tags: 'endfor' or 'else'. The innermost "
     "block that needs to be closed is 'for'."},
    {"{{ 'unterminated }}", "", 1, "unexpected char \"'\" at 3"},
    {"{{ x ]}}", "", 1, "unexpected ']'"},
    {"{% break %}", "", 1, "'break' outside loop"},
    {"\n{# never closed", "", 2, "Missing end of comment tag"},
    {"{{ f(a=1, 2) }}", "", 1, "invalid syntax for function call expression"},
    {"{% if false %}\n{{ x|nope }}{% endif %}", "", 2, "No filter named 'nope'."},  // checked even where not run
    {"{{ x is nope }}", "", 1, "No test named 'nope'."},
    {"{% call x %}{% endcall %}", "", 1, "expected call"},
    {"{% include 'other.jinja' %}", "", 1, "'include' tags are not supported by pagedllm's Jinja interpreter"},
};

// Raised while rendering.
const ErrorCase kRuntimeErrors[] = {
    {"{{ m.foo.bar }}", R"({"m": {}})", 1, "'dict object' has no attribute 'foo'"},
    {"\n{{ missing.x }}", "", 2, "'missing' is undefined"},
    {"{{ missing() }}", "", 1, "'missing' is undefined"},
    {"{{ xs.append(1) }}", R"({"xs": []})", 1, "access to attribute 'append' of 'list' object is unsafe."},
    {"{{ d.update({}) }}", R"({"d": {}})", 1, "access to attribute 'update' of 'dict' object is unsafe."},
    {"{{ 1 + 'a' }}", "", 1, "unsupported operand type(s) for +: 'int' and 'str'"},
    {"{{ 'a' + 1 }}", "", 1, "can only concatenate str (not \"int\") to str"},
    {"{{ 1 / 0 }}", "", 1, "division by zero"},
    {"{{ missing|tojson }}", "", 1, "Object of type Undefined is not JSON serializable"},
    {"{% for x in 3 %}{% endfor %}", "", 1, "'int' object is not iterable"},
    {"{% set a, b = [1] %}", "", 1, "not enough values to unpack (expected 2, got 1)"},
    {"{% set x = 1 %}{% set x.y = 2 %}", "", 1, "cannot assign attribute on non-namespace object"},
    {"{{ messages[0].content < 1 }}", R"({"messages": [{"content": "a"}]})", 1,
     "'<' not supported between instances of 'str' and 'int'"},
    // 64-bit integers: what would trap or wrap in C++ is a template error (Python's ints are unbounded).
    {"{{ (-9223372036854775807 - 1) // -1 }}", "", 1, "integer overflow (pagedllm's template integers are 64-bit)"},
    {"{{ -(-9223372036854775807 - 1) }}", "", 1, "integer overflow (pagedllm's template integers are 64-bit)"},
    {"{{ (-9223372036854775807 - 1)|abs }}", "", 1, "integer overflow (pagedllm's template integers are 64-bit)"},
    {"{{ 1e300|int }}", "", 1, "integer overflow (pagedllm's template integers are 64-bit)"},
    {"{{ 'x' * 100000000000 }}", "", 1, "sequence repetition too large (the result would exceed 16 Mi elements)"},
    {"{{ 'ab'|indent(2.5) }}", "", 1, "'float' object cannot be interpreted as an integer"},
};

}  // namespace

BOOST_AUTO_TEST_SUITE(jinja_errors)

BOOST_AUTO_TEST_CASE(syntax_errors_name_the_source_and_line) {
  for (const ErrorCase& c : kSyntaxErrors) {
    try {
      Template::parse(c.text, "model/tokenizer_config.json");
      BOOST_ERROR("parsed: " << c.text);
    } catch (const JinjaSyntaxError& error) {
      BOOST_TEST(error.line() == c.line, c.text);
      BOOST_TEST(error.message() == c.message, c.text);
      BOOST_TEST(
          std::string(error.what()) == "model/tokenizer_config.json, line " + std::to_string(c.line) + ": " + c.message,
          c.text);
    }
  }
}

BOOST_AUTO_TEST_CASE(runtime_errors_carry_jinja2s_message_and_the_line) {
  for (const ErrorCase& c : kRuntimeErrors) {
    try {
      render_jinja(c.text, c.variables);
      BOOST_ERROR("rendered: " << c.text);
    } catch (const JinjaRuntimeError& error) {
      BOOST_TEST(error.line() == c.line, c.text);
      BOOST_TEST(error.message() == c.message, c.text);
      BOOST_TEST(std::string(error.what()) == "chat template, line " + std::to_string(c.line) + ": " + c.message,
                 c.text);
    }
  }
}

BOOST_AUTO_TEST_CASE(raise_exception_message_is_verbatim) {
  try {
    render_jinja(
        "{% if true %}\n\n{{ raise_exception('Conversation roles must alternate user/assistant/...') }}{% endif %}");
    BOOST_FAIL("rendered");
  } catch (const TemplateRaisedError& error) {
    BOOST_TEST(std::string(error.what()) == "Conversation roles must alternate user/assistant/...");
    BOOST_TEST(error.line() == 3);
  }
}

BOOST_AUTO_TEST_CASE(chat_template_errors_are_chat_template_errors) {
  const ChatTemplate strict = ChatTemplate::from_jinja(
      "{% for m in messages %}{% if m.role == 'system' %}{{ raise_exception('System role not supported') }}"
      "{% endif %}{{ m.content }}{% endfor %}",
      "strict.jinja");
  BOOST_CHECK_THROW(strict.render({{"system", "S"}, {"user", "Q"}}), ChatTemplateError);
  try {
    strict.render({{"system", "S"}});
  } catch (const ChatTemplateError& error) {
    BOOST_TEST(std::string(error.what()) == "System role not supported");
  }
  BOOST_CHECK_THROW(ChatTemplate::from_jinja("{% if %}", "bad.jinja"), ChatTemplateError);
  BOOST_CHECK_THROW(ChatTemplate::from_jinja("{{ messages[0].x.y }}", "t").render({{"user", "Q"}}), ChatTemplateError);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace pagedllm::chat::jinja
