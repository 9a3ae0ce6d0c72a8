// Every trace format pagedllm reads, by name, behind one call.
#pragma once

#include <string>
#include <string_view>

#include "core/trace/burstgpt_reader.h"
#include "core/trace/mooncake_reader.h"
#include "core/trace/sharegpt_reader.h"
#include "core/trace/trace.h"

namespace pagedllm::trace {

enum class TraceFormat : uint8_t { pagedllm, sharegpt, azure, burstgpt, mooncake };

const char* to_string(TraceFormat format);
// Throws TraceError (field "format") listing the valid names when `name` is none of them.
TraceFormat parse_trace_format(std::string_view name);

// What the converters need besides ReadOptions; each applies to its own format only.
struct ConverterOptions {
  ShareGptOptions sharegpt;  // sharegpt.count_tokens is required for the ShareGPT format
  BurstGptOptions burstgpt;
  MooncakeOptions mooncake;
};

Trace read_any_trace(const std::string& path, TraceFormat format, const ReadOptions& options = {},
                     ReadReport* report = nullptr, const ConverterOptions& converters = {});

}  // namespace pagedllm::trace
