#include "core/engine/scripted_executor.h"

#include <algorithm>
#include <stdexcept>

#include "core/common/mix.h"
#include "core/kv/attention_window.h"

namespace pagedllm::engine {
namespace {

uint64_t script_hash(sched::RequestId request, int32_t sample, int32_t position, TokenId previous) {
  return mix64(static_cast<uint64_t>(request) * 0x9e3779b97f4a7c15ULL ^
               mix64(static_cast<uint64_t>(sample) << 32 ^ static_cast<uint32_t>(position)) ^
               static_cast<uint64_t>(static_cast<uint32_t>(previous)) << 17);
}

// The KV of a position stands for its whole prefix, as a real model's does.
uint64_t extend_fingerprint(uint64_t prefix, TokenId token) {
  return mix64(prefix ^ (static_cast<uint64_t>(static_cast<uint32_t>(token)) + 0x632be59bd9b4e019ULL));
}

size_t slot_of(const sched::ScheduledSequence& scheduled, int32_t position, int32_t block_size) {
  const auto block = scheduled.block_table[static_cast<size_t>(position / block_size)];
  return static_cast<size_t>(block) * static_cast<size_t>(block_size) + static_cast<size_t>(position % block_size);
}

}  // namespace

ScriptedExecutor::ScriptedExecutor(const ScriptedExecutorConfig& config, const kv::KvCacheConfig& cache)
    : config_(config), block_size_(cache.block_size), sliding_window_(cache.sliding_window) {
  if (config_.verify_kv) {
    device_slots_.assign(static_cast<size_t>(cache.num_device_blocks) * cache.block_size, 0);
    host_slots_.assign(static_cast<size_t>(cache.num_host_blocks) * cache.block_size, 0);
  }
}

TokenId ScriptedExecutor::scripted_token(sched::RequestId request, int32_t sample, int32_t position,
                                         TokenId previous) const {
  const uint64_t hash = script_hash(request, sample, position, previous);
  if (config_.eos_token_id && config_.eos_period > 0 && (hash >> 40) % static_cast<uint64_t>(config_.eos_period) == 0) {
    return *config_.eos_token_id;
  }
  auto token = static_cast<TokenId>(hash % static_cast<uint64_t>(config_.vocab_size));
  if (config_.eos_token_id && token == *config_.eos_token_id) token = (token + 1) % config_.vocab_size;
  return token;
}

sched::StepResult ScriptedExecutor::execute(const sched::StepPlan& plan) {
  if (config_.verify_kv) {
    apply_block_operations(plan);
    // Every new K/V of the step is written before any attention reads (as a layer does).
    for (const sched::ScheduledSequence& scheduled : plan.sequences) write_kv(scheduled);
    for (const sched::ScheduledSequence& scheduled : plan.sequences) check_kv(scheduled);
  }
  // Outputs handed back by recycle() are filled again in place: their sample vectors keep their
  // buffers, so a step allocates nothing per sequence.
  sched::StepResult result;
  result.outputs = std::move(spare_outputs_);
  size_t used = 0;
  for (const sched::ScheduledSequence& scheduled : plan.sequences) {
    if (!scheduled.sample) continue;
    if (used == result.outputs.size()) {
      if (extra_outputs_.empty()) {
        result.outputs.emplace_back();
      } else {
        result.outputs.push_back(std::move(extra_outputs_.back()));
        extra_outputs_.pop_back();
      }
    }
    sched::SequenceOutput& output = result.outputs[used++];
    output.samples.clear();
    output.top_logprobs.clear();
    sample(scheduled, output);
  }
  while (result.outputs.size() > used) {  // kept for a later step with more outputs
    extra_outputs_.push_back(std::move(result.outputs.back()));
    result.outputs.pop_back();
  }
  result.elapsed_seconds = config_.seconds_per_step + config_.seconds_per_token * plan.num_batched_tokens;
  ++num_steps_;
  return result;
}

void ScriptedExecutor::recycle(sched::StepResult&& result) {
  if (result.outputs.capacity() >= spare_outputs_.capacity()) spare_outputs_ = std::move(result.outputs);
}

void ScriptedExecutor::apply_block_operations(const sched::StepPlan& plan) {
  const auto block_size = static_cast<size_t>(block_size_);
  const auto copy_block = [block_size](const std::vector<uint64_t>& from, kv::BlockId src, std::vector<uint64_t>& to,
                                       kv::BlockId dst) {
    std::copy_n(from.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(src) * block_size), block_size,
                to.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(dst) * block_size));
  };
  for (const kv::BlockMove& move : plan.swap_out) copy_block(device_slots_, move.src, host_slots_, move.dst);
  for (const kv::BlockMove& move : plan.swap_in) copy_block(host_slots_, move.src, device_slots_, move.dst);
  for (const kv::BlockCopy& copy : plan.copies) copy_block(device_slots_, copy.src, device_slots_, copy.dst);
}

void ScriptedExecutor::write_kv(const sched::ScheduledSequence& scheduled) {
  if (scheduled.num_unstored_tokens > 0) {
    throw std::logic_error("scripted executor: its KV check reads every token, and sequence " +
                           std::to_string(scheduled.seq) + " has " + std::to_string(scheduled.num_unstored_tokens) +
                           " unstored (it reads prompt tokens: the engine must store them)");
  }
  if (static_cast<int64_t>(scheduled.block_table.size()) * block_size_ < scheduled.end) {
    throw std::logic_error("scripted executor: sequence " + std::to_string(scheduled.seq) + " has " +
                           std::to_string(scheduled.block_table.size()) + " blocks for " +
                           std::to_string(scheduled.end) + " tokens");
  }
  scratch_prefix_.resize(static_cast<size_t>(scheduled.end));
  uint64_t prefix = 0;
  for (int32_t position = 0; position < scheduled.end; ++position) {
    prefix = extend_fingerprint(prefix, scheduled.tokens[static_cast<size_t>(position)]);
    scratch_prefix_[static_cast<size_t>(position)] = prefix;
  }
  for (int32_t position = scheduled.start; position < scheduled.end; ++position) {
    device_slots_[slot_of(scheduled, position, block_size_)] = scratch_prefix_[static_cast<size_t>(position)];
  }
}

void ScriptedExecutor::check_kv(const sched::ScheduledSequence& scheduled) {
  // What attention reads: from the window start of the step's first query (every position
  // without a window); the blocks before it may have been released.
  const int32_t first_read = kv::first_visible_position(scheduled.start, sliding_window_);
  uint64_t prefix = 0;
  for (int32_t position = 0; position < scheduled.end; ++position) {
    prefix = extend_fingerprint(prefix, scheduled.tokens[static_cast<size_t>(position)]);
    if (position < first_read) continue;
    const size_t slot = slot_of(scheduled, position, block_size_);
    if (device_slots_[slot] != prefix) {
      throw std::logic_error("scripted executor: sequence " + std::to_string(scheduled.seq) + " of request " +
                             std::to_string(scheduled.request) + " reads the wrong KV at position " +
                             std::to_string(position) + " (block " +
                             std::to_string(scheduled.block_table[static_cast<size_t>(position / block_size_)]) +
                             "): its block table does not hold its prefix");
    }
  }
  num_kv_reads_checked_ += scheduled.end - first_read;
}

void ScriptedExecutor::sample(const sched::ScheduledSequence& scheduled, sched::SequenceOutput& output) const {
  output.seq = scheduled.seq;
  if (scheduled.num_proposed_tokens > 0) {
    verify(scheduled, output);
    return;
  }
  const TokenId previous = scheduled.tokens.back();
  const int32_t position = scheduled.end;
  if (scheduled.num_beam_candidates > 0) {
    for (int32_t rank = 0; rank < scheduled.num_beam_candidates; ++rank) {
      output.samples.push_back(
          {allowed(scheduled, position,
                   scripted_token(scheduled.request, scheduled.sample_index * 64 + rank, position, previous)),
           logprob_of(scheduled, scheduled.sample_index, rank, position, previous)});
    }
    return;
  }
  for (int32_t k = 0; k < scheduled.num_samples; ++k) {
    draw(scheduled, scheduled.num_samples > 1 ? k : scheduled.sample_index, position, previous, output);
  }
}

void ScriptedExecutor::verify(const sched::ScheduledSequence& scheduled, sched::SequenceOutput& output) const {
  // A verify pass: the script's token at each proposal's position, accepted while it equals the
  // proposal (as the real samplers accept a proposal their own draw equals).
  const std::span<const TokenId> tokens = scheduled.tokens;
  const size_t confirmed = scheduled.confirmed_tokens().size();  // an index into tokens
  const int32_t unstored = scheduled.num_unstored_tokens;        // position = index + unstored
  // A request of a measured trace brings its own rates (a position it has none for is rejected).
  const bool per_request = scheduled.params != nullptr && scheduled.params->simulated_speculation != nullptr;
  const std::vector<double>& rates =
      per_request ? scheduled.params->simulated_speculation->accepted_per_position : config_.accepted_per_position;
  const auto rate = [&rates](size_t j) { return j < rates.size() ? rates[j] : 0.0; };
  const uint64_t stream = config_.acceptance_seed == 0 ? 0 : mix64(config_.acceptance_seed);
  for (size_t j = 0;; ++j) {
    const auto position = static_cast<int32_t>(confirmed + j) + unstored;
    const bool last = j == static_cast<size_t>(scheduled.num_proposed_tokens);
    if (!last && (j < rates.size() || per_request)) {
      // The simulator's acceptance: given the ones before it, proposal j is kept with
      // probability rates[j] / rates[j - 1]; a rejection yields a token other than the proposal
      // (the script's, else the next allowed id), unless the proposal is all that is allowed.
      const TokenId proposal = tokens[confirmed + j];
      const TokenId previous = tokens[confirmed + j - 1];
      const double given = j == 0 ? 1.0 : rate(j - 1);
      const double u =
          static_cast<double>((script_hash(scheduled.request, scheduled.sample_index + 0x5bec, position, 0) ^ stream) >>
                              11) *
          0x1.0p-53;
      TokenId token = proposal;
      if (!(given > 0.0 && u < rate(j) / given)) {
        token =
            allowed(scheduled, position, scripted_token(scheduled.request, scheduled.sample_index, position, previous));
        if (token == proposal) token = allowed(scheduled, position, (proposal + 1) % config_.vocab_size);
      }
      output.samples.push_back({token, logprob_of(scheduled, scheduled.sample_index, 0, position, previous)});
      if (scheduled.params != nullptr && scheduled.params->logprobs)
        output.top_logprobs.push_back({output.samples.back()});
      if (token != proposal) break;
      continue;
    }
    const TokenId drawn = draw(scheduled, scheduled.sample_index, position, tokens[confirmed + j - 1], output);
    if (last || drawn != tokens[confirmed + j]) break;
  }
}

float ScriptedExecutor::logprob_of(const sched::ScheduledSequence& scheduled, int32_t sample, int32_t rank,
                                   int32_t position, TokenId previous) const {
  const uint64_t hash = script_hash(scheduled.request, sample + 7919 * rank, position, previous);
  return -0.05f * static_cast<float>(rank + 1) - static_cast<float>(hash % 1000) * 1e-4f;
}

TokenId ScriptedExecutor::allowed(const sched::ScheduledSequence& scheduled, int32_t position, TokenId token) const {
  // min_tokens, as the real samplers: no stop token until that many are out (the next id instead).
  const std::vector<TokenId>* suppressed = nullptr;
  if (scheduled.params != nullptr && scheduled.params->suppresses_stop_tokens(position - scheduled.num_prompt_tokens)) {
    suppressed = &scheduled.params->all_stop_token_ids;
  }
  // Structured outputs: a token the constraint refuses becomes the next id it allows (a verify
  // pass: under the mask of this position).
  const std::span<const uint32_t> mask =
      scheduled.allowed_row(static_cast<size_t>(position - (scheduled.num_tokens() - scheduled.num_proposed_tokens)));
  if (suppressed == nullptr && mask.empty()) return token;
  const auto refused = [&](TokenId candidate, bool count_min_tokens) {
    if (!mask.empty() && !structured::is_allowed(mask, candidate)) return true;
    return count_min_tokens && suppressed != nullptr &&
           std::find(suppressed->begin(), suppressed->end(), candidate) != suppressed->end();
  };
  const auto next_not_refused = [&](TokenId candidate, bool count_min_tokens) {
    for (int32_t tries = 0; tries < config_.vocab_size && refused(candidate, count_min_tokens); ++tries) {
      candidate = (candidate + 1) % config_.vocab_size;
    }
    return candidate;
  };
  // When min_tokens holds back the only tokens a constraint allows, the constraint wins (as in the
  // real samplers, which then take the argmax of the constrained logits).
  const TokenId candidate = next_not_refused(token, true);
  return refused(candidate, true) ? next_not_refused(token, false) : candidate;
}

TokenId ScriptedExecutor::draw(const sched::ScheduledSequence& scheduled, int32_t sample, int32_t position,
                               TokenId previous, sched::SequenceOutput& output) const {
  const TokenId token = allowed(scheduled, position, scripted_token(scheduled.request, sample, position, previous));
  output.samples.push_back({token, logprob_of(scheduled, sample, 0, position, previous)});
  if (scheduled.params != nullptr && scheduled.params->logprobs) {
    std::vector<sched::SampledToken> top{output.samples.back()};
    for (int32_t rank = 1; rank < *scheduled.params->logprobs; ++rank) {
      top.push_back({scripted_token(scheduled.request, sample + 4096 * rank, position, previous),
                     logprob_of(scheduled, sample, rank, position, previous)});
    }
    output.top_logprobs.push_back(std::move(top));
  }
  return token;
}

}  // namespace pagedllm::engine
