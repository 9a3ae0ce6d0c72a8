#include "core/frontend/generate.h"

#include <memory>
#include <optional>
#include <stdexcept>

#include "core/engine/engine.h"

namespace pagedllm::frontend {

std::vector<TextOutput> generate(std::span<const TextRequest> requests, engine::Executor& executor,
                                 const tokenizer::Tokenizer& tokenizer, const GenerateConfig& config) {
  engine::EngineConfig engine_config = config.engine;
  engine_config.output_kind = engine::OutputKind::delta;  // text is made as tokens come, to stop early
  for (const TextRequest& request : requests) {
    engine::validate_request(engine_config, request.params, static_cast<int32_t>(request.prompt.size()));
  }
  engine::VirtualClock virtual_clock;
  engine::Engine engine(engine_config, executor, config.clock != nullptr ? *config.clock : virtual_clock, nullptr,
                        config.draft_model);
  std::vector<RequestStream> streams;
  streams.reserve(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    const TextRequest& request = requests[i];
    streams.emplace_back(tokenizer, RequestStreamOptions{.text = {.stop = request.params.stop,
                                                                  .min_tokens = request.params.min_tokens,
                                                                  .include_stop = request.include_stop_str_in_output,
                                                                  .decode = request.decode},
                                                         .num_samples = request.params.n,
                                                         .beam_search = request.params.use_beam_search()});
    engine.add_validated_request(sched::Request{.id = static_cast<sched::RequestId>(i),
                                                .prompt_tokens = request.prompt,
                                                .params = request.params,
                                                .priority = request.priority});
  }
  std::vector<TextOutput> outputs(requests.size());
  std::vector<bool> finished(requests.size(), false);
  while (engine.has_unfinished()) {
    for (const engine::RequestOutput& output : engine.step()) {
      const auto index = static_cast<size_t>(output.id);
      if (finished[index]) continue;  // its samples all stopped: the abort's output is old news
      std::optional<RequestUpdate> update = streams[index].on_output(output, engine);
      if (!update) continue;
      TextOutput& text = outputs[index];
      text.num_prompt_tokens = update->num_prompt_tokens;
      text.error = update->error;
      text.error_message = update->error_message;
      for (const CompletionUpdate& news : update->completions) {
        if (text.completions.size() <= static_cast<size_t>(news.index)) {
          text.completions.resize(static_cast<size_t>(news.index) + 1);
        }
        TextCompletion& completion = text.completions[static_cast<size_t>(news.index)];
        completion.index = news.index;
        completion.text += news.text;
        completion.tokens.insert(completion.tokens.end(), news.tokens.begin(), news.tokens.end());
        if (!news.finish_reason.empty()) completion.finish_reason = news.finish_reason;
      }
      if (config.on_update) config.on_update(index, *update);
      finished[index] = update->finished;
    }
    // With nothing running and nothing admissible, no later step can differ from this one.
    if (engine.num_idle_steps() > 1) throw std::logic_error("generate: the engine stalled with requests unfinished");
  }
  for (size_t i = 0; i < finished.size(); ++i) {
    if (!finished[i]) throw std::logic_error("generate: request " + std::to_string(i) + " never finished");
  }
  if (config.counters != nullptr) *config.counters = engine.counters();
  return outputs;
}

}  // namespace pagedllm::frontend
