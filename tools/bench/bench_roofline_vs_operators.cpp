// bench_roofline_vs_operators: the roofline preset's linear layers against a GPU's measured
// per-operator times, side by side per token count (docs/SIMULATOR.md, "Error against measured
// GPU operators").
//
//   bench_roofline_vs_operators --mlp mlp.csv --hardware h100-sxm [--model llama-2-7b]
//                               [--tensor-parallel-size 1] [--statistic median]
//
// --mlp is a per-operator table in the layout GPU simulators publish (Vidur's
// data/profiling/compute/<gpu>/<model>/mlp.csv). For each profiled token count T it prices one
// prefill step of T tokens that samples nothing with the real RooflineCostModel (the preset's
// FLOP/s, bandwidth and efficiencies) and prints, per layer: the measured matmuls (attention
// pre and post projections, MLP up and down), the roofline's linear term, their ratio, which side
// of the roofline bound, and the measured operators the roofline does not price (norms, rotary,
// activation, residual add).
#include <cstdio>
#include <fstream>
#include <string>

#include "core/model/model_shape.h"
#include "core/sched/step_plan.h"
#include "sim/hardware.h"
#include "sim/operator_profile_import.h"
#include "sim/roofline_cost_model.h"
#include "tools/bench/bench_cli.h"

namespace {

using namespace pagedllm;

struct Config {
  std::string mlp;
  std::string hardware = "h100-sxm";
  std::string model = "llama-2-7b";
  int32_t tensor_parallel = 1;
  std::string statistic = "median";
};

bench::BenchCommandLine command_line(Config& config) {
  bench::BenchCommandLine line("bench_roofline_vs_operators");
  line.add({"--mlp", "PATH", "per-operator times (Vidur's mlp.csv layout)", [&](std::string_view v) { config.mlp = v; },
            true});
  line.add({"--hardware", "NAME", "the roofline preset of the GPU measured (default h100-sxm)",
            [&](std::string_view v) { config.hardware = v; }});
  line.add({"--model", "NAME", "the shape preset measured (default llama-2-7b)",
            [&](std::string_view v) { config.model = v; }});
  line.add(
      {"--tensor-parallel-size", "N", "the rows of this tensor parallel size (default 1)", [&](std::string_view v) {
         config.tensor_parallel = static_cast<int32_t>(bench::parse_integer("--tensor-parallel-size", v, 1));
       }});
  line.add({"--statistic", "S", "min, max, mean or median (default median)",
            [&](std::string_view v) { config.statistic = v; }});
  return line;
}

constexpr const char* kMatmuls[] = {"attn_pre_proj", "attn_post_proj", "mlp_up_proj", "mlp_down_proj"};

}  // namespace

int main(int argc, char** argv) {
  Config config;
  return bench::run_benchmark(command_line(config), argc, argv, [&] {
    sim::RooflineConfig roofline;
    roofline.hardware = sim::find_hardware(config.hardware);
    roofline.model = model::find_model_shape(config.model);
    roofline.tensor_parallel = config.tensor_parallel;
    const sim::RooflineCostModel cost_model(roofline);
    std::ifstream in(config.mlp, std::ios::binary);
    if (!in) throw bench::UsageError("--mlp " + config.mlp + ": cannot open");
    const sim::OperatorTable table =
        sim::read_operator_table(in, config.mlp, config.statistic, config.tensor_parallel, &roofline.model);
    const auto layers = static_cast<double>(roofline.model.num_layers);
    std::printf("%s on %s x%d: roofline linear term per layer against %s (%s of each operator)\n",
                roofline.model.name.c_str(), roofline.hardware.name.c_str(), config.tensor_parallel, config.mlp.c_str(),
                config.statistic.c_str());
    std::printf("%8s %14s %14s %10s %6s %16s\n", "tokens", "matmuls (us)", "roofline (us)", "roofline/", "bound",
                "other ops (us)");
    std::printf("%8s %14s %14s %10s %6s %16s\n", "", "measured", "", "measured", "", "not priced");
    for (const auto& [tokens, ops] : table) {
      double matmuls = 0.0;
      double other = 0.0;
      for (const auto& [op, seconds] : ops) {
        bool is_matmul = false;
        for (const char* name : kMatmuls) is_matmul = is_matmul || op == name;
        if (is_matmul) {
          matmuls += seconds;
        } else if (op != "emb") {
          other += seconds;
        }
      }
      sched::StepPlan plan;
      sched::ScheduledSequence& prefill = plan.sequences.emplace_back();
      prefill.start = 0;
      prefill.end = static_cast<int32_t>(tokens);
      const sim::StepCost cost = cost_model.step_cost(plan);
      const double predicted = cost.linear_seconds / layers;
      std::printf("%8lld %14.1f %14.1f %9.3fx %6s %16.1f\n", static_cast<long long>(tokens), matmuls * 1e6,
                  predicted * 1e6, matmuls > 0.0 ? predicted / matmuls : 0.0,
                  cost.compute_seconds > cost.memory_seconds ? "FLOPs" : "bytes", other * 1e6);
    }
    return 0;
  });
}
