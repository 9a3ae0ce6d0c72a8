// The measured cost model: the profile's JSON form and its errors, the interpolation (exact at
// grid points, linear between them, the outer segment extended beyond), the mixed-step rule, and
// the profiler itself, run through the real engine on the scripted executor, whose step times
// are a known function of the plan.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "core/engine/scripted_executor.h"
#include "sim/profile_cost_model.h"
#include "sim/profile_grids.h"
#include "sim/profile_interpolation.h"
#include "sim/step_profile.h"
#include "sim/step_profiler.h"
#include "tests/sim/plan_builder.h"

namespace pagedllm::test {
namespace {

using sim::ProfileCostModel;
using sim::StepCost;
using sim::StepProfile;

// A profile made from known functions, so that every prediction can be computed by hand:
//   decode(b, c)  = 1 + 2 b + 0.01 b c          (bilinear: interpolation is exact everywhere)
//   prefill(n, c) = 1 + 0.5 n + 0.001 n c + 0.0001 n^2   (the square is only piecewise linear)
double decode_truth(double b, double c) { return 1.0 + 2.0 * b + 0.01 * b * c; }
double prefill_truth(double n, double c) { return 1.0 + 0.5 * n + 0.001 * n * c + 0.0001 * n * n; }

StepProfile known_profile() {
  StepProfile profile;
  profile.executor = "cpu_ref";
  profile.device = "a test";
  profile.model = {.name = "tiny",
                   .num_layers = 2,
                   .hidden_size = 64,
                   .num_heads = 4,
                   .num_kv_heads = 2,
                   .head_dim = 16,
                   .intermediate_size = 192,
                   .vocab_size = 1024};
  profile.num_threads = 1;
  profile.block_size = 16;
  profile.num_repeats = 5;
  profile.num_passes = 2;
  profile.decode.rows = {1, 2, 4, 8};
  profile.decode.columns = {16, 64, 256};
  for (double b : profile.decode.rows) {
    auto& row = profile.decode.seconds.emplace_back();
    for (double c : profile.decode.columns) row.push_back(decode_truth(b, c));
  }
  profile.prefill.rows = {1, 16, 64, 256};
  profile.prefill.columns = {0, 128, 512};
  for (double n : profile.prefill.rows) {
    auto& row = profile.prefill.seconds.emplace_back();
    for (double c : profile.prefill.columns) row.push_back(prefill_truth(n, c));
  }
  profile.prefill.filled_cells = {{3, 2}};
  profile.step_overhead_seconds = 1.0;
  profile.sample_seconds = 0.25;
  profile.random_sample_extra_seconds = 0.125;
  profile.beam_sample_extra_seconds = 0.5;
  profile.swap_out_block_seconds = 0.01;
  profile.swap_in_block_seconds = 0.02;
  profile.copy_block_seconds = 0.005;
  profile.engine_overhead = {.points = {1, 8}, .seconds = {0.1, 0.8}};
  return profile;
}

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("pagedllm_test_" + name)).string();
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

// The message of the StepProfileError that reading `text` as `source` throws ("" if none).
std::string read_error(const std::string& text, const std::string& source = "p.json") {
  try {
    sim::step_profile_from_json_text(text, source);
  } catch (const sim::StepProfileError& error) {
    return error.what();
  }
  return "";
}

// known_profile() as JSON text with one edit applied by string replacement.
std::string edited_json(const std::string& from, const std::string& to) {
  std::string text = sim::to_json_text(known_profile());
  const size_t at = text.find(from);
  BOOST_REQUIRE_MESSAGE(at != std::string::npos, "'" + from + "' is in the JSON text");
  return text.replace(at, from.size(), to);
}

sched::StepPlan with_params(sched::StepPlan plan, const sched::SamplingParams* params) {
  for (sched::ScheduledSequence& scheduled : plan.sequences) scheduled.params = params;
  return plan;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(step_profile)

BOOST_AUTO_TEST_CASE(a_profile_survives_a_json_round_trip_through_a_file) {
  const StepProfile profile = known_profile();
  const std::string path = temp_path("profile_round_trip.json");
  sim::write_step_profile(profile, path);
  const StepProfile read = sim::read_step_profile(path);
  std::filesystem::remove(path);
  BOOST_TEST(read.executor == profile.executor);
  BOOST_TEST(read.device == profile.device);
  BOOST_TEST(read.model.name == profile.model.name);
  BOOST_TEST(read.model.same_shape(profile.model));
  BOOST_TEST(read.num_threads == profile.num_threads);
  BOOST_TEST(read.block_size == profile.block_size);
  BOOST_TEST(read.statistic == profile.statistic);
  BOOST_TEST(read.num_repeats == profile.num_repeats);
  BOOST_TEST(read.num_passes == profile.num_passes);
  BOOST_TEST(read.decode.rows == profile.decode.rows, boost::test_tools::per_element());
  BOOST_TEST(read.decode.columns == profile.decode.columns, boost::test_tools::per_element());
  for (size_t i = 0; i < profile.decode.seconds.size(); ++i) {
    BOOST_TEST(read.decode.seconds[i] == profile.decode.seconds[i], boost::test_tools::per_element());
  }
  for (size_t i = 0; i < profile.prefill.seconds.size(); ++i) {
    BOOST_TEST(read.prefill.seconds[i] == profile.prefill.seconds[i], boost::test_tools::per_element());
  }
  BOOST_TEST(read.prefill.filled_cells.size() == 1u);
  BOOST_TEST(read.prefill.filled_cells[0].first == 3);
  BOOST_TEST(read.step_overhead_seconds == profile.step_overhead_seconds);
  BOOST_TEST(read.sample_seconds == profile.sample_seconds);
  BOOST_TEST(read.random_sample_extra_seconds == profile.random_sample_extra_seconds);
  BOOST_TEST(read.beam_sample_extra_seconds == profile.beam_sample_extra_seconds);
  BOOST_TEST(read.swap_out_block_seconds == profile.swap_out_block_seconds);
  BOOST_TEST(read.swap_in_block_seconds == profile.swap_in_block_seconds);
  BOOST_TEST(read.copy_block_seconds == profile.copy_block_seconds);
  BOOST_TEST(read.load_factor == profile.load_factor);
  BOOST_TEST(read.engine_overhead.seconds == profile.engine_overhead.seconds, boost::test_tools::per_element());
  BOOST_TEST(sim::to_json_text(read) == sim::to_json_text(profile));
}

BOOST_AUTO_TEST_CASE(errors_name_the_file_and_the_field) {
  BOOST_TEST(read_error(edited_json("\"sample_seconds\"", "\"sample_secs\"")) == "p.json: sample_seconds: is missing");
  BOOST_TEST(read_error(edited_json("\"executor\": \"cpu_ref\"", "\"executor\": 3")) ==
             "p.json: executor: must be a string");
  BOOST_TEST(read_error(edited_json("\"num_threads\": 1", "\"num_threads\": 1.5")) ==
             "p.json: num_threads: must be an integer");
  BOOST_TEST(read_error(edited_json("\"pagedllm_step_profile\": 1", "\"pagedllm_step_profile\": 9"))
                 .starts_with("p.json: pagedllm_step_profile: format 9"));
  BOOST_TEST(read_error("{ not json").starts_with("p.json: (document): malformed JSON"));

  StepProfile profile = known_profile();
  const std::string good = sim::to_json_text(profile);
  profile.decode.columns = {16, 16, 256};
  BOOST_TEST(read_error(sim::to_json_text(profile)) ==
             "p.json: decode.context_lengths[1]: must be larger than the point before it (ascending)");
  profile = known_profile();
  profile.prefill.seconds[2].pop_back();
  BOOST_TEST(read_error(sim::to_json_text(profile)) ==
             "p.json: prefill.seconds[2]: has 2 values, expected 3 (one per context_before)");
  profile = known_profile();
  profile.decode.seconds.pop_back();
  BOOST_TEST(read_error(sim::to_json_text(profile)) ==
             "p.json: decode.seconds: has 3 rows, expected 4 (one per num_sequences)");
  profile = known_profile();
  profile.prefill.seconds[1][0] = -1.0;
  BOOST_TEST(read_error(sim::to_json_text(profile)).starts_with("p.json: prefill.seconds[1][0]: must be a finite"));
  profile = known_profile();
  profile.decode.rows = {0, 2, 4, 8};
  BOOST_TEST(read_error(sim::to_json_text(profile)) == "p.json: decode.num_sequences[0]: must be at least 1");
  profile = known_profile();
  profile.prefill.filled_cells = {{7, 0}};
  BOOST_TEST(read_error(sim::to_json_text(profile)) == "p.json: prefill.filled_cells: cell [7, 0] is outside the grid");
  BOOST_TEST(read_error(edited_json("\"chunk_tokens\": [", "\"chunk_tokens\": [\"a\", ")) ==
             "p.json: prefill.chunk_tokens[0]: must be a number");
  BOOST_TEST(read_error(good).empty());

  const std::string missing = temp_path("no_such_profile.json");
  BOOST_CHECK_EXCEPTION(sim::read_step_profile(missing), sim::StepProfileError, [&](const sim::StepProfileError& e) {
    return std::string(e.what()) == missing + ": cannot open for reading";
  });
  const std::string path = temp_path("bad_profile.json");
  write_text(path, edited_json("\"copy_block_seconds\"", "\"copy\""));
  BOOST_CHECK_EXCEPTION(sim::read_step_profile(path), sim::StepProfileError, [&](const sim::StepProfileError& e) {
    return std::string(e.what()) == path + ": copy_block_seconds: is missing";
  });
  std::filesystem::remove(path);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(profile_interpolation)

BOOST_AUTO_TEST_CASE(is_exact_at_grid_points_and_linear_between_them) {
  const std::vector<double> axis = {1, 2, 4, 8};
  const std::vector<double> values = {10, 20, 30, 70};
  for (size_t i = 0; i < axis.size(); ++i) BOOST_TEST(sim::interpolate(axis, values, axis[i]) == values[i]);
  BOOST_TEST(sim::interpolate(axis, values, 1.5) == 15.0);
  BOOST_TEST(sim::interpolate(axis, values, 3.0) == 25.0);
  BOOST_TEST(sim::interpolate(axis, values, 7.0) == 60.0);
  BOOST_TEST(sim::interpolate(std::vector<double>{5}, std::vector<double>{3}, 100.0) == 3.0);  // one point: constant

  const StepProfile profile = known_profile();
  for (size_t i = 0; i < profile.prefill.rows.size(); ++i) {
    for (size_t j = 0; j < profile.prefill.columns.size(); ++j) {
      BOOST_TEST(sim::interpolate(profile.prefill, profile.prefill.rows[i], profile.prefill.columns[j]) ==
                 profile.prefill.seconds[i][j]);
    }
  }
  // Bilinear inside a cell: the mean of the four corners at its centre.
  const auto& s = profile.prefill.seconds;
  BOOST_TEST(sim::interpolate(profile.prefill, 40.0, 320.0) == (s[1][1] + s[1][2] + s[2][1] + s[2][2]) / 4.0,
             boost::test_tools::tolerance(1e-12));
  // A bilinear truth is reproduced everywhere in the grid.
  for (double b : {1.0, 1.5, 3.0, 5.0, 7.9}) {
    for (double c : {16.0, 20.0, 100.0, 255.0}) {
      BOOST_TEST(sim::interpolate(profile.decode, b, c) == decode_truth(b, c), boost::test_tools::tolerance(1e-12));
    }
  }
}

BOOST_AUTO_TEST_CASE(extends_the_outer_segments_linearly_beyond_the_grid) {
  const std::vector<double> axis = {1, 2, 4, 8};
  const std::vector<double> values = {10, 20, 30, 70};
  BOOST_TEST(sim::interpolate(axis, values, 16.0) == 150.0);  // the last segment's slope, 10 per unit
  BOOST_TEST(sim::interpolate(axis, values, 0.0) == 0.0);     // the first segment's, 10 per unit
  BOOST_TEST(sim::interpolate(axis, values, -1.0) == -10.0);  // not floored here
  // A bilinear truth stays exact beyond the grid in both directions (b to 64, c to 2048).
  const StepProfile profile = known_profile();
  BOOST_TEST(sim::interpolate(profile.decode, 64.0, 2048.0) == decode_truth(64, 2048),
             boost::test_tools::tolerance(1e-12));
  BOOST_TEST(sim::interpolate(profile.decode, 16.0, 0.0) == decode_truth(16, 0), boost::test_tools::tolerance(1e-12));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(profile_cost_model)

BOOST_AUTO_TEST_CASE(a_decode_only_step_costs_the_decode_table_at_the_mean_context) {
  const ProfileCostModel model({.profile = known_profile()});
  PlanBuilder builder(16);
  builder.add({.start = 39, .end = 40, .num_prompt_tokens = 10, .sample = true});
  builder.add({.start = 99, .end = 100, .num_prompt_tokens = 10, .sample = true});
  builder.add({.start = 159, .end = 160, .num_prompt_tokens = 10, .sample = true});
  const StepCost cost = model.step_cost(builder.plan());
  BOOST_TEST(cost.seconds == decode_truth(3, 100), boost::test_tools::tolerance(1e-12));
  BOOST_TEST(cost.overhead_seconds == 1.0);
  // The context-dependent part is attention: 0.01 x 3 x 100; the rest linear.
  BOOST_TEST(cost.attention_seconds == 3.0, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(cost.linear_seconds == 6.0, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(cost.seconds == cost.linear_seconds + cost.attention_seconds + cost.overhead_seconds,
             boost::test_tools::tolerance(1e-12));
}

BOOST_AUTO_TEST_CASE(a_prefill_chunk_costs_the_prefill_table_less_the_sample_when_it_does_not_end_its_prompt) {
  const ProfileCostModel model({.profile = known_profile()});
  PlanBuilder last(16);
  last.add({.start = 128, .end = 192, .num_prompt_tokens = 192, .sample = true});
  BOOST_TEST(model.step_cost(last.plan()).seconds == prefill_truth(64, 128), boost::test_tools::tolerance(1e-12));
  PlanBuilder middle(16);
  middle.add({.start = 128, .end = 192, .num_prompt_tokens = 300, .sample = false});
  BOOST_TEST(model.step_cost(middle.plan()).seconds == prefill_truth(64, 128) - 0.25,
             boost::test_tools::tolerance(1e-12));
}

BOOST_AUTO_TEST_CASE(a_mixed_step_adds_its_parts_and_pays_the_step_overhead_once) {
  const ProfileCostModel model({.profile = known_profile()});
  PlanBuilder builder(16);
  builder.add({.start = 63, .end = 64, .num_prompt_tokens = 10, .sample = true});
  builder.add({.start = 63, .end = 64, .num_prompt_tokens = 10, .sample = true});
  builder.add({.start = 0, .end = 16, .num_prompt_tokens = 16, .sample = true});
  builder.add({.start = 128, .end = 192, .num_prompt_tokens = 400, .sample = false});
  const StepCost cost = model.step_cost(builder.plan());
  const double expected = decode_truth(2, 64) + prefill_truth(16, 0) + (prefill_truth(64, 128) - 0.25) - 2 * 1.0;
  BOOST_TEST(cost.seconds == expected, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(cost.overhead_seconds == 1.0);
  BOOST_TEST(cost.seconds == cost.linear_seconds + cost.attention_seconds + cost.overhead_seconds,
             boost::test_tools::tolerance(1e-12));
}

BOOST_AUTO_TEST_CASE(random_sampling_and_beam_rows_add_their_extras) {
  const ProfileCostModel model({.profile = known_profile()});
  PlanBuilder builder(16);
  builder.add({.start = 63, .end = 64, .num_prompt_tokens = 10, .sample = true});
  builder.add({.start = 63, .end = 64, .num_prompt_tokens = 10, .sample = true});
  sched::SamplingParams greedy;
  greedy.temperature = 0.0f;
  sched::SamplingParams random;
  random.temperature = 0.7f;
  const double base = decode_truth(2, 64);
  BOOST_TEST(model.step_cost(builder.plan()).seconds == base,
             boost::test_tools::tolerance(1e-12));  // no params: greedy
  BOOST_TEST(model.step_cost(with_params(builder.plan(), &greedy)).seconds == base,
             boost::test_tools::tolerance(1e-12));
  BOOST_TEST(model.step_cost(with_params(builder.plan(), &random)).seconds == base + 2 * 0.125,
             boost::test_tools::tolerance(1e-12));
  sched::StepPlan beams = with_params(builder.plan(), &greedy);
  for (sched::ScheduledSequence& scheduled : beams.sequences) scheduled.num_beam_candidates = 4;
  BOOST_TEST(model.step_cost(beams).seconds == base + 2 * 0.5, boost::test_tools::tolerance(1e-12));
}

BOOST_AUTO_TEST_CASE(block_operations_cost_per_block_and_engine_overhead_only_when_asked) {
  PlanBuilder builder(16);
  builder.swap_out(3).swap_in(2).copy(4);
  const ProfileCostModel model({.profile = known_profile()});
  const StepCost cost = model.step_cost(builder.plan());
  BOOST_TEST(cost.swap_seconds == 3 * 0.01 + 2 * 0.02, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(cost.copy_seconds == 4 * 0.005, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(cost.overhead_seconds == 0.0);  // no forward pass
  BOOST_TEST(cost.seconds == cost.swap_seconds + cost.copy_seconds, boost::test_tools::tolerance(1e-12));

  PlanBuilder decodes(16);
  for (int i = 0; i < 4; ++i) decodes.add({.start = 63, .end = 64, .num_prompt_tokens = 10, .sample = true});
  const ProfileCostModel wall({.profile = known_profile(), .include_engine_overhead = true});
  BOOST_TEST(wall.engine_overhead_seconds(4) == 0.4, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(wall.step_cost(decodes.plan()).seconds == model.step_cost(decodes.plan()).seconds + 0.4,
             boost::test_tools::tolerance(1e-12));
  BOOST_TEST(wall.step_cost(decodes.plan()).overhead_seconds == 1.4, boost::test_tools::tolerance(1e-12));
}

BOOST_AUTO_TEST_CASE(the_load_factor_scales_the_executor_time_unless_turned_off) {
  StepProfile profile = known_profile();
  profile.load_factor = 1.5;
  PlanBuilder builder(16);
  builder.add({.start = 63, .end = 64, .num_prompt_tokens = 10, .sample = true});
  builder.add({.start = 0, .end = 16, .num_prompt_tokens = 16, .sample = true});
  builder.swap_out(2).copy(1);
  const double executor_seconds = decode_truth(1, 64) + prefill_truth(16, 0) - 1.0 + 2 * 0.01 + 0.005;
  const ProfileCostModel loaded({.profile = profile, .include_engine_overhead = true});
  const ProfileCostModel quiet({.profile = profile, .include_engine_overhead = true, .apply_load_factor = false});
  // The engine's own time (0.2 at two sequences) is not the executor's: never scaled.
  BOOST_TEST(loaded.step_cost(builder.plan()).seconds == 1.5 * executor_seconds + 0.2,
             boost::test_tools::tolerance(1e-12));
  BOOST_TEST(quiet.step_cost(builder.plan()).seconds == executor_seconds + 0.2, boost::test_tools::tolerance(1e-12));
  const StepCost cost = loaded.step_cost(builder.plan());
  BOOST_TEST(cost.swap_seconds == 1.5 * 0.02, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(cost.overhead_seconds == 1.5 * 1.0 + 0.2, boost::test_tools::tolerance(1e-12));
}

BOOST_AUTO_TEST_CASE(predictions_grow_with_sequences_context_and_chunk_tokens) {
  const ProfileCostModel model({.profile = known_profile()});
  double previous = 0.0;
  for (double b = 1; b <= 32; b += 1) {  // inside the grid and beyond it
    const double seconds = model.decode_seconds(b, 100);
    BOOST_TEST(seconds > previous);
    previous = seconds;
  }
  previous = 0.0;
  for (double c = 1; c <= 4096; c *= 2) {
    const double seconds = model.decode_seconds(4, c);
    BOOST_TEST(seconds > previous);
    previous = seconds;
  }
  previous = 0.0;
  for (double n = 1; n <= 2048; n *= 2) {
    const double seconds = model.prefill_seconds(n, 256);
    BOOST_TEST(seconds > previous);
    previous = seconds;
  }
  // Adding a sequence to a step never makes it cheaper.
  PlanBuilder builder(16);
  double step = 0.0;
  for (int i = 0; i < 6; ++i) {
    builder.add({.start = 50 + i, .end = 51 + i, .num_prompt_tokens = 10, .sample = true});
    const double seconds = model.step_cost(builder.plan()).seconds;
    BOOST_TEST(seconds > step);
    step = seconds;
  }
}

BOOST_AUTO_TEST_CASE(extrapolation_keeps_the_edge_slope_and_floors_at_zero) {
  const ProfileCostModel model({.profile = known_profile()});
  // Beyond the largest chunk (256): the last segment of each column, 192 -> 256 wide.
  const double slope = (prefill_truth(256, 0) - prefill_truth(64, 0)) / 192.0;
  BOOST_TEST(model.prefill_seconds(1024, 0) == prefill_truth(256, 0) + slope * 768, boost::test_tools::tolerance(1e-9));
  // A table that falls towards its edge would extrapolate below zero: floored.
  StepProfile falling = known_profile();
  falling.decode.seconds[0] = {3.0, 2.0, 1.0};
  const ProfileCostModel floored({.profile = falling});
  BOOST_TEST(floored.decode_seconds(1, 4096) == 0.0);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(step_profiler)

namespace {

// The profiler over the scripted executor, whose step time is 0.01 + 1e-5 x (batched tokens),
// on a quick grid of a 112-position model. `most_blocks_asked`, when given, records the largest
// KV store any session asked for.
sim::StepProfilerConfig scripted_profiler_config(int64_t* most_blocks_asked = nullptr) {
  sim::StepProfilerConfig config;
  config.grid = sim::quick_profile_grid(112);
  config.block_size = 16;
  config.max_model_len = 112;
  config.num_warmup_steps = 1;
  config.num_repeats = 3;
  config.num_passes = 2;
  config.token_begin = 3;
  config.token_end = 500;
  config.make_executor = [most_blocks_asked](const kv::KvCacheConfig& cache) -> std::unique_ptr<engine::Executor> {
    if (most_blocks_asked) *most_blocks_asked = std::max<int64_t>(*most_blocks_asked, cache.num_device_blocks);
    engine::ScriptedExecutorConfig scripted;
    scripted.vocab_size = 500;
    scripted.seconds_per_step = 0.01;
    scripted.seconds_per_token = 1e-5;
    return std::make_unique<engine::ScriptedExecutor>(scripted, cache);
  };
  return config;
}

// Every cell of both tables is the scripted step time of its row's tokens.
void check_tables_follow_the_scripted_step_time(const StepProfile& profile) {
  const auto tolerance = boost::test_tools::tolerance(1e-9);
  for (size_t i = 0; i < profile.decode.rows.size(); ++i) {
    for (size_t j = 0; j < profile.decode.columns.size(); ++j) {
      BOOST_TEST(profile.decode.seconds[i][j] == 0.01 + 1e-5 * profile.decode.rows[i], tolerance);
    }
  }
  for (size_t i = 0; i < profile.prefill.rows.size(); ++i) {
    for (size_t j = 0; j < profile.prefill.columns.size(); ++j) {
      BOOST_TEST(profile.prefill.seconds[i][j] == 0.01 + 1e-5 * profile.prefill.rows[i], tolerance);
    }
  }
}

// The scripted executor behind a cap on the tokens of one step, as the CUDA executor's step
// inputs have (sized once, at construction): a larger step throws.
class StepTokenCap final : public engine::Executor {
 public:
  StepTokenCap(std::unique_ptr<engine::Executor> inner, int32_t max_tokens)
      : inner_(std::move(inner)), max_tokens_(max_tokens) {}
  sched::StepResult execute(const sched::StepPlan& plan) override {
    if (plan.num_batched_tokens > max_tokens_) {
      throw std::runtime_error("step of " + std::to_string(plan.num_batched_tokens) + " tokens, the limit is " +
                               std::to_string(max_tokens_));
    }
    return inner_->execute(plan);
  }
  std::string name() const override { return "capped " + inner_->name(); }

 private:
  std::unique_ptr<engine::Executor> inner_;
  int32_t max_tokens_;
};

}  // namespace

// An executor that takes at most N tokens a step (the CUDA executor's sized step inputs): the
// mixed steps' set-up prefills (4 prompts of 28 tokens here, 112 in one step uncapped) are split
// over several steps, and the profile is the uncapped one. A grid whose timed shapes cannot fit
// one step is refused by validate, naming the field.
BOOST_AUTO_TEST_CASE(keeps_every_step_within_the_executors_token_limit) {
  sim::StepProfilerConfig capped = scripted_profiler_config();
  capped.max_num_batched_tokens = 80;
  const auto scripted = capped.make_executor;
  capped.make_executor = [scripted](const kv::KvCacheConfig& cache) -> std::unique_ptr<engine::Executor> {
    return std::make_unique<StepTokenCap>(scripted(cache), 80);
  };
  const StepProfile profile = sim::measure_step_profile(capped);
  check_tables_follow_the_scripted_step_time(profile);
  BOOST_TEST(profile.step_overhead_seconds == 0.01, boost::test_tools::tolerance(1e-9));

  // Without the cap in the config, the same executor refuses the first oversized step.
  sim::StepProfilerConfig uncapped = capped;
  uncapped.max_num_batched_tokens = 0;
  BOOST_CHECK_EXCEPTION(sim::measure_step_profile(uncapped), std::runtime_error, [](const std::runtime_error& e) {
    return std::string(e.what()).find("the limit is 80") != std::string::npos;
  });

  sim::StepProfilerConfig too_small = capped;
  too_small.max_num_batched_tokens = 64;
  too_small.grid.mixed_chunk_tokens = {64};  // the mixed step: 4 decodes + a 64-token chunk
  BOOST_CHECK_EXCEPTION(sim::validate(too_small), std::invalid_argument, [](const std::invalid_argument& e) {
    return std::string(e.what()).find("mixed_num_decodes / mixed_chunk_tokens") != std::string::npos &&
           std::string(e.what()).find("takes 64 a step") != std::string::npos;
  });
}

// The profiler through the real engine on the scripted executor, whose step time is
// 0.01 + 1e-5 x (batched tokens): every table must come back as that function of its shape.
BOOST_AUTO_TEST_CASE(recovers_a_known_step_time_through_the_engine) {
  sim::StepProfilerConfig config = scripted_profiler_config();
  config.grid.prefill_chunk_tokens = {1, 32, 64};
  config.grid.prefill_context_before = {0, 32, 48};  // 48 + 64 + 1 > 112: a filled cell
  config.grid.decode_num_sequences = {1, 2, 4};
  config.grid.max_decode_kv_tokens = 4 * 32;  // (4, 64) is past it: a filled cell
  StepProfile profile = sim::measure_step_profile(config);
  profile.executor = "scripted";  // the descriptive fields are the caller's

  check_tables_follow_the_scripted_step_time(profile);
  const auto tolerance = boost::test_tools::tolerance(1e-9);
  BOOST_TEST(profile.prefill.filled_cells.size() == 1u);
  BOOST_TEST(profile.prefill.filled_cells[0].first == 2);
  BOOST_TEST(profile.prefill.filled_cells[0].second == 2);
  BOOST_TEST(profile.decode.filled_cells.size() == 1u);
  BOOST_TEST(profile.decode.filled_cells[0].first == 2);
  BOOST_TEST(profile.decode.filled_cells[0].second == 1);
  BOOST_TEST(profile.num_passes == 2);
  BOOST_TEST(profile.load_factor == 1.0, tolerance);  // every timing equals its shape's
  // Mixed steps cost their parts less one step's fixed 0.01.
  BOOST_TEST(profile.step_overhead_seconds == 0.01, tolerance);
  BOOST_TEST(profile.sample_seconds == 0.0, tolerance);
  BOOST_TEST(profile.random_sample_extra_seconds == 0.0, tolerance);
  BOOST_TEST(profile.beam_sample_extra_seconds == 0.0, tolerance);
  BOOST_TEST(profile.swap_out_block_seconds == 0.01 / config.grid.num_blocks_per_operation, tolerance);
  BOOST_TEST(profile.copy_block_seconds == 0.01 / config.grid.num_blocks_per_operation, tolerance);
  BOOST_TEST(profile.engine_overhead.points.size() == profile.decode.rows.size());
  BOOST_REQUIRE_NO_THROW(sim::validate(profile));

  // And the model built on it predicts a mixed step of the scripted executor exactly.
  const ProfileCostModel model({.profile = profile});
  PlanBuilder builder(16);
  builder.add({.start = 40, .end = 41, .num_prompt_tokens = 10, .sample = true});
  builder.add({.start = 50, .end = 51, .num_prompt_tokens = 10, .sample = true});
  builder.add({.start = 0, .end = 20, .num_prompt_tokens = 20, .sample = true});
  BOOST_TEST(model.step_cost(builder.plan()).seconds == 0.01 + 1e-5 * 22, tolerance);
}

// A device smaller than the grid asks for (a 7B model's cache on one GPU): the decode cells that do
// not fit are extrapolated, every session stays within the device, and each shape still measures
// exactly (the profiler re-reads the prompts it needs, so nothing it relies on is evicted).
BOOST_AUTO_TEST_CASE(fits_a_device_smaller_than_the_grid) {
  int64_t most_blocks_asked = 0;
  sim::StepProfilerConfig config = scripted_profiler_config(&most_blocks_asked);
  config.num_passes = 3;
  config.grid.prefill_chunk_tokens = {1, 32, 64, 96};  // the fresh blocks of a few columns outgrow the device
  config.grid.prefill_context_before = {0, 32, 48};
  config.grid.decode_num_sequences = {1, 2, 4, 8};
  // The largest cell, 8 x 64, needs one block more than the device holds.
  config.max_device_blocks = sim::profiling::decode_cell_blocks(config, 8, 64) - 1;
  BOOST_TEST_REQUIRE(sim::profiling::decode_grid_blocks(config) > config.max_device_blocks);
  const sim::StepProfilerConfig fitted = sim::fit_to_device(config);
  BOOST_TEST(fitted.grid.max_decode_kv_tokens == 8 * 64 - 1);

  const StepProfile profile = sim::measure_step_profile(config);
  BOOST_TEST(most_blocks_asked <= config.max_device_blocks);
  BOOST_TEST(most_blocks_asked == config.max_device_blocks);  // the decode and prefill grids bind
  check_tables_follow_the_scripted_step_time(profile);
  BOOST_TEST_REQUIRE(profile.decode.filled_cells.size() == 1u);  // (8, 64), from rows 2 and 4
  BOOST_TEST(profile.decode.filled_cells[0].first == 3);
  BOOST_TEST(profile.decode.filled_cells[0].second == 1);

  // A device too small for the grid's decode rows is refused, saying what to change.
  config.max_device_blocks = sim::profiling::decode_cell_blocks(config, 2, 64) - 1;
  try {
    (void)sim::measure_step_profile(config);
    BOOST_FAIL("a device too small for the grid was accepted");
  } catch (const std::invalid_argument& error) {
    BOOST_TEST(std::string(error.what()).find("gpu-memory-utilization") != std::string::npos, error.what());
  }
}

BOOST_AUTO_TEST_CASE(refuses_a_grid_it_cannot_measure_naming_the_field) {
  sim::StepProfilerConfig config;
  config.grid = sim::quick_profile_grid(96);
  config.max_model_len = 96;
  config.token_begin = 3;
  config.token_end = 500;
  config.make_executor = [](const kv::KvCacheConfig& cache) -> std::unique_ptr<engine::Executor> {
    return std::make_unique<engine::ScriptedExecutor>(engine::ScriptedExecutorConfig{}, cache);
  };
  BOOST_REQUIRE_NO_THROW(sim::validate(config));
  const auto refuses = [&](sim::StepProfilerConfig bad, const std::string& field) {
    try {
      sim::validate(bad);
    } catch (const std::invalid_argument& error) {
      return std::string(error.what()).find(field) != std::string::npos;
    }
    return false;
  };
  sim::StepProfilerConfig bad = config;
  bad.grid.prefill_context_before = {0, 20};
  BOOST_TEST(refuses(bad, "prefill_context_before"));
  bad = config;
  bad.grid.decode_context_lengths = {4};
  BOOST_TEST(refuses(bad, "decode_context_lengths"));
  bad = config;
  bad.grid.decode_num_sequences = {4, 2};
  BOOST_TEST(refuses(bad, "decode_num_sequences"));
  bad = config;
  bad.grid.extras_num_sequences = 3;
  BOOST_TEST(refuses(bad, "extras_num_sequences"));
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace pagedllm::test
