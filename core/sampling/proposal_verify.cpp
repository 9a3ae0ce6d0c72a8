#include "core/sampling/proposal_verify.h"

#include <stdexcept>
#include <string>

namespace pagedllm::sampling {

sched::SequenceOutput verify_proposals(Sampler& sampler, const sched::ScheduledSequence& scheduled,
                                       std::span<const float> logits, size_t vocab) {
  const auto num_proposed = static_cast<size_t>(scheduled.num_proposed_tokens);
  const size_t words = (vocab + 31) / 32;
  if (!scheduled.allowed_tokens.empty() && scheduled.allowed_tokens.size() != (num_proposed + 1) * words) {
    throw std::invalid_argument("verify_proposals: " + std::to_string(scheduled.allowed_tokens.size()) +
                                " mask words for " + std::to_string(num_proposed + 1) + " rows of " +
                                std::to_string(words));
  }
  if (logits.size() != (num_proposed + 1) * vocab) {
    throw std::invalid_argument("verify_proposals: " + std::to_string(logits.size()) + " logits for " +
                                std::to_string(num_proposed + 1) + " rows of " + std::to_string(vocab));
  }
  const auto num_prompt = static_cast<size_t>(scheduled.num_prompt_tokens);
  const size_t confirmed = scheduled.confirmed_tokens().size();
  const uint64_t seed = stream_seed(*scheduled.params, scheduled.request);
  sched::SequenceOutput output;
  output.seq = scheduled.seq;
  for (size_t j = 0; j <= num_proposed; ++j) {
    // The sequence as it stands at this position: its confirmed tokens and the proposals before it.
    const std::span<const TokenId> so_far = scheduled.tokens.first(confirmed + j);
    SamplerOutput drawn = sampler.sample(SamplerInput{
        .logits = logits.subspan(j * vocab, vocab),
        .params = scheduled.params,
        .prompt_tokens = so_far.first(num_prompt),
        .output_tokens = so_far.subspan(num_prompt),
        .seed = seed,
        .position = static_cast<int32_t>(so_far.size() - num_prompt),
        .num_samples = 1,
        .first_stream_index = scheduled.sample_index,
        .allowed_tokens = scheduled.allowed_row(j),
    });
    const TokenId token = drawn.samples.front().token;
    output.samples.push_back(drawn.samples.front());
    if (!drawn.top_logprobs.empty()) output.top_logprobs.push_back(std::move(drawn.top_logprobs.front()));
    if (j == num_proposed || token != scheduled.tokens[confirmed + j]) break;
  }
  return output;
}

}  // namespace pagedllm::sampling
