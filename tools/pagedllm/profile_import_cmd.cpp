// `pagedllm profile import`: per-operator GPU timings in the CSV layout GPU simulators publish
// (Vidur's mlp.csv and attention.csv) as a step profile for `simulate --profile`, so that a user
// with such measurements of their GPU plans with them instead of the roofline.
#include <boost/program_options.hpp>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "core/sched/step_plan.h"
#include "sim/operator_profile_import.h"
#include "sim/roofline_cost_model.h"
#include "tools/pagedllm/cli_options.h"
#include "tools/pagedllm/sim_setup.h"
#include "tools/pagedllm/subcommands.h"

namespace pagedllm::cli {
namespace {

namespace po = boost::program_options;

struct ProfileImportOptions {
  std::string format = "vidur";
  std::string mlp;
  std::string attention;
  std::string model;
  ExecutorOptions gpu;  // --hardware and --tensor-parallel-size: the roofline that prices what the files lack
  int32_t block_size = 16;
  std::string statistic = "median";
  double step_overhead_ms = 0.0;
  std::string output;
};

std::ifstream open_input(const std::string& path, const std::string& option) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw po::error(option + " " + path + ": cannot open");
  return in;
}

// What the roofline of the GPU charges for one block swapped (each way) and one block copied:
// the files time no block operations.
std::pair<double, double> block_operation_seconds(const sim::RooflineCostModel& model) {
  sched::StepPlan swap;
  swap.swap_out.push_back({.src = 0, .dst = 0});
  sched::StepPlan copy;
  copy.copies.push_back({.src = 0, .dst = 1});
  return {model.step_cost(swap).swap_seconds, model.step_cost(copy).copy_seconds};
}

// The roofline's all-reduces for a step of `tokens` new tokens (its payload is tokens x hidden).
double all_reduce_seconds(const sim::RooflineCostModel& model, double tokens) {
  sched::StepPlan plan;
  sched::ScheduledSequence& sequence = plan.sequences.emplace_back();
  sequence.end = static_cast<int32_t>(std::lround(tokens));
  return model.step_cost(plan).all_reduce_seconds;
}

}  // namespace

int run_profile_import(const std::vector<std::string>& args) {
  ProfileImportOptions options;
  po::options_description description(
      "pagedllm profile import: per-operator GPU timings in the CSV layout GPU simulators publish, as a step\n"
      "profile for `pagedllm simulate --profile FILE` (docs/SIMULATOR.md, \"Imported operator profiles\")\n"
      "  pagedllm profile import --mlp mlp.csv --attention attention.csv --model llama-2-7b --hardware h100-sxm "
      "-o profile.json");
  // clang-format off
  description.add_options()
      ("help,h", "show this help")
      ("format", po::value(&options.format)->default_value(options.format),
       "the layout: vidur (data/profiling/compute/<gpu>/<model>/{mlp,attention}.csv)")
      ("mlp", po::value(&options.mlp)->required(),
       "the per-token-count table of projections, MLP, norms, rotary, add and embedding")
      ("attention", po::value(&options.attention)->required(),
       "the attention table: decode batches and prefill chunks over KV cache sizes")
      ("model,m", po::value(&options.model)->required(),
       ("the model the files were measured on: a shape preset (" + model::model_shape_names() +
        ") or a model directory, .gguf or fetched name").c_str())
      ("hardware", po::value(&options.gpu.hardware)->default_value(options.gpu.hardware),
       "the GPU they were measured on, which prices swaps, copies and tensor parallel all-reduces (the files "
       "time none) and names the device")
      ("tensor-parallel-size,tp", po::value(&options.gpu.tensor_parallel)->default_value(1),
       "the rows of this tensor parallel size")
      ("block-size", po::value(&options.block_size)->default_value(options.block_size),
       "the attention rows of this KV block size")
      ("statistic", po::value(&options.statistic)->default_value(options.statistic),
       "which of each operator's columns: min, max, mean or median")
      ("step-overhead-ms", po::value(&options.step_overhead_ms)->default_value(0.0),
       "added to every step: the CPU's part (scheduling, input preparation, sampling), which the files do not time")
      ("output,o", po::value(&options.output)->required(), "the step profile to write (JSON)");
  // clang-format on
  po::variables_map values;
  if (!parse_options(args, description, values)) return 0;
  if (options.format != "vidur") throw po::error("--format: expected vidur, got '" + options.format + "'");
  if (!(options.step_overhead_ms >= 0.0)) throw po::error("--step-overhead-ms: expected 0 or more");
  const SimModel model = resolve_sim_model(options.model);
  const sim::RooflineConfig roofline = make_roofline(options.gpu, model.shape, options.block_size);
  const auto roofline_model = std::make_shared<const sim::RooflineCostModel>(roofline);
  const auto [swap_seconds, copy_seconds] = block_operation_seconds(*roofline_model);
  std::ifstream mlp = open_input(options.mlp, "--mlp");
  std::ifstream attention = open_input(options.attention, "--attention");
  const sim::StepProfile profile = sim::import_operator_profile(
      {.shape = model.shape,
       .tensor_parallel = options.gpu.tensor_parallel,
       .block_size = options.block_size,
       .statistic = options.statistic,
       .device = roofline.hardware.name + " x" + std::to_string(options.gpu.tensor_parallel),
       .step_overhead_seconds = options.step_overhead_ms / 1000.0,
       .swap_block_seconds = swap_seconds,
       .copy_block_seconds = copy_seconds,
       .all_reduce_seconds = options.gpu.tensor_parallel > 1
                                 ? std::function<double(double)>([roofline_model](double tokens) {
                                     return all_reduce_seconds(*roofline_model, tokens);
                                   })
                                 : std::function<double(double)>()},
      {.mlp = mlp, .mlp_name = options.mlp, .attention = attention, .attention_name = options.attention});
  sim::write_step_profile(profile, options.output);
  std::printf("Imported %s: decode %zu x %zu (%zu filled), prefill %zu x %zu (%zu filled); wrote %s\n",
              model.shape.name.c_str(), profile.decode.rows.size(), profile.decode.columns.size(),
              profile.decode.filled_cells.size(), profile.prefill.rows.size(), profile.prefill.columns.size(),
              profile.prefill.filled_cells.size(), options.output.c_str());
  return 0;
}

}  // namespace pagedllm::cli
