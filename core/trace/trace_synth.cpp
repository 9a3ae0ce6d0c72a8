#include "core/trace/trace_synth.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <sstream>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/trace/trace_random.h"

namespace pagedllm::trace {
namespace {

// One random stream per concern (TraceRandom::stream's purpose).
enum Purpose : uint64_t {
  kArrivals = 1,
  kPromptLengths = 2,
  kOutputLengths = 3,
  kRequestMix = 4,
  kSessionShape = 5,  // turns per session and think times
};

template <typename Value>
[[noreturn]] void refuse(const std::string& field, const std::string& bound, Value value) {
  std::ostringstream message;
  message << "synth config: " << field << " must be " << bound << ", got " << value;
  throw SynthConfigError(field, message.str());
}

void validate_length(const LengthDistribution& length, const std::string& name) {
  const std::string limit = std::to_string(kMaxSynthLength);
  if (length.min < 1 || length.min > kMaxSynthLength) refuse(name + ".min", "in [1, " + limit + "]", length.min);
  if (length.max < length.min || length.max > kMaxSynthLength) {
    refuse(name + ".max", "in [min=" + std::to_string(length.min) + ", " + limit + "]", length.max);
  }
  switch (length.kind) {
    case LengthKind::fixed:
      if (length.value < length.min || length.value > length.max) {
        refuse(name + ".value",
               "in [min, max] = [" + std::to_string(length.min) + ", " + std::to_string(length.max) + "]",
               length.value);
      }
      break;
    case LengthKind::uniform:
      break;
    case LengthKind::lognormal:
      if (!std::isfinite(length.mu)) refuse(name + ".mu", "finite", length.mu);
      if (!std::isfinite(length.sigma) || length.sigma < 0.0) refuse(name + ".sigma", "finite and >= 0", length.sigma);
      break;
  }
}

int32_t draw_length(const LengthDistribution& length, TraceRandom& random) {
  switch (length.kind) {
    case LengthKind::fixed:
      return length.value;
    case LengthKind::uniform:
      return static_cast<int32_t>(random.uniform_int(length.min, length.max));
    case LengthKind::lognormal: {
      // Clip before rounding: min and max are integers, so the rounded value stays inside.
      const double x = std::clamp(random.lognormal(length.mu, length.sigma), static_cast<double>(length.min),
                                  static_cast<double>(length.max));
      return static_cast<int32_t>(std::floor(x + 0.5));
    }
  }
  return length.min;
}

bool all_at_once(double rate) { return rate == 0.0 || std::isinf(rate); }

// vLLM benchmark_serving's arrivals: the first at 0, then gamma(shape = burstiness,
// scale = 1 / (rate * burstiness)) gaps.
std::vector<double> arrival_times(const SynthConfig& config, int64_t count) {
  std::vector<double> times(static_cast<size_t>(count), 0.0);
  if (all_at_once(config.request_rate)) return times;
  TraceRandom random = TraceRandom::stream(config.seed, kArrivals);
  const double scale = 1.0 / (config.request_rate * config.burstiness);
  for (size_t i = 1; i < times.size(); ++i) times[i] = times[i - 1] + random.gamma(config.burstiness, scale);
  return times;
}

// Raw block ids, unique per content; renumbered in order of first appearance at the end.
class BlockIds {
 public:
  BlockIds(int32_t block_tokens, int32_t system_prompt_len)
      : block_tokens_(block_tokens),
        num_system_blocks_(system_prompt_len / block_tokens),
        next_id_(static_cast<uint64_t>(num_system_blocks_)) {}

  // Ids of a prompt of `prompt_len` tokens whose first `inherited_len` tokens are the prompt that
  // had `inherited` ids (an earlier turn's), or nothing (inherited_len = 0).
  std::vector<uint64_t> assign(int64_t prompt_len, int64_t inherited_len, const std::vector<uint64_t>& inherited) {
    const int64_t num_blocks = (prompt_len + block_tokens_ - 1) / block_tokens_;
    std::vector<uint64_t> ids(static_cast<size_t>(num_blocks));
    for (int64_t i = 0; i < num_blocks; ++i) {
      const int64_t end = (i + 1) * block_tokens_;
      if (i < num_system_blocks_) {
        ids[i] = static_cast<uint64_t>(i);  // wholly inside the system prompt
      } else if (end <= inherited_len) {
        ids[i] = inherited[i];  // wholly inside the previous turn's prompt
      } else {
        ids[i] = next_id_++;
      }
    }
    return ids;
  }

 private:
  int64_t block_tokens_;
  int64_t num_system_blocks_;
  uint64_t next_id_;
};

// "s0", "s1", ... (to_chars: GCC 12 misreports string concatenation here under -Wrestrict).
std::string session_name(int32_t index) {
  char buffer[16] = {'s'};
  const auto result = std::to_chars(buffer + 1, buffer + sizeof(buffer), index);
  return std::string(buffer, result.ptr);
}

int32_t checked_prompt_len(int64_t len) {
  if (len > std::numeric_limits<int32_t>::max()) {
    refuse("sessions.max_turns", "small enough that a session's prompt stays below 2^31 tokens (a prompt reached)",
           len);
  }
  return static_cast<int32_t>(len);
}

std::vector<TraceRequest> generate_lone_requests(const SynthConfig& config, BlockIds& block_ids) {
  TraceRandom prompt_random = TraceRandom::stream(config.seed, kPromptLengths);
  TraceRandom output_random = TraceRandom::stream(config.seed, kOutputLengths);
  const std::vector<double> times = arrival_times(config, config.num_requests);
  std::vector<TraceRequest> requests;
  for (const double time : times) {
    TraceRequest request;
    request.arrival_time = time;
    const int64_t prompt_len = int64_t{config.system_prompt_len} + draw_length(config.prompt_len, prompt_random);
    request.prompt_len = checked_prompt_len(prompt_len);
    request.output_len = draw_length(config.output_len, output_random);
    request.prefix_block_ids = block_ids.assign(prompt_len, 0, {});
    requests.push_back(std::move(request));
  }
  return requests;
}

// Sessions one after another, turns in order: the generation order the stable sort keeps for ties.
std::vector<TraceRequest> generate_sessions(const SynthConfig& config, BlockIds& block_ids) {
  TraceRandom prompt_random = TraceRandom::stream(config.seed, kPromptLengths);
  TraceRandom output_random = TraceRandom::stream(config.seed, kOutputLengths);
  TraceRandom shape_random = TraceRandom::stream(config.seed, kSessionShape);
  const SessionConfig& sessions = config.sessions;
  const std::vector<double> starts = arrival_times(config, sessions.num_sessions);
  std::vector<TraceRequest> requests;
  for (int32_t session = 0; session < sessions.num_sessions; ++session) {
    const int64_t num_turns = shape_random.uniform_int(sessions.min_turns, sessions.max_turns);
    const std::string session_id = session_name(session);
    double time = starts[static_cast<size_t>(session)];
    int64_t context_len = config.system_prompt_len;  // tokens before this turn's user message
    int64_t previous_prompt_len = 0;
    std::vector<uint64_t> previous_ids;
    for (int64_t turn = 0; turn < num_turns; ++turn) {
      if (turn > 0) time += shape_random.exponential(sessions.mean_think_time);
      TraceRequest request;
      request.arrival_time = time;
      request.session_id = session_id;
      const int64_t prompt_len = context_len + draw_length(config.prompt_len, prompt_random);
      request.prompt_len = checked_prompt_len(prompt_len);
      request.output_len = draw_length(config.output_len, output_random);
      request.prefix_block_ids = block_ids.assign(prompt_len, previous_prompt_len, previous_ids);
      previous_prompt_len = prompt_len;
      previous_ids = request.prefix_block_ids;
      context_len = prompt_len + request.output_len;
      requests.push_back(std::move(request));
    }
  }
  return requests;
}

void assign_request_mix(const SynthConfig& config, std::vector<TraceRequest>& requests) {
  const RequestMix& mix = config.mix;
  if (mix.parallel_fraction == 0.0 && mix.beam_fraction == 0.0) return;
  TraceRandom random = TraceRandom::stream(config.seed, kRequestMix);
  for (TraceRequest& request : requests) {
    const double u = random.uniform();
    if (u < mix.parallel_fraction) {
      sched::SamplingParams sampling;
      sampling.n = mix.parallel_n;
      sampling.temperature = 1.0f;
      sampling.seed = random.next_u64();
      sampling.max_tokens = request.output_len;
      request.sampling = sampling;
    } else if (u < mix.parallel_fraction + mix.beam_fraction) {
      sched::SamplingParams sampling;
      sampling.beam_width = mix.beam_width;
      sampling.n = 1;
      sampling.temperature = 0.0f;
      sampling.max_tokens = request.output_len;
      request.sampling = sampling;
    }
  }
}

// Ids 0, 1, 2, ... in order of first appearance over the sorted trace.
void renumber_block_ids(std::vector<TraceRequest>& requests) {
  std::unordered_map<uint64_t, uint64_t> renamed;
  for (TraceRequest& request : requests) {
    for (uint64_t& id : request.prefix_block_ids) {
      const auto [it, inserted] = renamed.try_emplace(id, renamed.size());
      id = it->second;
    }
  }
}

}  // namespace

const char* to_string(LengthKind kind) {
  switch (kind) {
    case LengthKind::fixed:
      return "fixed";
    case LengthKind::uniform:
      return "uniform";
    case LengthKind::lognormal:
      return "lognormal";
  }
  return "unknown";
}

LengthKind parse_length_kind(std::string_view name) {
  for (const LengthKind kind : {LengthKind::fixed, LengthKind::uniform, LengthKind::lognormal}) {
    if (name == to_string(kind)) return kind;
  }
  throw std::invalid_argument("unknown length distribution '" + std::string(name) +
                              "' (expected fixed, uniform or lognormal)");
}

LengthDistribution fit_lognormal(std::span<const int32_t> lengths, int32_t min, int32_t max) {
  if (lengths.empty()) throw std::invalid_argument("fit_lognormal: no lengths to fit");
  if (min < 1 || max < min) {
    throw std::invalid_argument("fit_lognormal: need 1 <= min <= max, got min " + std::to_string(min) + ", max " +
                                std::to_string(max));
  }
  double sum = 0.0;
  for (const int32_t length : lengths) {
    if (length < 1) throw std::invalid_argument("fit_lognormal: lengths must be >= 1, got " + std::to_string(length));
    sum += portable_log(length);
  }
  const double count = static_cast<double>(lengths.size());
  const double mu = sum / count;
  double squares = 0.0;
  for (const int32_t length : lengths) {
    const double deviation = portable_log(length) - mu;
    squares += deviation * deviation;
  }
  LengthDistribution fitted;
  fitted.kind = LengthKind::lognormal;
  fitted.mu = mu;
  fitted.sigma = std::sqrt(squares / count);
  fitted.min = min;
  fitted.max = max;
  return fitted;
}

void validate(const SynthConfig& config) {
  const SessionConfig& sessions = config.sessions;
  if (config.num_requests < 0) refuse("num_requests", ">= 0", config.num_requests);
  if (sessions.num_sessions < 0) refuse("sessions.num_sessions", ">= 0", sessions.num_sessions);
  if (sessions.num_sessions > 0 && config.num_requests > 0) {
    refuse("num_requests", "0 when sessions.num_sessions > 0 (the count is the sum of turns)", config.num_requests);
  }
  if (sessions.num_sessions == 0 && config.num_requests == 0) {
    refuse("num_requests", "at least 1 (or sessions.num_sessions at least 1)", config.num_requests);
  }
  if (!(config.request_rate >= 0.0)) refuse("request_rate", ">= 0 (0 or inf: all at time 0)", config.request_rate);
  if (!std::isfinite(config.burstiness) || config.burstiness <= 0.0) {
    refuse("burstiness", "finite and > 0 (1 = Poisson)", config.burstiness);
  }
  if (config.system_prompt_len < 0 || config.system_prompt_len > kMaxSynthLength) {
    refuse("system_prompt_len", "in [0, " + std::to_string(kMaxSynthLength) + "]", config.system_prompt_len);
  }
  validate_length(config.prompt_len, "prompt_len");
  validate_length(config.output_len, "output_len");
  const RequestMix& mix = config.mix;
  if (!(mix.parallel_fraction >= 0.0 && mix.parallel_fraction <= 1.0)) {
    refuse("mix.parallel_fraction", "in [0, 1]", mix.parallel_fraction);
  }
  if (!(mix.beam_fraction >= 0.0 && mix.beam_fraction <= 1.0 - mix.parallel_fraction)) {
    refuse("mix.beam_fraction", "in [0, 1 - mix.parallel_fraction]", mix.beam_fraction);
  }
  if (mix.parallel_n < 2) refuse("mix.parallel_n", ">= 2", mix.parallel_n);
  if (mix.beam_width < 2) refuse("mix.beam_width", ">= 2", mix.beam_width);
  if (sessions.min_turns < 1) refuse("sessions.min_turns", ">= 1", sessions.min_turns);
  if (sessions.max_turns < sessions.min_turns) {
    refuse("sessions.max_turns", ">= sessions.min_turns (" + std::to_string(sessions.min_turns) + ")",
           sessions.max_turns);
  }
  if (!std::isfinite(sessions.mean_think_time) || sessions.mean_think_time < 0.0) {
    refuse("sessions.mean_think_time", "finite and >= 0 (seconds)", sessions.mean_think_time);
  }
  if (config.prefix_block_tokens < 1 || config.prefix_block_tokens > kMaxSynthLength) {
    refuse("prefix_block_tokens", "in [1, " + std::to_string(kMaxSynthLength) + "]", config.prefix_block_tokens);
  }
}

Trace synthesize_trace(const SynthConfig& config) {
  validate(config);
  BlockIds block_ids(config.prefix_block_tokens, config.system_prompt_len);
  Trace trace;
  trace.header.prefix_block_tokens = config.prefix_block_tokens;
  trace.header.source = "synth";
  trace.requests = config.sessions.num_sessions > 0 ? generate_sessions(config, block_ids)
                                                    : generate_lone_requests(config, block_ids);
  std::stable_sort(trace.requests.begin(), trace.requests.end(),
                   [](const TraceRequest& a, const TraceRequest& b) { return a.arrival_time < b.arrival_time; });
  renumber_block_ids(trace.requests);
  assign_request_mix(config, trace.requests);
  return trace;
}

}  // namespace pagedllm::trace
