// A Jinja template, parsed once and rendered many times: the interpreter pagedllm runs a
// model's chat template with. It implements the part of Jinja that Hugging Face chat templates
// use, under the environment transformers renders them in (ImmutableSandboxedEnvironment,
// trim_blocks, lstrip_blocks, loop controls, {% generation %}, raise_exception, strftime_now,
// transformers' tojson); see docs/ARCHITECTURE.md for what is left out.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "core/chat/jinja/value.h"

namespace pagedllm::chat::jinja {

struct Statement;

class Template {
 public:
  // Throws JinjaSyntaxError naming `where` and the line.
  static Template parse(std::string_view source, std::string where);

  // Renders with `variables` in the outermost scope. Throws JinjaRuntimeError (message as
  // jinja2's, with the line) or TemplateRaisedError (raise_exception's message, verbatim).
  std::string render(const ValueDict& variables) const;

  const std::string& where() const noexcept { return where_; }

 private:
  Template(std::shared_ptr<const std::vector<Statement>> body, std::string where)
      : body_(std::move(body)), where_(std::move(where)) {}

  std::shared_ptr<const std::vector<Statement>> body_;
  std::string where_;
};

}  // namespace pagedllm::chat::jinja
