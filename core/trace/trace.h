// A request trace as pagedllm replays it: one request per entry, in arrival order.
//
// The on-disk form is JSONL (docs/TRACE_FORMAT.md): an optional header line, then one request
// per line. Converters (ShareGPT, Azure, BurstGPT, Mooncake) and the synthesizer produce a
// Trace; `materialize_requests` turns one into engine requests for a given model.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/common/types.h"
#include "core/sched/sampling_params.h"
#include "core/spec/speculative_config.h"

namespace pagedllm::trace {

inline constexpr int32_t kTraceFormatVersion = 1;
inline constexpr int32_t kDefaultPrefixBlockTokens = 512;  // Mooncake's hash_ids block

// How a request's prompt is given: its text, its token ids, or only its length.
enum class PromptKind : uint8_t { text, tokens, length };
const char* to_string(PromptKind kind);

struct TraceRequest {
  double arrival_time = 0.0;  // seconds since the start of the trace, >= 0
  PromptKind prompt_kind = PromptKind::length;
  std::string prompt_text;             // prompt_kind == text
  std::vector<TokenId> prompt_tokens;  // prompt_kind == tokens
  // Prompt tokens: the length for `length`, tokens.size() for `tokens`; for `text`, the count a
  // converter measured with some tokenizer (0 = unknown until tokenized).
  int32_t prompt_len = 0;
  int32_t output_len = 0;  // output tokens to generate, >= 1
  // Mooncake-style sharing: block i covers prompt tokens [i*B, (i+1)*B) with B the header's
  // prefix_block_tokens; equal ids anywhere in the trace mean equal token content.
  std::vector<uint64_t> prefix_block_ids;
  // Per-request sampling (n, beam_width, temperature, top_p, top_k, min_p, penalties, seed,
  // logprobs); absent = the replay's defaults. max_tokens is output_len, not taken from here.
  std::optional<sched::SamplingParams> sampling;
  // The simulator only: this request's speculative decoding as a real run measured it (replay's
  // per-request spec_decode): drafts per decode pass and each position's acceptance. A simulator
  // that speculates uses it instead of --speculative-config's engine-wide simulated rates.
  std::optional<spec::SimulatedAcceptance> simulated_speculation;
  std::string session_id;   // multi-turn conversation this request belongs to
  int32_t priority = 0;     // priority scheduling: lower runs first
  int64_t source_line = 0;  // 1-based line (or record) it came from; 0 = synthesized
};

struct TraceHeader {
  int32_t version = kTraceFormatVersion;
  int32_t prefix_block_tokens = kDefaultPrefixBlockTokens;
  std::string source;   // what it was made from ("azure:/path/file.csv", "synth")
  std::string command;  // the command line that made it
};

struct Trace {
  TraceHeader header;
  std::vector<TraceRequest> requests;  // sorted by arrival_time (stable)
};

// One problem found while reading: "file:line: field: message".
struct TraceIssue {
  std::string file;
  int64_t line = 0;   // 1-based; 0 = the file as a whole
  std::string field;  // empty when the whole line is at fault
  std::string message;
  std::string to_string() const;
};

// What a reader did besides returning requests. Nothing accepted is ever dropped because a
// later line is bad: bad lines are skipped and listed here (or thrown, under OnError::fail).
struct ReadReport {
  int64_t lines_read = 0;  // data lines (records) seen, header excluded
  int64_t requests_accepted = 0;
  int64_t lines_skipped = 0;         // malformed, or filtered by a documented rule
  std::vector<TraceIssue> errors;    // malformed input, one per skipped line
  std::vector<TraceIssue> warnings;  // accepted with a change (reordered, clipped, filtered)
  bool reordered = false;            // arrivals were out of order and were sorted
};

enum class OnError : uint8_t {
  skip,  // report the line and go on (the default)
  fail,  // throw TraceError at the first bad line
};

enum class OutOfOrder : uint8_t {
  sort,    // stable sort by arrival with one warning naming the first offending line (default)
  refuse,  // throw TraceError naming the first line whose arrival precedes the previous one
};

struct ReadOptions {
  OnError on_error = OnError::skip;
  OutOfOrder out_of_order = OutOfOrder::sort;
};

// Thrown for input that cannot be read at all (missing file, a header that is not ours), and
// for the first bad line under OnError::fail; the message is the issue's to_string().
class TraceError : public std::runtime_error {
 public:
  explicit TraceError(const TraceIssue& issue) : std::runtime_error(issue.to_string()), issue_(issue) {}
  const TraceIssue& issue() const { return issue_; }

 private:
  TraceIssue issue_;
};

}  // namespace pagedllm::trace
