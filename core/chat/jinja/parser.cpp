#include "core/chat/jinja/parser.h"

#include <algorithm>
#include <initializer_list>

#include "core/chat/chat_errors.h"
#include "core/chat/jinja/expression_parser.h"

namespace pagedllm::chat::jinja {
namespace {

class Parser : ExpressionParser {
 public:
  using ExpressionParser::ExpressionParser;

  Body run() {
    std::string end_tag;
    Body body = parse_body({}, "", end_tag);
    return body;
  }

 private:
  // --- statements ------------------------------------------------------------------------------

  // Statements up to a block tag named in `end_tags` (consumed up to the tag's name, which is
  // returned in `end_tag`), or to the end of input when `end_tags` is empty.
  Body parse_body(std::initializer_list<const char*> end_tags, const char* innermost, std::string& end_tag) {
    if (end_tags.size() > 0) open_blocks_.push_back({looking_for(end_tags), innermost});
    Body body = parse_body_until(end_tags, innermost, end_tag);
    if (end_tags.size() > 0) open_blocks_.pop_back();
    return body;
  }

  static std::string looking_for(std::initializer_list<const char*> end_tags) {
    std::string wanted;
    for (const char* tag : end_tags) wanted += (wanted.empty() ? "'" : " or '") + std::string(tag) + "'";
    return wanted;
  }

  Body parse_body_until(std::initializer_list<const char*> end_tags, const char* innermost, std::string& end_tag) {
    Body body;
    while (true) {
      const Token& token = current();
      if (token.kind == TokenKind::end_of_input) {
        if (end_tags.size() == 0) return body;
        fail(token, "Unexpected end of template. Jinja was looking for the following tags: " + looking_for(end_tags) +
                        ". The innermost block that needs to be closed is '" + innermost + "'.");
      }
      if (token.kind == TokenKind::text) {
        body.push_back({token.line, TextStmt{token.text}});
        next();
      } else if (token.kind == TokenKind::variable_begin) {
        next();
        ExpressionPtr expression = parse_tuple(true);
        expect(TokenKind::variable_end);
        body.push_back({token.line, OutputStmt{std::move(expression)}});
      } else {
        next();  // {%
        const Token& name = current();
        if (name.kind != TokenKind::name) fail(name, "tag name expected");
        if (std::any_of(end_tags.begin(), end_tags.end(), [&](const char* tag) { return name.text == tag; })) {
          end_tag = name.text;
          next();
          return body;
        }
        parse_statement(body);
      }
    }
  }

  void parse_statement(Body& body) {
    const Token& tag = current();
    const int line = tag.line;
    const std::string name = tag.text;
    next();
    if (name == "if") {
      body.push_back({line, parse_if()});
    } else if (name == "for") {
      body.push_back({line, parse_for()});
    } else if (name == "set") {
      body.push_back({line, parse_set()});
    } else if (name == "macro") {
      body.push_back({line, parse_macro()});
    } else if (name == "call") {
      body.push_back({line, parse_call_block()});
    } else if (name == "break" || name == "continue") {
      if (loop_depth_ == 0) fail(tag, "'" + name + "' outside loop");
      expect(TokenKind::block_end);
      if (name == "break") {
        body.push_back({line, BreakStmt{}});
      } else {
        body.push_back({line, ContinueStmt{}});
      }
    } else if (name == "generation") {
      // transformers' AssistantTracker: marks the assistant's text for masks; renders the body.
      expect(TokenKind::block_end);
      std::string end_tag;
      Body inner = parse_body({"endgeneration"}, "generation", end_tag);
      expect(TokenKind::block_end);
      for (Statement& statement : inner) body.push_back(std::move(statement));
    } else if (name == "filter" || name == "block" || name == "extends" || name == "include" || name == "import" ||
               name == "from" || name == "with" || name == "autoescape" || name == "do") {
      fail(tag, "'" + name + "' tags are not supported by pagedllm's Jinja interpreter");
    } else {
      std::string message = "Encountered unknown tag '" + name + "'.";
      if (!open_blocks_.empty()) {
        message += " Jinja was looking for the following tags: " + open_blocks_.back().first +
                   ". The innermost block that needs to be closed is '" + open_blocks_.back().second + "'.";
      }
      fail(tag, message);
    }
  }

  IfStmt parse_if() {
    IfStmt statement;
    ExpressionPtr condition = parse_tuple(false);
    while (true) {
      expect(TokenKind::block_end);
      std::string end_tag;
      Body branch = parse_body({"elif", "else", "endif"}, "if", end_tag);
      statement.branches.emplace_back(std::move(condition), std::move(branch));
      if (end_tag == "elif") {
        condition = parse_tuple(false);
        continue;
      }
      if (end_tag == "else") {
        expect(TokenKind::block_end);
        statement.otherwise = parse_body({"endif"}, "if", end_tag);
      }
      expect(TokenKind::block_end);
      return statement;
    }
  }

  ForStmt parse_for() {
    ForStmt statement;
    statement.targets = parse_targets();
    expect_name("in");
    statement.iterable = parse_tuple(false);
    if (skip_name("if")) statement.condition = parse_expression(true);
    if (is_name("recursive")) fail(current(), "recursive loops are not supported");
    expect(TokenKind::block_end);
    ++loop_depth_;
    std::string end_tag;
    statement.body = parse_body({"endfor", "else"}, "for", end_tag);
    --loop_depth_;
    if (end_tag == "else") {
      expect(TokenKind::block_end);
      statement.otherwise = parse_body({"endfor"}, "for", end_tag);
    }
    expect(TokenKind::block_end);
    return statement;
  }

  // name | name, name, ... | (name, name)
  std::vector<std::string> parse_targets() {
    std::vector<std::string> targets;
    const bool parenthesised = skip_op("(");
    do {
      if (parenthesised && is_op(")")) break;
      targets.push_back(expect_identifier());
    } while (skip_op(","));
    if (parenthesised) expect_op(")");
    return targets;
  }

  SetStmt parse_set() {
    SetStmt statement;
    const std::string first = expect_identifier();
    if (skip_op(".")) {
      statement.targets = {first};
      statement.attribute = expect_identifier();
    } else {
      statement.targets = {first};
      while (skip_op(",")) statement.targets.push_back(expect_identifier());
    }
    if (skip_op("=")) {
      statement.value = parse_tuple(true);
      expect(TokenKind::block_end);
      return statement;
    }
    if (statement.targets.size() != 1 || !statement.attribute.empty()) expect_op("=");
    expect(TokenKind::block_end);
    std::string end_tag;
    statement.body = parse_body({"endset"}, "set", end_tag);
    expect(TokenKind::block_end);
    return statement;
  }

  // (name, name=default, ...), after the opening parenthesis.
  std::vector<MacroParameter> parse_parameters() {
    std::vector<MacroParameter> parameters;
    while (!skip_op(")")) {
      if (!parameters.empty()) expect_op(",");
      if (skip_op(")")) break;
      MacroParameter parameter{expect_identifier(), nullptr};
      if (skip_op("=")) {
        parameter.default_value = parse_expression(true);
      } else if (!parameters.empty() && parameters.back().default_value) {
        fail(current(), "non-default argument follows default argument");
      }
      parameters.push_back(std::move(parameter));
    }
    return parameters;
  }

  // A macro's body: break and continue do not reach loops outside it.
  Body parse_macro_body(const char* end_tag_name, const char* block) {
    expect(TokenKind::block_end);
    const int saved_loop_depth = std::exchange(loop_depth_, 0);
    std::string end_tag;
    Body body = parse_body({end_tag_name}, block, end_tag);
    loop_depth_ = saved_loop_depth;
    expect(TokenKind::block_end);
    return body;
  }

  MacroStmt parse_macro() {
    MacroStmt statement;
    statement.name = expect_identifier();
    expect_op("(");
    statement.parameters = parse_parameters();
    statement.body = parse_macro_body("endmacro", "macro");
    return statement;
  }

  CallBlockStmt parse_call_block() {
    CallBlockStmt statement;
    if (skip_op("(")) statement.parameters = parse_parameters();
    const Token& start = current();
    statement.call = parse_expression(true);
    if (!std::holds_alternative<CallExpr>(statement.call->node)) fail(start, "expected call");
    statement.body = parse_macro_body("endcall", "call");
    return statement;
  }

  int loop_depth_ = 0;
  std::vector<std::pair<std::string, std::string>> open_blocks_;  // (the end tags wanted, the block)
};

}  // namespace

Body parse_template(const std::vector<Token>& tokens, const std::string& where) { return Parser(tokens, where).run(); }

}  // namespace pagedllm::chat::jinja
