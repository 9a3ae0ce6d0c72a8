// The Jinja parser: tokens into a syntax tree, with jinja2's precedence (filters bind tighter
// than arithmetic: `a + b | trim` is `a + (b | trim)`) and its statement tags (if / elif / else,
// for with `if` and else, set and block set, macro and call, break / continue, and transformers'
// generation / endgeneration, whose body is rendered as is).
#pragma once

#include <string>
#include <vector>

#include "core/chat/jinja/ast.h"
#include "core/chat/jinja/lexer.h"

namespace pagedllm::chat::jinja {

// Throws JinjaSyntaxError naming `where`, the line and the problem in jinja2's words.
Body parse_template(const std::vector<Token>& tokens, const std::string& where);

}  // namespace pagedllm::chat::jinja
