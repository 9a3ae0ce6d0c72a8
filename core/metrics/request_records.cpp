#include "core/metrics/request_records.h"

#include <algorithm>
#include <utility>

namespace pagedllm::metrics {

RequestRecord to_request_record(const engine::RequestOutput& output) {
  RequestRecord record;
  record.id = output.id;
  record.send_time = output.times.arrival;
  record.first_token_time = output.times.first_token;
  record.end_time = output.times.finished;
  record.chunk_times = output.times.token_times;
  record.prompt_tokens = output.num_prompt_tokens;
  if (output.speculation != nullptr) record.speculation = *output.speculation;
  for (const engine::Completion& completion : output.completions) {
    record.output_tokens += static_cast<int32_t>(completion.tokens.size());
  }
  const sched::FinishReason reason = output.finish_reason;
  if (reason == sched::FinishReason::rejected || reason == sched::FinishReason::abort) {
    record.success = false;
    record.error = std::string(sched::to_string(reason)) + (output.message.empty() ? "" : ": " + output.message);
  }
  return record;
}

RequestRecord to_request_record(engine::RequestOutput&& output) {
  std::vector<double> token_times = std::move(output.times.token_times);
  output.times.token_times.clear();
  RequestRecord record = to_request_record(std::as_const(output));
  record.chunk_times = std::move(token_times);
  return record;
}

RequestRecord to_request_record(const engine::RefusedRequest& refused) {
  RequestRecord record;
  record.id = refused.id;
  record.send_time = refused.arrival_time;
  record.end_time = refused.arrival_time;
  record.prompt_tokens = refused.num_prompt_tokens;
  record.success = false;
  record.error = "refused: " + refused.message;
  return record;
}

namespace {

void add_refused_and_sort(std::span<const engine::RefusedRequest> refused_requests,
                          std::vector<RequestRecord>& records) {
  for (const engine::RefusedRequest& refused : refused_requests) records.push_back(to_request_record(refused));
  std::sort(records.begin(), records.end(), [](const RequestRecord& a, const RequestRecord& b) { return a.id < b.id; });
}

}  // namespace

std::vector<RequestRecord> to_request_records(const engine::ReplayResult& result) {
  std::vector<RequestRecord> records;
  records.reserve(result.outputs.size() + result.refused.size());
  for (const engine::RequestOutput& output : result.outputs) records.push_back(to_request_record(output));
  add_refused_and_sort(result.refused, records);
  return records;
}

std::vector<RequestRecord> to_request_records(engine::ReplayResult&& result) {
  std::vector<RequestRecord> records;
  records.reserve(result.outputs.size() + result.refused.size());
  for (engine::RequestOutput& output : result.outputs) {
    records.push_back(to_request_record(std::move(output)));
    output = engine::RequestOutput{};  // its completions' tokens are not needed again
  }
  result.outputs.clear();
  add_refused_and_sort(result.refused, records);
  return records;
}

}  // namespace pagedllm::metrics
