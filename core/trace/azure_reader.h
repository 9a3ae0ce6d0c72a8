// The Azure LLM inference trace (Azure/AzurePublicDataset, AzureLLMInferenceTrace_*.csv):
// columns TIMESTAMP, ContextTokens, GeneratedTokens, one row per request.
//
// Mapping: arrival = seconds since the earliest row's TIMESTAMP (in a file in time order, the
// first row's); prompt = a length-only prompt of ContextTokens; output_len = GeneratedTokens.
// Rows with ContextTokens 0 or GeneratedTokens 0 are skipped (counted, one warning per rule): a
// request with no prompt or no output cannot be replayed as lengths.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>

#include "core/trace/trace.h"

namespace pagedllm::trace {

Trace read_azure_trace(const std::string& path, const ReadOptions& options = {}, ReadReport* report = nullptr);
// `name` stands for the file in issues and in header.source ("azure:<name>").
Trace read_azure_trace(std::istream& in, const std::string& name, const ReadOptions& options = {},
                       ReadReport* report = nullptr);

// Days from 1970-01-01 to the given proleptic Gregorian date (negative before it); year 1..9999.
int64_t days_from_civil(int32_t year, int32_t month, int32_t day);
// "YYYY-MM-DD HH:MM:SS" with up to 7 fractional digits (a 'T' may stand for the space), read as
// UTC: 100 ns ticks since 1970-01-01 00:00:00. nullopt when the text is not such a time.
std::optional<int64_t> parse_azure_timestamp(std::string_view text);

}  // namespace pagedllm::trace
