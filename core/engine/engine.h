// The engine loop: schedule, execute, apply. One engine drives any executor.
//
// step(): the scheduler plans (sched::StepPlan), the executor applies the block operations and
// runs the forward pass, then the engine applies the result: computed-token counts, sampled
// tokens, stop conditions, the fork into n samples after a prompt, beam bookkeeping, finishing
// and freeing. A VirtualClock passed in is advanced by the executor's reported step time.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "core/engine/clock.h"
#include "core/engine/engine_config.h"
#include "core/engine/executor.h"
#include "core/engine/metrics.h"
#include "core/engine/request_output.h"
#include "core/engine/step_history.h"
#include "core/kv/kv_cache_manager.h"
#include "core/kv/kv_event_log.h"
#include "core/sched/scheduler.h"
#include "core/spec/draft_model_proposer.h"

namespace pagedllm::engine {

class Engine {
 public:
  // The executor, the clock, the event log (optional) and the draft model (given exactly when
  // config.speculative.method is draft_model) must outlive the engine.
  Engine(const EngineConfig& config, Executor& executor, Clock& clock, kv::KvEventLog* event_log = nullptr,
         spec::DraftModelProposer* draft_model = nullptr);

  // Validates (validate_request) and queues. Throws sched::InvalidRequestError naming the field at
  // fault, or std::invalid_argument for a request id already in use. A request that can never fit
  // the KV cache is accepted and comes back from the next step() finished as `rejected`.
  void add_request(sched::Request request);
  // add_request for a caller that validated the request already (a server validates on the
  // thread that received it, before queueing it for the engine's thread): not validated again.
  void add_validated_request(sched::Request request);

  // Frees the request's blocks in any state; its final output comes back from the next step().
  bool abort_request(sched::RequestId id);

  // Finishes one sample of a running request as `stop` (a stop string the frontend matched on
  // its text) and frees its blocks; the request finishes with its last sample, its output coming
  // back from the next step(). False, changing nothing, for an unknown or finished request, beam
  // search, a sample that is not running, or a request that is not running (waiting, swapped).
  bool stop_sample(sched::RequestId id, int32_t sample_index);

  // One engine step. Returns the output of every request that progressed or ended, as
  // config().output_kind says (cumulative, delta, or finished requests only). The vector is the
  // engine's and is refilled by the next step, reusing its buffers (in the steady state a step
  // allocates nothing for its outputs); a caller may move outputs out of it to keep them.
  std::vector<RequestOutput>& step();

  // step() in two halves, for a simulator that decides when a step ends (replicas sharing a
  // host's cores): begin_step() schedules at the clock's time and runs the executor; it returns
  // the executor's elapsed_seconds. finish_step(end_time) applies the result as of end_time (a
  // virtual clock is set to it) and returns step()'s outputs. Between the two, requests may be
  // added (the next step schedules them) but not aborted or stopped.
  double begin_step();
  std::vector<RequestOutput>& finish_step(double end_time);
  // Between begin_step() and finish_step(): the plan the step runs.
  const sched::StepPlan& in_flight_plan() const;

  bool has_unfinished() const { return scheduler_.has_unfinished() || !pending_outputs_.empty(); }
  int64_t num_steps() const { return step_; }
  // Steps in a row that scheduled nothing while requests were unfinished (a driver's stall check).
  int64_t num_idle_steps() const { return idle_steps_; }
  const EngineConfig& config() const { return config_; }
  const EngineCounters& counters() const { return counters_; }
  const std::vector<StepMetrics>& step_metrics() const { return step_metrics_; }  // when recorded
  const StepTotals& step_totals() const { return step_totals_; }
  const StepTimeline& step_timeline() const { return step_timeline_; }
  const sched::Scheduler& scheduler() const { return scheduler_; }
  const kv::KvCacheManager& kv() const { return kv_; }
  const Clock& clock() const { return clock_; }

 private:
  // Where a synthetic prompt's stored tokens start (Sequence::num_unstored_tokens): 0 unless
  // nothing reads it.
  int32_t first_stored_prompt_token(const sched::Request& request) const;
  // Structured outputs: each constrained sampled sequence's allowed tokens, into the plan.
  void fill_token_masks(sched::StepPlan& plan);
  void apply(const sched::StepPlan& plan, const sched::StepResult& result, double end_time);
  void apply_sample(sched::SequenceGroup& group, const sched::ScheduledSequence& scheduled,
                    const sched::SequenceOutput& output);
  // A sequence's verify pass (ScheduledSequence::num_proposed_tokens > 0): its accepted proposals
  // and the executor's own token become output tokens, the rejected proposals' KV is dropped.
  void apply_verified(sched::SequenceGroup& group, sched::Sequence& seq, const sched::ScheduledSequence& scheduled,
                      const sched::SequenceOutput& output);
  // Speculative decoding: the sequence's proposals for the next step (none when off, finished,
  // at max_tokens, or while the batch is large).
  void propose(const sched::SequenceGroup& group, sched::Sequence& seq);
  // A draft model's round for the sequences propose() queued in the last step: their proposals,
  // cut as keep_allowed_proposals does. Returns the draft's time.
  double run_draft_model();
  // Structured outputs: cuts the proposals at the first one the sequence's constraint refuses.
  void keep_allowed_proposals(sched::Sequence& seq) const;
  void apply_beam_step(sched::SequenceGroup& group, std::span<const sched::SequenceOutput* const> outputs);
  void append_token(sched::SequenceGroup& group, sched::Sequence& seq, const sched::SampledToken& sampled,
                    const sched::SequenceOutput& output, size_t sample);
  // Advances the sequence's output constraint by the sampled token; a token the constraint did not
  // allow is the executor's fault (std::logic_error). A constraint that gave up takes nothing more.
  void advance_matcher(sched::Sequence& seq, TokenId token) const;
  // A sample's constraint gave up (TokenMatcher::failure(): a grammar too ambiguous to follow):
  // the request ends as `rejected` with the reason, the others go on.
  void end_if_constraint_failed(sched::SequenceGroup& group, double end_time);
  std::optional<sched::FinishReason> stop_reason(const sched::SequenceGroup& group, const sched::Sequence& seq) const;
  void finish_beams(sched::SequenceGroup& group, sched::FinishReason reason, bool keep_running_beams);
  void maybe_finish(sched::SequenceGroup& group);
  void finish_if_done(sched::SequenceGroup& group, double end_time);  // maybe_finish, then its time
  RequestOutput& next_output();  // the next slot of outputs_: last step's object, a spare or a new one
  void make_output(sched::SequenceGroup& group, RequestOutput& output) const;  // records what was reported
  void record_step(const sched::StepPlan& plan, double start, double end);

  EngineConfig config_;
  Executor& executor_;
  Clock& clock_;
  VirtualClock* virtual_clock_;  // the clock, when it is virtual (advanced by the step times)
  kv::KvEventLog* event_log_;
  spec::DraftModelProposer* draft_model_;
  // The sequences propose() queued for the draft model's next round, by request and sample index
  // (a sequence finished or preempted in between is skipped).
  struct DraftRequest {
    sched::RequestId request;
    int32_t sample_index;
    SeqId seq;
    int32_t num_proposals;
  };
  std::vector<DraftRequest> draft_requests_;
  std::vector<spec::DraftQuery> draft_queries_;    // the round's, reused
  std::vector<sched::Sequence*> draft_sequences_;  // the queries' sequences
  kv::KvCacheManager kv_;
  sched::Scheduler scheduler_;
  int64_t step_ = 0;
  int64_t idle_steps_ = 0;
  SeqId next_seq_id_ = 1;
  EngineCounters counters_;
  std::vector<StepMetrics> step_metrics_;
  StepTotals step_totals_;
  StepTimeline step_timeline_;
  std::vector<sched::RequestId> pending_outputs_;      // finished between steps (abort, rejection)
  std::vector<sched::SequenceGroup*> touched_groups_;  // requests that progressed in this step
  std::vector<RequestOutput> outputs_;                 // the last step's, handed out by step()
  size_t num_outputs_ = 0;                             // slots of outputs_ filled by this step so far
  std::vector<RequestOutput> spare_outputs_;           // earlier outputs kept for their buffers
  // The step between begin_step() and finish_step(): its plan, its result, when it began.
  bool in_flight_ = false;
  sched::StepPlan in_flight_plan_;
  sched::StepResult in_flight_result_;
  double in_flight_start_ = 0.0;
  std::vector<uint32_t> spare_token_bitmask_;  // the last plan's bitmask storage, reused
};

}  // namespace pagedllm::engine
