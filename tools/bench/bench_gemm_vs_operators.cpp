// bench_gemm_vs_operators: the two ways the roofline prices a linear layer (a step's GEMMs at the
// larger of their bounds, or each GEMM on its shape: sim/gemm_cost.h) against a GPU's measured
// GEMMs, per regime of tokens per step (docs/SIMULATOR.md, "Error against measured GPU operators").
//
//   bench_gemm_vs_operators --hardware h100-sxm --mlp A/mlp.csv --mlp B/mlp.csv
//                           --hardware a100-80gb --mlp C/mlp.csv [--rows]
//
// Each --mlp is a per-operator table in the layout GPU simulators publish (Vidur's
// data/profiling/compute/<gpu>/<model>/mlp.csv), measured on the --hardware given before it. Its
// rows carry their own shape (n_head, n_kv_head, n_embd, n_expanded_embd, use_gated_mlp,
// num_tensor_parallel_workers), so any model's file will do: no preset is needed. Every row gives
// four GEMMs of num_tokens rows per GPU: attention's pre projection (q, k, v), its post projection,
// the MLP's up projection (gate and up when gated) and its down projection, each timed alone.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/trace/csv_reader.h"
#include "sim/gemm_cost.h"
#include "sim/hardware.h"
#include "sim/roofline_cost_model.h"
#include "tools/bench/bench_cli.h"

namespace {

using namespace pagedllm;

struct Input {
  std::string path;
  sim::HardwareSpec hardware;
};

struct Config {
  std::vector<Input> inputs;
  sim::HardwareSpec hardware = sim::find_hardware("h100-sxm");
  bool rows = false;
};

bench::BenchCommandLine command_line(Config& config) {
  bench::BenchCommandLine line("bench_gemm_vs_operators");
  line.add({"--hardware", "NAME", "the GPU the --mlp files after it were measured on (default h100-sxm)",
            [&](std::string_view v) { config.hardware = sim::find_hardware(v); }});
  line.add({"--mlp", "PATH", "per-operator times (Vidur's mlp.csv layout); repeatable",
            [&](std::string_view v) {
              config.inputs.push_back({std::string(v), config.hardware});
            },
            true});
  line.add({"--rows", "", "also print every GEMM: shape, measured and both prices",
            [&](std::string_view) { config.rows = true; }});
  return line;
}

constexpr const char* kGemms[] = {"attn_pre_proj", "attn_post_proj", "mlp_up_proj", "mlp_down_proj"};

// One measured GEMM and its two prices, as predicted / measured.
struct Sample {
  std::string file;
  std::string hardware;
  int64_t tokens = 0;
  double roofline = 0.0;
  double per_gemm = 0.0;
};

// The roofline's linear term for one GEMM: its share of the step's max(FLOP time, weight-byte
// time). Every GEMM of a step has the same arithmetic intensity (m FLOPs per weight byte and a
// half), so the step's term is the sum of these.
double roofline_seconds(const sim::GemmShape& shape, const sim::HardwareSpec& hardware) {
  const sim::RooflineEfficiency efficiency;
  const double flops = 2.0 * static_cast<double>(shape.m * shape.n * shape.k);
  const double bytes = 2.0 * static_cast<double>(shape.n * shape.k);
  return std::max(flops / (hardware.peak_flops * efficiency.linear_compute),
                  bytes / (hardware.memory_bandwidth * efficiency.linear_memory));
}

void read_file(const Input& input, bool print_rows, std::vector<Sample>& samples) {
  std::ifstream in(input.path);
  if (!in) throw bench::UsageError("--mlp " + input.path + ": cannot open");
  trace::CsvReader reader(in);
  trace::CsvRecord header;
  if (!reader.next(header)) throw bench::UsageError(input.path + ": empty");
  std::vector<std::string> medians;
  for (const char* gemm : kGemms) medians.push_back(std::string("time_stats.") + gemm + ".median");
  std::vector<std::string> required = {
      "n_head", "n_kv_head", "n_embd", "n_expanded_embd", "use_gated_mlp", "num_tokens", "num_tensor_parallel_workers"};
  required.insert(required.end(), medians.begin(), medians.end());
  const trace::CsvColumns columns(header, required, input.path);  // throws naming a missing column
  const sim::GemmCostConstants constants;
  for (trace::CsvRecord record; reader.next(record);) {
    const auto where = [&](const std::string& column) {
      return input.path + ":" + std::to_string(record.line) + ": " + column;
    };
    if (const std::string problem = columns.problem(record); !problem.empty()) throw bench::UsageError(where(problem));
    const auto integer = [&](const std::string& column) {
      const std::optional<int64_t> value = trace::parse_csv_integer(record.fields[columns.at(column)]);
      if (!value || *value <= 0) throw bench::UsageError(where(column) + ": expected a positive whole number");
      return *value;
    };
    const int64_t n = integer("num_tensor_parallel_workers");
    const int64_t m = integer("num_tokens");
    const std::string& gated = record.fields[columns.at("use_gated_mlp")];
    const sim::LayerDims layer{.hidden_size = integer("n_embd"),
                               .num_heads = integer("n_head"),
                               .num_kv_heads = integer("n_kv_head"),
                               .head_dim = integer("n_embd") / integer("n_head"),
                               .intermediate_size = integer("n_expanded_embd"),
                               .gated_mlp = gated == "True" || gated == "true" || gated == "1"};
    const std::array<sim::GemmShape, 4> shapes = sim::layer_gemm_shapes(m, layer, n);
    for (size_t g = 0; g < shapes.size(); ++g) {
      const std::optional<double> ms = trace::parse_csv_number(record.fields[columns.at(medians[g])]);
      if (!ms) throw bench::UsageError(where(medians[g]) + ": expected a time in ms");
      const double measured = *ms * 1e-3;
      if (!(measured > 0.0)) continue;
      const double roofline = roofline_seconds(shapes[g], input.hardware);
      const double per_gemm = sim::gemm_cost(shapes[g], input.hardware, constants, 2.0, 2.0).seconds;
      samples.push_back({input.path, input.hardware.name, m, roofline / measured, per_gemm / measured});
      if (print_rows) {
        std::printf(
            "%-10s tp %lld %6lld x %6lld x %6lld %-15s measured %9.1f us  roofline %9.1f (%.2fx)  per-gemm "
            "%9.1f (%.2fx)\n",
            input.hardware.name.c_str(), static_cast<long long>(n), static_cast<long long>(m),
            static_cast<long long>(shapes[g].n), static_cast<long long>(shapes[g].k), kGemms[g], measured * 1e6,
            roofline * 1e6, roofline / measured, per_gemm * 1e6, per_gemm / measured);
      }
    }
  }
}

const char* regime(int64_t tokens) { return tokens <= 64 ? "1-64" : tokens <= 384 ? "96-384" : "512-4096"; }

// "0.62-1.08x, median 0.78x, 49% within 20%"
std::string summary(std::vector<double> ratios) {
  std::sort(ratios.begin(), ratios.end());
  const auto within = std::count_if(ratios.begin(), ratios.end(), [](double r) { return r >= 1 / 1.2 && r <= 1.2; });
  char text[120];
  std::snprintf(text, sizeof(text), "%.2f-%.2fx, median %.2fx, %3.0f%% within 20%%", ratios.front(), ratios.back(),
                ratios[ratios.size() / 2], 100.0 * static_cast<double>(within) / static_cast<double>(ratios.size()));
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  Config config;
  return bench::run_benchmark(command_line(config), argc, argv, [&] {
    std::vector<Sample> samples;
    for (const Input& input : config.inputs) read_file(input, config.rows, samples);
    // (a file or a GPU, regime) -> ratios of each price.
    using Groups = std::map<std::pair<std::string, std::string>, std::pair<std::vector<double>, std::vector<double>>>;
    Groups by_file;
    Groups by_hardware;
    double roofline_log2 = 0.0;
    double per_gemm_log2 = 0.0;
    for (const Sample& sample : samples) {
      for (Groups* groups : {&by_file, &by_hardware}) {
        const std::string& name = groups == &by_file ? sample.file : sample.hardware;
        auto& [roofline, per_gemm] = (*groups)[{name, regime(sample.tokens)}];
        roofline.push_back(sample.roofline);
        per_gemm.push_back(sample.per_gemm);
      }
      roofline_log2 += std::log(sample.roofline) * std::log(sample.roofline);
      per_gemm_log2 += std::log(sample.per_gemm) * std::log(sample.per_gemm);
    }
    std::printf("predicted / measured per GEMM: the roofline's linear term, and per-gemm (sim/gemm_cost.h)\n");
    for (const Groups* groups : {&by_file, &by_hardware}) {
      for (const auto& [key, ratios] : *groups) {
        std::printf("%s, %s tokens: %zu GEMMs\n  roofline  %s\n  per-gemm  %s\n", key.first.c_str(), key.second.c_str(),
                    ratios.first.size(), summary(ratios.first).c_str(), summary(ratios.second).c_str());
      }
    }
    const auto count = static_cast<double>(std::max<size_t>(samples.size(), 1));
    std::printf("all %zu GEMMs: root mean square of ln(predicted / measured): roofline %.3f, per-gemm %.3f\n",
                samples.size(), std::sqrt(roofline_log2 / count), std::sqrt(per_gemm_log2 / count));
    return 0;
  });
}
