// Trace formats by name (trace_formats.h).
#include "core/trace/trace_formats.h"

#include <array>

#include "core/trace/azure_reader.h"
#include "core/trace/trace_jsonl.h"

namespace pagedllm::trace {
namespace {

constexpr std::array kFormats{TraceFormat::pagedllm, TraceFormat::sharegpt, TraceFormat::azure, TraceFormat::burstgpt,
                              TraceFormat::mooncake};

}  // namespace

const char* to_string(TraceFormat format) {
  switch (format) {
    case TraceFormat::pagedllm:
      return "pagedllm";
    case TraceFormat::sharegpt:
      return "sharegpt";
    case TraceFormat::azure:
      return "azure";
    case TraceFormat::burstgpt:
      return "burstgpt";
    case TraceFormat::mooncake:
      return "mooncake";
  }
  return "unknown";
}

TraceFormat parse_trace_format(std::string_view name) {
  std::string valid;
  for (const TraceFormat format : kFormats) {
    if (name == to_string(format)) return format;
    valid += (valid.empty() ? "" : ", ") + std::string(to_string(format));
  }
  throw TraceError(
      TraceIssue{"", 0, "format", "unknown trace format '" + std::string(name) + "' (valid: " + valid + ")"});
}

Trace read_any_trace(const std::string& path, TraceFormat format, const ReadOptions& options, ReadReport* report,
                     const ConverterOptions& converters) {
  switch (format) {
    case TraceFormat::pagedllm:
      return read_trace_jsonl(path, options, report);
    case TraceFormat::sharegpt:
      return read_sharegpt_trace(path, converters.sharegpt, options, report);
    case TraceFormat::azure:
      return read_azure_trace(path, options, report);
    case TraceFormat::burstgpt:
      return read_burstgpt_trace(path, converters.burstgpt, options, report);
    case TraceFormat::mooncake:
      return read_mooncake_trace(path, converters.mooncake, options, report);
  }
  throw TraceError(TraceIssue{path, 0, "format", "unknown trace format"});
}

}  // namespace pagedllm::trace
