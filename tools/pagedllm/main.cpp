// pagedllm: one binary, one subcommand per job.
#include <cstdio>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "cpu_ref/openmp_wait.h"
#include "tools/pagedllm/subcommands.h"

namespace {

struct Subcommand {
  std::string_view name;
  int (*run)(const std::vector<std::string>&);
  std::string_view summary;
};

constexpr Subcommand kSubcommands[] = {
    {"bench", pagedllm::cli::run_bench,
     "load an OpenAI-compatible server over HTTP streaming: vLLM's benchmark_serving metrics"},
    {"chat-template", pagedllm::cli::run_chat_template,
     "render a conversation with a model's chat template (Jinja recognised, or a named format)"},
    {"check", pagedllm::cli::run_check,
     "lockstep cross-check: a trace through sim, cpu (and cuda) under one clock; KV event logs must match"},
    {"dequantize", pagedllm::cli::run_dequantize,
     "export the tensors of a GGUF file to fp32 files (DIR/<tensor>.f32 + DIR/index.json)"},
    {"generate", pagedllm::cli::run_generate,
     "prompts or chat messages in, text out (streamed), on the CPU reference engine or the GPU"},
    {"inspect", pagedllm::cli::run_inspect,
     "what a model holds (config, tensors, tokenizer, chat format); --load checks every weight"},
    {"kv-demo", pagedllm::cli::run_kv_demo,
     "walk the paged KV block manager through prefix sharing, parallel sampling and swap"},
    {"make-model", pagedllm::cli::run_make_model,
     "write the tiny deterministic Llama-family test model (safetensors + GGUF) from a seed"},
    {"profile", pagedllm::cli::run_profile,
     "time real engine steps over a grid of shapes: the table the simulator interpolates"},
    {"plan", pagedllm::cli::run_plan,
     "capacity planning: the highest rate per replica within SLOs, replicas and cost, over a sweep (simulated)"},
    {"replay", pagedllm::cli::run_replay,
     "replay a request trace on the CPU engine, the GPU or the simulator: vLLM's serving metrics, KV usage"},
    {"score", pagedllm::cli::run_score,
     "logits of every position of token sequences (CPU reference forward or the GPU) as fp32 files"},
    {"serve", pagedllm::cli::run_serve,
     "an OpenAI-compatible HTTP server: completions and chat, streaming, /metrics, /health"},
    {"simulate", pagedllm::cli::run_simulate,
     "a trace through simulated GPUs (roofline cost model) running the engine's own core; replicas, routers"},
    {"token-masks", pagedllm::cli::run_token_masks,
     "the tokens a structured-outputs constraint allows at each step of token paths (JSON lines)"},
    {"tokenize", pagedllm::cli::run_tokenize,
     "encode / decode with a model's tokenizer (tokenizer.json or GGUF); export it as tokenizer.json"},
    {"trace", pagedllm::cli::run_trace,
     "convert public traces (ShareGPT, Azure, BurstGPT, Mooncake), synthesize traces, trace statistics"},
    {"version", pagedllm::cli::run_version, "print the version and what this build contains"},
};

void print_usage(std::FILE* out) {
  std::fprintf(out, "usage: pagedllm <subcommand> [options]   (pagedllm <subcommand> --help)\n\n");
  for (const Subcommand& sub : kSubcommands) {
    std::fprintf(out, "  %-14.*s %.*s\n", static_cast<int>(sub.name.size()), sub.name.data(),
                 static_cast<int>(sub.summary.size()), sub.summary.data());
  }
}

}  // namespace

int main(int argc, char** argv) {
  pagedllm::cpu_ref::apply_openmp_wait_default(argv);  // may re-execute this program once (openmp_wait.h)
  if (argc < 2 || std::string_view(argv[1]) == "--help" || std::string_view(argv[1]) == "-h") {
    print_usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  const std::string_view name = argv[1];
  const std::vector<std::string> args(argv + 2, argv + argc);
  for (const Subcommand& sub : kSubcommands) {
    if (sub.name != name) continue;
    try {
      return sub.run(args);
    } catch (const std::exception& error) {
      std::fprintf(stderr, "pagedllm %.*s: error: %s\n", static_cast<int>(name.size()), name.data(), error.what());
      return 1;
    }
  }
  std::fprintf(stderr, "pagedllm: unknown subcommand '%.*s'\n\n", static_cast<int>(name.size()), name.data());
  print_usage(stderr);
  return 2;
}
