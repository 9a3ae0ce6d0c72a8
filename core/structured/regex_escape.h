// Literal text as a regex (core/structured/regex_compiler.h): how the structured-output compilers
// splice fixed text (JSON punctuation, enum values, property names) into the patterns they build;
// and the hexadecimal digits of an escape, as the pattern parsers (regex, grammar) read them.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace pagedllm::structured {

// A pattern whose only match is `literal`, which must be valid UTF-8 (std::invalid_argument
// otherwise): the metacharacters \ ^ $ . | ? * + ( ) [ ] { } get a backslash, control characters
// and DEL are written as \xHH, everything else (other ASCII, multi-byte characters) as itself.
std::string escape_regex(std::string_view literal);

// The value of the `count` hexadecimal digits at text[pos...] (an escape's \xHH, \uHHHH), with
// pos moved past them; nullopt, pos unchanged, when fewer than `count` are there.
std::optional<char32_t> read_hex_digits(std::string_view text, std::size_t& pos, std::size_t count);

}  // namespace pagedllm::structured
