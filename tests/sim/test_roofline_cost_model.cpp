// The roofline cost model against hand-computed FLOPs, bytes and times, and its regimes on real
// shapes: decode is memory bound, long prefill compute bound, tensor parallelism trades model
// time for all-reduces, swaps cost by the block.
#include <boost/test/unit_test.hpp>

#include <stdexcept>

#include "sim/roofline_cost_model.h"
#include "tests/sim/plan_builder.h"
#include "tests/sim/roofline_fixture.h"

namespace pagedllm::test {
namespace {

using sim::RooflineConfig;
using sim::RooflineCostModel;
using sim::StepCost;

// A model small enough to count by hand: q_dim 8, kv_dim 4.
//   matmuls per layer: 8 x (8 + 2 x 4) + 8 x 8 + 3 x 8 x 16 = 576; params per layer 576 + 2 x 8 = 592
//   lm_head 10 x 8 = 80; KV per token 2 x 2 layers x 4 x 2 bytes = 32
model::ModelShape tiny_shape() {
  model::ModelShape shape;
  shape.name = "tiny";
  shape.num_layers = 2;
  shape.hidden_size = 8;
  shape.num_heads = 2;
  shape.num_kv_heads = 1;
  shape.head_dim = 4;
  shape.intermediate_size = 16;
  shape.vocab_size = 10;
  return shape;
}

// Round figures and unit efficiencies, so that times are bytes / 100 and FLOPs / 1000.
RooflineConfig tiny_config() {
  RooflineConfig config;
  config.hardware = round_hardware();
  config.model = tiny_shape();
  config.block_size = 4;
  config.efficiency = {.linear_compute = 1.0,
                       .linear_memory = 1.0,
                       .attention_compute = 1.0,
                       .attention_memory = 1.0,
                       .host_link = 1.0,
                       .gpu_link = 1.0};
  config.overheads = {.step_seconds = 1.0, .layer_seconds = 0.5, .all_reduce_latency_seconds = 0.25};
  return config;
}

RooflineConfig preset_config(const char* hardware, const char* model, int32_t tensor_parallel = 1) {
  RooflineConfig config;
  config.hardware = sim::find_hardware(hardware);
  config.model = model::find_model_shape(model);
  config.tensor_parallel = tensor_parallel;
  return config;
}

// A prompt chunk [0, 5) of an 8-token prompt, and a decode at position 9 that samples.
PlanBuilder mixed_plan() {
  PlanBuilder builder(4);
  builder.add({.start = 0, .end = 5, .num_prompt_tokens = 8, .sample = false});
  builder.add({.start = 9, .end = 10, .num_prompt_tokens = 6, .sample = true});
  return builder;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(roofline_cost_model)

BOOST_AUTO_TEST_CASE(counts_the_flops_and_bytes_of_a_hand_built_plan) {
  const RooflineCostModel model(tiny_config());
  const PlanBuilder builder = mixed_plan();
  const StepCost cost = model.step_cost(builder.plan());
  // Linear: 6 tokens through 2 layers of 576 matmul params, 1 sampled row through the lm_head.
  const double linear_flops = 2.0 * (2 * 576 * 6 + 80 * 1);  // 13984
  // Weights read once: 2 layers x 592 + final norm 8 + lm_head 80 params, 2 bytes each.
  BOOST_TEST(cost.weight_bytes == (2 * 592 + 8 + 80) * 2.0);  // 2544
  // Attention: 4 x 2 heads x 4 head_dim x 2 layers = 64 FLOPs per attended pair; the chunk
  // attends 1 + 2 + ... + 5 = 15 pairs (causal), the decode at position 9 attends 10.
  BOOST_TEST(cost.attention_flops == 64.0 * (15 + 10));  // 1600
  BOOST_TEST(cost.flops == linear_flops + 1600.0);
  // KV read over each whole context (5 and 10 tokens), written for the 6 new tokens.
  BOOST_TEST(cost.kv_bytes_read == 32.0 * 15);
  BOOST_TEST(cost.kv_bytes_written == 32.0 * 6);
}

BOOST_AUTO_TEST_CASE(times_each_part_at_its_roofline_bound) {
  const RooflineCostModel model(tiny_config());
  const PlanBuilder builder = mixed_plan();
  const StepCost cost = model.step_cost(builder.plan());
  // Linear: compute 13984 / 1000 = 13.984 s against memory 2544 / 100 = 25.44 s.
  BOOST_TEST(cost.linear_seconds == 25.44, boost::test_tools::tolerance(1e-12));
  // Attention per sequence: the chunk max(960 / 1000, (160 + 160) / 100) = 3.2 s, the decode
  // max(640 / 1000, (320 + 32) / 100) = 3.52 s.
  BOOST_TEST(cost.attention_seconds == 3.2 + 3.52, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(cost.compute_seconds == 13.984 + 0.96 + 0.64, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(cost.memory_seconds == 25.44 + 3.2 + 3.52, boost::test_tools::tolerance(1e-12));
  // Overheads: 1 s per step + 0.5 s per layer; one GPU, nothing swapped.
  BOOST_TEST(cost.overhead_seconds == 2.0);
  BOOST_TEST(cost.all_reduce_seconds == 0.0);
  BOOST_TEST(cost.swap_seconds == 0.0);
  BOOST_TEST(cost.seconds == 25.44 + 6.72 + 2.0, boost::test_tools::tolerance(1e-12));
}

BOOST_AUTO_TEST_CASE(efficiencies_scale_the_sustained_rates) {
  RooflineConfig config = tiny_config();
  config.efficiency.linear_memory = 0.5;
  config.efficiency.attention_compute = 0.25;
  const PlanBuilder builder = mixed_plan();
  const StepCost cost = RooflineCostModel(config).step_cost(builder.plan());
  BOOST_TEST(cost.linear_seconds == 25.44 / 0.5, boost::test_tools::tolerance(1e-12));
  // Attention compute at a quarter: the chunk 3.84 s now outweighs its 3.2 s of memory.
  BOOST_TEST(cost.attention_seconds == 0.96 / 0.25 + 3.52, boost::test_tools::tolerance(1e-12));
}

BOOST_AUTO_TEST_CASE(rows_that_do_not_sample_skip_the_lm_head) {
  const RooflineCostModel model(tiny_config());
  PlanBuilder builder(4);
  builder.add({.start = 0, .end = 4, .num_prompt_tokens = 8, .sample = false});
  const StepCost cost = model.step_cost(builder.plan());
  BOOST_TEST(cost.weight_bytes == (2 * 592 + 8) * 2.0);
  BOOST_TEST(cost.flops - cost.attention_flops == 2.0 * 2 * 576 * 4);
}

BOOST_AUTO_TEST_CASE(swap_cost_scales_with_blocks) {
  const RooflineCostModel model(tiny_config());
  // One block: 4 tokens x 32 bytes = 128 bytes over a 10 B/s host link.
  for (const int32_t blocks : {1, 2, 8}) {
    PlanBuilder out(4);
    out.swap_out(blocks);
    const StepCost cost = model.step_cost(out.plan());
    BOOST_TEST(cost.swap_bytes == 128.0 * blocks);
    BOOST_TEST(cost.swap_seconds == 12.8 * blocks, boost::test_tools::tolerance(1e-12));
    // No forward pass: only the per-step overhead besides the swap.
    BOOST_TEST(cost.seconds == 1.0 + 12.8 * blocks, boost::test_tools::tolerance(1e-12));
  }
  PlanBuilder both(4);
  both.swap_out(3).swap_in(2);
  BOOST_TEST(model.step_cost(both.plan()).swap_seconds == 12.8 * 5, boost::test_tools::tolerance(1e-12));
}

BOOST_AUTO_TEST_CASE(copy_on_write_reads_and_writes_a_block_in_device_memory) {
  const RooflineCostModel model(tiny_config());
  PlanBuilder builder(4);
  builder.copy(3);
  const double copy_seconds = model.step_cost(builder.plan()).copy_seconds;
  BOOST_TEST(copy_seconds == 3 * 2 * 128.0 / 100.0, boost::test_tools::tolerance(1e-12));
}

BOOST_AUTO_TEST_CASE(tensor_parallel_splits_the_model_and_adds_two_all_reduces_per_layer) {
  const PlanBuilder builder = mixed_plan();
  const StepCost one = RooflineCostModel(tiny_config()).step_cost(builder.plan());
  RooflineConfig config = tiny_config();
  config.tensor_parallel = 2;
  const StepCost two = RooflineCostModel(config).step_cost(builder.plan());
  BOOST_TEST(two.weight_bytes == one.weight_bytes / 2);
  BOOST_TEST(two.flops == one.flops / 2);
  // One KV head cannot split: each GPU holds a replica, so KV bytes stay per GPU.
  BOOST_TEST(two.kv_bytes_read == one.kv_bytes_read);
  // 2 all-reduces x 2 layers, each 0.25 s + ring 2 x (2 - 1) / 2 x (6 tokens x 8 x 2 bytes) / 50.
  BOOST_TEST(two.all_reduce_seconds == 4 * (0.25 + 96.0 / 50.0), boost::test_tools::tolerance(1e-12));
}

BOOST_AUTO_TEST_CASE(a_batch_one_decode_of_llama_2_7b_on_h100_is_memory_bound) {
  const RooflineConfig config = preset_config("h100-sxm", "llama-2-7b");
  PlanBuilder builder(16);
  builder.add({.start = 127, .end = 128, .num_prompt_tokens = 100, .sample = true});
  const StepCost cost = RooflineCostModel(config).step_cost(builder.plan());
  BOOST_TEST_MESSAGE("llama-2-7b decode, batch 1, h100-sxm: " << cost.seconds * 1e3 << " ms (memory "
                                                              << cost.memory_seconds * 1e3 << " ms, compute "
                                                              << cost.compute_seconds * 1e3 << " ms)");
  BOOST_TEST(cost.memory_seconds > 10 * cost.compute_seconds);
  // About the weights' 13.2 GB (all but the input embedding, of which only one row is read)
  // over 0.8 x 3.35 TB/s, plus the fixed overheads; 128 tokens of KV add about 0.5%.
  const double weights_read = (6738415616.0 - 32000 * 4096) * 2;
  BOOST_TEST(cost.weight_bytes == weights_read);
  const double weights_floor = weights_read / (3.35e12 * 0.8);
  const double overheads = 500e-6 + 32 * 5e-6;
  BOOST_TEST(cost.overhead_seconds == overheads, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(cost.seconds == weights_floor + overheads, boost::test_tools::tolerance(0.01));
  BOOST_TEST(cost.seconds > 5e-3);
  BOOST_TEST(cost.seconds < 7e-3);
}

BOOST_AUTO_TEST_CASE(a_long_prefill_is_compute_bound) {
  const RooflineConfig config = preset_config("h100-sxm", "llama-2-7b");
  PlanBuilder builder(16);
  builder.add({.start = 0, .end = 4096, .num_prompt_tokens = 4096, .sample = true});
  const StepCost cost = RooflineCostModel(config).step_cost(builder.plan());
  BOOST_TEST_MESSAGE("llama-2-7b prefill of 4096 tokens, h100-sxm: " << cost.seconds * 1e3 << " ms (linear "
                                                                     << cost.linear_seconds * 1e3 << " ms, attention "
                                                                     << cost.attention_seconds * 1e3 << " ms)");
  BOOST_TEST(cost.compute_seconds > 5 * cost.memory_seconds);
  const auto matmul_params = static_cast<double>(config.model.num_matmul_params_per_layer());
  const auto lm_head_params = static_cast<double>(config.model.num_lm_head_params());
  const double matmul_flops = 2.0 * 32 * matmul_params * 4096 + 2.0 * lm_head_params;
  BOOST_TEST(cost.linear_seconds == matmul_flops / (989e12 * 0.65), boost::test_tools::tolerance(1e-9));
  BOOST_TEST(cost.attention_seconds > 0.05 * cost.linear_seconds);  // quadratic attention is no longer small
}

BOOST_AUTO_TEST_CASE(tensor_parallel_2_makes_the_model_faster_but_pays_all_reduces) {
  PlanBuilder builder(16);
  for (int i = 0; i < 32; ++i) builder.add({.start = 511, .end = 512, .num_prompt_tokens = 400, .sample = true});
  const StepCost one = RooflineCostModel(preset_config("h100-sxm", "llama-2-13b", 1)).step_cost(builder.plan());
  const StepCost two = RooflineCostModel(preset_config("h100-sxm", "llama-2-13b", 2)).step_cost(builder.plan());
  const double model_one = one.linear_seconds + one.attention_seconds;
  const double model_two = two.linear_seconds + two.attention_seconds;
  BOOST_TEST_MESSAGE("llama-2-13b, 32 decodes at context 512, h100-sxm: TP1 "
                     << one.seconds * 1e3 << " ms, TP2 " << two.seconds * 1e3 << " ms (all-reduce "
                     << two.all_reduce_seconds * 1e3 << " ms)");
  BOOST_TEST(model_two == model_one / 2, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(one.all_reduce_seconds == 0.0);
  BOOST_TEST(two.all_reduce_seconds > 0.0);
  BOOST_TEST(two.seconds < one.seconds);
  BOOST_TEST(two.seconds > one.seconds / 2);
}

BOOST_AUTO_TEST_CASE(an_empty_forward_costs_only_the_step_overhead) {
  const RooflineCostModel model(tiny_config());
  const sched::StepPlan empty;
  const StepCost cost = model.step_cost(empty);
  BOOST_TEST(cost.seconds == 1.0);
  BOOST_TEST(cost.flops == 0.0);
}

BOOST_AUTO_TEST_CASE(step_costs_add_up) {
  const RooflineCostModel model(tiny_config());
  const PlanBuilder builder = mixed_plan();
  StepCost sum;
  sum += model.step_cost(builder.plan());
  sum += model.step_cost(builder.plan());
  const StepCost one = model.step_cost(builder.plan());
  BOOST_TEST(sum.seconds == 2 * one.seconds);
  BOOST_TEST(sum.flops == 2 * one.flops);
  BOOST_TEST(sum.kv_bytes_read == 2 * one.kv_bytes_read);
}

BOOST_AUTO_TEST_CASE(bad_configurations_are_refused_naming_the_field) {
  const auto refused_with = [](const RooflineConfig& config, const std::string& field) {
    try {
      RooflineCostModel model(config);
    } catch (const std::invalid_argument& error) {
      BOOST_TEST_INFO("message: " << error.what());
      BOOST_TEST(std::string(error.what()).find(field) != std::string::npos);
      return;
    }
    BOOST_FAIL("accepted a configuration with a bad " + field);
  };
  RooflineConfig config = preset_config("h100-sxm", "llama-2-7b", 3);
  refused_with(config, "tensor_parallel");
  config = preset_config("h100-sxm", "llama-2-7b", 6);  // 6 divides 12 query heads, not 4 KV heads
  config.model.num_heads = 12;
  config.model.num_kv_heads = 4;
  refused_with(config, "num_kv_heads");
  config = preset_config("h100-sxm", "llama-2-7b");
  config.efficiency.linear_compute = 1.5;
  refused_with(config, "efficiency.linear_compute");
  config = preset_config("h100-sxm", "llama-2-7b");
  config.block_size = 0;
  refused_with(config, "block_size");
  config = preset_config("h100-sxm", "llama-2-7b");
  config.hardware.memory_bandwidth = 0.0;
  refused_with(config, "memory_bandwidth");
  config = preset_config("h100-sxm", "llama-2-7b");
  config.overheads.step_seconds = -1.0;
  refused_with(config, "overheads.step_seconds");
}

// A windowed model's decode reads and attends min(context, window) positions: at a long context
// it costs what it costs at context = window, where a model without a window keeps growing.
BOOST_AUTO_TEST_CASE(a_windowed_decode_costs_the_same_past_the_window) {
  RooflineConfig windowed = tiny_config();
  windowed.model.sliding_window = 16;
  const RooflineCostModel with_window(windowed);
  const RooflineCostModel without_window(tiny_config());
  const auto decode_at = [](const RooflineCostModel& model, int32_t context) {
    PlanBuilder builder(4);
    builder.add({.start = context - 1, .end = context, .num_prompt_tokens = 4, .sample = true});
    return model.step_cost(builder.plan());
  };
  const StepCost at_window = decode_at(with_window, 16);
  for (const int32_t context : {17, 100, 4096}) {
    const StepCost cost = decode_at(with_window, context);
    BOOST_TEST(cost.seconds == at_window.seconds);
    BOOST_TEST(cost.kv_bytes_read == 32.0 * 16);
    BOOST_TEST(cost.attention_flops == 64.0 * 16);
    BOOST_TEST(decode_at(without_window, context).seconds > decode_at(without_window, context - 1).seconds);
    BOOST_TEST(decode_at(without_window, context).kv_bytes_read == 32.0 * context);
  }
  // Below the window nothing changes.
  BOOST_TEST(decode_at(with_window, 9).seconds == decode_at(without_window, 9).seconds);
  // A prompt chunk [10, 30) with window 16: queries 10..15 see p + 1 keys (11 + ... + 16 = 81),
  // queries 16..29 see 16 each (224); it reads from the window start of query 10 (position 0) to 30.
  PlanBuilder chunk(4);
  chunk.add({.start = 10, .end = 30, .num_prompt_tokens = 40, .sample = false});
  const StepCost chunk_cost = with_window.step_cost(chunk.plan());
  BOOST_TEST(chunk_cost.attention_flops == 64.0 * (81 + 224));
  BOOST_TEST(chunk_cost.kv_bytes_read == 32.0 * 30);
  // A chunk [40, 50): reads from 40 - 16 + 1 = 25, i.e. 25 positions.
  PlanBuilder late(4);
  late.add({.start = 40, .end = 50, .num_prompt_tokens = 60, .sample = false});
  BOOST_TEST(with_window.step_cost(late.plan()).kv_bytes_read == 32.0 * 25);
  BOOST_TEST(with_window.step_cost(late.plan()).attention_flops == 64.0 * 160);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace pagedllm::test
