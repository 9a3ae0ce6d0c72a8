// `pagedllm generate`: prompts or chat messages in, text out, on the CPU reference engine or the GPU.
// One request streams its text to the terminal as it is generated; several print when done.
#include <algorithm>
#include <boost/program_options.hpp>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/engine/clock.h"
#include "core/frontend/generate.h"
#include "core/frontend/model_bundle.h"
#include "tools/pagedllm/cli_options.h"
#include "tools/pagedllm/cuda_setup.h"
#include "tools/pagedllm/default_model.h"
#include "tools/pagedllm/engine_options.h"
#include "tools/pagedllm/executor_factory.h"
#include "tools/pagedllm/subcommands.h"

namespace pagedllm::cli {
namespace {

namespace po = boost::program_options;

struct GenerateOptions {
  std::string model;
  std::vector<std::string> prompts;  // raw text, tokenized as is
  std::vector<std::string> chats;    // one user message each, through the chat template
  std::string system;                // system message for every --chat
  std::string messages_json;         // one whole conversation from a file
  std::string chat_template;
  sched::SamplingParams sampling;
  EngineOptions engine;
  ExecutorOptions executor;  // cpu or cuda
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
    if (!item.is_object() || !item.contains("role") || !item["role"].is_string() || !item.contains("content") ||
        !item["content"].is_string()) {
      throw std::runtime_error(path + ": message " + std::to_string(i) +
                               ": expected {\"role\": string, \"content\": string}");
    }
    messages.push_back({item["role"].get<std::string>(), item["content"].get<std::string>()});
  }
  return messages;
}

std::vector<std::vector<TokenId>> build_prompts(const GenerateOptions& options, const frontend::ModelBundle& bundle) {
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
  // clang-format off
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
      ("stop", po::value(&options.sampling.stop), "a stop string: the text ends before it (repeatable)")
      ("no-stream", "print whole outputs when done, even for one request");
  // clang-format on
  add_engine_options(description, options.engine);
  add_executor_options(description, options.executor);
  add_cuda_options(description, options.executor.cuda);
  po::variables_map values;
  if (!parse_options(args, description, values)) return 0;
  if (options.executor.executor != "cpu" && options.executor.executor != "cuda") {
    throw po::error("--executor " + options.executor.executor +
                    ": generating text needs an executor that computes "
                    "tokens (cpu or cuda)");
  }
  if (values.count("seed") != 0) options.sampling.seed = seed;
  options.stream = values.count("no-stream") == 0;

  const frontend::ModelBundle bundle =
      frontend::open_model(resolve_model_argument(options.model), {options.chat_template});
  const std::vector<std::vector<TokenId>> prompts = build_prompts(options, bundle);

  frontend::GenerateConfig config;
  engine::EngineCounters counters;
  config.counters = &counters;
  config.engine = engine_config_from(options.engine, frontend::context_length(bundle));
  frontend::apply_model_limits(bundle, config.engine);
  config.engine.cache.num_device_blocks = options.engine.num_gpu_blocks_override;
  ExecutorSetup setup = make_executor(options.executor, bundle, config.engine);
  config.engine.cache = setup.cache;
  config.draft_model = setup.draft_model.get();
  std::cerr << setup.description << '\n';

  std::vector<frontend::TextRequest> requests;
  for (const std::vector<TokenId>& prompt : prompts) requests.push_back({.prompt = prompt, .params = options.sampling});
  // One request, one sample: its text goes to the terminal as it comes.
  const bool streaming = options.stream && prompts.size() == 1 && options.sampling.n == 1;
  if (streaming) {
    config.on_update = [](size_t, const frontend::RequestUpdate& update) {
      for (const frontend::CompletionUpdate& news : update.completions) std::cout << news.text << std::flush;
    };
  }
  engine::WallClock clock;
  config.clock = &clock;
  const std::vector<frontend::TextOutput> outputs =
      frontend::generate(requests, *setup.executor, bundle.tokenizer, config);
  if (streaming) std::cout << std::endl;

  int64_t generated = 0;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const frontend::TextOutput& output = outputs[i];
    if (output.error != frontend::RequestError::none) {
      std::cerr << "request " << i << " refused: " << output.error_message << '\n';
      continue;
    }
    for (const frontend::TextCompletion& completion : output.completions) {
      generated += static_cast<int64_t>(completion.tokens.size());
      if (streaming) continue;
      std::cout << "--- request " << i << ", sample " << completion.index << " (" << completion.finish_reason << ")\n"
                << completion.text << '\n';
    }
  }
  const double seconds = clock.now();
  // What the engine did beyond generating, when it did: preemptions, speculation's acceptance.
  std::string engine_notes;
  if (counters.preemptions_swap + counters.preemptions_recompute > 0) {
    engine_notes += ", preemptions " + std::to_string(counters.preemptions_swap) + " swap / " +
                    std::to_string(counters.preemptions_recompute) + " recompute";
  }
  if (counters.spec_drafts > 0) {
    engine_notes += ", speculation accepted " + std::to_string(counters.spec_accepted_tokens) + " of " +
                    std::to_string(counters.spec_draft_tokens) + " proposals";
  }
  std::fprintf(stderr, "[%zu request(s), %lld tokens generated in %.2f s, %.1f tokens/s, %s%s]\n", outputs.size(),
               static_cast<long long>(generated), seconds, seconds > 0 ? static_cast<double>(generated) / seconds : 0.0,
               setup.executor->name().c_str(), engine_notes.c_str());
  return 0;
}

}  // namespace pagedllm::cli
