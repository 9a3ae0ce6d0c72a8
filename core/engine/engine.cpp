#include "core/engine/engine.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

#include "core/common/check.h"
#include "core/engine/beam_search.h"
#include "core/sampling/uniform_draw.h"
#include "core/spec/ngram_proposer.h"

namespace pagedllm::engine {

using sched::FinishReason;
using sched::GroupState;
using sched::ScheduledSequence;
using sched::Sequence;
using sched::SequenceGroup;
using sched::SequenceOutput;

Engine::Engine(const EngineConfig& config, Executor& executor, Clock& clock, kv::KvEventLog* event_log,
               spec::DraftModelProposer* draft_model)
    : config_(config),
      executor_(executor),
      clock_(clock),
      virtual_clock_(dynamic_cast<VirtualClock*>(&clock)),
      event_log_(event_log),
      draft_model_(draft_model),
      kv_(config.cache, event_log),
      scheduler_(config.scheduler, kv_),
      step_timeline_(config.timeline_capacity) {
  spec::validate(config_.speculative, config_.scheduler.max_num_batched_tokens);
  const bool wants_draft = config_.speculative.method == spec::SpeculativeMethod::draft_model;
  if (wants_draft != (draft_model != nullptr)) {
    throw std::invalid_argument(wants_draft ? "--speculative-config: draft_model: the engine was given no draft model"
                                            : "a draft model was given, but speculative decoding's method is not "
                                              "draft_model");
  }
}

void validate_request(const EngineConfig& config, const sched::SamplingParams& params, int32_t num_prompt_tokens) {
  sched::validate(params, num_prompt_tokens,
                  {.max_model_len = config.scheduler.max_model_len,
                   .max_logprobs = config.max_logprobs,
                   .vocab_size = config.vocab_size});
  if (params.output_constraint != nullptr) {
    if (config.vocab_size > 0 && params.output_constraint->vocab_size() != config.vocab_size) {
      throw sched::InvalidRequestError(
          "structured_outputs", "the output constraint was compiled for a vocabulary of " +
                                    std::to_string(params.output_constraint->vocab_size()) + " tokens; the model has " +
                                    std::to_string(config.vocab_size));
    }
    if (params.use_beam_search() && params.ignore_eos) {
      // A beam whose constraint is complete could only go on with a token it does not allow.
      throw sched::InvalidRequestError("ignore_eos", "beam search with an output constraint cannot ignore EOS");
    }
    if (config.eos_token_ids.empty() && params.stop_token_ids.empty()) {
      throw sched::InvalidRequestError("structured_outputs",
                                       "a constrained output needs a token to end it: the model has no end-of-sequence "
                                       "token and the request gives no stop_token_ids");
    }
  }
}

namespace {

// The tokens that end a constrained output once it is a whole match: the request's stop ids and
// the model's end-of-sequence ids, even with ignore_eos (which only keeps EOS from ending the
// sequence: a matcher that has ended allows nothing more, so the sequence stops there anyway).
std::vector<TokenId> constraint_stop_tokens(const sched::SamplingParams& params, const EngineConfig& config) {
  std::vector<TokenId> tokens = params.stop_token_ids;
  for (const TokenId eos : config.eos_token_ids) {
    if (std::find(tokens.begin(), tokens.end(), eos) == tokens.end()) tokens.push_back(eos);
  }
  return tokens;
}

}  // namespace

void Engine::add_request(sched::Request request) {
  const int32_t prompt_len = sched::prompt_length(request);
  validate_request(config_, request.params, prompt_len);
  if (const std::string problem = kv::content_ids_problem(request.content_ids, static_cast<size_t>(prompt_len));
      !problem.empty()) {
    throw sched::InvalidRequestError("content_ids", problem);
  }
  add_validated_request(std::move(request));
}

int32_t Engine::first_stored_prompt_token(const sched::Request& request) const {
  if (!request.prompt_tokens.empty() || !request.prompt_synthesis) return 0;
  // A model reads the prompt, and so do n-gram and draft-model proposers: all of it is written.
  const spec::SpeculativeConfig& speculative = config_.speculative;
  if (executor_.reads_prompt_tokens() || (speculative.enabled() && !speculative.simulated)) return 0;
  // A group that forks (parallel samples, beams) appends to its siblings without the prompt's
  // block hashes after a recompute: they hash their tokens, so they hold them.
  if (request.params.n > 1 || request.params.use_beam_search()) return 0;
  // Its last block is kept: the sampler reads the last token, and the block's hash its tokens once
  // outputs fill it. The blocks before it are named by the request's content ids.
  const int32_t block_size = kv_.config().block_size;
  return (sched::prompt_length(request) - 1) / block_size * block_size;
}

void Engine::add_validated_request(sched::Request request) {
  sched::SamplingParams& params = request.params;
  // vLLM's _all_stop_token_ids: the request's stop ids and, unless it ignores them, every EOS id.
  params.all_stop_token_ids = params.stop_token_ids;
  if (!params.ignore_eos) {
    for (const TokenId eos : config_.eos_token_ids) {
      if (std::find(params.all_stop_token_ids.begin(), params.all_stop_token_ids.end(), eos) ==
          params.all_stop_token_ids.end()) {
        params.all_stop_token_ids.push_back(eos);
      }
    }
  }
  if (scheduler_.find(request.id) != nullptr) {
    throw std::invalid_argument("request id " + std::to_string(request.id) + " is already in use");
  }
  std::optional<structured::TokenMatcher> matcher;
  if (params.output_constraint != nullptr) {
    matcher.emplace(params.output_constraint, constraint_stop_tokens(params, config_));
  }
  const int32_t first_stored = first_stored_prompt_token(request);
  SequenceGroup& added = scheduler_.add(sched::make_sequence_group(std::move(request), next_seq_id_++, first_stored));
  added.seqs.front().matcher = std::move(matcher);
  if (added.state == GroupState::finished) {  // can never fit: reported by the next step
    added.times.finished = clock_.now();
    ++counters_.requests_rejected;
    pending_outputs_.push_back(added.request.id);
  }
}

bool Engine::abort_request(sched::RequestId id) {
  PAGEDLLM_ASSERT(!in_flight_, "abort_request() while a step is in flight");
  if (!scheduler_.abort(id)) return false;
  scheduler_.find(id)->times.finished = clock_.now();
  ++counters_.requests_aborted;
  pending_outputs_.push_back(id);
  return true;
}

bool Engine::stop_sample(sched::RequestId id, int32_t sample_index) {
  PAGEDLLM_ASSERT(!in_flight_, "stop_sample() while a step is in flight");
  SequenceGroup* group = scheduler_.find(id);
  if (group == nullptr || group->state != GroupState::running || group->is_beam_search()) return false;
  if (sample_index < 0 || static_cast<size_t>(sample_index) >= group->seqs.size()) return false;
  Sequence& seq = group->seqs[static_cast<size_t>(sample_index)];
  if (seq.finished()) return false;
  seq.finish_reason = FinishReason::stop;
  scheduler_.release(seq);
  maybe_finish(*group);
  if (group->state == GroupState::finished) {
    group->times.finished = clock_.now();
    ++counters_.requests_finished;
    pending_outputs_.push_back(id);
  }
  return true;
}

std::vector<RequestOutput>& Engine::step() {
  const double start = clock_.now();
  const double elapsed = begin_step();
  // A virtual clock is advanced by the step's time; a wall clock has moved on by itself.
  return finish_step(virtual_clock_ != nullptr ? start + elapsed : clock_.now());
}

double Engine::begin_step() {
  PAGEDLLM_ASSERT(!in_flight_, "begin_step() while a step is in flight");
  const double start = clock_.now();
  if (event_log_ != nullptr) event_log_->set_step(step_);
  const double draft_seconds = draft_model_ != nullptr ? run_draft_model() : 0.0;
  in_flight_plan_ = scheduler_.schedule(step_, start);
  for (const sched::RejectedGroup& rejected : in_flight_plan_.rejected) {
    scheduler_.find(rejected.request)->times.finished = start;
    ++counters_.requests_rejected;
    pending_outputs_.push_back(rejected.request);
  }
  fill_token_masks(in_flight_plan_);
  in_flight_result_ = in_flight_plan_.empty() ? sched::StepResult{} : executor_.execute(in_flight_plan_);
  idle_steps_ = in_flight_plan_.empty() && in_flight_plan_.rejected.empty() ? idle_steps_ + 1 : 0;
  in_flight_start_ = start;
  in_flight_ = true;
  return draft_seconds + in_flight_result_.elapsed_seconds;
}

const sched::StepPlan& Engine::in_flight_plan() const {
  PAGEDLLM_ASSERT(in_flight_, "in_flight_plan() without a step in flight");
  return in_flight_plan_;
}

std::vector<RequestOutput>& Engine::finish_step(double end_time) {
  PAGEDLLM_ASSERT(in_flight_, "finish_step() without begin_step()");
  PAGEDLLM_ASSERT(end_time >= in_flight_start_, "a step cannot end before it began");
  in_flight_ = false;
  if (virtual_clock_ != nullptr) virtual_clock_->set(end_time);
  const double end = end_time;
  touched_groups_.clear();
  apply(in_flight_plan_, in_flight_result_, end);
  for (SequenceGroup* group : touched_groups_) {
    if (group->request.params.output_constraint != nullptr) end_if_constraint_failed(*group, end);
  }
  executor_.recycle(std::move(in_flight_result_));
  record_step(in_flight_plan_, in_flight_start_, end);
  spare_token_bitmask_ = std::move(in_flight_plan_.token_bitmask);
  scheduler_.recycle(std::move(in_flight_plan_));
  ++step_;

  // The last step's outputs are refilled in place, buffers and all (a caller that moved one out
  // left an empty shell); those this step does not need go back to the spares.
  num_outputs_ = 0;
  const auto report = [&](SequenceGroup& group) {
    const bool finished = group.state == GroupState::finished;
    if (finished || config_.output_kind != OutputKind::final_only) make_output(group, next_output());
    if (finished) scheduler_.take_finished(group.request.id);
  };
  // The requests that progressed (their groups found once, by apply), then those that ended
  // outside the step's sampling (aborted, rejected).
  for (SequenceGroup* group : touched_groups_) report(*group);
  for (const sched::RequestId id : pending_outputs_) {
    if (SequenceGroup* group = scheduler_.find(id)) report(*group);  // null: already reported
  }
  pending_outputs_.clear();
  for (size_t i = num_outputs_; i < outputs_.size(); ++i) spare_outputs_.push_back(std::move(outputs_[i]));
  outputs_.resize(num_outputs_);
  return outputs_;
}

RequestOutput& Engine::next_output() {
  if (num_outputs_ == outputs_.size()) {
    if (spare_outputs_.empty()) {
      outputs_.emplace_back();
    } else {
      outputs_.push_back(std::move(spare_outputs_.back()));
      spare_outputs_.pop_back();
    }
  }
  return outputs_[num_outputs_++];
}

void Engine::fill_token_masks(sched::StepPlan& plan) {
  plan.token_bitmask = std::move(spare_token_bitmask_);
  plan.token_bitmask.clear();
  const std::span<SequenceGroup* const> groups = scheduler_.plan_groups();
  // Rows are appended first and viewed after, since appending may move the storage.
  struct Row {
    size_t index;  // in plan.sequences
    size_t first;  // word
    size_t words;
  };
  std::vector<Row> rows;
  for (size_t i = 0; i < plan.sequences.size(); ++i) {
    const ScheduledSequence& scheduled = plan.sequences[i];
    if (!scheduled.sample) continue;
    Sequence& seq = groups[i]->seqs.at(static_cast<size_t>(scheduled.sample_index));
    if (!seq.matcher) continue;
    // A verify pass needs a row per position: the constraint's state after each proposal (the
    // matcher walks through them and back; propose() kept only proposals it allows).
    const auto words = static_cast<size_t>(seq.matcher->vocab_words());
    const auto num_rows = static_cast<size_t>(scheduled.num_proposed_tokens) + 1;
    const Row row{i, plan.token_bitmask.size(), words * num_rows};
    plan.token_bitmask.resize(row.first + row.words);
    const std::span<const TokenId> proposals = scheduled.tokens.last(num_rows - 1);
    // A matcher that fails on the way (too ambiguous a grammar) takes no more proposals; its rows
    // allow only stop tokens, and the request ends after the step.
    int32_t num_accepted = 0;
    for (size_t r = 0; r < num_rows; ++r) {
      if (r > 0) {
        if (seq.matcher->accept(proposals[r - 1])) {
          ++num_accepted;
        } else if (seq.matcher->failure().empty()) {
          throw std::logic_error("sequence " + std::to_string(seq.id) + " proposed a token its constraint refuses");
        }
      }
      seq.matcher->fill_next_mask(std::span<uint32_t>(plan.token_bitmask).subspan(row.first + r * words, words));
    }
    seq.matcher->rollback(num_accepted);
    rows.push_back(row);
  }
  for (const Row& row : rows) {
    plan.sequences[row.index].allowed_tokens =
        std::span<const uint32_t>(plan.token_bitmask).subspan(row.first, row.words);
  }
}

// --- applying a step ---------------------------------------------------------------------------

void Engine::apply(const sched::StepPlan& plan, const sched::StepResult& result, double end_time) {
  const std::span<SequenceGroup* const> groups = scheduler_.plan_groups();  // no lookup per sequence
  PAGEDLLM_ASSERT(groups.size() == plan.sequences.size(), "the plan is not the scheduler's last");
  counters_.prompt_tokens_computed += plan.num_prefill_tokens;
  for (const sched::PreemptedGroup& preempted : plan.preempted) {
    ++(preempted.mode == sched::PreemptionMode::swap ? counters_.preemptions_swap : counters_.preemptions_recompute);
  }
  counters_.blocks_swapped_out += static_cast<int64_t>(plan.swap_out.size());
  counters_.blocks_swapped_in += static_cast<int64_t>(plan.swap_in.size());

  // One pass in plan order, so that each group is read from memory once per step: the computed
  // tokens, the sampled token, the finish. A beam group's candidates are applied together after
  // the pass. (A group's sequences never move during the pass: parallel samples fork only from a
  // prompt scheduled alone, and releasing a sample keeps it in its group.)
  std::vector<std::pair<SequenceGroup*, std::vector<const SequenceOutput*>>> beam_groups;
  size_t next_output = 0;
  const bool speculating = config_.speculative.enabled();
  for (size_t i = 0; i < plan.sequences.size(); ++i) {
    const ScheduledSequence& scheduled = plan.sequences[i];
    SequenceGroup& group = *groups[i];
    PAGEDLLM_ASSERT(group.request.id == scheduled.request, "the plan is not the scheduler's last");
    Sequence& seq = group.seqs.at(static_cast<size_t>(scheduled.sample_index));
    PAGEDLLM_ASSERT(seq.id == scheduled.seq, "scheduled sequence moved within its group before apply");
    seq.num_computed_tokens = scheduled.end;
    if (!scheduled.sample) continue;
    if (next_output >= result.outputs.size() || result.outputs[next_output].seq != scheduled.seq) {
      throw std::logic_error("executor " + executor_.name() + " returned outputs that do not follow the plan");
    }
    const SequenceOutput& output = result.outputs[next_output++];
    if (group.last_sampled_step != plan.step) {
      group.last_sampled_step = plan.step;
      touched_groups_.push_back(&group);
      if (group.times.first_token < 0) {
        group.times.first_token = end_time;
        counters_.prompt_tokens += group.num_prompt_tokens;
      }
      group.times.token_times.push_back(end_time);
    }
    if (group.is_beam_search()) {
      auto it = std::find_if(beam_groups.begin(), beam_groups.end(),
                             [&](const auto& entry) { return entry.first == &group; });
      if (it == beam_groups.end()) it = beam_groups.insert(beam_groups.end(), {&group, {}});
      it->second.push_back(&output);
      continue;
    }
    if (!scheduled.is_prefill()) {
      ++counters_.decode_passes;
      if (speculating) ++group.speculation.decode_passes;
    }
    if (scheduled.num_proposed_tokens > 0) {
      apply_verified(group, seq, scheduled, output);
    } else {
      apply_sample(group, scheduled, output);
    }
    finish_if_done(group, end_time);  // its other samples, if any, were applied or ended before
  }
  if (next_output != result.outputs.size()) {
    throw std::logic_error("executor " + executor_.name() + " returned more outputs than the plan samples");
  }
  for (const auto& [group, outputs] : beam_groups) {
    apply_beam_step(*group, outputs);
    finish_if_done(*group, end_time);
  }
}

void Engine::finish_if_done(SequenceGroup& group, double end_time) {
  maybe_finish(group);
  if (group.state == GroupState::finished && group.times.finished < 0) {
    group.times.finished = end_time;
    ++counters_.requests_finished;
  }
}

void Engine::apply_sample(SequenceGroup& group, const ScheduledSequence& scheduled, const SequenceOutput& output) {
  if (static_cast<int32_t>(output.samples.size()) != scheduled.num_samples) {
    throw std::logic_error("executor " + executor_.name() + " returned " + std::to_string(output.samples.size()) +
                           " samples where the plan asked for " + std::to_string(scheduled.num_samples));
  }
  if (scheduled.num_samples > 1) {
    // Parallel sampling: the prompt's sequence forks into n samples now that its KV is complete.
    for (int32_t k = 1; k < scheduled.num_samples; ++k) scheduler_.fork(group, 0, next_seq_id_++);
    for (size_t k = 0; k < output.samples.size(); ++k) {
      append_token(group, group.seqs[k], output.samples[k], output, k);
      propose(group, group.seqs[k]);
    }
    return;
  }
  Sequence& seq = group.seqs[static_cast<size_t>(scheduled.sample_index)];
  append_token(group, seq, output.samples.front(), output, 0);
  propose(group, seq);
}

void Engine::apply_verified(SequenceGroup& group, Sequence& seq, const ScheduledSequence& scheduled,
                            const SequenceOutput& output) {
  const int32_t num_proposed = scheduled.num_proposed_tokens;
  const auto num_tokens = static_cast<int32_t>(output.samples.size());
  const std::span<const TokenId> proposals =
      std::span<const TokenId>(seq.tokens).last(static_cast<size_t>(num_proposed));
  if (num_tokens < 1 || num_tokens > num_proposed + 1) {
    throw std::logic_error("executor " + executor_.name() + " returned " + std::to_string(num_tokens) +
                           " tokens for a verify pass of " + std::to_string(num_proposed) + " proposals");
  }
  const int32_t num_accepted = num_tokens - 1;
  for (int32_t j = 0; j < num_accepted; ++j) {
    if (output.samples[static_cast<size_t>(j)].token != proposals[static_cast<size_t>(j)]) {
      throw std::logic_error("executor " + executor_.name() + " accepted token " +
                             std::to_string(output.samples[static_cast<size_t>(j)].token) + " where sequence " +
                             std::to_string(seq.id) + " proposed " + std::to_string(proposals[static_cast<size_t>(j)]));
    }
  }
  ++counters_.spec_drafts;
  counters_.spec_draft_tokens += num_proposed;
  counters_.spec_accepted_tokens += num_accepted;
  std::vector<int64_t>& per_position = counters_.spec_accepted_per_position;
  if (per_position.size() < static_cast<size_t>(num_proposed))
    per_position.resize(static_cast<size_t>(num_proposed), 0);
  for (int32_t j = 0; j < num_accepted; ++j) ++per_position[static_cast<size_t>(j)];
  group.speculation.add_verify(num_proposed, num_accepted);

  scheduler_.take_proposals(seq);
  // The tokens in order, as if sampled one step at a time: a stop ends the sequence there, and
  // the tokens after it are dropped (its blocks go with it).
  for (int32_t j = 0; j < num_tokens && !seq.finished(); ++j) {
    append_token(group, seq, output.samples[static_cast<size_t>(j)], output, static_cast<size_t>(j));
  }
  if (seq.finished()) return;
  scheduler_.settle_proposals(seq, num_accepted);
  propose(group, seq);
}

void Engine::propose(const SequenceGroup& group, Sequence& seq) {
  const spec::SpeculativeConfig& speculative = config_.speculative;
  if (!speculative.enabled()) return;
  seq.proposals.clear();
  if (seq.finished()) return;
  // A large batch keeps the machine busy without it (SpeculativeConfig::disable_by_batch_size).
  if (speculative.disable_by_batch_size > 0 && scheduler_.num_running() > speculative.disable_by_batch_size) return;
  // A verify pass yields at most one token past its proposals: no more than max_tokens can use.
  const int32_t room = group.request.params.max_tokens - seq.num_output_tokens() - 1;
  const int32_t count = std::min(speculative.num_speculative_tokens, room);
  if (count <= 0) return;
  if (draft_model_ != nullptr) {  // proposed by the draft model's round, before the next step
    const auto sample_index = static_cast<int32_t>(&seq - group.seqs.data());
    draft_requests_.push_back({group.request.id, sample_index, seq.id, count});
    return;
  }
  if (speculative.simulated) {
    // The simulator: a draft at the measured rate, of placeholder tokens (the scripted executor
    // accepts them at the measured rates); a draw per sequence and length, as reproducible as
    // the script.
    // A measured trace's request brings its own rates (SamplingParams::simulated_speculation).
    const spec::SimulatedAcceptance& rates = group.request.params.simulated_speculation != nullptr
                                                 ? *group.request.params.simulated_speculation
                                                 : *speculative.simulated;
    const double u = sampling::uniform_draw(
        static_cast<uint64_t>(seq.id) + speculative.simulated->seed * 0x9e3779b97f4a7c15ULL, 0x5bec, seq.num_tokens());
    if (u < rates.draft_rate) seq.proposals.assign(static_cast<size_t>(count), seq.tokens.back());
    if (seq.matcher) keep_allowed_proposals(seq);
    return;
  }
  spec::propose_ngram(seq.tokens, {.min_n = speculative.prompt_lookup_min, .max_n = speculative.prompt_lookup_max},
                      count, seq.proposals);
  if (seq.matcher) keep_allowed_proposals(seq);
}

double Engine::run_draft_model() {
  // The draft's KV lives only while the target's does, on the device.
  const auto on_device = [this](SeqId seq) { return kv_.contains(seq) && !kv_.is_swapped(seq); };
  draft_model_->release_gone(on_device);
  draft_queries_.clear();
  draft_sequences_.clear();
  for (const DraftRequest& request : draft_requests_) {
    SequenceGroup* group = scheduler_.find(request.request);
    if (group == nullptr || group->state != GroupState::running) continue;
    Sequence& seq = group->seqs.at(static_cast<size_t>(request.sample_index));
    if (seq.id != request.seq || seq.finished() || !on_device(seq.id)) continue;
    draft_sequences_.push_back(&seq);
    draft_queries_.push_back({.request = request.request,
                              .seq = seq.id,
                              .sample_index = request.sample_index,
                              .tokens = seq.tokens,
                              .num_prompt_tokens = seq.num_prompt_tokens,
                              .cache_salt = group->request.cache_salt,
                              .num_proposals = request.num_proposals,
                              .proposals = &seq.proposals});
  }
  draft_requests_.clear();
  if (draft_queries_.empty()) return 0.0;
  const spec::DraftRoundStats stats = draft_model_->propose(draft_queries_);
  counters_.draft_passes += stats.num_passes;
  counters_.draft_tokens_computed += stats.num_tokens_computed;
  counters_.draft_seconds += stats.elapsed_seconds;
  for (Sequence* seq : draft_sequences_) {
    for (const TokenId token : seq->proposals) {
      if (token < 0 || (config_.vocab_size > 0 && token >= config_.vocab_size)) {
        throw std::logic_error("the draft model proposed token " + std::to_string(token) +
                               ", outside the target's vocabulary");
      }
    }
    if (seq->matcher) keep_allowed_proposals(*seq);
  }
  return stats.elapsed_seconds;
}

void Engine::keep_allowed_proposals(Sequence& seq) const {
  // A proposal the constraint refuses could never be accepted: the draft ends before it (and
  // after a token that ends the constraint, which allows nothing more).
  structured::TokenMatcher& matcher = *seq.matcher;
  size_t kept = 0;
  while (kept < seq.proposals.size() && !matcher.ended() && matcher.accept(seq.proposals[kept])) ++kept;
  matcher.rollback(static_cast<int32_t>(kept));
  seq.proposals.resize(kept);
}

void Engine::append_token(SequenceGroup& group, Sequence& seq, const sched::SampledToken& sampled,
                          const SequenceOutput& output, size_t sample) {
  advance_matcher(seq, sampled.token);
  seq.tokens.push_back(sampled.token);
  seq.cumulative_logprob += sampled.logprob;
  if (group.request.params.logprobs) {
    std::vector<std::pair<TokenId, float>> top;
    if (sample < output.top_logprobs.size()) {
      for (const sched::SampledToken& entry : output.top_logprobs[sample]) top.emplace_back(entry.token, entry.logprob);
    }
    seq.top_logprobs.push_back(std::move(top));
    seq.token_logprobs.push_back(sampled.logprob);
  }
  ++counters_.generation_tokens;
  if (const auto reason = stop_reason(group, seq)) {
    seq.finish_reason = *reason;
    scheduler_.release(seq);
  }
}

void Engine::advance_matcher(Sequence& seq, TokenId token) const {
  if (!seq.matcher || seq.matcher->accept(token) || !seq.matcher->failure().empty()) return;
  throw std::logic_error("executor " + executor_.name() + " sampled token " + std::to_string(token) + " for sequence " +
                         std::to_string(seq.id) + ", which its output constraint does not allow");
}

void Engine::end_if_constraint_failed(SequenceGroup& group, double end_time) {
  const std::string* failure = nullptr;
  const auto find_failure = [&](const Sequence& seq) {
    if (failure == nullptr && seq.matcher && !seq.matcher->failure().empty()) failure = &seq.matcher->failure();
  };
  std::for_each(group.seqs.begin(), group.seqs.end(), find_failure);
  std::for_each(group.finished_beams.begin(), group.finished_beams.end(), find_failure);
  if (failure == nullptr) return;
  group.finish_message = std::string(kConstraintFailedPrefix) + *failure;
  if (group.state == GroupState::finished) {
    --counters_.requests_finished;  // a failed matcher allows only stop tokens: one may have ended it
  } else {
    scheduler_.finish(group, FinishReason::rejected);
    group.times.finished = end_time;
  }
  ++counters_.requests_rejected;
  group.finish_reason = FinishReason::rejected;
  for (Sequence& seq : group.seqs) seq.finish_reason = FinishReason::rejected;
}

std::optional<FinishReason> Engine::stop_reason(const SequenceGroup& group, const Sequence& seq) const {
  const sched::SamplingParams& params = group.request.params;
  const TokenId last = seq.tokens.back();
  if (seq.matcher && seq.matcher->ended()) return FinishReason::stop;  // the constraint allows nothing more
  if (seq.num_output_tokens() >= params.min_tokens &&
      std::find(params.all_stop_token_ids.begin(), params.all_stop_token_ids.end(), last) !=
          params.all_stop_token_ids.end()) {
    return FinishReason::stop;  // a stop id, or an EOS id unless ignore_eos
  }
  if (seq.num_output_tokens() >= params.max_tokens) return FinishReason::length;
  if (seq.num_tokens() >= config_.scheduler.max_model_len) return FinishReason::length;
  return std::nullopt;
}

void Engine::apply_beam_step(SequenceGroup& group, std::span<const SequenceOutput* const> outputs) {
  const sched::SamplingParams& params = group.request.params;
  // Beams sample in lockstep (the scheduler holds back beams that finish recomputing early).
  PAGEDLLM_ASSERT(static_cast<int32_t>(outputs.size()) == group.num_unfinished_seqs(), "a beam missed its step");
  std::vector<BeamCandidate> candidates;
  std::vector<const SequenceOutput*> output_of(group.seqs.size(), nullptr);  // by parent index
  for (const SequenceOutput* output : outputs) {
    const auto parent =
        std::find_if(group.seqs.begin(), group.seqs.end(), [&](const Sequence& seq) { return seq.id == output->seq; });
    PAGEDLLM_ASSERT(parent != group.seqs.end(), "beam output for an unknown sequence");
    const auto index = static_cast<int32_t>(parent - group.seqs.begin());
    output_of[static_cast<size_t>(index)] = output;
    for (const sched::SampledToken& sampled : output->samples) {
      candidates.push_back({index, sampled.token, sampled.logprob, parent->cumulative_logprob + sampled.logprob});
    }
  }
  // Tokens that end a beam: EOS (unless ignored) and the stop ids, once min_tokens are out. Before
  // that the executor offers none of them (min_tokens' suppression applies to candidates too),
  // except where an output constraint allows nothing else: the constraint wins, and its stop
  // tokens (EOS even with ignore_eos) end the beam whenever offered, since its matcher then allows
  // nothing more.
  std::vector<TokenId> stop_tokens;
  if (group.seqs.front().num_output_tokens() + 1 >= params.min_tokens) stop_tokens = params.all_stop_token_ids;
  if (params.output_constraint) {
    for (const TokenId token : constraint_stop_tokens(params, config_)) {
      if (std::find(stop_tokens.begin(), stop_tokens.end(), token) == stop_tokens.end()) stop_tokens.push_back(token);
    }
  }
  const int32_t room = params.beam_width - static_cast<int32_t>(group.finished_beams.size());
  const BeamStep step = select_beams(std::move(candidates), params.beam_width, stop_tokens, room);
  // With logprobs asked, a beam's token carries its parent's best candidates (the executor
  // returned them by descending logprob).
  const auto record_logprobs = [&](Sequence& seq, int32_t parent, float logprob) {
    if (!params.logprobs) return;
    seq.token_logprobs.push_back(logprob);
    std::vector<std::pair<TokenId, float>> top;
    for (const sched::SampledToken& entry : output_of[static_cast<size_t>(parent)]->samples) {
      if (static_cast<int32_t>(top.size()) == *params.logprobs) break;
      top.emplace_back(entry.token, entry.logprob);
    }
    seq.top_logprobs.push_back(std::move(top));
  };
  for (const BeamCandidate& complete : step.complete) {
    Sequence hypothesis = group.seqs[static_cast<size_t>(complete.parent)];
    advance_matcher(hypothesis, complete.token);
    hypothesis.tokens.push_back(complete.token);
    hypothesis.cumulative_logprob = complete.score;
    hypothesis.finish_reason = FinishReason::stop;
    record_logprobs(hypothesis, complete.parent, complete.logprob);
    group.finished_beams.push_back(std::move(hypothesis));
    ++counters_.generation_tokens;
  }
  // The first candidate of a beam extends it in place; each further one forks it first.
  const size_t num_parents = group.seqs.size();
  std::vector<int32_t> uses(num_parents, 0);
  std::vector<size_t> targets;
  for (const BeamCandidate& candidate : step.extend) {
    const auto parent = static_cast<size_t>(candidate.parent);
    if (uses[parent]++ == 0) {
      targets.push_back(parent);
    } else {
      scheduler_.fork(group, parent, next_seq_id_++);
      targets.push_back(group.seqs.size() - 1);
    }
  }
  for (size_t j = 0; j < step.extend.size(); ++j) {
    Sequence& seq = group.seqs[targets[j]];
    advance_matcher(seq, step.extend[j].token);
    seq.tokens.push_back(step.extend[j].token);
    seq.cumulative_logprob = step.extend[j].score;
    record_logprobs(seq, step.extend[j].parent, step.extend[j].logprob);
    ++counters_.generation_tokens;
  }
  // Beams that no candidate extends are dropped.
  for (size_t i = num_parents; i-- > 0;) {
    if (uses[i] > 0) continue;
    scheduler_.release(group.seqs[i]);
    group.seqs.erase(group.seqs.begin() + static_cast<std::ptrdiff_t>(i));
  }
  const bool at_length = std::all_of(group.seqs.begin(), group.seqs.end(), [&](const Sequence& seq) {
    return seq.num_output_tokens() >= params.max_tokens || seq.num_tokens() >= config_.scheduler.max_model_len;
  });
  if (group.seqs.empty() || static_cast<int32_t>(group.finished_beams.size()) >= params.beam_width) {
    finish_beams(group, FinishReason::stop, /*keep_running_beams=*/false);
  } else if (at_length) {
    finish_beams(group, FinishReason::length, /*keep_running_beams=*/true);
  }
}

void Engine::finish_beams(SequenceGroup& group, FinishReason reason, bool keep_running_beams) {
  // Enough hypotheses ended: the beams still running are dropped, as unfinished work. At the
  // length limit the running beams are complete hypotheses themselves.
  for (Sequence& seq : group.seqs) {
    if (seq.finished()) continue;
    seq.finish_reason = reason;
    if (keep_running_beams) group.finished_beams.push_back(seq);
  }
  scheduler_.finish(group, reason);
}

void Engine::maybe_finish(SequenceGroup& group) {
  if (group.state == GroupState::finished || group.is_beam_search() || group.num_unfinished_seqs() > 0) return;
  scheduler_.finish(group, group.seqs.front().finish_reason);
}

void Engine::make_output(SequenceGroup& group, RequestOutput& output) const {
  // Every field is assigned, so a reused output keeps nothing of its last request but the
  // capacity of its vectors.
  output.id = group.request.id;
  output.num_prompt_tokens = group.num_prompt_tokens;
  output.finished = group.state == GroupState::finished;
  output.finish_reason = group.finish_reason;
  if (!group.finish_message.empty() || !output.message.empty()) output.message = group.finish_message;
  if (output.finished && config_.speculative.enabled()) {
    output.speculation = std::make_shared<const spec::SpeculationTally>(group.speculation);
  } else if (output.speculation != nullptr) {
    output.speculation.reset();
  }
  const bool delta = config_.output_kind == OutputKind::delta;
  if (delta) {
    // O(1) per report: everything but the token times (a streaming client keeps its own).
    const sched::RequestTimes& times = group.times;
    output.times.arrival = times.arrival;
    output.times.first_scheduled = times.first_scheduled;
    output.times.first_token = times.first_token;
    output.times.finished = times.finished;
    output.times.token_times.clear();  // keeps its capacity
    output.times.num_preemptions_recompute = times.num_preemptions_recompute;
    output.times.num_preemptions_swap = times.num_preemptions_swap;
    static_assert(sizeof(sched::RequestTimes) == 4 * sizeof(double) + sizeof(std::vector<double>) + 2 * sizeof(int32_t),
                  "a field added to RequestTimes must be copied here too");
  } else {
    output.times = group.times;
  }
  // Delta reports carry the tokens since the last report of the same completion index (beam
  // search reorders its completions when it finishes, so its final report is whole).
  const bool whole = !delta || (group.is_beam_search() && output.finished);
  const auto report = [&](size_t i, const Sequence& seq) {
    const int32_t from = whole ? 0 : std::min(group.num_reported_tokens[i], seq.num_output_tokens());
    Completion& completion = output.completions[i];
    completion.index = static_cast<int32_t>(i);
    completion.tokens.assign(seq.tokens.begin() + (seq.num_prompt_tokens - seq.num_unstored_tokens) + from,
                             seq.tokens.end());
    completion.cumulative_logprob = seq.cumulative_logprob;
    completion.finish_reason = seq.finish_reason;
    // Logprobs only where asked: the common case skips two copies of nothing.
    if (!seq.top_logprobs.empty() || !completion.top_logprobs.empty()) {
      completion.top_logprobs.assign(seq.top_logprobs.begin() + std::min<size_t>(from, seq.top_logprobs.size()),
                                     seq.top_logprobs.end());
    }
    if (!seq.token_logprobs.empty() || !completion.token_logprobs.empty()) {
      completion.token_logprobs.assign(seq.token_logprobs.begin() + std::min<size_t>(from, seq.token_logprobs.size()),
                                       seq.token_logprobs.end());
    }
    group.num_reported_tokens[i] = seq.num_output_tokens();
  };
  const auto at_most_n = [&](size_t count) {
    const size_t reported =
        group.is_beam_search() ? std::min(count, static_cast<size_t>(group.request.params.n)) : count;
    group.num_reported_tokens.resize(std::max(group.num_reported_tokens.size(), reported), 0);
    output.completions.resize(reported);
    return reported;
  };
  if (group.is_beam_search() && output.finished && !group.finished_beams.empty()) {
    // The n best hypotheses, by score.
    std::vector<const Sequence*> best;
    for (const Sequence& beam : group.finished_beams) best.push_back(&beam);
    const double length_penalty = group.request.params.length_penalty;
    std::stable_sort(best.begin(), best.end(), [&](const Sequence* a, const Sequence* b) {
      return beam_score(a->cumulative_logprob, a->num_tokens(), length_penalty) >
             beam_score(b->cumulative_logprob, b->num_tokens(), length_penalty);
    });
    const size_t count = at_most_n(best.size());
    for (size_t i = 0; i < count; ++i) report(i, *best[i]);
  } else {
    // Samples; or the beams so far (running, aborted): at most n of them.
    const size_t count = at_most_n(group.seqs.size());
    for (size_t i = 0; i < count; ++i) report(i, group.seqs[i]);
  }
}

void Engine::record_step(const sched::StepPlan& plan, double start, double end) {
  StepMetrics metrics;
  metrics.step = plan.step;
  metrics.start_time = start;
  metrics.end_time = end;
  metrics.num_running = scheduler_.num_running();
  metrics.num_waiting = scheduler_.num_waiting();
  metrics.num_swapped = scheduler_.num_swapped();
  metrics.num_batched_tokens = plan.num_batched_tokens;
  metrics.num_prefill_tokens = plan.num_prefill_tokens;
  metrics.num_decode_tokens = plan.num_decode_tokens;
  metrics.num_scheduled_seqs = static_cast<int32_t>(plan.sequences.size());
  const kv::KvStats kv_stats = kv_.stats();
  metrics.kv_usage = kv_stats.device_usage();
  metrics.device_blocks_used = kv_stats.num_used_device_blocks();
  metrics.device_blocks_cached = kv_stats.num_cached_device_blocks;
  metrics.host_blocks_used = kv_stats.num_host_blocks - kv_stats.num_free_host_blocks;
  metrics.internal_waste_slots = kv_stats.internal_waste_slots();
  metrics.blocks_swapped_out = static_cast<int32_t>(plan.swap_out.size());
  metrics.blocks_swapped_in = static_cast<int32_t>(plan.swap_in.size());
  metrics.blocks_copied = static_cast<int32_t>(plan.copies.size());
  for (const sched::PreemptedGroup& preempted : plan.preempted) {
    ++(preempted.mode == sched::PreemptionMode::swap ? metrics.preemptions_swap : metrics.preemptions_recompute);
  }
  step_totals_.add(metrics, kv_stats.block_size);
  step_timeline_.add(metrics);
  if (config_.record_step_metrics) step_metrics_.push_back(metrics);
}

}  // namespace pagedllm::engine
