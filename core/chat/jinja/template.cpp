#include "core/chat/jinja/template.h"

#include "core/chat/jinja/ast.h"
#include "core/chat/jinja/evaluator.h"
#include "core/chat/jinja/lexer.h"
#include "core/chat/jinja/parser.h"

namespace pagedllm::chat::jinja {

Template Template::parse(std::string_view source, std::string where) {
  auto body = std::make_shared<const Body>(parse_template(tokenize(source, where), where));
  return Template(std::move(body), std::move(where));
}

std::string Template::render(const ValueDict& variables) const {
  // Runtime errors reach HTTP clients: they name "chat template", not the server's file path
  // (syntax errors, found at load, name `where`).
  Evaluator evaluator("chat template");
  return evaluator.render(*body_, variables);
}

}  // namespace pagedllm::chat::jinja
