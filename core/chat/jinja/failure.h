// Errors raised while a template runs, before the evaluator knows the line: filters, tests,
// methods, operators and builtins throw these; the evaluator turns them into JinjaRuntimeError
// (or TemplateRaisedError) with the line of the expression that failed.
#pragma once

#include <stdexcept>
#include <string>

namespace pagedllm::chat::jinja {

// message(): jinja2's words ("'dict object' has no attribute 'x'", "unsupported operand type(s)
// for +: 'int' and 'str'").
class Failure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// raise_exception(message) was called.
class RaisedByTemplate : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace pagedllm::chat::jinja
