// Literal text as a regex (core/structured/regex_compiler.h): how the structured-output compilers
// splice fixed text (JSON punctuation, enum values, property names) into the patterns they build.
#pragma once

#include <string>
#include <string_view>

namespace pagedllm::structured {

// A pattern whose only match is `literal`, which must be valid UTF-8 (std::invalid_argument
// otherwise): the metacharacters \ ^ $ . | ? * + ( ) [ ] { } get a backslash, control characters
// and DEL are written as \xHH, everything else (other ASCII, multi-byte characters) as itself.
std::string escape_regex(std::string_view literal);

}  // namespace pagedllm::structured
