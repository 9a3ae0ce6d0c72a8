// The benchmarks' shared build description and JSON output (bench_output.h).
#include "tools/bench/bench_output.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <thread>

namespace pagedllm::bench {

// The flags describe this translation unit; the benchmarks are built with the same flags as it.
BuildInfo build_info() {
  BuildInfo info;
#if defined(__clang__)
  info.compiler = "clang " __VERSION__;
#elif defined(__GNUC__)
  info.compiler = "gcc " __VERSION__;
#else
  info.compiler = "unknown compiler";
#endif
#ifdef NDEBUG
  info.ndebug = true;
#endif
#ifdef __OPTIMIZE__
  info.optimized = true;
#endif
  info.hardware_threads = std::thread::hardware_concurrency();
  return info;
}

std::string build_line(const BuildInfo& info) {
  return "compiler: " + info.compiler +
         " | build: " + (info.ndebug ? "release (NDEBUG)" : "debug (NDEBUG not defined: debug-only checks are on)") +
         " | optimizer: " + (info.optimized ? "on" : "off") +
         " | hardware threads: " + std::to_string(info.hardware_threads);
}

Json build_json(const BuildInfo& info) {
  return Json{{"compiler", info.compiler},
              {"ndebug", info.ndebug},
              {"optimized", info.optimized},
              {"hardware_threads", info.hardware_threads}};
}

std::string format_value(double value, const char* format) {
  if (!std::isfinite(value)) return "-";
  char text[48];
  std::snprintf(text, sizeof(text), format, value);
  return text;
}

std::string format_ratio(double value) { return format_value(value, "%.2fx"); }

void write_json_file(const std::string& path, const Json& document) {
  std::ofstream out(path);
  if (!out) throw std::runtime_error("cannot open " + path + " for writing");
  out << document.dump(2) << "\n";
  if (!out) throw std::runtime_error("failed writing " + path);
}

}  // namespace pagedllm::bench
