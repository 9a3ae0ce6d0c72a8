// Unit tests of the scheduling policies (core/sched/policy.h): pure functions, no engine.
#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <optional>
#include <vector>

#include "core/sched/policy.h"

namespace sched = pagedllm::sched;
using sched::PreemptionMode;
using sched::SchedulingPolicy;

namespace {

struct GroupSpec {
  sched::RequestId id = 0;
  double arrival = 0.0;
  int32_t priority = 0;
  int32_t num_seqs = 1;
  int32_t num_finished_seqs = 0;  // of num_seqs, finished (stopped early)
};

sched::SequenceGroup make_group(const GroupSpec& spec) {
  sched::SequenceGroup group;
  group.request.id = spec.id;
  group.request.arrival_time = spec.arrival;
  group.request.priority = spec.priority;
  group.request.prompt_tokens = {1, 2, 3};
  for (int32_t i = 0; i < spec.num_seqs; ++i) {
    sched::Sequence seq;
    seq.id = spec.id * 100 + i;
    seq.tokens = {1, 2, 3, 4};
    seq.num_prompt_tokens = 3;
    if (i < spec.num_finished_seqs) seq.finish_reason = sched::FinishReason::stop;
    group.seqs.push_back(seq);
  }
  return group;
}

sched::SchedulerConfig config_with(std::optional<PreemptionMode> mode) {
  sched::SchedulerConfig config;
  config.preemption_mode = mode;
  return config;
}

sched::ChunkRequest chunk(int32_t start, int32_t end, int32_t token_budget, bool allow_chunking = true) {
  return {.start = start, .end = end, .token_budget = token_budget, .block_size = 4, .allow_chunking = allow_chunking};
}

}  // namespace

BOOST_AUTO_TEST_SUITE(policy)

// --- runs_before -------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(fcfs_serves_the_earlier_arrival_first_whatever_the_priority) {
  const auto early = make_group({.id = 5, .arrival = 1.0, .priority = 9});
  const auto late = make_group({.id = 1, .arrival = 2.0, .priority = 0});
  BOOST_TEST(sched::runs_before(SchedulingPolicy::fcfs, early, late));
  BOOST_TEST(!sched::runs_before(SchedulingPolicy::fcfs, late, early));
}

BOOST_AUTO_TEST_CASE(fcfs_breaks_equal_arrivals_by_request_id) {
  const auto first = make_group({.id = 3, .arrival = 1.0});
  const auto second = make_group({.id = 4, .arrival = 1.0});
  BOOST_TEST(sched::runs_before(SchedulingPolicy::fcfs, first, second));
  BOOST_TEST(!sched::runs_before(SchedulingPolicy::fcfs, second, first));
}

BOOST_AUTO_TEST_CASE(priority_serves_the_lower_priority_value_first_whatever_the_arrival) {
  const auto urgent_late = make_group({.id = 9, .arrival = 5.0, .priority = -1});
  const auto relaxed_early = make_group({.id = 0, .arrival = 0.0, .priority = 3});
  BOOST_TEST(sched::runs_before(SchedulingPolicy::priority, urgent_late, relaxed_early));
  BOOST_TEST(!sched::runs_before(SchedulingPolicy::priority, relaxed_early, urgent_late));
}

BOOST_AUTO_TEST_CASE(priority_breaks_ties_by_arrival_then_request_id) {
  const auto early = make_group({.id = 7, .arrival = 1.0, .priority = 2});
  const auto late = make_group({.id = 2, .arrival = 3.0, .priority = 2});
  BOOST_TEST(sched::runs_before(SchedulingPolicy::priority, early, late));
  BOOST_TEST(!sched::runs_before(SchedulingPolicy::priority, late, early));

  const auto low_id = make_group({.id = 4, .arrival = 1.0, .priority = 2});
  const auto high_id = make_group({.id = 6, .arrival = 1.0, .priority = 2});
  BOOST_TEST(sched::runs_before(SchedulingPolicy::priority, low_id, high_id));
  BOOST_TEST(!sched::runs_before(SchedulingPolicy::priority, high_id, low_id));
}

BOOST_AUTO_TEST_CASE(a_group_never_runs_before_itself) {
  // A strict order: sorted insertion relies on irreflexivity.
  const auto group = make_group({.id = 1, .arrival = 1.0, .priority = 1});
  BOOST_TEST(!sched::runs_before(SchedulingPolicy::fcfs, group, group));
  BOOST_TEST(!sched::runs_before(SchedulingPolicy::priority, group, group));
}

// --- choose_preemption_mode --------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(a_configured_preemption_mode_wins_over_the_group_shape) {
  const auto single = make_group({.id = 1});
  const auto parallel = make_group({.id = 2, .num_seqs = 3});
  BOOST_TEST(
      (sched::choose_preemption_mode(config_with(PreemptionMode::recompute), parallel) == PreemptionMode::recompute));
  BOOST_TEST((sched::choose_preemption_mode(config_with(PreemptionMode::swap), single) == PreemptionMode::swap));
}

BOOST_AUTO_TEST_CASE(auto_mode_swaps_groups_with_more_than_one_unfinished_sequence) {
  const auto config = config_with(std::nullopt);
  BOOST_TEST((sched::choose_preemption_mode(config, make_group({.id = 1, .num_seqs = 2})) == PreemptionMode::swap));
  BOOST_TEST((sched::choose_preemption_mode(config, make_group({.id = 2, .num_seqs = 4, .num_finished_seqs = 2})) ==
              PreemptionMode::swap));
}

BOOST_AUTO_TEST_CASE(auto_mode_recomputes_a_single_unfinished_sequence) {
  const auto config = config_with(std::nullopt);
  BOOST_TEST((sched::choose_preemption_mode(config, make_group({.id = 1})) == PreemptionMode::recompute));
  // Forked, but only one sample still runs: nothing shared is worth keeping.
  BOOST_TEST((sched::choose_preemption_mode(config, make_group({.id = 2, .num_seqs = 3, .num_finished_seqs = 2})) ==
              PreemptionMode::recompute));
}

// --- choose_victim -----------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(the_victim_is_the_last_running_group_the_step_has_not_scheduled) {
  // Rows: which of four running groups (in policy order) the step scheduled; the victim's index.
  struct Row {
    std::vector<bool> scheduled;
    int victim;  // -1: none
  };
  // clang-format off
  const Row rows[] = {
      {{false, false, false, false}, 3},  // from the back
      {{false, false, false, true}, 2},   // the back one is already in the plan
      {{false, true, false, true}, 2},
      {{false, true, true, true}, 0},
      {{true, true, true, true}, -1},     // every one scheduled: nobody to preempt
  };
  // clang-format on
  constexpr int64_t kStep = 7;
  for (const Row& row : rows) {
    std::vector<sched::SequenceGroup> groups;
    for (sched::RequestId id = 0; id < 4; ++id) groups.push_back(make_group({.id = id}));
    sched::GroupQueue running;
    for (size_t i = 0; i < groups.size(); ++i) {
      groups[i].last_scheduled_step = row.scheduled[i] ? kStep : kStep - 1;
      running.push_back(&groups[i]);
    }
    sched::SequenceGroup* victim = sched::choose_victim(running, kStep);
    BOOST_TEST(victim == (row.victim < 0 ? nullptr : &groups[static_cast<size_t>(row.victim)]));
  }
  BOOST_TEST(sched::choose_victim({}, kStep) == nullptr);
}

// --- priority_preemption ------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(a_waiting_head_preempts_the_running_tail_only_if_it_outranks_it_and_cannot_fit_now) {
  using sched::PreemptionMode;
  using Status = pagedllm::kv::AllocStatus;
  struct Row {
    int32_t head_priority;
    int32_t tail_priority;
    Status head_admission;
    std::optional<PreemptionMode> preemption;
  };
  const Row rows[] = {
      {0, 5, Status::later, PreemptionMode::recompute},  // outranks, no room: recompute (never swap)
      {-3, 0, Status::later, PreemptionMode::recompute},
      {5, 5, Status::later, std::nullopt},  // equal priority: arrival order stands
      {7, 5, Status::later, std::nullopt},  // the tail outranks the head
      {0, 5, Status::ok, std::nullopt},     // it fits without preempting anyone
      {0, 5, Status::never, std::nullopt},  // it will never fit: preempting helps nobody
  };
  for (const Row& row : rows) {
    const auto head = make_group({.id = 1, .priority = row.head_priority});
    const auto tail = make_group({.id = 2, .priority = row.tail_priority});
    BOOST_TEST((sched::priority_preemption(head, tail, row.head_admission) == row.preemption),
               "head " << row.head_priority << ", tail " << row.tail_priority << ", admission "
                       << pagedllm::kv::to_string(row.head_admission));
  }
}

// --- headroom -----------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(admissions_keep_the_watermark_and_swap_ins_a_slot_per_sequence_while_others_run) {
  const pagedllm::kv::Headroom admission = sched::admission_headroom(3);
  BOOST_TEST(admission.reserve_blocks == 3);
  BOOST_TEST(admission.min_free_after == 3);
  struct Row {
    int32_t watermark, num_seqs;
    bool others_running;
    int32_t min_free_after;
  };
  const Row rows[] = {{3, 1, true, 3}, {3, 5, true, 5}, {3, 5, false, 3}, {0, 4, true, 4}, {0, 4, false, 0}};
  for (const Row& row : rows) {
    const pagedllm::kv::Headroom headroom = sched::swap_in_headroom(row.watermark, row.num_seqs, row.others_running);
    BOOST_TEST(headroom.reserve_blocks == row.watermark);
    BOOST_TEST(headroom.min_free_after == row.min_free_after);
  }
}

// --- plan_chunk --------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(plan_chunk_takes_everything_that_fits_the_budget) {
  BOOST_TEST(sched::plan_chunk(chunk(0, 10, 64)) == 10);
  BOOST_TEST(sched::plan_chunk(chunk(0, 10, 10)) == 10);         // exactly the budget
  BOOST_TEST(sched::plan_chunk(chunk(7, 10, 3)) == 3);           // the rest of a chunked prompt
  BOOST_TEST(sched::plan_chunk(chunk(9, 10, 1)) == 1);           // a decode
  BOOST_TEST(sched::plan_chunk(chunk(0, 10, 64, false)) == 10);  // fits: chunking is not needed
}

BOOST_AUTO_TEST_CASE(plan_chunk_with_chunking_off_computes_all_or_nothing) {
  BOOST_TEST(sched::plan_chunk(chunk(0, 10, 9, false)) == 0);
  BOOST_TEST(sched::plan_chunk(chunk(0, 10, 10, false)) == 10);
}

BOOST_AUTO_TEST_CASE(plan_chunk_ends_a_partial_chunk_on_a_block_boundary) {
  BOOST_TEST(sched::plan_chunk(chunk(0, 20, 10)) == 8);  // 0..10 -> 0..8
  BOOST_TEST(sched::plan_chunk(chunk(8, 20, 10)) == 8);  // 8..18 -> 8..16
  BOOST_TEST(sched::plan_chunk(chunk(3, 20, 10)) == 9);  // 3..13 -> 3..12: fills the started block
  BOOST_TEST(sched::plan_chunk(chunk(0, 20, 8)) == 8);   // the budget is already aligned
}

BOOST_AUTO_TEST_CASE(plan_chunk_with_a_budget_smaller_than_a_block_takes_the_budget_unaligned) {
  // No block boundary lies inside the reach of the budget: take what it allows rather than nothing.
  BOOST_TEST(sched::plan_chunk(chunk(0, 20, 3)) == 3);
  BOOST_TEST(sched::plan_chunk(chunk(5, 20, 2)) == 2);
  // A boundary inside the reach is still preferred.
  BOOST_TEST(sched::plan_chunk(chunk(2, 20, 3)) == 2);
}

BOOST_AUTO_TEST_CASE(plan_chunk_with_no_budget_or_nothing_left_computes_nothing) {
  BOOST_TEST(sched::plan_chunk(chunk(0, 20, 0)) == 0);
  BOOST_TEST(sched::plan_chunk(chunk(0, 20, -3)) == 0);
  BOOST_TEST(sched::plan_chunk(chunk(20, 20, 0)) == 0);
  BOOST_TEST(sched::plan_chunk(chunk(20, 20, 8)) == 0);
}

BOOST_AUTO_TEST_SUITE_END()
