// ShareGPT conversations (as vLLM's serving benchmark reads them): a JSON array of
// {"id": text, "conversations": [{"from": "human" | "gpt", "value": text}, ...]}.
//
// Mapping, as vLLM's benchmark: turn 0's text is the prompt (prompt_len its token count), turn 1's
// token count is output_len; "id" becomes session_id; arrival times are all 0 (a caller that wants
// a rate re-times the trace with the synthesizer). Requests come in file order (vLLM shuffles
// first). Skipped (counted, one warning per rule): conversations with fewer than 2 turns and, with
// `filter` on, vLLM's length rules: prompt or output under min_len tokens, prompt over
// max_prompt_len, prompt + output over max_total_len. With `filter` off, an output of 0 tokens is
// still skipped. A malformed entry is an error for that entry; `line` is its 1-based index.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>
#include <string_view>

#include "core/trace/trace.h"

namespace pagedllm::trace {

struct ShareGptOptions {
  std::function<int32_t(std::string_view)> count_tokens;  // required: the tokenizer's count
  bool filter = true;                                     // vLLM's length rules below
  int32_t min_len = 4;                                    // prompt or output tokens, at least
  int32_t max_prompt_len = 1024;
  int32_t max_total_len = 2048;  // prompt + output tokens, at most
  int64_t max_requests = 0;      // stop after this many; 0 = all
};

Trace read_sharegpt_trace(const std::string& path, const ShareGptOptions& sharegpt, const ReadOptions& options = {},
                          ReadReport* report = nullptr);
// `name` stands for the file in issues and in header.source ("sharegpt:<name>").
Trace read_sharegpt_trace(std::istream& in, const std::string& name, const ShareGptOptions& sharegpt,
                          const ReadOptions& options = {}, ReadReport* report = nullptr);

}  // namespace pagedllm::trace
