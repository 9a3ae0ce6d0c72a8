// `pagedllm score`: the logits of every position of given token sequences, from the CPU
// reference forward pass (or the CUDA executor, --executor cuda), as raw fp32 files. What the
// PyPI tier and tools/validate/hf_oracle.py compare against independent implementations.
//   input:  JSONL, one {"ids": [...]} per line
//   output: DIR/<line>.f32 ([num_ids, vocab] row-major little-endian fp32) + DIR/index.json
#include <omp.h>
#include <algorithm>
#include <boost/program_options.hpp>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/frontend/model_bundle.h"
#include "cpu_ref/cpu_executor.h"
#include "cpu_ref/host_kv_store.h"
#include "cpu_ref/llama_model.h"
#include "tools/pagedllm/cli_options.h"
#include "tools/pagedllm/cuda_setup.h"
#include "tools/pagedllm/default_model.h"
#include "tools/pagedllm/subcommands.h"

namespace pagedllm::cli {
namespace {

namespace po = boost::program_options;

std::vector<std::vector<TokenId>> read_sequences(const std::string& path, int32_t vocab, int64_t max_positions) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot open");
  std::vector<std::vector<TokenId>> sequences;
  std::string line;
  for (int line_number = 1; std::getline(in, line); ++line_number) {
    if (line.empty()) continue;
    const std::string where = path + ":" + std::to_string(line_number);
    nlohmann::json item;
    try {
      item = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception& error) {
      throw std::runtime_error(where + ": not JSON: " + error.what());
    }
    if (!item.is_object() || !item.contains("ids") || !item["ids"].is_array() || item["ids"].empty()) {
      throw std::runtime_error(where + ": field 'ids': expected a non-empty array of token ids");
    }
    std::vector<TokenId> ids;
    for (const auto& id : item["ids"]) {
      if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= vocab) {
        throw std::runtime_error(where + ": field 'ids': " + id.dump() + " is not a token id below " +
                                 std::to_string(vocab));
      }
      ids.push_back(id.get<TokenId>());
    }
    if (static_cast<int64_t>(ids.size()) > max_positions) {
      throw std::runtime_error(where + ": " + std::to_string(ids.size()) + " ids exceed the model's context of " +
                               std::to_string(max_positions));
    }
    sequences.push_back(std::move(ids));
  }
  return sequences;
}

void write_logits(const std::string& output_dir, size_t index, const std::vector<float>& logits) {
  const std::string path = output_dir + "/" + std::to_string(index) + ".f32";
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(logits.data()), static_cast<std::streamsize>(logits.size() * sizeof(float)));
  if (!out) throw std::runtime_error(path + ": cannot write");
}

// The CUDA executor, one position per step (each step a one-token chunk over the KV cached by
// the steps before it, so every position's logits row is sampled and observed).
std::vector<std::vector<float>> score_on_gpu(const frontend::ModelBundle& bundle, CudaOptions cuda,
                                             const std::vector<std::vector<TokenId>>& sequences, int32_t block_size) {
  size_t longest = 1;
  for (const auto& ids : sequences) longest = std::max(longest, ids.size());
  const auto num_blocks =
      static_cast<int32_t>((longest + static_cast<size_t>(block_size) - 1) / static_cast<size_t>(block_size));
  engine::EngineConfig config;
  config.cache.block_size = block_size;
  config.cache.num_device_blocks = num_blocks;
  config.scheduler.max_num_seqs = 1;
  config.scheduler.max_num_batched_tokens = block_size;
  config.scheduler.max_model_len = static_cast<int32_t>(longest);
  cuda.swap_space_gib = 0.0;
  std::vector<float> row;
  cuda.logits_observer = [&row](const sched::ScheduledSequence&, std::span<const float> logits) {
    row.assign(logits.begin(), logits.end());
  };
  require_cuda_executor();
  CudaExecutorSetup setup =
      make_cuda_executor(cuda, frontend::load_weights(bundle, {.dtype = host_weight_dtype(cuda)}), config);
  std::cerr << setup.description << '\n';
  std::vector<kv::BlockId> table(static_cast<size_t>(num_blocks));
  for (int32_t b = 0; b < num_blocks; ++b) table[static_cast<size_t>(b)] = b;
  sched::SamplingParams greedy;
  greedy.temperature = 0.0f;
  std::vector<std::vector<float>> all;
  for (const auto& ids : sequences) {
    std::vector<float> logits;
    for (int32_t p = 0; p < static_cast<int32_t>(ids.size()); ++p) {
      sched::StepPlan plan;
      plan.step = p;
      sched::ScheduledSequence scheduled;
      scheduled.tokens = std::span<const TokenId>(ids).first(static_cast<size_t>(p) + 1);
      scheduled.start = p;
      scheduled.end = p + 1;
      scheduled.num_prompt_tokens = p + 1;
      scheduled.block_table = table;
      scheduled.sample = true;
      scheduled.params = &greedy;
      plan.sequences.push_back(scheduled);
      setup.executor->execute(plan);
      logits.insert(logits.end(), row.begin(), row.end());
    }
    all.push_back(std::move(logits));
  }
  return all;
}

}  // namespace

int run_score(const std::vector<std::string>& args) {
  std::string model_argument;
  std::string input;
  std::string output_dir;
  int32_t num_threads = 0;
  std::string executor = "cpu";
  CudaOptions cuda;
  po::options_description description("pagedllm score: logits of every position, CPU reference forward pass or GPU");
  // clang-format off
  description.add_options()
      ("help,h", "show this help")
      ("model,m", po::value(&model_argument)->required(), "a .gguf file, a Hugging Face model directory, a fetched model's name, or 'tiny' (the embedded test model)")
      ("input-jsonl", po::value(&input)->required(), "one {\"ids\": [...]} per line")
      ("output-dir", po::value(&output_dir)->required(), "where <line>.f32 and index.json go")
      ("executor", po::value(&executor)->default_value(executor), "cpu (fp32 reference) or cuda")
      ("threads", po::value(&num_threads)->default_value(0), "cpu: OpenMP threads (0 = all cores)");
  // clang-format on
  add_cuda_options(description, cuda);
  po::variables_map values;
  if (!parse_options(args, description, values)) return 0;
  if (num_threads > 0) omp_set_num_threads(num_threads);

  if (executor != "cpu" && executor != "cuda")
    throw po::error("--executor: expected cpu or cuda, got '" + executor + "'");
  const frontend::ModelBundle bundle = frontend::open_model(resolve_model_argument(model_argument));
  const auto vocab = static_cast<int32_t>(bundle.config.vocab_size);
  const auto sequences = read_sequences(input, vocab, bundle.config.max_position_embeddings);
  std::filesystem::create_directories(output_dir);
  constexpr int32_t kBlockSize = 16;
  nlohmann::json index = nlohmann::json::array();
  if (executor == "cuda") {
    const std::vector<std::vector<float>> all = score_on_gpu(bundle, cuda, sequences, kBlockSize);
    for (size_t i = 0; i < sequences.size(); ++i) {
      write_logits(output_dir, i, all[i]);
      index.push_back(
          {{"file", std::to_string(i) + ".f32"}, {"num_tokens", sequences[i].size()}, {"vocab_size", vocab}});
    }
    std::ofstream(output_dir + "/index.json") << index.dump(1) << '\n';
    std::cerr << "scored " << sequences.size() << " sequence(s) on cuda into " << output_dir << '\n';
    return 0;
  }
  const cpu_ref::LlamaModel model(frontend::load_weights(bundle));
  for (size_t i = 0; i < sequences.size(); ++i) {
    const auto& ids = sequences[i];
    const auto num_blocks = static_cast<int32_t>((ids.size() + kBlockSize - 1) / kBlockSize);
    cpu_ref::HostKvStore cache(cpu_ref::kv_layout_for(bundle.config, kBlockSize, num_blocks), 0);
    std::vector<kv::BlockId> table(static_cast<size_t>(num_blocks));
    for (int32_t b = 0; b < num_blocks; ++b) table[static_cast<size_t>(b)] = b;
    cpu_ref::ForwardBatch batch;
    batch.tokens = ids;
    batch.block_tables.push_back(table);
    for (int32_t p = 0; p < static_cast<int32_t>(ids.size()); ++p) {
      batch.positions.push_back(p);
      batch.sequence_index.push_back(0);
      batch.logits_rows.push_back(p);
    }
    write_logits(output_dir, i, model.forward(batch, cache));
    index.push_back({{"file", std::to_string(i) + ".f32"}, {"num_tokens", ids.size()}, {"vocab_size", vocab}});
  }
  std::ofstream(output_dir + "/index.json") << index.dump(1) << '\n';
  std::cerr << "scored " << sequences.size() << " sequence(s) into " << output_dir << '\n';
  return 0;
}

}  // namespace pagedllm::cli
