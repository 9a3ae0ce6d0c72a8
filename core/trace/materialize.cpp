#include "core/trace/materialize.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <span>
#include <stdexcept>

#include "core/common/mix.h"

namespace pagedllm::trace {
namespace {

// The content of the trace's request `index`, a prompt of prompt_len synthetic tokens: the named
// blocks' tokens first, block by block, then the request's own stream; prompt_len may be below
// the trace's (clipped): each position's token does not depend on the length.
kv::PromptContentIds synthetic_content(std::span<const uint64_t> block_ids, int32_t prompt_len, size_t index,
                                       int32_t block_tokens, const sched::SyntheticTokens& tokens) {
  kv::PromptContentIds content;
  if (!block_ids.empty()) content.ids.assign(block_ids.begin(), block_ids.end());
  content.tokens_per_id = block_tokens;
  content.num_tokens =
      static_cast<int32_t>(std::min<int64_t>(prompt_len, static_cast<int64_t>(block_ids.size()) * block_tokens));
  content.seed = tokens.content_seed();
  content.num_stream_tokens = prompt_len - content.num_tokens;
  content.stream = static_cast<uint64_t>(index);
  return content;
}

sched::SamplingParams sampling_for(const TraceRequest& request, int32_t output_len, size_t index,
                                   const MaterializeConfig& config) {
  sched::SamplingParams params = request.sampling.value_or(config.default_sampling);
  params.max_tokens = output_len;
  if (request.simulated_speculation) {
    params.simulated_speculation = std::make_shared<const spec::SimulatedAcceptance>(*request.simulated_speculation);
  }
  params.ignore_eos = params.ignore_eos || config.ignore_eos;
  // A sampled request without a seed still replays the same way twice.
  if (params.temperature > 0.0f && !params.seed) params.seed = mix64(config.seed ^ mix64(index + 1));
  return params;
}

}  // namespace

void validate(const MaterializeConfig& config) {
  const auto fail = [](const std::string& field, const std::string& message) {
    throw std::invalid_argument("materialize: " + field + ": " + message);
  };
  if (config.max_model_len < 2) fail("max_model_len", "must be at least 2 (one prompt and one output token)");
  if (config.synthetic_token_begin < 0 || config.synthetic_token_end <= config.synthetic_token_begin) {
    fail("synthetic_token_begin/end", "need 0 <= begin < end, got [" + std::to_string(config.synthetic_token_begin) +
                                          ", " + std::to_string(config.synthetic_token_end) + ")");
  }
  if (config.vocab_size < config.synthetic_token_end) {
    fail("vocab_size", std::to_string(config.vocab_size) + " is below the synthetic token range's end " +
                           std::to_string(config.synthetic_token_end));
  }
  if (!(config.rate_scale > 0.0) || !std::isfinite(config.rate_scale))
    fail("rate_scale", "must be positive and finite");
}

// Held by RequestMaterializer::Impl, so not in an anonymous namespace.
namespace materialize_internal {

class Materializer {
 public:
  Materializer(const MaterializeConfig& config, int32_t block_tokens, std::string file)
      : config_(config), block_tokens_(block_tokens), file_(std::move(file)) {
    validate(config_);
    if (block_tokens_ < 1) throw std::invalid_argument(file_ + ": prefix_block_tokens must be positive");
    tokens_ = sched::SyntheticTokens(config_.seed, config_.synthetic_token_begin, config_.synthetic_token_end);
  }

  // One trace request as an engine request, or nullopt with the reason added to report.rejected.
  // A prompt given by its length is described (Request::prompt_synthesis); with `defer` its tokens
  // are left unwritten.
  std::optional<sched::Request> materialize(const TraceRequest& entry, size_t index, bool defer,
                                            MaterializeReport& report) const {
    const auto reject = [&](const std::string& field, const std::string& message) {
      report.rejected.push_back({file_, entry.source_line, field, message});
      return std::nullopt;
    };
    // A synthetic prompt is known by its length until the end; its tokens are in range by construction.
    const bool synthetic = entry.prompt_kind == PromptKind::length;
    std::vector<TokenId> prompt;
    switch (entry.prompt_kind) {
      case PromptKind::text:
        if (!config_.encode) return reject("prompt", "a text prompt needs a tokenizer (give a model)");
        prompt = config_.encode(entry.prompt_text);
        break;
      case PromptKind::tokens:
        prompt = entry.prompt_tokens;
        break;
      case PromptKind::length:
        break;
    }
    int64_t prompt_len = synthetic ? int64_t{entry.prompt_len} : static_cast<int64_t>(prompt.size());
    if (prompt_len <= 0) return reject("prompt", "the prompt has no tokens");
    const auto bad_token = std::find_if(prompt.begin(), prompt.end(),
                                        [&](TokenId token) { return token < 0 || token >= config_.vocab_size; });
    if (bad_token != prompt.end()) {
      return reject("prompt_token_ids", "token " + std::to_string(*bad_token) +
                                            " is outside the model's vocabulary of " +
                                            std::to_string(config_.vocab_size));
    }
    int32_t output_len = entry.output_len;
    const int64_t total = prompt_len + output_len;
    if (total > config_.max_model_len) {
      if (config_.over_length == OverLength::reject) {
        return reject("prompt_len", "prompt (" + std::to_string(prompt_len) + ") + output (" +
                                        std::to_string(output_len) + ") tokens exceed max_model_len " +
                                        std::to_string(config_.max_model_len));
      }
      const int32_t clipped_output = std::min(output_len, config_.max_model_len - 1);
      const int64_t clipped_prompt = config_.max_model_len - clipped_output;
      report.num_clipped_output_tokens += output_len - clipped_output;
      if (prompt_len > clipped_prompt) {
        report.num_clipped_prompt_tokens += prompt_len - clipped_prompt;
        prompt_len = clipped_prompt;
        if (!synthetic) prompt.resize(static_cast<size_t>(prompt_len));
      }
      output_len = clipped_output;
      ++report.num_clipped;
    }
    sched::Request request;
    request.id = static_cast<sched::RequestId>(index);
    if (synthetic) {
      // Every token is a function of (seed, block id, offset) or (seed, request index, position):
      // the prefix cache hashes the blocks from that description and never reads them, and an
      // engine that runs no model never writes them (sched::SyntheticTokens).
      request.content_ids =
          synthetic_content(entry.prefix_block_ids, static_cast<int32_t>(prompt_len), index, block_tokens_, tokens_);
      request.prompt_synthesis = tokens_;
      if (!defer) sched::write_prompt(request);
    } else {
      request.prompt_tokens = std::move(prompt);
    }
    request.params = sampling_for(entry, output_len, index, config_);
    request.arrival_time = entry.arrival_time / config_.rate_scale;
    request.priority = entry.priority;
    return request;
  }

 private:
  MaterializeConfig config_;
  int32_t block_tokens_;
  std::string file_;
  sched::SyntheticTokens tokens_;
};

}  // namespace materialize_internal

using materialize_internal::Materializer;

MaterializedTrace materialize_requests(const Trace& trace, const MaterializeConfig& config, const std::string& file) {
  const Materializer materializer(config, trace.header.prefix_block_tokens, file);
  MaterializedTrace result;
  result.requests.reserve(trace.requests.size());
  for (size_t index = 0; index < trace.requests.size(); ++index) {
    std::optional<sched::Request> request =
        materializer.materialize(trace.requests[index], index, config.defer_synthetic_prompts, result);
    if (request) result.requests.push_back(std::move(*request));
  }
  return result;
}

struct RequestMaterializer::Impl {
  Materializer materializer;
  bool defer = false;
};

RequestMaterializer::RequestMaterializer(const MaterializeConfig& config, int32_t prefix_block_tokens, std::string file)
    : impl_(std::make_unique<Impl>(
          Impl{Materializer(config, prefix_block_tokens, std::move(file)), config.defer_synthetic_prompts})) {}
RequestMaterializer::~RequestMaterializer() = default;
RequestMaterializer::RequestMaterializer(RequestMaterializer&&) noexcept = default;
RequestMaterializer& RequestMaterializer::operator=(RequestMaterializer&&) noexcept = default;

std::optional<sched::Request> RequestMaterializer::materialize(const TraceRequest& entry, size_t index) {
  return impl_->materializer.materialize(entry, index, impl_->defer, report_);
}

}  // namespace pagedllm::trace
