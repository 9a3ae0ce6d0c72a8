// The Mooncake trace (kvcache-ai/Mooncake, FAST25-release/traces/*.jsonl): one JSON object per
// line, {"timestamp": ms, "input_length": tokens, "output_length": tokens, "hash_ids": [...]},
// hash id i naming the content of prompt tokens [i*512, (i+1)*512).
//
// Mapping: arrival = (timestamp - the earliest timestamp) / 1000 s; prompt = a length-only prompt
// of input_length; output_len = output_length; prefix_block_ids = hash_ids; header
// prefix_block_tokens = the block size (512 unless overridden). Other keys are ignored. Skipped
// (counted, one warning per rule): input_length 0, output_length 0. More hash ids than the prompt
// has blocks is an error; fewer is accepted with a counted warning (the rest is not shared).
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>

#include "core/trace/trace.h"

namespace pagedllm::trace {

struct MooncakeOptions {
  int32_t block_tokens = kDefaultPrefixBlockTokens;  // prompt tokens per hash id
};

Trace read_mooncake_trace(const std::string& path, const MooncakeOptions& mooncake = {},
                          const ReadOptions& options = {}, ReadReport* report = nullptr);
// `name` stands for the file in issues and in header.source ("mooncake:<name>").
Trace read_mooncake_trace(std::istream& in, const std::string& name, const MooncakeOptions& mooncake = {},
                          const ReadOptions& options = {}, ReadReport* report = nullptr);

}  // namespace pagedllm::trace
