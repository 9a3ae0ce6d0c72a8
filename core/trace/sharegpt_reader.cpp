// ShareGPT JSON -> Trace (sharegpt_reader.h).
#include "core/trace/sharegpt_reader.h"

#include <istream>
#include <nlohmann/json.hpp>

#include "core/trace/trace_jsonl.h"

namespace pagedllm::trace {
namespace {

using nlohmann::json;

struct EntryError {
  std::string field;
  std::string message;
};

struct StopReading {};  // max_requests reached

const std::string& turn_text(const json& turns, size_t index) {
  const std::string field = "conversations[" + std::to_string(index) + "]";
  const json& turn = turns[index];
  if (!turn.is_object()) throw EntryError{field, std::string("expected an object, found ") + turn.type_name()};
  const auto value = turn.find("value");
  if (value == turn.end()) throw EntryError{field + ".value", "missing"};
  if (!value->is_string()) {
    throw EntryError{field + ".value", std::string("expected a string, found ") + value->type_name()};
  }
  if (const auto from = turn.find("from"); from != turn.end() && !from->is_string()) {
    throw EntryError{field + ".from", std::string("expected a string, found ") + from->type_name()};
  }
  return value->get_ref<const std::string&>();
}

class EntryReader {
 public:
  EntryReader(const ShareGptOptions& options, ReadContext& context, Trace& trace)
      : options_(options), context_(context), trace_(trace) {}

  // One element of the top-level array; `index` is 1-based.
  void read(const json& entry, int64_t index) {
    context_.count_record();
    try {
      accept(entry, index);
    } catch (const EntryError& error) {
      context_.error(index, error.field, "entry " + std::to_string(index) + ": " + error.message);
    }
    if (options_.max_requests > 0 && static_cast<int64_t>(trace_.requests.size()) >= options_.max_requests) {
      throw StopReading{};
    }
  }

 private:
  void accept(const json& entry, int64_t index) {
    if (!entry.is_object()) throw EntryError{"", std::string("expected an object, found ") + entry.type_name()};
    const auto turns = entry.find("conversations");
    if (turns == entry.end()) throw EntryError{"conversations", "missing"};
    if (!turns->is_array()) {
      throw EntryError{"conversations", std::string("expected an array, found ") + turns->type_name()};
    }
    TraceRequest request;
    if (const auto id = entry.find("id"); id != entry.end()) {
      if (!id->is_string()) throw EntryError{"id", std::string("expected a string, found ") + id->type_name()};
      request.session_id = id->get<std::string>();
    }
    if (turns->size() < 2) {
      context_.drop("skipped: fewer than 2 turns", index, "conversations");
      return;
    }
    request.prompt_text = turn_text(*turns, 0);
    const std::string& completion = turn_text(*turns, 1);
    request.prompt_kind = PromptKind::text;
    request.prompt_len = options_.count_tokens(request.prompt_text);
    request.output_len = options_.count_tokens(completion);
    if (!passes_filters(request, index)) return;
    request.source_line = index;
    trace_.requests.push_back(std::move(request));
  }

  bool passes_filters(const TraceRequest& request, int64_t index) {
    const int64_t num_total = int64_t{request.prompt_len} + request.output_len;
    if (options_.filter) {
      const std::string bound = std::to_string(options_.min_len);
      if (request.prompt_len < options_.min_len || request.output_len < options_.min_len) {
        context_.drop("skipped: prompt or output under " + bound + " tokens (vLLM's filter)", index, "conversations");
        return false;
      }
      if (request.prompt_len > options_.max_prompt_len) {
        context_.drop("skipped: prompt over " + std::to_string(options_.max_prompt_len) + " tokens (vLLM's filter)",
                      index, "conversations[0].value");
        return false;
      }
      if (num_total > options_.max_total_len) {
        context_.drop(
            "skipped: prompt + output over " + std::to_string(options_.max_total_len) + " tokens (vLLM's filter)",
            index, "conversations");
        return false;
      }
    }
    if (request.output_len < 1) {
      context_.drop("skipped: output of 0 tokens (nothing to generate)", index, "conversations[1].value");
      return false;
    }
    return true;
  }

  const ShareGptOptions& options_;
  ReadContext& context_;
  Trace& trace_;
};

}  // namespace

Trace read_sharegpt_trace(std::istream& in, const std::string& name, const ShareGptOptions& sharegpt,
                          const ReadOptions& options, ReadReport* report) {
  ReadContext context(name, options, report);
  if (!sharegpt.count_tokens) context.fatal(0, "count_tokens", "ShareGPT needs a token counter (none given)");
  Trace trace;
  trace.header.source = "sharegpt:" + name;
  EntryReader entries(sharegpt, context, trace);
  int64_t index = 0;
  // Each entry is read as soon as it is parsed and then discarded, so a large file never sits in
  // memory as one JSON document.
  const json::parser_callback_t callback = [&](int depth, json::parse_event_t event, json& parsed) {
    if (depth == 0 && (event == json::parse_event_t::object_start || event == json::parse_event_t::value)) {
      context.fatal(0, "", "expected a JSON array of conversations");
    }
    if (depth != 1) return true;
    if (event == json::parse_event_t::object_end || event == json::parse_event_t::array_end ||
        event == json::parse_event_t::value) {
      entries.read(parsed, ++index);
      return false;
    }
    return true;
  };
  try {
    const json rest = json::parse(in, callback);  // the emptied top-level array
  } catch (const StopReading&) {
  } catch (const json::exception& error) {
    context.fatal(0, "", "malformed JSON: " + json_error_message(error.what(), false));
  }
  context.finish(trace);
  return trace;
}

Trace read_sharegpt_trace(const std::string& path, const ShareGptOptions& sharegpt, const ReadOptions& options,
                          ReadReport* report) {
  std::ifstream in = open_trace_input(path);
  return read_sharegpt_trace(in, path, sharegpt, options, report);
}

}  // namespace pagedllm::trace
