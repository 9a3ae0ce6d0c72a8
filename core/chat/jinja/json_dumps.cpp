#include "core/chat/jinja/json_dumps.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/chat/jinja/failure.h"
#include "core/chat/jinja/python_text.h"

namespace pagedllm::chat::jinja {
namespace {

void append_escaped(std::string& out, const std::string& text, bool ensure_ascii) {
  out += '"';
  const auto append_unicode_escape = [&](std::uint32_t unit) {
    char escaped[16];
    std::snprintf(escaped, sizeof escaped, "\\u%04x", unit);
    out += escaped;
  };
  for (const std::uint32_t c : decode_utf8(text)) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (c < 0x20 || (ensure_ascii && c >= 0x7f)) {
          if (c >= 0x10000) {  // a surrogate pair, as Python writes it
            append_unicode_escape(0xd800 + ((c - 0x10000) >> 10));
            append_unicode_escape(0xdc00 + ((c - 0x10000) & 0x3ff));
          } else {
            append_unicode_escape(c);
          }
        } else {
          out += encode_utf8({c});
        }
    }
  }
  out += '"';
}

class JsonWriter {
 public:
  explicit JsonWriter(const JsonDumpOptions& options) : options_(options) {}

  void write(const Value& value, int depth) {
    if (value.is_none()) {
      out_ += "null";
    } else if (value.is_bool()) {
      out_ += value.as_bool() ? "true" : "false";
    } else if (value.is_int()) {
      out_ += std::to_string(value.as_int());
    } else if (value.is_float()) {
      const double x = value.as_double();
      out_ += std::isnan(x) ? "NaN" : std::isinf(x) ? (x < 0 ? "-Infinity" : "Infinity") : python_float_repr(x);
    } else if (value.is_string()) {
      append_escaped(out_, value.as_string(), options_.ensure_ascii);
    } else if (value.is_list()) {
      const ValueList& items = value.as_list();
      out_ += '[';
      for (std::size_t i = 0; i < items.size(); ++i) {
        separate(i, depth + 1);
        write(items[i], depth + 1);
      }
      close(']', items.empty(), depth);
    } else if (value.is_dict()) {
      std::vector<const std::pair<std::string, Value>*> entries;
      for (const auto& entry : value.as_dict()) entries.push_back(&entry);
      if (options_.sort_keys) {
        std::stable_sort(entries.begin(), entries.end(), [](auto* a, auto* b) { return a->first < b->first; });
      }
      out_ += '{';
      for (std::size_t i = 0; i < entries.size(); ++i) {
        separate(i, depth + 1);
        append_escaped(out_, entries[i]->first, options_.ensure_ascii);
        out_ += options_.key_separator;
        write(entries[i]->second, depth + 1);
      }
      close('}', entries.empty(), depth);
    } else {
      throw Failure("Object of type " + value.type_name() + " is not JSON serializable");
    }
  }

  std::string take() { return std::move(out_); }

 private:
  void separate(std::size_t index, int depth) {
    if (index > 0) out_ += options_.item_separator;
    newline(depth);
  }
  void close(char bracket, bool empty, int depth) {
    if (!empty) newline(depth);
    out_ += bracket;
  }
  void newline(int depth) {
    if (!options_.indent) return;
    out_ += '\n';
    for (int i = 0; i < depth; ++i) out_ += *options_.indent;
  }

  const JsonDumpOptions& options_;
  std::string out_;
};

}  // namespace

std::string python_json_dumps(const Value& value, const JsonDumpOptions& options) {
  JsonWriter writer(options);
  writer.write(value, 0);
  return writer.take();
}

}  // namespace pagedllm::chat::jinja
