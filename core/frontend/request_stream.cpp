#include "core/frontend/request_stream.h"

#include <span>

namespace pagedllm::frontend {

std::string finish_reason_text(sched::FinishReason reason) {
  switch (reason) {
    case sched::FinishReason::stop:
      return "stop";
    case sched::FinishReason::length:
      return "length";
    case sched::FinishReason::abort:
      return "abort";
    case sched::FinishReason::rejected:
      return "abort";
    case sched::FinishReason::none:
      return "";
  }
  return "";
}

RequestStream::RequestStream(tokenizer::Tokenizer tokenizer, RequestStreamOptions options)
    : tokenizer_(std::move(tokenizer)), options_(std::move(options)) {}

void RequestStream::decode_logprobs(const engine::Completion& completion, size_t i, CompletionUpdate& held) const {
  TokenLogprob entry;
  entry.token = tokenizer_.decode(std::span<const TokenId>(&completion.tokens[i], 1));
  entry.logprob = i < completion.token_logprobs.size() ? completion.token_logprobs[i] : 0.0f;
  if (i < completion.top_logprobs.size()) {
    for (const auto& [token, logprob] : completion.top_logprobs[i]) {
      entry.top.emplace_back(tokenizer_.decode(std::span<const TokenId>(&token, 1)), logprob);
    }
  }
  held.logprobs.push_back(std::move(entry));
}

std::optional<RequestUpdate> RequestStream::on_output(const engine::RequestOutput& output, engine::Engine& engine) {
  RequestUpdate update;
  update.num_prompt_tokens = output.num_prompt_tokens;
  if (output.finish_reason == sched::FinishReason::rejected) {
    update.finished = true;
    update.error = RequestError::invalid_request;
    update.error_message = output.message;
    return update;
  }
  // Beam search reorders its beams until it ends: its text goes out whole, at the end.
  if (options_.beam_search && !output.finished) return std::nullopt;
  int64_t num_new_tokens = 0;
  for (const engine::Completion& completion : output.completions) {
    const auto index = static_cast<size_t>(completion.index);
    while (samples_.size() <= index) samples_.push_back(Sample{TextStream(tokenizer_, options_.text), {}, false});
    Sample& sample = samples_[index];
    if (sample.finished) continue;
    CompletionUpdate news;
    news.index = completion.index;
    // Tokens go out with their text: while the text is held back, so are they (and their logprobs).
    const auto release_held = [&] {
      news.tokens.insert(news.tokens.end(), sample.held.tokens.begin(), sample.held.tokens.end());
      news.logprobs.insert(news.logprobs.end(), std::make_move_iterator(sample.held.logprobs.begin()),
                           std::make_move_iterator(sample.held.logprobs.end()));
      sample.held = CompletionUpdate{};
    };
    for (size_t i = 0; i < completion.tokens.size() && !sample.text.stopped(); ++i) {
      news.text += sample.text.push(completion.tokens[i]);
      sample.held.tokens.push_back(completion.tokens[i]);
      if (options_.with_logprobs) decode_logprobs(completion, i, sample.held);
      if (sample.text.stopped() || !sample.text.holding()) release_held();
    }
    if (sample.text.stopped()) {
      news.finish_reason = "stop";
      // Free this sample now; the others go on (a waiting or swapped request keeps it until its
      // own end, its text already cut).
      engine.stop_sample(output.id, completion.index);
    } else if (completion.finish_reason != sched::FinishReason::none || output.finished) {
      news.text += sample.text.finish();
      release_held();
      news.finish_reason = finish_reason_text(
          completion.finish_reason != sched::FinishReason::none ? completion.finish_reason : output.finish_reason);
      if (news.finish_reason.empty()) news.finish_reason = "abort";
    }
    sample.finished = !news.finish_reason.empty();
    num_new_tokens += static_cast<int64_t>(news.tokens.size());
    if (!news.text.empty() || !news.tokens.empty() || !news.finish_reason.empty()) {
      update.completions.push_back(std::move(news));
    }
  }
  num_output_tokens_ += num_new_tokens;
  update.num_output_tokens = num_output_tokens_;
  bool every_sample_done = samples_.size() == static_cast<size_t>(options_.num_samples);
  for (const Sample& sample : samples_) every_sample_done = every_sample_done && sample.finished;
  if (output.finished || every_sample_done) {
    if (!output.finished) engine.abort_request(output.id);  // stop strings ended every sample: free its blocks
    update.finished = true;
  }
  return update;
}

}  // namespace pagedllm::frontend
