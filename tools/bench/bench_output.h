// What every benchmark reports the same way: the build it ran (compiler, NDEBUG, optimizer) and
// the machine's threads, as a header line and as JSON; figures as text; its JSON document.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace pagedllm::bench {

// Key order is kept, so a document reads in the order it was built. NaN (kNone, "no figure") and
// the infinities are written as null.
using Json = nlohmann::ordered_json;

struct BuildInfo {
  std::string compiler;  // "gcc 12.2.0"
  bool ndebug = false;   // NDEBUG defined: debug-only checks are off
  bool optimized = false;
  unsigned hardware_threads = 0;
};

BuildInfo build_info();

// "compiler: gcc 12.2.0 | build: release (NDEBUG) | optimizer: on | hardware threads: 2"
std::string build_line(const BuildInfo& info);

// {"compiler", "ndebug", "optimized", "hardware_threads"}
Json build_json(const BuildInfo& info);

// A figure as printf's `format` writes it, or "-" when there is none (NaN, infinite).
std::string format_value(double value, const char* format);
// "1.23x", or "-".
std::string format_ratio(double value);

// Writes `document` (indented) to `path`; std::runtime_error naming the path when it cannot.
void write_json_file(const std::string& path, const Json& document);

}  // namespace pagedllm::bench
