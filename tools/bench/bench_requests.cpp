#include "tools/bench/bench_requests.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "core/trace/materialize.h"
#include "core/trace/trace_synth.h"

namespace pagedllm::bench {

namespace {

// A float as the decimal a person wrote (0.7, not 0.699999988079071).
double decimal(float value) {
  char buffer[32];
  const auto result = std::to_chars(buffer, buffer + sizeof(buffer), value);
  double out = 0.0;
  std::from_chars(buffer, result.ptr, out);
  return out;
}

bool is_chat(const BenchBodyConfig& config) { return config.endpoint == kChatCompletionsPath; }

}  // namespace

nlohmann::json request_body(const BenchPrompt& prompt, int32_t output_len, const sched::SamplingParams& sampling,
                            const BenchBodyConfig& config) {
  // vLLM's use_beam_search runs n beams and returns them all.
  if (sampling.use_beam_search() && sampling.beam_width != sampling.n) {
    throw std::invalid_argument("the API's use_beam_search runs n beams and returns them all; this request asks for " +
                                std::to_string(sampling.n) + " of " + std::to_string(sampling.beam_width) + " beams");
  }
  nlohmann::json body = {{"model", config.model}};
  if (is_chat(config)) {
    const auto* text = std::get_if<std::string>(&prompt);
    if (text == nullptr) {
      throw std::invalid_argument("the chat endpoint takes text prompts; token ids need " +
                                  std::string(kCompletionsPath));
    }
    body["messages"] = nlohmann::json::array({{{"role", "user"}, {"content", *text}}});
  } else if (const auto* text = std::get_if<std::string>(&prompt)) {
    body["prompt"] = *text;
  } else {
    body["prompt"] = std::get<std::vector<TokenId>>(prompt);
  }
  body["max_tokens"] = output_len;
  body["stream"] = true;
  if (config.include_usage) body["stream_options"] = {{"include_usage", true}};
  if (config.ignore_eos || sampling.ignore_eos) body["ignore_eos"] = true;
  body["temperature"] = decimal(sampling.temperature);
  if (sampling.n != 1) body["n"] = sampling.n;
  if (sampling.use_beam_search()) {
    body["use_beam_search"] = true;
    if (sampling.length_penalty != 1.0f) body["length_penalty"] = decimal(sampling.length_penalty);
  }
  if (sampling.top_p != 1.0f) body["top_p"] = decimal(sampling.top_p);
  if (sampling.top_k > 0) body["top_k"] = sampling.top_k;
  if (sampling.min_p > 0.0f) body["min_p"] = decimal(sampling.min_p);
  if (sampling.repetition_penalty != 1.0f) body["repetition_penalty"] = decimal(sampling.repetition_penalty);
  if (sampling.presence_penalty != 0.0f) body["presence_penalty"] = decimal(sampling.presence_penalty);
  if (sampling.frequency_penalty != 0.0f) body["frequency_penalty"] = decimal(sampling.frequency_penalty);
  // The API's seed is a signed 64-bit integer; trace seeds use all 64 bits.
  if (sampling.seed)
    body["seed"] = static_cast<int64_t>(*sampling.seed & static_cast<uint64_t>(std::numeric_limits<int64_t>::max()));
  if (sampling.min_tokens > 0) body["min_tokens"] = sampling.min_tokens;
  if (!sampling.stop.empty()) body["stop"] = sampling.stop;
  if (!sampling.stop_token_ids.empty()) body["stop_token_ids"] = sampling.stop_token_ids;
  if (sampling.logprobs) {
    if (is_chat(config)) {
      body["logprobs"] = true;
      body["top_logprobs"] = *sampling.logprobs;
    } else {
      body["logprobs"] = *sampling.logprobs;
    }
  }
  body.update(config.extra_body);
  return body;
}

BenchRequests build_bench_requests(const trace::Trace& trace, const BenchRequestConfig& config,
                                   const std::string& file) {
  if (is_chat(config.body) && !trace.requests.empty() &&
      std::none_of(trace.requests.begin(), trace.requests.end(),
                   [](const trace::TraceRequest& request) { return request.prompt_kind == trace::PromptKind::text; })) {
    // One error for the run, not one rejection per request.
    throw std::invalid_argument(file + ": no request has a text prompt, and " + std::string(kChatCompletionsPath) +
                                " takes only text; token ids and lengths go to " + std::string(kCompletionsPath));
  }
  // materialize_requests draws the synthetic prompts (and sampling seeds) exactly as replay does.
  // It cannot tokenize, so text prompts go in as one-token placeholders and come back out as text.
  trace::Trace untokenized = trace;
  for (trace::TraceRequest& request : untokenized.requests) {
    if (request.prompt_kind != trace::PromptKind::text) continue;
    request.prompt_kind = trace::PromptKind::length;
    request.prompt_len = 1;
    request.prefix_block_ids.clear();
  }
  trace::MaterializeConfig materialize;
  materialize.max_model_len = std::numeric_limits<int32_t>::max();  // the server judges lengths
  materialize.vocab_size = std::numeric_limits<int32_t>::max();     // ... and token ids
  materialize.synthetic_token_begin = config.synthetic_token_begin;
  materialize.synthetic_token_end = config.synthetic_token_end;
  materialize.seed = config.seed;
  materialize.rate_scale = config.rate_scale;
  materialize.ignore_eos = config.body.ignore_eos;
  trace::MaterializedTrace materialized = trace::materialize_requests(untokenized, materialize, file);

  BenchRequests result;
  result.rejected = std::move(materialized.rejected);
  for (const sched::Request& request : materialized.requests) {
    const auto index = static_cast<size_t>(request.id);
    const trace::TraceRequest& entry = trace.requests[index];
    const bool text = entry.prompt_kind == trace::PromptKind::text;
    BenchPrompt prompt;
    if (text) {
      prompt = entry.prompt_text;
    } else {
      prompt = request.prompt_tokens;
    }
    LoadRequest load;
    load.id = request.id;
    load.path = config.body.endpoint;
    load.send_time = request.arrival_time;
    load.prompt_tokens = text ? entry.prompt_len : static_cast<int32_t>(request.prompt_tokens.size());
    try {
      load.body = request_body(prompt, request.params.max_tokens, request.params, config.body).dump();
    } catch (const std::invalid_argument& error) {
      result.rejected.push_back(
          {file, entry.source_line, request.params.use_beam_search() ? "sampling" : "prompt", error.what()});
      continue;
    }
    result.requests.push_back(std::move(load));
  }
  if (config.request_rate) {
    const std::vector<double> times = arrival_times(static_cast<int32_t>(result.requests.size()), *config.request_rate,
                                                    config.burstiness, config.seed);
    for (size_t i = 0; i < times.size(); ++i) result.requests[i].send_time = times[i];
  }
  return result;
}

std::vector<double> arrival_times(int32_t count, double request_rate, double burstiness, uint64_t seed) {
  if (count <= 0) return {};
  // The synthesizer's own arrival process: lengths are irrelevant here, so the cheapest ones.
  trace::SynthConfig synth;
  synth.seed = seed;
  synth.num_requests = count;
  synth.request_rate = request_rate;
  synth.burstiness = burstiness;
  synth.prompt_len.value = 1;
  synth.output_len.value = 1;
  const trace::Trace trace = trace::synthesize_trace(synth);
  std::vector<double> times;
  times.reserve(trace.requests.size());
  for (const trace::TraceRequest& request : trace.requests) times.push_back(request.arrival_time);
  return times;
}

trace::Trace random_dataset(const RandomDatasetConfig& config) {
  const auto range = [&](int32_t len, const char* name) {
    if (len < 1) throw std::invalid_argument(std::string(name) + ": must be at least 1");
    trace::LengthDistribution length;
    if (config.range_ratio == 0.0) {
      length.value = len;
      return length;
    }
    if (!(config.range_ratio > 0.0 && config.range_ratio < 1.0))
      throw std::invalid_argument("range ratio: must be in [0, 1)");
    length.kind = trace::LengthKind::uniform;
    length.min = std::max(1, static_cast<int32_t>(std::floor(len * (1.0 - config.range_ratio))));
    length.max = std::max(length.min, static_cast<int32_t>(std::ceil(len * (1.0 + config.range_ratio))));
    return length;
  };
  trace::SynthConfig synth;
  synth.seed = config.seed;
  synth.num_requests = config.num_prompts;
  synth.request_rate = config.request_rate;
  synth.burstiness = config.burstiness;
  synth.prompt_len = range(config.input_len, "input length");
  synth.output_len = range(config.output_len, "output length");
  synth.system_prompt_len = config.prefix_len;
  // One prefix block spanning the shared prefix exactly, so that every prompt starts with the
  // same prefix_len tokens (with the default 512-token blocks a shorter prefix would not be shared).
  if (config.prefix_len > 0) synth.prefix_block_tokens = config.prefix_len;
  return trace::synthesize_trace(synth);
}

}  // namespace pagedllm::bench
