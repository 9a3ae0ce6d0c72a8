// libFuzzer target: the OpenAI request parser, the server's first contact with the network. Any
// body must end in a parsed request or an ApiError (what the server turns into a 4xx); any other
// exception, a crash or a sanitizer report is a finding. A parsed request must also pass or fail
// sched::validate with an InvalidRequestError, as the server calls it next.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/sched/sampling_params.h"
#include "tools/server/openai_request.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace server = pagedllm::server;
  namespace sched = pagedllm::sched;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const server::ProtocolLimits limits;
  const sched::RequestLimits request_limits{.max_model_len = 4096, .max_logprobs = 20, .vocab_size = 1000};
  // The first byte picks the endpoint, so one corpus covers both.
  const bool chat = size > 0 && (data[0] & 1) != 0;
  try {
    const nlohmann::json body = server::parse_json_body(text.substr(size > 0 ? 1 : 0));
    sched::SamplingParams sampling;
    if (chat) {
      const server::ChatRequest request = server::parse_chat_request(body, limits);
      if (request.messages.empty()) __builtin_trap();  // "messages" must hold at least one
      sampling = request.generation.sampling;
    } else {
      const server::CompletionRequest request = server::parse_completion_request(body, limits);
      if (request.prompts.empty()) __builtin_trap();
      sampling = request.generation.sampling;
    }
    try {
      sched::validate(sampling, 8, request_limits);
    } catch (const sched::InvalidRequestError&) {
    }
  } catch (const server::ApiError& error) {
    if (error.status() < 400 || error.status() >= 500) __builtin_trap();
  }
  return 0;
}
