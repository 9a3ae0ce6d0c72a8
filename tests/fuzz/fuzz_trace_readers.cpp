// libFuzzer target: the trace readers (pagedllm JSONL, ShareGPT, Azure CSV, BurstGPT CSV,
// Mooncake JSONL), text a user hands `replay`, `simulate` and `trace convert`. The first byte
// picks the reader, the rest is the file. Any text must read, with bad lines skipped and counted,
// or end in TraceError; what was accepted must write as JSONL and read back whole. Any other
// exception, a crash, a hang or a sanitizer report is a finding. Run by tools/fuzz.sh.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <string_view>

#include "core/trace/azure_reader.h"
#include "core/trace/burstgpt_reader.h"
#include "core/trace/mooncake_reader.h"
#include "core/trace/sharegpt_reader.h"
#include "core/trace/trace.h"
#include "core/trace/trace_jsonl.h"

namespace {

namespace trace = pagedllm::trace;

trace::Trace read(std::uint8_t which, const std::string& text, trace::ReadReport& report) {
  std::istringstream in(text);
  switch (which % 5) {
    case 0:
      return trace::read_trace_jsonl(in, "fuzz.jsonl", {}, &report);
    case 1: {
      trace::ShareGptOptions sharegpt;
      sharegpt.count_tokens = [](std::string_view s) { return static_cast<std::int32_t>(s.size() / 4); };
      return trace::read_sharegpt_trace(in, "fuzz.json", sharegpt, {}, &report);
    }
    case 2:
      return trace::read_azure_trace(in, "fuzz.csv", {}, &report);
    case 3:
      return trace::read_burstgpt_trace(in, "fuzz.csv", {}, {}, &report);
    default:
      return trace::read_mooncake_trace(in, "fuzz.jsonl", {}, {}, &report);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  trace::ReadReport report;
  trace::Trace parsed;
  try {
    parsed = read(data[0], text, report);
  } catch (const trace::TraceError&) {
    return 0;
  }
  // Every request accepted is in the trace, and accepted + skipped never exceeds what was read.
  if (static_cast<std::int64_t>(parsed.requests.size()) != report.requests_accepted) __builtin_trap();
  if (report.requests_accepted + report.lines_skipped > report.lines_read) __builtin_trap();
  std::ostringstream written;
  trace::write_trace_jsonl(parsed, written);
  std::istringstream again(written.str());
  trace::ReadReport reread;
  const trace::Trace round_trip = trace::read_trace_jsonl(again, "written.jsonl", {}, &reread);
  if (round_trip.requests.size() != parsed.requests.size() || reread.lines_skipped != 0) __builtin_trap();
  return 0;
}
