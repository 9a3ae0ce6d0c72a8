// Table-driven Jinja tests: a template, its variables as JSON, and the text Jinja2 renders (the
// expected texts were rendered by Jinja2 3.1 under transformers' settings: trim_blocks,
// lstrip_blocks, the sandbox, loop controls, transformers' tojson).
#pragma once

#include <boost/test/unit_test.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "core/chat/chat_errors.h"
#include "core/chat/jinja/template.h"

namespace pagedllm::chat::jinja {

struct RenderCase {
  const char* text;
  const char* variables;  // a JSON object, or "" for none
  const char* expected;
};

inline std::string render_jinja(const std::string& text, const std::string& variables_json = "") {
  ValueDict variables;
  if (!variables_json.empty()) {
    const nlohmann::ordered_json parsed = nlohmann::ordered_json::parse(variables_json);
    for (const auto& [name, value] : parsed.items()) {
      variables.emplace_back(name, Value::from_json(value));
    }
  }
  return Template::parse(text, "test").render(variables);
}

template <std::size_t N>
void check_cases(const RenderCase (&cases)[N]) {
  for (const RenderCase& c : cases) {
    try {
      BOOST_TEST(render_jinja(c.text, c.variables) == c.expected, "template: " << c.text);
    } catch (const ChatTemplateError& error) {
      BOOST_ERROR("template: " << c.text << " threw: " << error.what());
    }
  }
}

}  // namespace pagedllm::chat::jinja
