// Building the executor a subcommand runs on (`--executor cpu|sim|cuda`), and sizing its KV cache:
// the CPU engine from a memory budget for fp32 KV, the simulator as vLLM sizes a GPU's
// (memory x utilization - weights, over the bytes of a block), or, with a measured profile
// (`--profile`), as the profiled executor sizes its own (the CPU engine's: --kv-cache-mib).
#pragma once

#include <boost/program_options.hpp>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "core/engine/engine_config.h"
#include "core/engine/executor.h"
#include "core/frontend/model_bundle.h"
#include "core/spec/draft_model_proposer.h"
#include "tools/pagedllm/cuda_setup.h"

namespace pagedllm::cli {

struct ExecutorOptions {
  std::string executor = "cpu";  // cpu | sim | cuda
  // cpu
  int32_t num_threads = 0;     // OpenMP threads; 0 = all cores
  int64_t kv_cache_mib = 512;  // fp32 KV store
  // "stored": compute from the file's types, read in place (about the file's size in memory);
  // "fp32": dequantize every weight at load (4 bytes a weight). Bit-identical logits.
  std::string cpu_weights = "stored";
  // sim
  std::string hardware = "h100-sxm";
  std::string sim_model;  // a shape preset; empty: the --model's config
  int32_t tensor_parallel = 1;
  std::string gemm_model = "roofline";  // sim::parse_linear_model
  double gpu_memory_utilization = 0.9;  // sim and cuda
  // GiB of host memory for swapped-out KV (per GPU), in every executor's own KV format; absent:
  // the executor's default (swap_space_gib_for).
  std::optional<double> swap_space_gib;
  // cuda (its memory fields are the two above)
  CudaOptions cuda;
  // sim with a measured profile (`pagedllm profile`) instead of the roofline
  std::string profile;
  std::string draft_profile;             // with --profile and a draft model: the draft's own measured profile
  bool profile_engine_overhead = false;  // add the engine's own time per step (wall-clock replays)
  bool profile_quiet = false;            // the tables as measured, without the profile's load factor
};

// The swap space defaults: the CPU engine keeps fp32 KV in ordinary memory, 0.25 GiB; a GPU,
// simulated or real, vLLM's 4 GiB.
inline constexpr double kCpuSwapSpaceGib = 0.25;
inline constexpr double kGpuSwapSpaceGib = 4.0;
double swap_space_gib_for(const ExecutorOptions& options, const std::string& executor);
// Bytes of `gib` GiB; throws boost::program_options::error for a negative or absurd size.
uint64_t gib_to_bytes(double gib);

// The option groups, each usable alone: the CPU engine's (--threads, --kv-cache-mib), the
// simulator's cost model (--hardware, --sim-model, -tp, --profile ...), and memory (
// --gpu-memory-utilization, --swap-space). Defaults are the values `options` holds when added.
void add_cpu_options(boost::program_options::options_description& description, ExecutorOptions& options);
void add_sim_options(boost::program_options::options_description& description, ExecutorOptions& options);
void add_memory_options(boost::program_options::options_description& description, ExecutorOptions& options);
// --executor and the three groups; subcommands that run the GPU engine add
// add_cuda_options(description, options.cuda) too.
void add_executor_options(boost::program_options::options_description& description, ExecutorOptions& options);

struct ExecutorSetup {
  std::unique_ptr<engine::Executor> executor;
  kv::KvCacheConfig cache;  // the tiers it sized: the engine must run with these
  std::string description;  // one line: what runs, on what, with how many blocks (and the draft)
  // Speculative decoding with a draft model (config.speculative.method draft_model): the draft on
  // an executor of the same kind, for the engine (null otherwise).
  std::unique_ptr<spec::DraftModelProposer> draft_model;
};

// The GPU engine's options with the memory group's values (--gpu-memory-utilization, --swap-space).
CudaOptions cuda_options_of(const ExecutorOptions& options);

// Builds the executor for `bundle` and the engine `config`, sizing its KV tiers (a
// num_device_blocks already set, --num-gpu-blocks-override, is kept): setup.cache. Loads weights
// for cpu and cuda, and the draft model's too when the config speculates with one.
ExecutorSetup make_executor(const ExecutorOptions& options, const frontend::ModelBundle& bundle,
                            const engine::EngineConfig& config);

}  // namespace pagedllm::cli
