// The CUDA executor end to end through the engine loop, against cpu_ref (fp32) on the same tiny
// deterministic Llama-family models (built in memory with make-model's weight generator):
//   a. every sampled row's logits within bf16 / fp16 tolerance of cpu_ref's;
//   b. greedy tokens equal to cpu_ref's;
//   c. batching and chunked prefill change no token (each request alone vs all together);
//   d. CUDA graphs vs eager: same tokens and logits over decode batches of 1..9;
//   e. preemption by swap (n = 2, so blocks are shared and swapped) and by recompute on a tiny
//      KV cache: the same tokens as the unconstrained run;
//   f. structured outputs: requests under a regex, greedy and sampled, n = 2, keep to it (the
//      device bitmask, cuda/kernels/token_bitmask, and the host path for parallel sampling).
// GPU tests: they print "SKIPPED GPU checks" where there is no device. Under the CPU emulation
// (tests/cuda/cpu_emulation/run_executor.sh defines PAGEDLLM_CPU_EMULATION) the runs are shorter.
//
// Model choice: seed 3, hidden 256, 4 heads of 64, 2 KV heads (GQA), 2 layers, intermediate 512,
// vocab 512; a second model with qwen2-style attention biases and tied embeddings. The random
// weights give logits of unit scale; greedy disagreements with cpu_ref are only expected where
// cpu_ref's top-2 margin is below the 16-bit noise: such a divergence (margin < 0.05 in bf16,
// 0.01 in fp16) is reported, not failed; any other fails, printing the margin. Under the CPU
// emulation the llama model's smallest margin over its 24 greedy positions was 0.011 (tokens still
// equal); the tied-embedding model's is large (~59: it tends to repeat its input).
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "core/common/mix.h"
#include "core/engine/clock.h"
#include "core/engine/engine.h"
#include "core/model/model_weights.h"
#include "core/model/tensor_names.h"
#include "core/spec/draft_model_proposer.h"
#include "core/structured/regex_compiler.h"
#include "core/structured/token_mask.h"
#include "cpu_ref/cpu_executor.h"
#include "cpu_ref/llama_model.h"
#include "cuda/cuda_executor.h"
#include "cuda/target_and_draft.h"
#include "tests/cuda/gpu_test_util.h"
#include "tools/make_model/tiny_model.h"
#include "tools/make_model/tiny_weights.h"

namespace pagedllm::cuda {
namespace {

using testing::skip_without_gpu;

#ifdef PAGEDLLM_CPU_EMULATION
constexpr bool kEmulated = true;
constexpr int32_t kGeneratedTokens = 6;
const std::vector<int32_t> kPromptLengths{1, 5, 19, 37};
#else
constexpr bool kEmulated = false;
constexpr int32_t kGeneratedTokens = 32;
const std::vector<int32_t> kPromptLengths{1, 5, 37, 70};
#endif

constexpr int32_t kBlockSize = 16;
constexpr int32_t kMaxModelLen = 256;
constexpr int32_t kMaxNumSeqs = 16;
constexpr int32_t kMaxBatchedTokens = 128;

struct TinyModel {
  model::ModelWeights weights;
  std::shared_ptr<const cpu_ref::LlamaModel> cpu;
};

TinyModel build_model(bool qwen2_style, int64_t sliding_window = 0) {
  make_model::TinyModelSpec spec;
  if (sliding_window > 0) spec.sliding_window = sliding_window;
  spec.seed = 3;
  spec.hidden_size = 256;
  spec.num_layers = 2;
  spec.num_heads = 4;
  spec.num_kv_heads = 2;
  spec.head_dim = 64;
  spec.intermediate_size = 512;
  spec.tie_word_embeddings = qwen2_style;
  TinyModel tiny;
  tiny.weights.config = make_model::tiny_model_config(spec, 512);
  if (qwen2_style) {
    tiny.weights.config.architecture = "qwen2";
    tiny.weights.config.attention_bias = true;
  }
  for (const model::TensorSpec& tensor : model::expected_tensors(tiny.weights.config)) {
    model::HostTensor host;
    host.shape = tensor.shape;
    host.dtype = model::WeightDType::f32;
    host.f32 = make_model::tiny_tensor_values(spec.seed, tensor);
    tiny.weights.tensors.emplace(tensor.name, std::move(host));
  }
  tiny.weights.source = qwen2_style ? "tiny qwen2-style (in memory)" : "tiny llama (in memory)";
  tiny.cpu = std::make_shared<const cpu_ref::LlamaModel>(tiny.weights);
  return tiny;
}

const TinyModel& llama_model() {
  static const TinyModel model = build_model(false);
  return model;
}
const TinyModel& qwen2_model() {
  static const TinyModel model = build_model(true);
  return model;
}
// Mistral-style: a sliding window of one block, so the prompts and generations run past it.
constexpr int64_t kWindow = 16;
const TinyModel& windowed_model() {
  static const TinyModel model = build_model(false, kWindow);
  return model;
}

std::vector<TokenId> synthetic_prompt(uint64_t seed, int32_t length, int32_t vocab) {
  std::vector<TokenId> tokens;
  for (int32_t i = 0; i < length; ++i) {
    tokens.push_back(
        static_cast<TokenId>(3 + mix64(seed * 1000003 + static_cast<uint64_t>(i)) % static_cast<uint64_t>(vocab - 3)));
  }
  return tokens;
}

struct TestRequest {
  sched::RequestId id = 0;
  std::vector<TokenId> prompt;
  int32_t max_tokens = kGeneratedTokens;
  int32_t n = 1;
  std::shared_ptr<structured::TokenMaskCache> constraint{};  // structured outputs (then stop id kStopToken)
  float temperature = 0.0f;
};

constexpr TokenId kStopToken = 2;

std::vector<TestRequest> prompts_of(const std::vector<int32_t>& lengths, int32_t vocab, int32_t max_tokens) {
  std::vector<TestRequest> requests;
  for (std::size_t i = 0; i < lengths.size(); ++i) {
    requests.push_back(TestRequest{.id = static_cast<sched::RequestId>(i),
                                   .prompt = synthetic_prompt(11 + i, lengths[i], vocab),
                                   .max_tokens = max_tokens});
  }
  return requests;
}

enum class Backend { cpu, bf16, fp16 };

std::string name_of(Backend backend) {
  return backend == Backend::cpu ? "cpu_ref" : backend == Backend::bf16 ? "cuda bf16" : "cuda fp16";
}

struct RunOptions {
  int32_t max_num_batched_tokens = kMaxBatchedTokens;
  int32_t num_device_blocks = 64;
  int32_t num_host_blocks = 32;
  std::optional<sched::PreemptionMode> preemption_mode{};
  bool enforce_eager = true;
  spec::SpeculativeConfig speculative{};  // off unless a test turns it on
  // With speculative.method draft_model: the draft, on a CUDA executor of its own sized with the
  // target's (make_target_and_draft).
  const TinyModel* draft = nullptr;
};

// A logits row: which request, and every token before the sampled position (its context).
using RowKey = std::pair<sched::RequestId, std::vector<TokenId>>;

struct RunResult {
  std::map<sched::RequestId, std::vector<std::vector<TokenId>>> tokens;  // per request, per sample
  std::map<RowKey, std::vector<float>> logits;
  std::vector<std::pair<RowKey, std::vector<float>>> rows_in_order;  // every observed row
  std::map<sched::RequestId, int32_t> num_prompt_tokens;
  engine::EngineCounters counters;
};

RunResult run(const TinyModel& model, Backend backend, const std::vector<TestRequest>& requests,
              const RunOptions& options = {}) {
  RunResult result;
  const auto observer = [&result](const sched::ScheduledSequence& scheduled, std::span<const float> logits) {
    RowKey key{scheduled.request, std::vector<TokenId>(scheduled.tokens.begin(), scheduled.tokens.end())};
    std::vector<float> row(logits.begin(), logits.end());
    result.rows_in_order.emplace_back(key, row);
    result.logits[key] = std::move(row);
  };
  engine::EngineConfig config;
  config.cache.block_size = kBlockSize;
  config.cache.num_device_blocks = options.num_device_blocks;
  config.cache.num_host_blocks = options.num_host_blocks;
  config.cache.sliding_window = model.weights.config.attention_window();  // as apply_model_limits sets it
  config.scheduler.max_num_batched_tokens = options.max_num_batched_tokens;
  config.scheduler.max_num_seqs = kMaxNumSeqs;
  config.scheduler.max_model_len = kMaxModelLen;
  config.scheduler.preemption_mode = options.preemption_mode;
  config.output_kind = engine::OutputKind::final_only;
  config.speculative = options.speculative;

  std::unique_ptr<engine::Executor> executor;
  std::unique_ptr<spec::DraftModelProposer> draft;
  if (backend == Backend::cpu) {
    BOOST_TEST_REQUIRE(options.draft == nullptr);
    cpu_ref::CpuExecutorConfig cpu_config{.cache = config.cache, .num_threads = 0};
    cpu_config.logits_observer = observer;
    executor = std::make_unique<cpu_ref::CpuExecutor>(model.cpu, cpu_config);
  } else {
    CudaExecutorConfig cuda_config;
    cuda_config.engine = config;  // its limits size the executor
    cuda_config.dtype = backend == Backend::bf16 ? DType::bf16 : DType::fp16;
    cuda_config.enforce_eager = options.enforce_eager;
    cuda_config.logits_observer = observer;
    std::unique_ptr<CudaExecutor> cuda_executor;
    if (options.draft != nullptr) {
      TargetAndDraft pair = make_target_and_draft(upload_model(model.weights, cuda_config),
                                                  upload_model(options.draft->weights, cuda_config), cuda_config);
      BOOST_TEST_REQUIRE(pair.draft_cache.num_device_blocks == options.num_device_blocks);
      BOOST_TEST_REQUIRE(pair.draft_cache.num_host_blocks == 0);
      BOOST_TEST_REQUIRE(pair.draft->cache_config().num_device_blocks == options.num_device_blocks);
      BOOST_TEST_REQUIRE(pair.draft->cache_config().num_host_blocks == 0);
      cuda_executor = std::move(pair.target);
      draft = std::make_unique<spec::DraftModelProposer>(
          spec::DraftModelProposerConfig{.cache = pair.draft_cache,
                                         .max_num_batched_tokens = options.max_num_batched_tokens},
          std::move(pair.draft));
    } else {
      cuda_executor = std::make_unique<CudaExecutor>(model.weights, cuda_config);
    }
    // Block counts given explicitly are used as given: the engine and cpu_ref see the same tiers.
    BOOST_TEST_REQUIRE(cuda_executor->cache_config().num_device_blocks == options.num_device_blocks);
    BOOST_TEST_REQUIRE(cuda_executor->cache_config().num_host_blocks == options.num_host_blocks);
    executor = std::move(cuda_executor);
  }
  engine::VirtualClock clock;
  engine::Engine engine(config, *executor, clock, nullptr, draft.get());
  for (const TestRequest& request : requests) {
    sched::SamplingParams params;
    params.temperature = request.temperature;
    params.max_tokens = request.max_tokens;
    params.n = request.n;
    params.ignore_eos = true;
    params.output_constraint = request.constraint;
    if (request.constraint) params.stop_token_ids = {kStopToken};  // the test models name no EOS
    engine.add_request({.id = request.id, .prompt_tokens = request.prompt, .params = params});
  }
  int64_t guard = 0;
  while (engine.has_unfinished()) {
    for (const engine::RequestOutput& output : engine.step()) {
      if (!output.finished) continue;
      result.num_prompt_tokens[output.id] = output.num_prompt_tokens;
      auto& samples = result.tokens[output.id];
      for (const engine::Completion& completion : output.completions) samples.push_back(completion.tokens);
    }
    BOOST_TEST_REQUIRE(++guard < 100000, "the engine does not finish");
  }
  result.counters = engine.counters();
  return result;
}

double normalized_error(const std::vector<float>& out, const std::vector<float>& ref) {
  double diff = 0.0;
  double norm = 0.0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    const double d = static_cast<double>(out[i]) - static_cast<double>(ref[i]);
    diff += d * d;
    norm += static_cast<double>(ref[i]) * static_cast<double>(ref[i]);
  }
  return norm > 0.0 ? std::sqrt(diff / norm) : std::sqrt(diff);
}

// The gap between the best and the second-best logit of a row.
double top2_margin(const std::vector<float>& row) {
  float best = -INFINITY;
  float second = -INFINITY;
  for (const float value : row) {
    if (value > best) {
      second = best;
      best = value;
    } else if (value > second) {
      second = value;
    }
  }
  return static_cast<double>(best) - static_cast<double>(second);
}

// Every row both runs computed on the same context: normalized errors within `tolerance`.
void check_logits(const RunResult& ref, const RunResult& out, double tolerance, const std::string& what) {
  std::size_t compared = 0;
  double worst = 0.0;
  double sum = 0.0;
  for (const auto& [key, row] : out.logits) {
    const auto it = ref.logits.find(key);
    if (it == ref.logits.end()) continue;  // a context the runs do not share (after a divergence)
    BOOST_TEST_REQUIRE(row.size() == it->second.size());
    const double error = normalized_error(row, it->second);
    worst = std::max(worst, error);
    sum += error;
    ++compared;
    BOOST_TEST(error <= tolerance, what << ": request " << key.first << " at position " << key.second.size()
                                        << ": ||out-ref||/||ref|| = " << error);
  }
  BOOST_TEST_MESSAGE(what << ": " << compared << " logits rows, ||out-ref||/||ref|| max " << worst << ", mean "
                          << (compared > 0 ? sum / static_cast<double>(compared) : 0.0));
  BOOST_TEST(compared >= ref.logits.size() / 2,
             what << ": too few shared rows (" << compared << " of " << ref.logits.size() << ")");
}

// Tokens equal sample by sample; on a difference, where, and the reference's top-2 margin there.
// A difference where that margin is below `near_tie` (a logit gap within the 16-bit noise) is
// reported, not failed; 0: every difference fails.
void check_tokens(const RunResult& ref, const RunResult& out, const std::string& what, double near_tie = 0.0) {
  BOOST_TEST_REQUIRE(out.tokens.size() == ref.tokens.size(), what);
  for (const auto& [id, ref_samples] : ref.tokens) {
    const auto& samples = out.tokens.at(id);
    BOOST_TEST_REQUIRE(samples.size() == ref_samples.size(), what << ": request " << id);
    for (std::size_t s = 0; s < samples.size(); ++s) {
      const auto& a = ref_samples[s];
      const auto& b = samples[s];
      BOOST_TEST_REQUIRE(a.size() == b.size(), what << ": request " << id << " sample " << s);
      const auto diff = std::mismatch(a.begin(), a.end(), b.begin());
      if (diff.first == a.end()) continue;
      const auto at = static_cast<std::size_t>(diff.first - a.begin());
      std::ostringstream detail;
      detail << what << ": request " << id << " sample " << s << " differs at output token " << at << " ("
             << *diff.first << " vs " << *diff.second << ")";
      // The reference's margin at that point: its row whose context is the prompt + a[0, at).
      double margin = INFINITY;
      const std::size_t context = static_cast<std::size_t>(ref.num_prompt_tokens.at(id)) + at;
      for (const auto& [key, row] : ref.logits) {
        if (key.first == id && key.second.size() == context &&
            std::equal(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(at),
                       key.second.end() - static_cast<std::ptrdiff_t>(at))) {
          margin = top2_margin(row);
          detail << "; reference top-2 margin there " << margin;
          break;
        }
      }
      if (margin < near_tie) {
        BOOST_TEST_MESSAGE(detail.str() << " (a near tie: below " << near_tie << ", accepted)");
      } else {
        BOOST_TEST(false, detail.str());
      }
    }
  }
}

std::size_t total_tokens(const RunResult& result) {
  std::size_t count = 0;
  for (const auto& [id, samples] : result.tokens) {
    for (const auto& tokens : samples) count += tokens.size();
  }
  return count;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(cuda_executor)

BOOST_AUTO_TEST_CASE(logits_match_cpu_ref_in_bf16_and_fp16) {
  if (skip_without_gpu()) return;
  for (const bool qwen2 : {false, true}) {
    const TinyModel& model = qwen2 ? qwen2_model() : llama_model();
    const std::string name = qwen2 ? "qwen2-style (bias, tied)" : "llama";
    const auto requests = prompts_of(kPromptLengths, 512, kGeneratedTokens);
    const RunResult ref = run(model, Backend::cpu, requests);
    BOOST_TEST(total_tokens(ref) == requests.size() * static_cast<std::size_t>(kGeneratedTokens));
    check_logits(ref, run(model, Backend::bf16, requests), 2e-2, name + " " + name_of(Backend::bf16));
    check_logits(ref, run(model, Backend::fp16, requests), 4e-3, name + " " + name_of(Backend::fp16));
  }
}

// A sliding-window model: both kernels read only the window, and the KV manager releases the
// blocks before it (the tables the kernels get start with kNoBlock entries). Logits match
// cpu_ref's windowed attention; the window really applies (cpu_ref without it differs).
BOOST_AUTO_TEST_CASE(sliding_window_logits_match_cpu_ref) {
  if (skip_without_gpu()) return;
  const TinyModel& model = windowed_model();
  BOOST_TEST_REQUIRE(model.weights.config.attention_window() == kWindow);
  const auto requests = prompts_of({5, 19, 37, 40}, 512, kGeneratedTokens);
  const RunResult ref = run(model, Backend::cpu, requests);
  check_logits(ref, run(model, Backend::bf16, requests, RunOptions{.max_num_batched_tokens = 16}), 2e-2,
               "windowed " + name_of(Backend::bf16) + ", 16-token chunks");
  check_logits(ref, run(model, Backend::fp16, requests), 4e-3, "windowed " + name_of(Backend::fp16));
  // The same weights without the window: the rows past the window differ.
  TinyModel unwindowed;
  unwindowed.weights = model.weights;
  unwindowed.weights.config.sliding_window.reset();
  unwindowed.cpu = std::make_shared<const cpu_ref::LlamaModel>(unwindowed.weights);
  const RunResult full = run(unwindowed, Backend::cpu, requests);
  double largest = 0.0;
  for (const auto& [key, row] : ref.logits) {
    const auto it = full.logits.find(key);
    if (it != full.logits.end() && key.second.size() > static_cast<std::size_t>(kWindow))
      largest = std::max(largest, normalized_error(it->second, row));
  }
  BOOST_TEST(largest > 1e-2, "the window changes no logits row past it: " << largest);
}

BOOST_AUTO_TEST_CASE(greedy_tokens_match_cpu_ref) {
  if (skip_without_gpu()) return;
  for (const bool qwen2 : {false, true}) {
    const TinyModel& model = qwen2 ? qwen2_model() : llama_model();
    const std::string name = qwen2 ? "qwen2-style (bias, tied)" : "llama";
    const auto requests = prompts_of(kPromptLengths, 512, kGeneratedTokens);
    const RunResult ref = run(model, Backend::cpu, requests);
    double smallest = INFINITY;
    for (const auto& [key, row] : ref.logits) smallest = std::min(smallest, top2_margin(row));
    BOOST_TEST_MESSAGE(name << ": cpu_ref's smallest top-2 logit margin over " << ref.logits.size()
                            << " greedy positions: " << smallest);
    for (const Backend backend : {Backend::bf16, Backend::fp16}) {
      // Near ties: a divergence where cpu_ref's top-2 gap is below ~3x the logits' 16-bit error.
      check_tokens(ref, run(model, backend, requests), name + " " + name_of(backend),
                   backend == Backend::bf16 ? 0.05 : 0.01);
    }
  }
}

BOOST_AUTO_TEST_CASE(batching_and_chunked_prefill_change_no_token) {
  if (skip_without_gpu()) return;
  const TinyModel& model = llama_model();
  std::vector<int32_t> lengths = kPromptLengths;
  lengths.push_back(kEmulated ? 23 : 50);
  lengths.push_back(2);
  auto requests = prompts_of(lengths, 512, kGeneratedTokens);
  // Staggered lengths: later steps mix decodes with prefill chunks.
  for (std::size_t i = 0; i < requests.size(); ++i)
    requests[i].max_tokens = kGeneratedTokens - static_cast<int32_t>(i % 3);
  RunResult alone;
  for (const TestRequest& request : requests) {
    RunResult one = run(model, Backend::bf16, {request});
    alone.tokens[request.id] = one.tokens.at(request.id);
    alone.num_prompt_tokens[request.id] = one.num_prompt_tokens.at(request.id);
    alone.logits.insert(one.logits.begin(), one.logits.end());
  }
  const RunResult together = run(model, Backend::bf16, requests, RunOptions{.max_num_batched_tokens = 16});
  BOOST_TEST(total_tokens(together) == total_tokens(alone));
  // cuBLAS is not batch-invariant: on a GPU a near tie may flip (the emulation is bitwise).
  check_tokens(alone, together, "batched with 16-token chunks vs alone", kEmulated ? 0.0 : 0.05);
  check_logits(alone, together, kEmulated ? 1e-6 : 1e-2, "batched with 16-token chunks vs alone");
}

BOOST_AUTO_TEST_CASE(speculative_decoding_changes_no_token) {
  // n-gram proposals verified as prefill-style chunks, k + 1 rows sampled on the host: the tokens
  // of plain decoding (the tied-embedding model repeats its input, so proposals are accepted),
  // with CUDA graphs on for the plain decodes around the verify passes.
  if (skip_without_gpu()) return;
  const TinyModel& model = qwen2_model();
  const std::vector<TestRequest> requests = prompts_of(kPromptLengths, 512, kEmulated ? 12 : 40);
  const RunResult plain = run(model, Backend::bf16, requests, RunOptions{.enforce_eager = false});
  const RunResult speculative = run(model, Backend::bf16, requests,
                                    RunOptions{.enforce_eager = false,
                                               .speculative = {.method = spec::SpeculativeMethod::ngram,
                                                               .num_speculative_tokens = 3,
                                                               .prompt_lookup_min = 1,
                                                               .prompt_lookup_max = 3,
                                                               .disable_by_batch_size = 0}});
  // cuBLAS is not batch-invariant: on a GPU a near tie may flip (the emulation is bitwise).
  check_tokens(plain, speculative, "speculative vs plain", kEmulated ? 0.0 : 0.05);
  BOOST_TEST(speculative.counters.spec_drafts > 0);
  BOOST_TEST(speculative.counters.spec_accepted_tokens > 0);
  BOOST_TEST_MESSAGE("speculative: " << speculative.counters.spec_accepted_tokens << " of "
                                     << speculative.counters.spec_draft_tokens << " proposals accepted in "
                                     << speculative.counters.spec_drafts << " drafts");
}

BOOST_AUTO_TEST_CASE(draft_model_speculation_changes_no_token) {
  // A draft model on a CUDA executor of its own beside the target's (make_target_and_draft): the
  // tied-embedding model drafting for itself (its proposals are all accepted: the draft's paged
  // cache and catch-up passes) and the llama model drafting for it (most rejected: rollback of the
  // draft's tentative slots, then catch-up). The tokens of plain decoding either way, with CUDA
  // graphs on for the plain decodes and the draft's single-token passes.
  if (skip_without_gpu()) return;
  const TinyModel& model = qwen2_model();
  const std::vector<TestRequest> requests = prompts_of(kPromptLengths, 512, kEmulated ? 10 : 40);
  const RunResult plain = run(model, Backend::bf16, requests, RunOptions{.enforce_eager = false});
  const spec::SpeculativeConfig speculative{.method = spec::SpeculativeMethod::draft_model,
                                            .num_speculative_tokens = 3,
                                            .draft_model = "in memory",
                                            .disable_by_batch_size = 0};
  for (const TinyModel* draft : {&qwen2_model(), &llama_model()}) {
    const RunResult speculated = run(model, Backend::bf16, requests,
                                     RunOptions{.enforce_eager = false, .speculative = speculative, .draft = draft});
    const std::string label = "draft " + draft->weights.source + " vs plain";
    // cuBLAS is not batch-invariant: on a GPU a near tie may flip (the emulation is bitwise).
    check_tokens(plain, speculated, label, kEmulated ? 0.0 : 0.05);
    BOOST_TEST(speculated.counters.spec_drafts > 0, label);
    if (draft == &model) {
      BOOST_TEST(speculated.counters.spec_accepted_tokens == speculated.counters.spec_draft_tokens, label);
    }
    BOOST_TEST_MESSAGE(label << ": " << speculated.counters.spec_accepted_tokens << " of "
                             << speculated.counters.spec_draft_tokens << " proposals accepted in "
                             << speculated.counters.spec_drafts << " drafts");
  }
}

BOOST_AUTO_TEST_CASE(cuda_graphs_match_eager) {
  if (skip_without_gpu()) return;
  const TinyModel& model = llama_model();
  // 9 requests that finish one after another: pure decode steps of 9, 8, ..., 1 sequences.
  std::vector<TestRequest> requests;
  for (int32_t i = 0; i < 9; ++i) {
    requests.push_back(TestRequest{.id = static_cast<sched::RequestId>(i),
                                   .prompt = synthetic_prompt(50 + static_cast<uint64_t>(i), 1 + 3 * i, 512),
                                   .max_tokens = (kEmulated ? 3 : 4) + (kEmulated ? 2 : 3) * i});
  }
  const RunResult eager = run(model, Backend::bf16, requests, RunOptions{.enforce_eager = true});
  const RunResult graphs = run(model, Backend::bf16, requests, RunOptions{.enforce_eager = false});
  // On a GPU, a graph runs the GEMMs at its padded batch size and cuBLAS picks its algorithm by
  // shape, so rows agree to bf16 rounding, not bitwise (the emulation's host GEMM is per row).
  const double tolerance = kEmulated ? 1e-6 : 1e-2;
  check_tokens(eager, graphs, "graphs vs eager", kEmulated ? 0.0 : 0.05);
  BOOST_TEST_REQUIRE(eager.rows_in_order.size() == graphs.rows_in_order.size());
  double worst = 0.0;
  std::size_t bitwise = 0;
  for (std::size_t i = 0; i < eager.rows_in_order.size(); ++i) {
    const auto& [key, row] = eager.rows_in_order[i];
    const auto it = graphs.logits.find(key);
    BOOST_TEST_REQUIRE((it != graphs.logits.end()), "graphs vs eager: a row only eager computed");
    const double error = normalized_error(it->second, row);
    worst = std::max(worst, error);
    bitwise += it->second == row ? 1 : 0;
    BOOST_TEST(error <= tolerance,
               "graphs vs eager: request " << key.first << " position " << key.second.size() << ": " << error);
  }
  BOOST_TEST_MESSAGE("graphs vs eager: " << eager.rows_in_order.size() << " rows, " << bitwise
                                         << " bitwise equal, max ||graph-eager||/||eager|| " << worst);
}

BOOST_AUTO_TEST_CASE(preemption_by_swap_and_recompute_changes_no_token) {
  if (skip_without_gpu()) return;
  const TinyModel& model = llama_model();
  std::vector<TestRequest> requests;
  const std::vector<int32_t> lengths =
      kEmulated ? std::vector<int32_t>{20, 30, 12, 25} : std::vector<int32_t>{40, 60, 20, 50, 33};
  for (std::size_t i = 0; i < lengths.size(); ++i) {
    requests.push_back(TestRequest{.id = static_cast<sched::RequestId>(i),
                                   .prompt = synthetic_prompt(70 + i, lengths[i], 512),
                                   .max_tokens = kEmulated ? 14 : 32,
                                   .n = 2});
  }
  const RunResult free_run = run(model, Backend::bf16, requests);
  BOOST_TEST(free_run.counters.preemptions_swap + free_run.counters.preemptions_recompute == 0);
  for (const auto mode : {sched::PreemptionMode::swap, sched::PreemptionMode::recompute}) {
    const std::string what = mode == sched::PreemptionMode::swap ? "swap" : "recompute";
    const RunResult preempted =
        run(model, Backend::bf16, requests,
            RunOptions{.num_device_blocks = kEmulated ? 8 : 14, .num_host_blocks = 32, .preemption_mode = mode});
    const int64_t count = mode == sched::PreemptionMode::swap ? preempted.counters.preemptions_swap
                                                              : preempted.counters.preemptions_recompute;
    BOOST_TEST_MESSAGE(what << ": " << count << " preemptions");
    BOOST_TEST(count > 0, what << ": the scenario must preempt");
    check_tokens(free_run, preempted, what);
  }
}

// The test models' 512 ids as text: 0-2 special, 3-258 the single bytes, then pieces of digits and
// commas (what the constraint below reads), so that most states allow many tokens.
std::vector<std::string> constrained_vocabulary() {
  std::vector<std::string> vocab(3);
  for (int byte = 0; byte < 256; ++byte) vocab.emplace_back(1, static_cast<char>(byte));
  for (uint64_t i = 0; vocab.size() < 512; ++i) {
    std::string piece;
    for (uint64_t k = 0; k < 2 + i % 3; ++k) piece += ",0123456789"[mix64(i * 31 + k) % 11];
    vocab.push_back(piece);
  }
  return vocab;
}

BOOST_AUTO_TEST_CASE(constrained_requests_keep_to_their_regex) {
  if (skip_without_gpu()) return;
  const std::vector<std::string> vocab = constrained_vocabulary();
  const auto dfa = std::make_shared<structured::ByteDfa>(structured::compile_regex("[0-9]{2,5}(,[0-9]{2,5}){0,3}"));
  const auto cache = std::make_shared<structured::TokenMaskCache>(dfa, std::make_shared<structured::TokenTrie>(vocab));
  std::vector<TestRequest> requests = prompts_of(kPromptLengths, 512, kEmulated ? 10 : 40);
  for (std::size_t i = 0; i < requests.size(); ++i) {
    requests[i].constraint = cache;
    requests[i].n = i % 2 == 0 ? 1 : 2;  // n = 2: host sampling of the masked rows
    requests[i].temperature = i % 3 == 0 ? 0.0f : 1.0f;
  }
  // The bf16 run again with speculation: a verify pass takes one mask row per position. Outputs
  // this short rarely repeat an n-gram, so every decode proposes its last token 3 times over (the
  // simulator's placeholder drafts, cut where the regex refuses them); the executor verifies them
  // for real.
  const RunOptions speculative{
      .speculative = {.method = spec::SpeculativeMethod::ngram,
                      .num_speculative_tokens = 3,
                      .prompt_lookup_min = 1,
                      .prompt_lookup_max = 2,
                      .disable_by_batch_size = 0,
                      .simulated = spec::SimulatedAcceptance{.draft_rate = 1.0, .accepted_per_position = {1, 1, 1}}}};
  std::map<std::string, RunResult> results;
  for (const bool speculate : {false, true}) {
    for (const Backend backend : {Backend::cpu, Backend::bf16, Backend::fp16}) {
      if (speculate && backend != Backend::bf16) continue;
      const RunResult result = run(llama_model(), backend, requests, speculate ? speculative : RunOptions{});
      const std::string label = name_of(backend) + (speculate ? " speculative" : "");
      int32_t whole_matches = 0;
      for (const auto& [id, samples] : result.tokens) {
        for (const std::vector<TokenId>& tokens : samples) {
          std::string text;
          bool stopped = false;
          for (const TokenId token : tokens) {
            if (token == kStopToken) {
              stopped = true;
              break;
            }
            text += vocab[static_cast<std::size_t>(token)];
          }
          const bool keeps = stopped ? dfa->matches(text) : dfa->walk(dfa->start, text) != structured::ByteDfa::kDead;
          BOOST_TEST(keeps, label << " request " << id << ": " << text << (stopped ? " (stopped)" : ""));
          whole_matches += stopped ? 1 : 0;
        }
      }
      BOOST_TEST_MESSAGE(label << ": " << whole_matches << " outputs ended on a whole match, "
                               << result.counters.spec_accepted_tokens << " proposals accepted");
      results.emplace(label, result);
    }
  }
  // Greedy single-sample requests are sampled the same way with and without speculation (argmax);
  // the others move between the device sampler and the host one, whose draws may differ at the
  // edges, so only their keeping to the regex is checked.
  const RunResult& plain = results.at("cuda bf16");
  const RunResult& speculated = results.at("cuda bf16 speculative");
  BOOST_TEST(speculated.counters.spec_drafts > 0);
  for (const TestRequest& request : requests) {
    if (request.n != 1 || request.temperature != 0.0f) continue;
    BOOST_TEST(speculated.tokens.at(request.id) == plain.tokens.at(request.id), "request " << request.id);
  }
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace pagedllm::cuda
