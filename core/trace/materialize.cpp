#include "core/trace/materialize.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <span>
#include <stdexcept>

#include "core/common/mix.h"

namespace pagedllm::trace {
// Types held by RequestMaterializer::Impl, so not in an anonymous namespace.
namespace materialize_internal {

// Distinct domains so that block content never coincides with per-request content by design.
constexpr uint64_t kBlockDomain = 0x5bd1e9955bd1e995ULL;
constexpr uint64_t kRequestDomain = 0x94d049bb133111ebULL;
constexpr uint64_t kSeedDomain = 0xd6e8feb86659fd93ULL;

class SyntheticTokens {
 public:
  explicit SyntheticTokens(const MaterializeConfig& config)
      : seed_(mix64(config.seed ^ kSeedDomain)),
        begin_(config.synthetic_token_begin),
        range_(static_cast<uint64_t>(config.synthetic_token_end - config.synthetic_token_begin)) {}

  TokenId block_token(uint64_t block_id, int32_t offset) const {
    return pick(mix64(seed_ ^ kBlockDomain ^ mix64(block_id * 0x9e3779b97f4a7c15ULL + static_cast<uint64_t>(offset))));
  }
  // Everything a block token depends on besides (id, offset): the seed and the token range.
  uint64_t block_content_seed() const {
    return mix64(seed_ ^ (static_cast<uint64_t>(static_cast<uint32_t>(begin_)) << 32 | range_));
  }
  TokenId request_token(size_t index, int32_t position) const {
    return pick(
        mix64(seed_ ^ kRequestDomain ^ mix64(static_cast<uint64_t>(index) << 32 ^ static_cast<uint32_t>(position))));
  }

 private:
  TokenId pick(uint64_t hash) const { return begin_ + static_cast<TokenId>(hash % range_); }

  uint64_t seed_;
  TokenId begin_;
  uint64_t range_;
};

}  // namespace materialize_internal

namespace {

using materialize_internal::SyntheticTokens;

// The prompt of the trace's request `index`: the named blocks' tokens first, block by block, then
// the request's own tokens; prompt_len may be below the trace's (clipped): each position's token
// does not depend on the length.
std::vector<TokenId> synthesize_prompt(std::span<const uint64_t> block_ids, int32_t prompt_len, size_t index,
                                       int32_t block_tokens, const SyntheticTokens& tokens) {
  std::vector<TokenId> prompt(static_cast<size_t>(prompt_len));
  int32_t position = 0;
  for (const uint64_t block_id : block_ids) {
    const auto block_end = static_cast<int32_t>(std::min<int64_t>(prompt_len, int64_t{position} + block_tokens));
    for (int32_t offset = 0; position < block_end; ++position, ++offset) {
      prompt[static_cast<size_t>(position)] = tokens.block_token(block_id, offset);
    }
  }
  for (; position < prompt_len; ++position) {
    prompt[static_cast<size_t>(position)] = tokens.request_token(index, position);
  }
  return prompt;
}

// What fill_prompt needs of a trace whose synthetic prompts were deferred.
struct DeferredPrompts {
  SyntheticTokens tokens;
  int32_t block_tokens = 0;
  std::vector<int32_t> prompt_len;  // by request id (its index in the trace); 0: not deferred

  // The named blocks are the request's content ids (the trace's prefix block ids).
  void fill(sched::Request& request) const {
    if (!request.prompt_tokens.empty() || request.id < 0) return;
    const auto id = static_cast<size_t>(request.id);
    if (id >= prompt_len.size() || prompt_len[id] == 0) return;
    request.prompt_tokens = synthesize_prompt(request.content_ids.ids, prompt_len[id], id, block_tokens, tokens);
  }
};

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

namespace materialize_internal {

// One trace request as an engine request, or nullopt with the reason added to report.rejected.
// With `defer`, a length-only prompt is left empty and its (clipped) length returned beside it.
struct OneRequest {
  sched::Request request;
  int32_t deferred_prompt_len = 0;  // > 0: the prompt was left to DeferredPrompts::fill
};

class Materializer {
 public:
  Materializer(const MaterializeConfig& config, int32_t block_tokens, std::string file)
      : config_(config), block_tokens_(block_tokens), file_(std::move(file)), tokens_(config) {
    validate(config_);
    if (block_tokens_ < 1) throw std::invalid_argument(file_ + ": prefix_block_tokens must be positive");
    content_seed_ = tokens_.block_content_seed();
  }

  const SyntheticTokens& tokens() const { return tokens_; }
  int32_t block_tokens() const { return block_tokens_; }

  std::optional<OneRequest> materialize(const TraceRequest& entry, size_t index, bool defer,
                                        MaterializeReport& report) const {
    const auto reject = [&](const std::string& field, const std::string& message) {
      report.rejected.push_back({file_, entry.source_line, field, message});
      return std::nullopt;
    };
    // A deferred prompt is known by its length only; its tokens are in range by construction.
    defer = defer && entry.prompt_kind == PromptKind::length;
    std::vector<TokenId> prompt;
    if (!defer) {
      switch (entry.prompt_kind) {
        case PromptKind::text:
          if (!config_.encode) return reject("prompt", "a text prompt needs a tokenizer (give a model)");
          prompt = config_.encode(entry.prompt_text);
          break;
        case PromptKind::tokens:
          prompt = entry.prompt_tokens;
          break;
        case PromptKind::length:
          prompt = synthesize_prompt(entry.prefix_block_ids, entry.prompt_len, index, block_tokens_, tokens_);
          break;
      }
    }
    int64_t prompt_len = defer ? int64_t{entry.prompt_len} : static_cast<int64_t>(prompt.size());
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
        if (!defer) prompt.resize(static_cast<size_t>(prompt_len));
      }
      output_len = clipped_output;
      ++report.num_clipped;
    }
    OneRequest one;
    sched::Request& request = one.request;
    request.id = static_cast<sched::RequestId>(index);
    if (entry.prompt_kind == PromptKind::length && !entry.prefix_block_ids.empty()) {
      // The named blocks' tokens are a function of (seed, id, offset): the prefix cache can hash
      // them from the ids (kv::PromptContentIds) and never read them.
      request.content_ids = {.ids = entry.prefix_block_ids,
                             .tokens_per_id = block_tokens_,
                             .num_tokens = static_cast<int32_t>(std::min<int64_t>(
                                 prompt_len, static_cast<int64_t>(entry.prefix_block_ids.size()) * block_tokens_)),
                             .seed = content_seed_};
    }
    if (defer) {
      one.deferred_prompt_len = static_cast<int32_t>(prompt_len);
    } else {
      request.prompt_tokens = std::move(prompt);
    }
    request.params = sampling_for(entry, output_len, index, config_);
    request.arrival_time = entry.arrival_time / config_.rate_scale;
    request.priority = entry.priority;
    return one;
  }

 private:
  MaterializeConfig config_;
  int32_t block_tokens_;
  std::string file_;
  SyntheticTokens tokens_;
  uint64_t content_seed_ = 0;
};

}  // namespace materialize_internal

using materialize_internal::Materializer;
using materialize_internal::OneRequest;

MaterializedTrace materialize_requests(const Trace& trace, const MaterializeConfig& config, const std::string& file) {
  const Materializer materializer(config, trace.header.prefix_block_tokens, file);
  MaterializedTrace result;
  result.requests.reserve(trace.requests.size());
  std::shared_ptr<DeferredPrompts> deferred;
  if (config.defer_synthetic_prompts) {
    deferred = std::make_shared<DeferredPrompts>(
        DeferredPrompts{.tokens = materializer.tokens(),
                        .block_tokens = materializer.block_tokens(),
                        .prompt_len = std::vector<int32_t>(trace.requests.size(), 0)});
  }
  for (size_t index = 0; index < trace.requests.size(); ++index) {
    std::optional<OneRequest> one = materializer.materialize(trace.requests[index], index, deferred != nullptr, result);
    if (!one) continue;
    if (one->deferred_prompt_len > 0) deferred->prompt_len[index] = one->deferred_prompt_len;
    result.requests.push_back(std::move(one->request));
  }
  if (deferred) {
    result.fill_prompt = [deferred = std::shared_ptr<const DeferredPrompts>(std::move(deferred))](
                             sched::Request& request) { deferred->fill(request); };
  }
  return result;
}

struct RequestMaterializer::Impl {
  Materializer materializer;
};

RequestMaterializer::RequestMaterializer(const MaterializeConfig& config, int32_t prefix_block_tokens, std::string file)
    : impl_(std::make_unique<Impl>(Impl{Materializer(config, prefix_block_tokens, std::move(file))})) {}
RequestMaterializer::~RequestMaterializer() = default;
RequestMaterializer::RequestMaterializer(RequestMaterializer&&) noexcept = default;
RequestMaterializer& RequestMaterializer::operator=(RequestMaterializer&&) noexcept = default;

std::optional<sched::Request> RequestMaterializer::materialize(const TraceRequest& entry, size_t index) {
  std::optional<OneRequest> one = impl_->materializer.materialize(entry, index, false, report_);
  if (!one) return std::nullopt;
  return std::move(one->request);
}

}  // namespace pagedllm::trace
