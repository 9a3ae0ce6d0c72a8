#include "core/sched/sequence.h"

#include <algorithm>

#include "core/common/check.h"

namespace pagedllm::sched {

const char* to_string(FinishReason reason) {
  switch (reason) {
    case FinishReason::none:
      return "none";
    case FinishReason::stop:
      return "stop";
    case FinishReason::length:
      return "length";
    case FinishReason::abort:
      return "abort";
    case FinishReason::rejected:
      return "rejected";
  }
  return "?";
}

const char* to_string(GroupState state) {
  switch (state) {
    case GroupState::waiting:
      return "waiting";
    case GroupState::running:
      return "running";
    case GroupState::swapped:
      return "swapped";
    case GroupState::finished:
      return "finished";
  }
  return "?";
}

std::unique_ptr<SequenceGroup> make_sequence_group(Request request, SeqId first_seq, int32_t first_stored) {
  auto group = std::make_unique<SequenceGroup>();
  Sequence seq;
  seq.id = first_seq;
  // The prompt is held once, as the first sequence's tokens: the group's request keeps its length.
  if (request.prompt_tokens.empty() && request.prompt_synthesis) {
    const int32_t length = prompt_length(request);
    PAGEDLLM_ASSERT(first_stored >= 0 && first_stored < length, "a described prompt must store its last token");
    seq.num_unstored_tokens = first_stored;
    request.prompt_synthesis->append(request.content_ids, first_stored, length, seq.tokens);
  } else {
    seq.tokens = std::move(request.prompt_tokens);
    request.prompt_tokens.clear();
  }
  seq.num_prompt_tokens = seq.num_tokens();
  group->num_prompt_tokens = seq.num_prompt_tokens;
  // Room for the outputs up front (as vLLM's input batch holds max_model_len token slots per
  // request), up to kReservedOutputTokens: a decode step then grows no vector.
  const auto reserved = static_cast<size_t>(std::clamp(request.params.max_tokens, 0, kReservedOutputTokens));
  seq.tokens.reserve(seq.tokens.size() + reserved);
  group->times.token_times.reserve(reserved);
  group->times.arrival = request.arrival_time;
  group->request = std::move(request);
  group->seqs.push_back(std::move(seq));
  return group;
}

}  // namespace pagedllm::sched
