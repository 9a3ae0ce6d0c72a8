// `pagedllm generate`: prompts or chat messages in, text out, on the CPU reference engine or the GPU.
// One request streams its text to the terminal as it is generated; several print when done.
#include <boost/program_options.hpp>
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/engine/clock.h"
#include "core/engine/engine.h"
#include "core/frontend/model_bundle.h"
#include "core/tokenizer/incremental_detokenizer.h"
#include "cpu_ref/cpu_executor.h"
#include "tools/pagedllm/cli_options.h"
#include "tools/pagedllm/cuda_setup.h"
#include "tools/pagedllm/default_model.h"
#include "tools/pagedllm/subcommands.h"

namespace pagedllm::cli {
namespace {

namespace po = boost::program_options;

struct GenerateOptions {
  std::string model;
  std::vector<std::string> prompts;    // raw text, tokenized as is
  std::vector<std::string> chats;      // one user message each, through the chat template
  std::string system;                  // system message for every --chat
  std::string messages_json;           // one whole conversation from a file
  std::string chat_template;
  sched::SamplingParams sampling;
  std::string executor = "cpu";        // cpu | cuda
  CudaOptions cuda;
  int32_t num_threads = 0;
  int64_t kv_cache_mib = 512;
  int64_t swap_space_mib = 256;
  sched::SchedulerConfig scheduler;
  bool stream = true;
};

std::vector<chat::ChatMessage> read_messages(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot open");
  nlohmann::json document;
  try {
    document = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& error) {
    throw std::runtime_error(path + ": not JSON: " + error.what());
  }
  if (!document.is_array()) throw std::runtime_error(path + ": expected an array of {\"role\", \"content\"}");
  std::vector<chat::ChatMessage> messages;
  for (size_t i = 0; i < document.size(); ++i) {
    const auto& item = document[i];
    if (!item.is_object() || !item.contains("role") || !item["role"].is_string() ||
        !item.contains("content") || !item["content"].is_string()) {
      throw std::runtime_error(path + ": message " + std::to_string(i) +
                               ": expected {\"role\": string, \"content\": string}");
    }
    messages.push_back({item["role"].get<std::string>(), item["content"].get<std::string>()});
  }
  return messages;
}

std::vector<std::vector<TokenId>> build_prompts(const GenerateOptions& options,
                                                const frontend::ModelBundle& bundle) {
  std::vector<std::vector<TokenId>> prompts;
  for (const std::string& text : options.prompts) prompts.push_back(frontend::encode_prompt(bundle, text));
  for (const std::string& text : options.chats) {
    std::vector<chat::ChatMessage> messages;
    if (!options.system.empty()) messages.push_back({"system", options.system});
    messages.push_back({"user", text});
    prompts.push_back(frontend::encode_chat(bundle, messages));
  }
  if (!options.messages_json.empty()) {
    prompts.push_back(frontend::encode_chat(bundle, read_messages(options.messages_json)));
  }
  if (prompts.empty()) throw po::error("give at least one --prompt, --chat or --messages-json");
  return prompts;
}


}  // namespace

int run_generate(const std::vector<std::string>& args) {
  GenerateOptions options;
  options.sampling.temperature = 0.0f;
  options.sampling.max_tokens = 128;
  uint64_t seed = 0;
  po::options_description description(
      "pagedllm generate: text out of prompts or chat messages, on the CPU reference engine or the GPU");
  description.add_options()
      ("help,h", "show this help")
      ("model,m", po::value(&options.model)->required(), "a .gguf file, a Hugging Face model directory, a fetched model's name, or 'tiny' (the embedded test model)")
      ("prompt,p", po::value(&options.prompts), "a raw prompt (repeatable: one request each)")
      ("chat,c", po::value(&options.chats), "a user message, rendered with the chat template (repeatable)")
      ("system", po::value(&options.system), "a system message before every --chat")
      ("messages-json", po::value(&options.messages_json), "a whole conversation: [{\"role\", \"content\"}, ...]")
      ("chat-template", po::value(&options.chat_template), "override the model's chat format: chatml, llama3, llama3.1, mistral, mistral-v1, or a file")
      ("max-tokens,n", po::value(&options.sampling.max_tokens)->default_value(128), "output tokens at most")
      ("temperature,t", po::value(&options.sampling.temperature)->default_value(0.0f), "0 = greedy (the default: reproducible)")
      ("top-p", po::value(&options.sampling.top_p)->default_value(1.0f), "")
      ("top-k", po::value(&options.sampling.top_k)->default_value(0), "0 = off")
      ("min-p", po::value(&options.sampling.min_p)->default_value(0.0f), "")
      ("repetition-penalty", po::value(&options.sampling.repetition_penalty)->default_value(1.0f), "")
      ("seed", po::value(&seed), "random stream seed (default: from the request id)")
      ("samples", po::value(&options.sampling.n)->default_value(1), "parallel samples per prompt")
      ("executor", po::value(&options.executor)->default_value(options.executor), "cpu or cuda")
      ("threads", po::value(&options.num_threads)->default_value(0), "cpu: OpenMP threads (0 = all cores)")
      ("kv-cache-mib", po::value(&options.kv_cache_mib)->default_value(512), "cpu: KV cache memory (fp32)")
      ("swap-space-mib", po::value(&options.swap_space_mib)->default_value(256), "cpu: swap tier for preempted requests")
      ("max-num-seqs", po::value(&options.scheduler.max_num_seqs)->default_value(256), "")
      ("max-num-batched-tokens", po::value(&options.scheduler.max_num_batched_tokens)->default_value(2048), "")
      ("no-stream", "print whole outputs when done, even for one request");
  add_cuda_options(description, options.cuda, /*with_memory=*/true);
  po::variables_map values;
  if (!parse_options(args, description, values)) return 0;
  if (options.executor != "cpu" && options.executor != "cuda") {
    throw po::error("--executor: expected cpu or cuda, got '" + options.executor + "'");
  }
  if (values.count("seed") != 0) options.sampling.seed = seed;
  options.stream = values.count("no-stream") == 0;

  const frontend::ModelBundle bundle = frontend::open_model(resolve_model_argument(options.model), {options.chat_template});
  const std::vector<std::vector<TokenId>> prompts = build_prompts(options, bundle);

  engine::EngineConfig config;
  config.scheduler = options.scheduler;
  config.scheduler.max_model_len = static_cast<int32_t>(std::min<int64_t>(bundle.config.max_position_embeddings, 32768));
  config.cache.num_device_blocks = cpu_ref::num_kv_blocks_for_bytes(bundle.config, config.cache.block_size,
                                                                    static_cast<uint64_t>(options.kv_cache_mib) << 20);
  config.cache.num_host_blocks = cpu_ref::num_kv_blocks_for_bytes(bundle.config, config.cache.block_size,
                                                                  static_cast<uint64_t>(options.swap_space_mib) << 20);
  frontend::apply_model_limits(bundle, config);
  const bool streaming = options.stream && prompts.size() == 1 && options.sampling.n == 1;
  config.output_kind = streaming ? engine::OutputKind::delta : engine::OutputKind::final_only;

  std::unique_ptr<engine::Executor> executor;
  if (options.executor == "cuda") {
    require_cuda_executor();
    config.cache.num_device_blocks = 0;  // sized from GPU memory
    config.cache.num_host_blocks = 0;
    CudaExecutorSetup setup =
        make_cuda_executor(options.cuda, frontend::load_weights(bundle, {.dtype = host_weight_dtype(options.cuda)}), config);
    std::cerr << setup.description << '\n';
    executor = std::move(setup.executor);
  } else {
    auto model = std::make_shared<const cpu_ref::LlamaModel>(frontend::load_weights(bundle));
    executor = std::make_unique<cpu_ref::CpuExecutor>(
        model, cpu_ref::CpuExecutorConfig{.cache = config.cache, .num_threads = options.num_threads});
  }
  engine::WallClock clock;
  engine::Engine engine(config, *executor, clock);
  for (size_t i = 0; i < prompts.size(); ++i) {
    engine.add_request(sched::Request{.id = static_cast<sched::RequestId>(i),
                                      .prompt_tokens = prompts[i],
                                      .params = options.sampling});
  }

  tokenizer::IncrementalDetokenizer stream(bundle.tokenizer, {.skip_special_tokens = true});
  std::vector<engine::RequestOutput> finished;
  while (engine.has_unfinished()) {
    for (engine::RequestOutput& output : engine.step()) {
      if (streaming && !output.completions.empty()) {
        std::cout << stream.push(output.completions.front().tokens) << std::flush;
      }
      if (output.finished) finished.push_back(std::move(output));
    }
  }
  if (streaming) std::cout << stream.flush() << std::endl;

  std::sort(finished.begin(), finished.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
  for (const engine::RequestOutput& output : finished) {
    if (!streaming) {
      for (const engine::Completion& completion : output.completions) {
        std::cout << "--- request " << output.id << ", sample " << completion.index << " ("
                  << sched::to_string(completion.finish_reason) << ")\n"
                  << bundle.tokenizer.decode(completion.tokens, {.skip_special_tokens = true}) << '\n';
      }
    }
    if (output.finish_reason == sched::FinishReason::rejected) {
      std::cerr << "request " << output.id << " rejected: " << output.message << '\n';
    }
  }
  const double seconds = clock.now();
  const int64_t generated = engine.counters().generation_tokens;
  std::fprintf(stderr, "[%zu request(s), %lld tokens generated in %.2f s, %.1f tokens/s, cpu_ref]\n",
               finished.size(), static_cast<long long>(generated), seconds,
               seconds > 0 ? static_cast<double>(generated) / seconds : 0.0);
  return 0;
}

}  // namespace pagedllm::cli
