// Per-operator GPU timings in the CSV layout GPU simulators publish (Vidur's data/profiling:
// compute/<gpu>/<model>/mlp.csv and attention.csv), turned into the StepProfile our measured
// cost model interpolates (docs/SIMULATOR.md, "Imported operator profiles").
//
// mlp.csv has one row per (num_tokens, num_tensor_parallel_workers) with each operator's time
// (time_stats.<op>.{min,max,mean,median,std}, in ms): the projections, the MLP, norms, rotary,
// the residual add, the embedding. attention.csv has one row per attention shape: a decode batch
// (batch_size sequences, each with kv_cache_size tokens cached) or a prefill chunk
// (prefill_chunk_size new tokens after kv_cache_size cached ones), for one model's heads, tensor
// parallel size and block size. A step of our tables is then
//   decode (b, c)   overhead + emb(b) + L (layer(b) + decode_attention(b, c - 1))
//   prefill (n, c0) overhead + emb(n) + L (layer(n) + prefill_attention(n, c0))
// with layer(t) every non-embedding operator once, interpolated (piecewise linear) between the
// profiled token counts. The files time GPU operators only: the step overhead is a parameter, and
// neither the lm_head nor the sampler is in them (sample_seconds is 0). Block operations and
// tensor parallelism's all-reduces are not profiled either: their prices come from the caller
// (the roofline of the GPU), the all-reduces added to every cell.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <map>
#include <string>

#include "core/model/model_shape.h"
#include "sim/step_profile.h"

namespace pagedllm::sim {

struct OperatorProfileImport {
  model::ModelShape shape;             // the model simulated: the files' rows must be of its shape
  int32_t tensor_parallel = 1;         // rows of this num_tensor_parallel_workers
  int32_t block_size = 16;             // attention rows of this block_size
  std::string statistic = "median";    // which column of each operator: min, max, mean or median
  std::string device;                  // what the files were measured on, in words
  double step_overhead_seconds = 0.0;  // added to every step (the files time GPU operators only)
  double swap_block_seconds = 0.0;     // per block, each way (not in the files)
  double copy_block_seconds = 0.0;
  // With tensor parallelism, a step's all-reduces for `tokens` tokens (the files time each GPU's
  // operators, not the communication between them); empty: none (tensor parallel 1).
  std::function<double(double tokens)> all_reduce_seconds{};
};

// The two files, as streams; the names stand for them in errors.
struct OperatorProfileFiles {
  std::istream& mlp;
  std::string mlp_name;
  std::istream& attention;
  std::string attention_name;
};

// mlp.csv's rows of one tensor parallel size: per token count (the first row of each), every
// operator's time in seconds, by the operator's name ("attn_pre_proj", "mlp_up_proj", "emb", ...).
// With `shape`, a row of another model's shape is an error.
using OperatorTable = std::map<int64_t, std::map<std::string, double>>;
OperatorTable read_operator_table(std::istream& mlp, const std::string& file, const std::string& statistic,
                                  int32_t tensor_parallel, const model::ModelShape* shape = nullptr);

// Throws StepProfileError naming the file, line and column at fault: a missing column, a row of
// another model's shape in mlp.csv, a field that is not a number, no rows for the tensor
// parallel size (or, in attention.csv, no decode or no prefill rows of this model and block
// size), a statistic other than the four.
StepProfile import_operator_profile(const OperatorProfileImport& config, const OperatorProfileFiles& files);

}  // namespace pagedllm::sim
