// bench_speculative: speculative decoding on the CPU reference engine, side by side with plain
// decoding in one run, on input-grounded prompts (a trace of text prompts, e.g.
// traces/grounded_edits.jsonl: edits and summaries of a given text).
//
//   bench_speculative --model M --trace T [--batch 1,8,32] [--max-tokens N] [--repeats R]
//                     [--speculative-config JSON] [--threads T] [--quick] [--json]
//
// With a draft model ({"model": ..., "num_speculative_tokens": k}), the draft runs on a CpuExecutor
// of its own; its passes are part of the steps' time, its catch-up on each prompt included (that
// falls in the first decode step, so it counts against speculation).
//
// For each batch size B: B requests (the trace's prompts, cycled) run to completion, greedy,
// stopping at EOS or N tokens; at B = 1 they run one at a time. Each repeat runs plain decoding
// and then speculative decoding, on the same engine settings, and checks that both return the
// same tokens (speculation is lossless; a difference fails the run). Decode throughput counts the
// tokens produced by steps that computed no prompt tokens over those steps' wall time (prefill is
// the same work in both); the ratio is speculative / plain, medians over the repeats. Acceptance:
// proposals accepted / proposed, and the mean tokens per verify pass (1 + accepted / drafts).
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/engine/clock.h"
#include "core/engine/engine.h"
#include "core/frontend/model_bundle.h"
#include "core/spec/speculative_config.h"
#include "core/trace/trace_jsonl.h"
#include "cpu_ref/cpu_executor.h"
#include "cpu_ref/openmp_wait.h"
#include "tools/bench/bench_cli.h"
#include "tools/bench/bench_output.h"
#include "tools/bench/bench_timing.h"

namespace {

namespace cpu_ref = pagedllm::cpu_ref;
namespace engine = pagedllm::engine;
namespace frontend = pagedllm::frontend;
namespace sched = pagedllm::sched;
namespace spec = pagedllm::spec;
using pagedllm::TokenId;
using namespace pagedllm::bench;

struct BenchConfig {
  std::string model;
  std::string trace;
  std::vector<int64_t> batches{1, 8, 32};
  int32_t max_tokens = 0;  // 0: the trace's output_len
  int32_t repeats = 3;
  int32_t threads = 0;
  std::string speculative_config =
      R"({"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_min": 2, "prompt_lookup_max": 4})";
  bool json = false;
};

BenchCommandLine command_line(BenchConfig& config) {
  BenchCommandLine cli("bench_speculative");
  cli.add({"--model", "M", "a .gguf file, a Hugging Face model directory, or a fetched model's name",
           [&](std::string_view v) { config.model = std::string(v); }, /*required=*/true});
  cli.add({"--trace", "T", "a pagedllm trace of text prompts (traces/grounded_edits.jsonl)",
           [&](std::string_view v) { config.trace = std::string(v); }, /*required=*/true});
  cli.add({"--batch", "B,..", "batch sizes (default 1,8,32; 1 runs the prompts one at a time)",
           [&](std::string_view v) { config.batches = parse_integer_list("--batch", v, 1, 4096); }});
  cli.add({"--max-tokens", "N", "output tokens at most per request (default: the trace's output_len)",
           [&](std::string_view v) { config.max_tokens = static_cast<int32_t>(parse_integer("--max-tokens", v, 1)); }});
  cli.add({"--repeats", "R", "plain / speculative pairs per batch size (default 3; medians are reported)",
           [&](std::string_view v) { config.repeats = static_cast<int32_t>(parse_integer("--repeats", v, 1)); }});
  cli.add({"--threads", "T", "OpenMP threads (default: OpenMP's)",
           [&](std::string_view v) { config.threads = static_cast<int32_t>(parse_integer("--threads", v, 0)); }});
  cli.add({"--speculative-config", "JSON", "as pagedllm's (default: ngram, k 4, lookup 2-4)",
           [&](std::string_view v) { config.speculative_config = std::string(v); }});
  cli.add({"--json", "", "print one JSON object on stdout (the report goes to stderr)",
           [&](std::string_view) { config.json = true; }});
  cli.add_quick("batch 1 and 4, 48 tokens, one repeat", [&] {
    config.batches = {1, 4};
    config.max_tokens = 48;
    config.repeats = 1;
  });
  return cli;
}

struct Prompt {
  std::vector<TokenId> tokens;
  int32_t max_tokens = 0;
};

struct RunFigures {
  int64_t decode_tokens = 0;
  int64_t decode_steps = 0;
  double decode_seconds = 0.0;
  engine::EngineCounters counters;
  std::map<sched::RequestId, std::vector<TokenId>> outputs;

  double decode_tokens_per_second() const { return static_cast<double>(decode_tokens) / decode_seconds; }
};

struct Models {
  std::shared_ptr<const cpu_ref::LlamaModel> target;
  std::shared_ptr<const cpu_ref::LlamaModel> draft;  // with a draft_model config
};

RunFigures run(const Models& models, const frontend::ModelBundle& bundle, const std::vector<Prompt>& prompts,
               int32_t batch, const spec::SpeculativeConfig& speculative) {
  const std::shared_ptr<const cpu_ref::LlamaModel>& model = models.target;
  engine::EngineConfig config;
  config.cache.block_size = 16;
  config.cache.num_device_blocks = 4096;
  config.cache.num_host_blocks = 0;
  config.scheduler.max_model_len = 2048;
  config.scheduler.max_num_seqs = std::max(batch, 1);
  config.eos_token_ids = bundle.eos_token_ids;
  config.vocab_size = model->vocab_size();
  config.output_kind = engine::OutputKind::final_only;
  config.speculative = speculative;
  cpu_ref::CpuExecutor executor(model, {.cache = config.cache});
  std::optional<spec::DraftModelProposer> draft;
  if (speculative.method == spec::SpeculativeMethod::draft_model) {
    const pagedllm::kv::KvCacheConfig draft_cache =
        spec::draft_cache_config(config.cache, models.draft->config().attention_window());
    draft.emplace(
        spec::DraftModelProposerConfig{.cache = draft_cache,
                                       .max_num_batched_tokens = config.scheduler.max_num_batched_tokens},
        std::make_unique<cpu_ref::CpuExecutor>(models.draft, cpu_ref::CpuExecutorConfig{.cache = draft_cache}));
  }
  engine::WallClock clock;
  engine::Engine llm(config, executor, clock, nullptr, draft ? &*draft : nullptr);
  RunFigures figures;
  const auto drain = [&] {
    while (llm.has_unfinished()) {
      const int64_t before = llm.counters().generation_tokens;
      const auto start = Clock::now();
      for (const engine::RequestOutput& output : llm.step()) {
        if (output.finished) figures.outputs[output.id] = output.completions.at(0).tokens;
      }
      const double seconds = elapsed_ns(start, Clock::now()) / 1e9;
      if (llm.step_metrics().back().num_prefill_tokens == 0) {
        figures.decode_seconds += seconds;
        figures.decode_tokens += llm.counters().generation_tokens - before;
        ++figures.decode_steps;
      }
    }
  };
  const size_t num_requests = batch == 1 ? prompts.size() : static_cast<size_t>(batch);
  for (size_t i = 0; i < num_requests; ++i) {
    const Prompt& prompt = prompts[i % prompts.size()];
    sched::SamplingParams params;
    params.temperature = 0.0f;
    params.max_tokens = prompt.max_tokens;
    llm.add_request({.id = static_cast<sched::RequestId>(i), .prompt_tokens = prompt.tokens, .params = params});
    if (batch == 1) drain();
  }
  drain();
  figures.counters = llm.counters();
  return figures;
}

}  // namespace

int main(int argc, char** argv) {
  cpu_ref::apply_openmp_wait_default(argv);  // as pagedllm does (openmp_wait.h)
  BenchConfig config;
  return run_benchmark(command_line(config), argc, argv, [&] {
    if (config.threads > 0) omp_set_num_threads(config.threads);
    const spec::SpeculativeConfig speculative = spec::parse_speculative_config(config.speculative_config);
    const frontend::ModelBundle bundle = frontend::open_model(config.model);
    Models models{.target = std::make_shared<const cpu_ref::LlamaModel>(frontend::load_weights(bundle)), .draft = {}};
    if (speculative.method == spec::SpeculativeMethod::draft_model) {
      const frontend::ModelBundle draft = frontend::open_model(speculative.draft_model);
      frontend::check_draft_model(bundle, draft, 2048);
      models.draft = std::make_shared<const cpu_ref::LlamaModel>(frontend::load_weights(draft));
    }
    const pagedllm::trace::Trace trace =
        pagedllm::trace::read_trace_jsonl(config.trace, {.on_error = pagedllm::trace::OnError::fail});
    std::vector<Prompt> prompts;
    for (const pagedllm::trace::TraceRequest& request : trace.requests) {
      if (request.prompt_kind != pagedllm::trace::PromptKind::text) {
        throw UsageError("--trace: line " + std::to_string(request.source_line) + " has no prompt text");
      }
      prompts.push_back({bundle.tokenizer.encode(request.prompt_text),
                         config.max_tokens > 0 ? config.max_tokens : request.output_len});
    }
    if (prompts.empty()) throw UsageError("--trace: no requests");
    std::fprintf(config.json ? stderr : stdout,
                 "bench_speculative: %s, %zu prompts from %s, greedy, %s, %d OpenMP threads\n", config.model.c_str(),
                 prompts.size(), config.trace.c_str(), spec::describe(speculative).c_str(), omp_get_max_threads());
    Json results = Json::array();
    for (const int64_t batch_size : config.batches) {
      const auto batch = static_cast<int32_t>(batch_size);
      std::vector<double> plain_rates;
      std::vector<double> spec_rates;
      std::vector<double> ratios;
      RunFigures last;
      RunFigures last_plain;
      for (int32_t repeat = 0; repeat < config.repeats; ++repeat) {
        const RunFigures plain = run(models, bundle, prompts, batch, {});
        last = run(models, bundle, prompts, batch, speculative);
        if (last.outputs != plain.outputs) {
          throw std::runtime_error("batch " + std::to_string(batch) +
                                   ": speculative decoding returned other tokens than plain decoding");
        }
        plain_rates.push_back(plain.decode_tokens_per_second());
        spec_rates.push_back(last.decode_tokens_per_second());
        ratios.push_back(last.decode_tokens_per_second() / plain.decode_tokens_per_second());
        last_plain = plain;
      }
      const engine::EngineCounters& c = last.counters;
      const double acceptance = c.spec_acceptance_rate();
      const double mean_length = c.spec_mean_acceptance_length();
      std::string per_position;
      for (const double rate : c.spec_accepted_rate_per_position()) {
        if (!per_position.empty()) per_position += ' ';
        per_position += format_value(rate, "%.2f");
      }
      std::fprintf(config.json ? stderr : stdout,
                   "  batch %3d: plain %7.1f tok/s, speculative %7.1f tok/s, ratio %s (median of %d); acceptance "
                   "%.1f%% of %lld proposals, mean %.2f tokens per verify pass (%lld drafts; per position %s); "
                   "outputs identical\n",
                   batch, median(plain_rates), median(spec_rates), format_ratio(median(ratios)).c_str(), config.repeats,
                   100.0 * acceptance, static_cast<long long>(c.spec_draft_tokens), mean_length,
                   static_cast<long long>(c.spec_drafts), per_position.c_str());
      // A draft model's cost beside the target's: its mean pass (catch-up chunks included) and a
      // plain decode step of the same batch (the last repeat's).
      const double draft_pass_ms =
          c.draft_passes > 0 ? 1e3 * c.draft_seconds / static_cast<double>(c.draft_passes) : 0.0;
      const double plain_step_ms = last_plain.decode_steps > 0
                                       ? 1e3 * last_plain.decode_seconds / static_cast<double>(last_plain.decode_steps)
                                       : 0.0;
      if (c.draft_passes > 0) {
        std::fprintf(config.json ? stderr : stdout,
                     "             draft model: %lld passes over %lld tokens (prompt catch-up included), %.2f ms each "
                     "(%.1f%% of the decode time); a plain decode step %.2f ms\n",
                     static_cast<long long>(c.draft_passes), static_cast<long long>(c.draft_tokens_computed),
                     draft_pass_ms, 100.0 * c.draft_seconds / last.decode_seconds, plain_step_ms);
      }
      results.push_back({{"batch", batch},
                         {"plain_decode_tokens_per_second", median(plain_rates)},
                         {"speculative_decode_tokens_per_second", median(spec_rates)},
                         {"ratio", median(ratios)},
                         {"acceptance_rate", acceptance},
                         {"mean_acceptance_length", mean_length},
                         {"drafts", c.spec_drafts},
                         {"draft_tokens", c.spec_draft_tokens},
                         {"accepted_tokens", c.spec_accepted_tokens},
                         {"accepted_per_position", c.spec_accepted_per_position},
                         {"draft_passes", c.draft_passes},
                         {"draft_pass_ms", draft_pass_ms},
                         {"plain_decode_step_ms", plain_step_ms}});
    }
    if (config.json) {
      std::printf("%s\n", Json{{"model", config.model},
                               {"trace", config.trace},
                               {"speculative", spec::describe(speculative)},
                               {"threads", omp_get_max_threads()},
                               {"results", results}}
                              .dump()
                              .c_str());
    }
    return 0;
  });
}
