// `pagedllm profile`: times real steps of an executor over a grid of step shapes (decodes by
// sequences and context, prompt chunks by tokens and cached context, sampling, block operations)
// and writes the table the simulator interpolates (`replay --executor sim --profile FILE`).
// The measurement itself is sim/step_profiler.h; this file picks the executor and the model.
#include <algorithm>
#include <boost/program_options.hpp>
#include <chrono>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/frontend/model_bundle.h"
#include "cpu_ref/cpu_executor.h"
#include "sim/profile_cost_model.h"
#include "sim/step_profile.h"
#include "sim/step_profiler.h"
#include "tools/pagedllm/cli_options.h"
#include "tools/pagedllm/cuda_setup.h"
#include "tools/pagedllm/default_model.h"
#include "tools/pagedllm/subcommands.h"

namespace pagedllm::cli {
namespace {

namespace po = boost::program_options;

struct ProfileOptions {
  std::string executor = "cpu";
  std::string model = std::string(kDefaultModelName);
  int32_t num_threads = 0;
  int32_t block_size = 16;
  int32_t max_num_seqs = 256;
  int32_t max_model_len = 0;  // 0: the model's context length
  int32_t num_repeats = 7;
  int32_t num_warmup_steps = 2;
  int32_t num_passes = 3;
  bool quick = false;
  bool quiet = false;
  std::string output;
  CudaOptions cuda;
};

// "<CPU model>, N hardware threads" from /proc/cpuinfo where there is one.
std::string cpu_description() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  std::string name = "unknown CPU";
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    const size_t colon = line.find(':');
    if (colon != std::string::npos) name = line.substr(line.find_first_not_of(' ', colon + 1));
    break;
  }
  return name + ", " + std::to_string(std::thread::hardware_concurrency()) + " hardware threads";
}

// "12.3 us" below a millisecond, "4.56 ms" above.
std::string duration(double seconds) {
  std::ostringstream text;
  text << std::fixed;
  if (seconds < 1e-3) {
    text << std::setprecision(1) << seconds * 1e6 << " us";
  } else {
    text << std::setprecision(2) << seconds * 1e3 << " ms";
  }
  return text.str();
}

void print_summary(const sim::StepProfile& profile, std::ostream& out) {
  const sim::ProfileCostModel model({.profile = profile, .apply_load_factor = false});
  const double b_max = profile.decode.rows.back();
  const double c_min = profile.decode.columns.front();
  const double c_max = profile.decode.columns.back();
  const double n_max = profile.prefill.rows.back();
  const auto line = [&](const std::string& label) -> std::ostream& {
    return out << std::left << std::setw(26) << label + ":" << std::right;
  };
  out << std::defaultfloat << std::setprecision(6);
  line("decode, 1 sequence") << duration(model.decode_seconds(1, c_min)) << " at context " << c_min << ", "
                             << duration(model.decode_seconds(1, c_max)) << " at " << c_max << "\n";
  std::ostringstream many;
  many << "decode, " << b_max << " sequences";
  line(many.str()) << duration(model.decode_seconds(b_max, c_min)) << " at context " << c_min << ", "
                   << duration(model.decode_seconds(b_max, c_max)) << " at " << c_max << "\n";
  std::ostringstream chunk;
  chunk << "prefill, " << n_max << " tokens";
  line(chunk.str()) << duration(model.prefill_seconds(n_max, 0)) << "\n";
  line("step overhead") << duration(profile.step_overhead_seconds) << "\n";
  line("sampled row") << duration(profile.sample_seconds) << " (random sampling +"
                      << duration(profile.random_sample_extra_seconds) << ", beam +"
                      << duration(profile.beam_sample_extra_seconds) << ")\n";
  line("per block") << "swap out " << duration(profile.swap_out_block_seconds) << ", swap in "
                    << duration(profile.swap_in_block_seconds) << ", copy " << duration(profile.copy_block_seconds)
                    << "\n";
  line("engine, per step") << duration(model.engine_overhead_seconds(1)) << " at 1 sequence, "
                           << duration(model.engine_overhead_seconds(b_max)) << " at " << b_max << "\n";
  line("load factor") << std::setprecision(3) << profile.load_factor
                      << " (mean over lower-quartile step time while profiling; 1 = undisturbed)\n";
}

}  // namespace

int run_profile(const std::vector<std::string>& args) {
  if (!args.empty() && args.front() == "import") return run_profile_import({args.begin() + 1, args.end()});
  ProfileOptions options;
  po::options_description description(
      "pagedllm profile: time real engine steps over a grid of shapes and write the table the simulator\n"
      "interpolates (pagedllm replay --executor sim --profile FILE)\n"
      "  pagedllm profile --executor cpu [--model tiny] [--threads N] [--block-size 16] [--quick] -o profile.json\n"
      "  pagedllm profile import ...: a GPU simulator's per-operator CSVs instead (pagedllm profile import --help)\n"
      "The timings are the executor's own step times (what a --time virtual replay advances by); the\n"
      "engine's time around each step is recorded too, for wall-clock predictions");
  // clang-format off
  description.add_options()
      ("help,h", "show this help")
      ("executor", po::value(&options.executor)->default_value(options.executor),
       "the executor to time: cpu (the CPU reference engine) or cuda (the GPU engine)")
      ("model,m", po::value(&options.model)->default_value(options.model),
       "a .gguf file, a Hugging Face directory, a fetched model's name, or 'tiny' (the embedded test model)")
      ("threads", po::value(&options.num_threads)->default_value(0),
       "cpu: OpenMP threads (0 = all cores); use the value the replays you predict will use")
      ("block-size", po::value(&options.block_size)->default_value(options.block_size), "tokens per KV block")
      ("max-num-seqs", po::value(&options.max_num_seqs)->default_value(options.max_num_seqs),
       "the largest number of decode sequences timed in one step")
      ("max-model-len", po::value(&options.max_model_len)->default_value(0),
       "the longest context timed (0 = the model's): what the replays you predict reach")
      ("repeats", po::value(&options.num_repeats)->default_value(options.num_repeats),
       "timed steps per shape and pass (the lower quartile over all passes is kept)")
      ("warmup", po::value(&options.num_warmup_steps)->default_value(options.num_warmup_steps),
       "untimed steps before each shape's timed ones")
      ("passes", po::value(&options.num_passes)->default_value(options.num_passes),
       "passes over the decode and prefill grids (a shape's timed steps are pooled)")
      ("gpu-memory-utilization", po::value(&options.cuda.gpu_memory_utilization)->default_value(options.cuda.gpu_memory_utilization),
       "cuda: the fraction of device memory for weights, activations and KV; decode cells whose KV does not fit are extrapolated")
      ("quick", po::bool_switch(&options.quick), "a small grid, 3 repeats, one pass (a second; for tests)")
      ("output,o", po::value(&options.output)->required(), "the profile to write (JSON)")
      ("quiet,q", po::bool_switch(&options.quiet), "no progress lines");
  // clang-format on
  add_cuda_options(description, options.cuda);
  po::variables_map values;
  if (!parse_options(args, description, values)) return 0;
  if (options.executor != "cpu" && options.executor != "cuda") {
    throw po::error("--executor: expected cpu or cuda, got '" + options.executor + "'");
  }
  if (options.executor == "cuda") require_cuda_executor();
  if (options.quick && values["repeats"].defaulted()) options.num_repeats = 3;
  if (options.quick && values["passes"].defaulted()) options.num_passes = 1;

  const frontend::ModelBundle bundle = frontend::open_model(resolve_model_argument(options.model));
  const bool on_gpu = options.executor == "cuda";
  const auto weights = on_gpu ? nullptr : std::make_shared<const cpu_ref::LlamaModel>(frontend::load_weights(bundle));
  const auto model_max_len = frontend::context_length(bundle);
  if (options.max_model_len < 0 || options.max_model_len > model_max_len) {
    throw po::error("--max-model-len: expected 0 (the model's) to " + std::to_string(model_max_len) + ", got " +
                    std::to_string(options.max_model_len));
  }
  const int32_t max_model_len = options.max_model_len > 0 ? options.max_model_len : model_max_len;

  sim::StepProfilerConfig config;
  config.grid = options.quick ? sim::quick_profile_grid(max_model_len)
                              : sim::default_profile_grid(max_model_len, options.max_num_seqs, options.num_repeats);
  config.block_size = options.block_size;
  config.max_model_len = max_model_len;
  config.num_warmup_steps = options.num_warmup_steps;
  config.num_repeats = options.num_repeats;
  config.num_passes = options.num_passes;
  config.token_begin = tokenizer::first_ordinary_token(bundle.tokenizer);
  config.token_end = std::min<TokenId>(bundle.tokenizer.num_tokens(), static_cast<TokenId>(bundle.config.vocab_size));
  const int32_t num_threads = options.num_threads;
  // The GPU profile's executors share one upload of the weights.
  engine::EngineConfig gpu_config;
  gpu_config.scheduler.max_num_seqs = options.max_num_seqs + 1;
  gpu_config.scheduler.max_num_batched_tokens = std::max(8192, (options.max_num_seqs + 1) * 2 * options.block_size);
  gpu_config.scheduler.max_model_len = max_model_len;
  gpu_config.cache.block_size = options.block_size;
  const auto gpu_model =
      on_gpu ? upload_cuda_model(options.cuda,
                                 frontend::load_weights(bundle, {.dtype = host_weight_dtype(options.cuda)}), gpu_config)
             : nullptr;
  if (on_gpu) {  // what the device holds beside the weights and the largest step's activations
    const CudaExecutorSetup probe = make_cuda_executor(options.cuda, gpu_model, gpu_config);
    config.max_device_blocks = probe.cache.num_device_blocks;
    config.max_num_batched_tokens = gpu_config.scheduler.max_num_batched_tokens;
  }
  std::string gpu_description;
  config.make_executor = [&](const kv::KvCacheConfig& cache) -> std::unique_ptr<engine::Executor> {
    if (!on_gpu) {
      return std::make_unique<cpu_ref::CpuExecutor>(
          weights, cpu_ref::CpuExecutorConfig{.cache = cache, .num_threads = num_threads});
    }
    // The profiler fixes the tiers; activations cover its largest step (decode batches of up to
    // max-num-seqs + 1 sequences, prompt chunks of up to 2 blocks per sequence of them).
    engine::EngineConfig engine_config = gpu_config;
    engine_config.cache = cache;
    CudaExecutorSetup setup = make_cuda_executor(options.cuda, gpu_model, engine_config);
    gpu_description = setup.description;
    return std::move(setup.executor);
  };
  const auto start = std::chrono::steady_clock::now();
  config.on_progress = [&](const std::string& line) {
    if (options.quiet) return;
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::cerr << "profile [" << std::fixed << std::setprecision(1) << elapsed << " s] " << line << '\n';
  };

  sim::StepProfile profile = sim::measure_step_profile(config);
  profile.executor = on_gpu ? "cuda" : "cpu_ref";
  profile.device = on_gpu ? gpu_description : cpu_description();
  profile.num_threads = options.num_threads;
  profile.model = sim::ProfileModel::of(model::model_shape_from_config(bundle.config, options.model));
  sim::write_step_profile(profile, options.output);
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << "profile: " << options.output << " (" << profile.executor << ", " << bundle.source.path << ", threads "
            << options.num_threads << ", " << std::fixed << std::setprecision(1) << elapsed << " s)\n";
  print_summary(profile, std::cout);
  return 0;
}

}  // namespace pagedllm::cli
