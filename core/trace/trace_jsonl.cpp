// The JSONL trace format: reader, writer, and the bookkeeping shared by every reader.
#include "core/trace/trace_jsonl.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <istream>
#include <iterator>
#include <limits>
#include <nlohmann/json.hpp>
#include <ostream>
#include <set>
#include <string_view>

#include "core/trace/field_error.h"

namespace pagedllm::trace {

// --- ReadContext ---------------------------------------------------------------------------

ReadContext::ReadContext(std::string file, const ReadOptions& options, ReadReport* report)
    : file_(std::move(file)), options_(options), report_(report != nullptr ? report : &own_report_) {}

void ReadContext::error(int64_t line, std::string field, std::string message) {
  TraceIssue issue{file_, line, std::move(field), std::move(message)};
  report_->errors.push_back(issue);
  if (options_.on_error == OnError::fail) throw TraceError(issue);
  ++report_->lines_skipped;
}

void ReadContext::fatal(int64_t line, std::string field, std::string message) const {
  throw TraceError(TraceIssue{file_, line, std::move(field), std::move(message)});
}

void ReadContext::warning(int64_t line, std::string field, std::string message) {
  report_->warnings.push_back(TraceIssue{file_, line, std::move(field), std::move(message)});
}

void ReadContext::tally(const std::string& rule, int64_t line, const std::string& field) {
  const auto found = std::find_if(rules_.begin(), rules_.end(), [&](const RuleCount& r) { return r.rule == rule; });
  if (found != rules_.end()) {
    ++found->num_records;
    return;
  }
  rules_.push_back(RuleCount{rule, field, 1, line});
}

void ReadContext::drop(const std::string& rule, int64_t line, const std::string& field) {
  ++report_->lines_skipped;
  tally(rule, line, field);
}

void ReadContext::remark(const std::string& rule, int64_t line, const std::string& field) { tally(rule, line, field); }

void ReadContext::report_rules() {
  for (const RuleCount& rule : rules_) {
    warning(rule.first_line, rule.field,
            rule.rule + " (" + std::to_string(rule.num_records) + (rule.num_records == 1 ? " record" : " records") +
                "; the first is on this line)");
  }
  rules_.clear();
}

void ReadContext::finish_stream(int64_t num_accepted) {
  report_rules();
  report_->requests_accepted = num_accepted;
}

void ReadContext::finish(Trace& trace) {
  report_rules();
  auto& requests = trace.requests;
  const auto before = [](const TraceRequest& a, const TraceRequest& b) { return a.arrival_time < b.arrival_time; };
  const auto first_out_of_order = std::is_sorted_until(requests.begin(), requests.end(), before);
  if (first_out_of_order != requests.end()) {
    const TraceRequest& late = *first_out_of_order;
    const double previous = std::prev(first_out_of_order)->arrival_time;
    const std::string what = "arrival " + nlohmann::json(late.arrival_time).dump() +
                             " precedes the previous request's " + nlohmann::json(previous).dump();
    if (options_.out_of_order == OutOfOrder::refuse) {
      fatal(late.source_line, "arrival_time", what + " (refused: out of order)");
    }
    warning(late.source_line, "arrival_time", what + "; requests were sorted by arrival (stable)");
    std::stable_sort(requests.begin(), requests.end(), before);
    report_->reordered = true;
  }
  report_->requests_accepted = static_cast<int64_t>(requests.size());
}

std::string json_error_message(std::string_view what, bool line_by_line) {
  // "[json.exception.parse_error.101] parse error at line 1, column 5: ..." -> "parse error at
  // column 5: ...": the id says nothing to a user, and the trace's line is in the issue.
  if (const auto end = what.find("] "); what.starts_with("[json.exception.") && end != std::string_view::npos) {
    what.remove_prefix(end + 2);
  }
  std::string message(what);
  if (const auto at = message.find("at line 1, column "); line_by_line && at != std::string::npos) {
    message.erase(at + 3, 8);  // "line 1, "
  }
  return message;
}

std::ifstream open_trace_input(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw TraceError(TraceIssue{path, 0, "", std::string("cannot open for reading: ") + std::strerror(errno)});
  return in;
}

namespace {

using nlohmann::json;
using nlohmann::ordered_json;

constexpr std::string_view kHeaderKey = "pagedllm_trace";

[[noreturn]] void bad(std::string field, std::string message) {
  throw FieldError{std::move(field), std::move(message)};
}

std::string describe(const json& value) {
  if (value.is_number()) return "number " + value.dump();
  if (value.is_boolean()) return value.dump();
  return value.type_name();
}

int64_t integer_in(const json& value, const std::string& field, int64_t min, int64_t max, const char* expected) {
  if (value.is_number_unsigned()) {
    const uint64_t v = value.get<uint64_t>();
    if (v > static_cast<uint64_t>(max)) {
      bad(field, "out of range: " + value.dump() + " (at most " + std::to_string(max) + ")");
    }
    if (static_cast<int64_t>(v) < min) {
      bad(field, "must be at least " + std::to_string(min) + ", found " + value.dump());
    }
    return static_cast<int64_t>(v);
  }
  if (value.is_number_integer()) {
    const int64_t v = value.get<int64_t>();
    if (v < min) {
      bad(field, (min == 0 ? "must not be negative, found " : "must be at least " + std::to_string(min) + ", found ") +
                     value.dump());
    }
    if (v > max) bad(field, "out of range: " + value.dump());
    return v;
  }
  bad(field, std::string("expected ") + expected + ", found " + describe(value));
}

int32_t int32_in(const json& value, const std::string& field, int32_t min, const char* expected) {
  return static_cast<int32_t>(integer_in(value, field, min, std::numeric_limits<int32_t>::max(), expected));
}

uint64_t unsigned64(const json& value, const std::string& field) {
  if (!value.is_number_unsigned()) bad(field, "expected a non-negative integer, found " + describe(value));
  return value.get<uint64_t>();
}

double finite_number(const json& value, const std::string& field) {
  if (!value.is_number()) bad(field, "expected a number, found " + describe(value));
  const double v = value.get<double>();
  if (!std::isfinite(v)) bad(field, "must be finite, found " + value.dump());
  return v;
}

float finite_float(const json& value, const std::string& field) {
  const double v = finite_number(value, field);
  if (std::fabs(v) > static_cast<double>(std::numeric_limits<float>::max())) {
    bad(field, "out of range for a 32-bit float: " + value.dump());
  }
  return static_cast<float>(v);
}

bool boolean(const json& value, const std::string& field) {
  if (!value.is_boolean()) bad(field, "expected true or false, found " + describe(value));
  return value.get<bool>();
}

const std::string& string_value(const json& value, const std::string& field) {
  if (!value.is_string()) bad(field, "expected a string, found " + describe(value));
  return value.get_ref<const std::string&>();
}

const json& array_value(const json& value, const std::string& field, const char* of) {
  if (!value.is_array()) bad(field, std::string("expected an array of ") + of + ", found " + describe(value));
  return value;
}

void refuse_unknown_keys(const json& object, const std::set<std::string_view>& known, const std::string& prefix) {
  for (const auto& [key, value] : object.items()) {
    if (known.count(key) != 0) continue;
    if (key == kHeaderKey) bad(key, "the header is only allowed as the first line");
    bad(prefix + key, "unknown key (a typo?)");
  }
}

const json* find(const json& object, std::string_view key) {
  const auto found = object.find(key);
  return found == object.end() ? nullptr : &*found;
}

std::vector<TokenId> token_ids(const json& value, const std::string& field) {
  std::vector<TokenId> ids;
  ids.reserve(array_value(value, field, "token ids").size());
  for (size_t i = 0; i < value.size(); ++i) {
    ids.push_back(int32_in(value[i], field + "[" + std::to_string(i) + "]", 0, "a token id (a non-negative integer)"));
  }
  return ids;
}

sched::SamplingParams parse_sampling(const json& value) {
  if (!value.is_object()) bad("sampling", "expected an object, found " + describe(value));
  refuse_unknown_keys(value,
                      {"n", "beam_width", "temperature", "top_p", "top_k", "min_p", "repetition_penalty",
                       "presence_penalty", "frequency_penalty", "seed", "logprobs", "ignore_eos", "stop_token_ids"},
                      "sampling.");
  sched::SamplingParams params;
  constexpr int32_t kAny = std::numeric_limits<int32_t>::min();
  for (const auto& [key, v] : value.items()) {
    const std::string field = "sampling." + key;
    if (key == "n") {
      params.n = int32_in(v, field, 0, "an integer");
    } else if (key == "beam_width") {
      params.beam_width = int32_in(v, field, 0, "an integer");
    } else if (key == "temperature") {
      params.temperature = finite_float(v, field);
    } else if (key == "top_p") {
      params.top_p = finite_float(v, field);
    } else if (key == "top_k") {
      params.top_k = int32_in(v, field, kAny, "an integer");
    } else if (key == "min_p") {
      params.min_p = finite_float(v, field);
    } else if (key == "repetition_penalty") {
      params.repetition_penalty = finite_float(v, field);
    } else if (key == "presence_penalty") {
      params.presence_penalty = finite_float(v, field);
    } else if (key == "frequency_penalty") {
      params.frequency_penalty = finite_float(v, field);
    } else if (key == "seed") {
      params.seed = unsigned64(v, field);
    } else if (key == "logprobs") {
      params.logprobs = int32_in(v, field, 0, "an integer");
    } else if (key == "ignore_eos") {
      params.ignore_eos = boolean(v, field);
    } else if (key == "stop_token_ids") {
      params.stop_token_ids = token_ids(v, field);
    }
  }
  return params;
}

void parse_prompt(const json& line, TraceRequest& request) {
  const json* text = find(line, "prompt");
  const json* tokens = find(line, "prompt_token_ids");
  const json* length = find(line, "prompt_len");
  if (text != nullptr && tokens != nullptr) bad("prompt_token_ids", "give either prompt or prompt_token_ids, not both");
  const int32_t num_given = length == nullptr ? -1 : int32_in(*length, "prompt_len", 0, "a non-negative integer");
  if (text != nullptr) {
    request.prompt_kind = PromptKind::text;
    request.prompt_text = string_value(*text, "prompt");
    request.prompt_len = std::max(num_given, 0);  // 0: not measured
  } else if (tokens != nullptr) {
    request.prompt_kind = PromptKind::tokens;
    request.prompt_tokens = token_ids(*tokens, "prompt_token_ids");
    if (request.prompt_tokens.empty()) bad("prompt_token_ids", "must not be empty");
    request.prompt_len = static_cast<int32_t>(request.prompt_tokens.size());
    if (num_given >= 0 && num_given != request.prompt_len) {
      bad("prompt_len", std::to_string(num_given) + " disagrees with the " + std::to_string(request.prompt_len) +
                            " ids of prompt_token_ids");
    }
  } else if (length != nullptr) {
    request.prompt_kind = PromptKind::length;
    if (num_given < 1) bad("prompt_len", "a length-only prompt needs at least 1 token, found 0");
    request.prompt_len = num_given;
  } else {
    bad("prompt", "missing: give prompt, prompt_token_ids or prompt_len");
  }
}

// {"draft_rate": r, "acceptance": [a0, a1, ...]}: r and every a_j in [0, 1], non-increasing a_j.
spec::SimulatedAcceptance parse_simulated_speculation(const json& value) {
  const std::string field = "simulated_speculation";
  if (!value.is_object()) bad(field, "expected an object, found " + describe(value));
  refuse_unknown_keys(value, {"draft_rate", "acceptance"}, field + ".");
  const json* rate = find(value, "draft_rate");
  const json* acceptance = find(value, "acceptance");
  if (rate == nullptr) bad(field + ".draft_rate", "missing (drafts per decode pass)");
  if (acceptance == nullptr) bad(field + ".acceptance", "missing (each proposal position's acceptance)");
  spec::SimulatedAcceptance simulated;
  simulated.draft_rate = finite_number(*rate, field + ".draft_rate");
  if (simulated.draft_rate < 0.0 || simulated.draft_rate > 1.0) {
    bad(field + ".draft_rate", "must be in [0, 1], found " + rate->dump());
  }
  array_value(*acceptance, field + ".acceptance", "rates");
  for (size_t j = 0; j < acceptance->size(); ++j) {
    const std::string entry = field + ".acceptance[" + std::to_string(j) + "]";
    const double a = finite_number((*acceptance)[j], entry);
    const double limit = j == 0 ? 1.0 : simulated.accepted_per_position.back();
    if (a < 0.0 || a > limit)
      bad(entry,
          "must be in [0, " + std::string(j == 0 ? "1" : "the entry before") + "], found " + (*acceptance)[j].dump());
    simulated.accepted_per_position.push_back(a);
  }
  return simulated;
}

TraceRequest parse_request(const json& line, int32_t prefix_block_tokens) {
  if (!line.is_object()) bad("", "expected a JSON object, found " + describe(line));
  refuse_unknown_keys(line,
                      {"arrival_time", "prompt", "prompt_token_ids", "prompt_len", "output_len", "prefix_block_ids",
                       "sampling", "session_id", "priority", "simulated_speculation"},
                      "");
  TraceRequest request;
  const json* arrival = find(line, "arrival_time");
  if (arrival == nullptr) bad("arrival_time", "missing (seconds since the start of the trace)");
  request.arrival_time = finite_number(*arrival, "arrival_time");
  if (request.arrival_time < 0) bad("arrival_time", "must not be negative, found " + arrival->dump());
  parse_prompt(line, request);
  const json* output = find(line, "output_len");
  if (output == nullptr) bad("output_len", "missing (output tokens to generate)");
  request.output_len = int32_in(*output, "output_len", 1, "a positive integer");
  if (const json* ids = find(line, "prefix_block_ids")) {
    for (size_t i = 0; i < array_value(*ids, "prefix_block_ids", "block ids").size(); ++i) {
      request.prefix_block_ids.push_back(unsigned64((*ids)[i], "prefix_block_ids[" + std::to_string(i) + "]"));
    }
    const int64_t num_blocks = (int64_t{request.prompt_len} + prefix_block_tokens - 1) / prefix_block_tokens;
    const auto num_ids = static_cast<int64_t>(request.prefix_block_ids.size());
    if (request.prompt_len > 0 && num_ids > num_blocks) {
      bad("prefix_block_ids", std::to_string(num_ids) + " ids, more than one per " +
                                  std::to_string(prefix_block_tokens) + "-token block of the " +
                                  std::to_string(request.prompt_len) + "-token prompt (at most " +
                                  std::to_string(num_blocks) + ")");
    }
  }
  if (const json* sampling = find(line, "sampling")) request.sampling = parse_sampling(*sampling);
  if (const json* speculation = find(line, "simulated_speculation")) {
    request.simulated_speculation = parse_simulated_speculation(*speculation);
  }
  if (const json* session = find(line, "session_id")) request.session_id = string_value(*session, "session_id");
  if (const json* priority = find(line, "priority")) {
    request.priority = int32_in(*priority, "priority", std::numeric_limits<int32_t>::min(), "an integer");
  }
  return request;
}

// The header line; anything wrong with it makes the whole file unreadable.
TraceHeader parse_header(const json& line) {
  refuse_unknown_keys(line, {kHeaderKey, "prefix_block_tokens", "source", "command"}, "");
  TraceHeader header;
  const json& version = line.at(std::string(kHeaderKey));
  if (!version.is_number_integer() || version.get<int64_t>() != kTraceFormatVersion) {
    bad(std::string(kHeaderKey), "unknown trace format version " + version.dump() + " (this build reads version " +
                                     std::to_string(kTraceFormatVersion) + ")");
  }
  if (const json* block = find(line, "prefix_block_tokens")) {
    header.prefix_block_tokens = int32_in(*block, "prefix_block_tokens", 1, "a positive integer");
  }
  if (const json* source = find(line, "source")) header.source = string_value(*source, "source");
  if (const json* command = find(line, "command")) header.command = string_value(*command, "command");
  return header;
}

std::string_view trim(std::string_view text) {
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return {};
  return text.substr(first, text.find_last_not_of(" \t\r\n") - first + 1);
}

// Parses one line. JSON has no NaN or infinity, but a literal like 1e999 overflows a double:
// nlohmann refuses it (error 406) without saying where, so the keys on the way are tracked to
// name the field. The tracking costs a callback per parse event, so it runs only once a plain
// parse has failed (a trace of millions of lines is read twice by a streamed simulation).
json parse_line(std::string_view line) {
  try {
    return json::parse(line);
  } catch (const json::exception&) {
    // Parsed again below, for the message.
  }
  std::vector<std::string> path;  // key per depth
  const json::parser_callback_t track = [&](int depth, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::key && depth >= 1) {
      path.resize(static_cast<size_t>(depth));
      path.back() = parsed.get<std::string>();
    }
    return true;
  };
  try {
    return json::parse(line, track);
  } catch (const json::exception& error) {
    if (error.id != 406) bad("", "malformed JSON: " + json_error_message(error.what()));
    std::string field;
    for (const std::string& key : path) field += (field.empty() ? "" : ".") + key;
    bad(field, "must be finite: " + json_error_message(error.what()));
  }
}

// A float written as the shortest decimal that reads back as the same float ("0.7", not
// "0.699999988079071"), unless that decimal would not survive the trip through a double.
json float_json(float value) {
  char text[32];
  const auto written = std::to_chars(text, text + sizeof text, value);
  double shortest = 0.0;
  std::from_chars(text, written.ptr, shortest);
  return static_cast<float>(shortest) == value ? json(shortest) : json(static_cast<double>(value));
}

ordered_json sampling_json(const sched::SamplingParams& p) {
  const sched::SamplingParams d;
  ordered_json out = ordered_json::object();
  if (p.n != d.n) out["n"] = p.n;
  if (p.beam_width != d.beam_width) out["beam_width"] = p.beam_width;
  if (p.temperature != d.temperature) out["temperature"] = float_json(p.temperature);
  if (p.top_p != d.top_p) out["top_p"] = float_json(p.top_p);
  if (p.top_k != d.top_k) out["top_k"] = p.top_k;
  if (p.min_p != d.min_p) out["min_p"] = float_json(p.min_p);
  if (p.repetition_penalty != d.repetition_penalty) out["repetition_penalty"] = float_json(p.repetition_penalty);
  if (p.presence_penalty != d.presence_penalty) out["presence_penalty"] = float_json(p.presence_penalty);
  if (p.frequency_penalty != d.frequency_penalty) out["frequency_penalty"] = float_json(p.frequency_penalty);
  if (p.seed) out["seed"] = *p.seed;
  if (p.logprobs) out["logprobs"] = *p.logprobs;
  if (p.ignore_eos) out["ignore_eos"] = true;
  if (!p.stop_token_ids.empty()) out["stop_token_ids"] = p.stop_token_ids;
  return out;
}

ordered_json request_json(const TraceRequest& r) {
  ordered_json out;
  out["arrival_time"] = r.arrival_time;
  switch (r.prompt_kind) {
    case PromptKind::text:
      out["prompt"] = r.prompt_text;
      if (r.prompt_len > 0) out["prompt_len"] = r.prompt_len;
      break;
    case PromptKind::tokens:
      out["prompt_token_ids"] = r.prompt_tokens;
      break;
    case PromptKind::length:
      out["prompt_len"] = r.prompt_len;
      break;
  }
  out["output_len"] = r.output_len;
  if (!r.prefix_block_ids.empty()) out["prefix_block_ids"] = r.prefix_block_ids;
  if (r.sampling) out["sampling"] = sampling_json(*r.sampling);
  if (!r.session_id.empty()) out["session_id"] = r.session_id;
  if (r.priority != 0) out["priority"] = r.priority;
  if (r.simulated_speculation) {
    out["simulated_speculation"] = {{"draft_rate", r.simulated_speculation->draft_rate},
                                    {"acceptance", r.simulated_speculation->accepted_per_position}};
  }
  return out;
}

}  // namespace

JsonlTraceReader::JsonlTraceReader(const std::string& path, const ReadOptions& options, ReadReport* report)
    : file_(open_trace_input(path)), in_(&file_), context_(path, options, report) {}

JsonlTraceReader::JsonlTraceReader(std::istream& in, const std::string& name, const ReadOptions& options,
                                   ReadReport* report)
    : in_(&in), context_(name, options, report) {}

bool JsonlTraceReader::next_significant_line(std::string_view& line) {
  while (std::getline(*in_, text_)) {
    ++line_number_;
    line = trim(text_);
    if (!line.empty() && line.front() != '#') return true;
  }
  if (in_->bad()) context_.fatal(0, "", "read error");
  return false;
}

const TraceHeader& JsonlTraceReader::header() {
  if (primed_) return header_;
  primed_ = true;
  // The header may only be the first non-blank, non-comment line; any other first line is kept
  // for next().
  std::string_view line;
  if (next_significant_line(line)) {
    json value;
    bool parsed = true;
    try {
      value = parse_line(line);
    } catch (const FieldError&) {
      parsed = false;  // next() reports it
    }
    if (parsed && value.is_object() && value.contains(std::string(kHeaderKey))) {
      try {
        header_ = parse_header(value);
      } catch (const FieldError& error) {
        context_.fatal(line_number_, error.field, error.message);
      }
    } else {
      pending_first_ = true;
    }
  }
  if (header_.source.empty()) header_.source = "pagedllm:" + context_.file();
  return header_;
}

std::optional<TraceRequest> JsonlTraceReader::next() {
  header();
  for (;;) {
    std::string_view line;
    if (pending_first_) {
      pending_first_ = false;
      line = trim(text_);
    } else if (!next_significant_line(line)) {
      return std::nullopt;
    }
    context_.count_record();
    try {
      TraceRequest request = parse_request(parse_line(line), header_.prefix_block_tokens);
      request.source_line = line_number_;
      if (num_accepted_ > 0 && request.arrival_time < last_arrival_ && first_out_of_order_line_ == 0) {
        first_out_of_order_line_ = line_number_;
      }
      last_arrival_ = request.arrival_time;
      ++num_accepted_;
      return request;
    } catch (const FieldError& error) {
      context_.error(line_number_, error.field, error.message);
    }
  }
}

void JsonlTraceReader::finish() { context_.finish_stream(num_accepted_); }

Trace read_trace_jsonl(std::istream& in, const std::string& name, const ReadOptions& options, ReadReport* report) {
  JsonlTraceReader reader(in, name, options, report);
  Trace trace;
  trace.header = reader.header();
  while (std::optional<TraceRequest> request = reader.next()) trace.requests.push_back(std::move(*request));
  reader.context().finish(trace);
  return trace;
}

Trace read_trace_jsonl(const std::string& path, const ReadOptions& options, ReadReport* report) {
  std::ifstream in = open_trace_input(path);
  return read_trace_jsonl(in, path, options, report);
}

void write_trace_jsonl(const Trace& trace, std::ostream& out) {
  ordered_json header;
  header[std::string(kHeaderKey)] = trace.header.version;
  header["prefix_block_tokens"] = trace.header.prefix_block_tokens;
  if (!trace.header.source.empty()) header["source"] = trace.header.source;
  if (!trace.header.command.empty()) header["command"] = trace.header.command;
  out << header.dump() << '\n';
  for (size_t i = 0; i < trace.requests.size(); ++i) {
    try {
      out << request_json(trace.requests[i]).dump() << '\n';
    } catch (const json::exception& error) {
      throw TraceError(
          TraceIssue{"", 0, "prompt",
                     "request " + std::to_string(i + 1) + " cannot be written: " + json_error_message(error.what())});
    }
  }
}

void write_trace_jsonl(const Trace& trace, const std::string& path) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw TraceError(TraceIssue{path, 0, "", std::string("cannot open for writing: ") + std::strerror(errno)});
  try {
    write_trace_jsonl(trace, out);
  } catch (const TraceError& error) {
    TraceIssue issue = error.issue();
    issue.file = path;
    throw TraceError(issue);
  }
  out.flush();
  if (!out) throw TraceError(TraceIssue{path, 0, "", "write failed"});
}

}  // namespace pagedllm::trace
