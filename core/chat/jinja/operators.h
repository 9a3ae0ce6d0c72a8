// Python's operators and element access on Values, as jinja2's sandbox applies them: arithmetic,
// comparison, `in`, attribute and item lookup (attribute first, then item, as jinja2's getattr),
// slices, and iteration. Failures throw Failure in Python's or jinja2's words.
#pragma once

#include <optional>
#include <string>

#include "core/chat/jinja/value.h"

namespace pagedllm::chat::jinja {

// + - * / // % ** ~ == != < <= > >= in "not in".
Value binary_operation(const std::string& op, const Value& left, const Value& right);
Value negate(const Value& operand);

// Throws Failure with the undefined value's hint (jinja2's UndefinedError) if `value` is undefined.
void require_defined(const Value& value);

// object.name: a method of str / list / dict first (a bound Function), then a dict's key or a
// namespace's attribute; otherwise undefined with jinja2's hint.
Value get_attribute(const Value& object, const std::string& name);
// object[index]: a dict's key, a list's or string's element (negative from the end), else as
// get_attribute for a string index; otherwise undefined ("'list object' has no element 5").
Value get_item(const Value& object, const Value& index);
// object[start:stop:step] of a list, tuple or string; absent parts are undefined values.
Value slice(const Value& object, const Value& start, const Value& stop, const Value& step);

// The items a for loop visits: a list's items, a dict's keys, a string's characters; nothing for
// an undefined value. Throws Failure for what is not iterable.
ValueList iterate(const Value& value);
// len(): strings in code points. Throws Failure for what has no length.
std::size_t length_of(const Value& value);

// Python's <, for sorting and comparisons; throws Failure for values Python cannot order.
bool less_than(const Value& a, const Value& b);

}  // namespace pagedllm::chat::jinja
