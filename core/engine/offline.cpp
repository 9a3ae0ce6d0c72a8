#include "core/engine/offline.h"

#include <stdexcept>

#include "core/engine/clock.h"
#include "core/engine/engine.h"

namespace pagedllm::engine {

std::vector<RequestOutput> generate(std::span<const GenerateRequest> requests, Executor& executor,
                                    const EngineConfig& config) {
  for (const GenerateRequest& request : requests) {
    if (!request.params.stop.empty()) {
      // Stop strings match text, and this API has no tokenizer: ignoring them would return text
      // the caller asked to cut.
      throw sched::InvalidRequestError("stop",
                                       "stop strings apply to text: engine::generate has no tokenizer "
                                       "(frontend::generate applies them)");
    }
  }
  VirtualClock clock;
  EngineConfig final_only = config;
  final_only.output_kind = OutputKind::final_only;  // the whole output once, when it finishes
  Engine engine(final_only, executor, clock);
  for (size_t i = 0; i < requests.size(); ++i) {
    sched::Request request;
    request.id = static_cast<sched::RequestId>(i);
    request.prompt_tokens = requests[i].prompt;
    request.params = requests[i].params;
    request.priority = requests[i].priority;
    engine.add_request(std::move(request));
  }
  std::vector<RequestOutput> outputs(requests.size());
  size_t num_finished = 0;
  while (engine.has_unfinished()) {
    for (RequestOutput& output : engine.step()) {
      if (!output.finished) continue;
      outputs[static_cast<size_t>(output.id)] = std::move(output);
      ++num_finished;
    }
    // With nothing running and nothing admissible, no later step can differ from this one.
    if (engine.num_idle_steps() > 1) throw std::logic_error("generate: the engine stalled with requests unfinished");
  }
  if (num_finished != requests.size()) throw std::logic_error("generate: a request never finished");
  return outputs;
}

}  // namespace pagedllm::engine
