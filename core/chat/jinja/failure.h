// Errors raised while a template runs, before the evaluator knows the line: filters, tests,
// methods, operators and builtins throw these; the evaluator turns them into JinjaRuntimeError
// (or TemplateRaisedError) with the line of the expression that failed.
#pragma once

#include <cmath>
#include <cstdint>
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

// A float as a template integer, as Python's int(x): truncated toward zero; NaN, the infinities
// and values beyond 64 bits are errors (a C++ cast of them would be undefined).
inline std::int64_t float_to_int(double x) {
  if (std::isnan(x)) throw Failure("cannot convert float NaN to integer");
  if (std::isinf(x)) throw Failure("cannot convert float infinity to integer");
  if (x >= 9223372036854775808.0 || x < -9223372036854775808.0) {
    throw Failure("integer overflow (pagedllm's template integers are 64-bit)");
  }
  return static_cast<std::int64_t>(x);
}

}  // namespace pagedllm::chat::jinja
