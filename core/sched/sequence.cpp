#include "core/sched/sequence.h"

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

std::unique_ptr<SequenceGroup> make_sequence_group(Request request, SeqId first_seq) {
  auto group = std::make_unique<SequenceGroup>();
  Sequence seq;
  seq.id = first_seq;
  seq.tokens = request.prompt_tokens;
  seq.num_prompt_tokens = seq.num_tokens();
  group->times.arrival = request.arrival_time;
  group->request = std::move(request);
  group->seqs.push_back(std::move(seq));
  return group;
}

}  // namespace pagedllm::sched
