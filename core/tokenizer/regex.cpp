#include "core/tokenizer/regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <stdexcept>

namespace pagedllm::tokenizer {
namespace {

// Unicode White_Space, as a character-class body.
constexpr std::string_view kSpaceSet =
    "\\t\\n\\x0B\\f\\r\\x20\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}"
    "\\x{205F}\\x{3000}";
// Oniguruma's Unicode word characters: Letter | Mark | Number | Connector_Punctuation.
constexpr std::string_view kWordSet = "\\p{L}\\p{M}\\p{N}\\p{Pc}";

std::string pcre2_message(int code) {
  PCRE2_UCHAR buffer[256];
  if (pcre2_get_error_message(code, buffer, sizeof buffer) < 0) return "error " + std::to_string(code);
  return reinterpret_cast<const char*>(buffer);
}

// One match-data block per thread, reused by every search (only the whole-match pair is read).
pcre2_match_data* thread_match_data() {
  struct Holder {
    pcre2_match_data* data = pcre2_match_data_create(1, nullptr);
    ~Holder() { pcre2_match_data_free(data); }
  };
  thread_local Holder holder;
  if (holder.data == nullptr) throw std::bad_alloc();
  return holder.data;
}

std::size_t utf8_char_length(std::string_view text, std::size_t position) {
  std::size_t length = 1;
  while (position + length < text.size() && (static_cast<unsigned char>(text[position + length]) & 0xC0) == 0x80) {
    ++length;
  }
  return length;
}

}  // namespace

std::string translate_oniguruma_pattern(std::string_view pattern) {
  std::string out;
  out.reserve(pattern.size() + 64);
  bool in_class = false;
  std::size_t i = 0;
  while (i < pattern.size()) {
    const char c = pattern[i];
    if (c == '\\' && i + 1 < pattern.size()) {
      const char escaped = pattern[i + 1];
      if (escaped == 's' || escaped == 'S' || escaped == 'w' || escaped == 'W') {
        const std::string_view set = (escaped == 's' || escaped == 'S') ? kSpaceSet : kWordSet;
        const bool negated = escaped == 'S' || escaped == 'W';
        if (!in_class) {
          out += negated ? "[^" : "[";
          out += set;
          out += ']';
        } else if (!negated) {
          out += set;
        } else {
          out += pattern.substr(i, 2);  // a negated set inside a class: PCRE2's own (rare)
        }
        i += 2;
        continue;
      }
      if (escaped == 'Q') {  // \Q...\E is literal text
        const std::size_t end = pattern.find("\\E", i + 2);
        const std::size_t stop = end == std::string_view::npos ? pattern.size() : end + 2;
        out += pattern.substr(i, stop - i);
        i = stop;
        continue;
      }
      out += pattern.substr(i, 2);
      i += 2;
      continue;
    }
    if (in_class) {
      if (c == '[' && i + 1 < pattern.size() && pattern[i + 1] == ':') {  // [:alpha:]
        const std::size_t end = pattern.find(":]", i + 2);
        const std::size_t stop = end == std::string_view::npos ? pattern.size() : end + 2;
        out += pattern.substr(i, stop - i);
        i = stop;
        continue;
      }
      if (c == ']') in_class = false;
      out += c;
      ++i;
      continue;
    }
    out += c;
    ++i;
    if (c == '[') {
      in_class = true;
      if (i < pattern.size() && pattern[i] == '^') out += pattern[i++];
      if (i < pattern.size() && pattern[i] == ']') out += pattern[i++];  // a leading ']' is literal
    }
  }
  return out;
}

void Regex::CodeDeleter::operator()(void* code) const noexcept { pcre2_code_free(static_cast<pcre2_code*>(code)); }

Regex::Regex(std::string_view pattern, Syntax syntax) : source_(pattern), syntax_(syntax) {
  const std::string compiled = syntax == Syntax::literal ? source_ : translate_oniguruma_pattern(pattern);
  const std::uint32_t options = syntax == Syntax::literal ? (PCRE2_UTF | PCRE2_LITERAL) : (PCRE2_UTF | PCRE2_UCP);
  int error = 0;
  PCRE2_SIZE error_offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(compiled.data()), compiled.size(), options, &error,
                                   &error_offset, nullptr);
  if (code == nullptr) {
    throw std::invalid_argument("invalid pattern '" + source_ + "': " + pcre2_message(error) + " (offset " +
                                std::to_string(error_offset) + " of '" + compiled + "')");
  }
  code_.reset(code);
  // Without JIT support (some platforms) the interpreter runs the same pattern.
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
}

void Regex::find_all(std::string_view subject, std::vector<RegexMatch>& out) const {
  auto* code = static_cast<pcre2_code*>(code_.get());
  pcre2_match_data* match_data = thread_match_data();
  const auto* data = reinterpret_cast<PCRE2_SPTR>(subject.data());
  // The first search checks the whole subject's UTF-8; later ones skip that O(n) check.
  std::uint32_t options = 0;
  std::size_t search_from = 0;
  bool has_previous = false;
  std::size_t previous_end = 0;
  while (search_from <= subject.size()) {
    int rc = pcre2_match(code, data, subject.size(), search_from, options, match_data, nullptr);
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT) {  // a pathological subject: the interpreter uses the heap
      rc = pcre2_match(code, data, subject.size(), search_from, options | PCRE2_NO_JIT, match_data, nullptr);
    }
    options = PCRE2_NO_UTF_CHECK;
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) throw std::runtime_error("pattern '" + source_ + "': " + pcre2_message(rc));
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(match_data);
    const std::size_t start = ovector[0];
    const std::size_t end = ovector[1];
    if (start == end && has_previous && previous_end == end) {
      if (search_from >= subject.size()) break;
      search_from += utf8_char_length(subject, search_from);
      continue;
    }
    out.push_back({start, end});
    has_previous = true;
    previous_end = end;
    search_from = end;
  }
}

}  // namespace pagedllm::tokenizer
