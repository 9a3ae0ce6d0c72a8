#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <map>
#include <vector>

#include "core/engine/engine.h"
#include "core/engine/scripted_executor.h"

namespace engine = pagedllm::engine;
namespace sched = pagedllm::sched;
using pagedllm::TokenId;

namespace {

engine::EngineConfig small_engine(engine::OutputKind kind) {
  engine::EngineConfig config;
  config.cache.block_size = 4;
  config.cache.num_device_blocks = 64;
  config.cache.watermark = 0.0;
  config.scheduler.max_num_batched_tokens = 16;
  config.scheduler.max_model_len = 128;
  config.output_kind = kind;
  return config;
}

// Runs three requests (one with n = 2) and returns every output step() produced, per request.
std::map<sched::RequestId, std::vector<engine::RequestOutput>> run(engine::OutputKind kind) {
  const engine::EngineConfig config = small_engine(kind);
  engine::ScriptedExecutor executor({}, config.cache);
  engine::VirtualClock clock;
  engine::Engine llm(config, executor, clock);
  for (sched::RequestId id = 0; id < 3; ++id) {
    sched::Request request;
    request.id = id;
    for (TokenId t = 0; t < 9 + id * 5; ++t) request.prompt_tokens.push_back(t * 3 + static_cast<TokenId>(id));
    request.params.max_tokens = 6 + static_cast<int32_t>(id);
    request.params.n = id == 1 ? 2 : 1;
    llm.add_request(request);
  }
  std::map<sched::RequestId, std::vector<engine::RequestOutput>> outputs;
  while (llm.has_unfinished()) {
    for (engine::RequestOutput& output : llm.step()) outputs[output.id].push_back(std::move(output));
  }
  return outputs;
}

// Every output of a mixed workload (n = 1, 2, 3; logprobs; beam search; a request rejected with a
// message), in step order. keep_buffers: the caller copies each output, so step() refills the
// same RequestOutput objects (buffers sized by earlier, different requests); otherwise it moves
// each one out and the engine starts from empty shells.
std::vector<engine::RequestOutput> run_mixed(engine::OutputKind kind, bool keep_buffers) {
  engine::EngineConfig config = small_engine(kind);
  config.cache.num_device_blocks = 24;  // 96 slots: a 100-token prompt can never fit
  engine::ScriptedExecutor executor({}, config.cache);
  engine::VirtualClock clock;
  engine::Engine llm(config, executor, clock);
  for (sched::RequestId id = 0; id < 6; ++id) {
    sched::Request request;
    request.id = id;
    const auto length = static_cast<TokenId>(id == 4 ? 100 : 5 + id * 3);
    for (TokenId t = 0; t < length; ++t) request.prompt_tokens.push_back(t * 7 + static_cast<TokenId>(id));
    request.params.max_tokens = 3 + static_cast<int32_t>(id % 3) * 2;
    request.params.n = 1 + static_cast<int32_t>(id % 3);
    if (id == 0 || id == 3) request.params.logprobs = 2;
    if (id == 5) request.params.beam_width = 3;
    llm.add_request(request);
  }
  std::vector<engine::RequestOutput> outputs;
  while (llm.has_unfinished()) {
    for (engine::RequestOutput& output : llm.step()) {
      if (keep_buffers) {
        outputs.push_back(output);
      } else {
        outputs.push_back(std::move(output));
      }
    }
  }
  return outputs;
}

void check_same(const engine::RequestOutput& a, const engine::RequestOutput& b) {
  BOOST_TEST(a.id == b.id);
  BOOST_TEST(a.num_prompt_tokens == b.num_prompt_tokens);
  BOOST_TEST(a.finished == b.finished);
  BOOST_TEST((a.finish_reason == b.finish_reason));
  BOOST_TEST(a.message == b.message);
  BOOST_TEST(a.times.first_token == b.times.first_token);
  BOOST_TEST(a.times.finished == b.times.finished);
  BOOST_TEST(a.times.token_times == b.times.token_times, boost::test_tools::per_element());
  BOOST_REQUIRE(a.completions.size() == b.completions.size());
  for (size_t c = 0; c < a.completions.size(); ++c) {
    const engine::Completion& x = a.completions[c];
    const engine::Completion& y = b.completions[c];
    BOOST_TEST(x.index == y.index);
    BOOST_TEST(x.tokens == y.tokens, boost::test_tools::per_element());
    BOOST_TEST(x.cumulative_logprob == y.cumulative_logprob);
    BOOST_TEST((x.finish_reason == y.finish_reason));
    BOOST_TEST(x.token_logprobs == y.token_logprobs, boost::test_tools::per_element());
    BOOST_TEST((x.top_logprobs == y.top_logprobs));
  }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(output_kinds)

BOOST_AUTO_TEST_CASE(refilled_outputs_report_exactly_what_fresh_ones_do) {
  for (const engine::OutputKind kind :
       {engine::OutputKind::cumulative, engine::OutputKind::delta, engine::OutputKind::final_only}) {
    const std::vector<engine::RequestOutput> fresh = run_mixed(kind, /*keep_buffers=*/false);
    const std::vector<engine::RequestOutput> refilled = run_mixed(kind, /*keep_buffers=*/true);
    BOOST_REQUIRE(fresh.size() == refilled.size());
    BOOST_TEST(fresh.size() >= 6u);
    for (size_t i = 0; i < fresh.size(); ++i) check_same(fresh[i], refilled[i]);
    // The workload reaches what a stale buffer could leak: a message, logprobs, three samples.
    BOOST_TEST(std::any_of(fresh.begin(), fresh.end(), [](const auto& o) { return !o.message.empty(); }));
    BOOST_TEST(std::any_of(fresh.begin(), fresh.end(), [](const auto& o) { return o.completions.size() == 3; }));
    BOOST_TEST(std::any_of(fresh.begin(), fresh.end(), [](const auto& o) {
      return !o.completions.empty() && !o.completions.front().top_logprobs.empty();
    }));
  }
}

BOOST_AUTO_TEST_CASE(deltas_add_up_to_the_cumulative_output_and_final_only_reports_once) {
  const auto cumulative = run(engine::OutputKind::cumulative);
  const auto delta = run(engine::OutputKind::delta);
  const auto final_only = run(engine::OutputKind::final_only);
  BOOST_REQUIRE(cumulative.size() == 3u);
  for (const auto& [id, reports] : cumulative) {
    const engine::RequestOutput& last = reports.back();
    BOOST_TEST(last.finished);
    // final_only: exactly one report, equal to the last cumulative one.
    BOOST_REQUIRE(final_only.at(id).size() == 1u);
    const engine::RequestOutput& only = final_only.at(id).front();
    BOOST_REQUIRE(only.completions.size() == last.completions.size());
    for (size_t c = 0; c < last.completions.size(); ++c) {
      BOOST_TEST(only.completions[c].tokens == last.completions[c].tokens, boost::test_tools::per_element());
    }
    // delta: as many reports as cumulative, whose token pieces concatenate to the whole.
    BOOST_REQUIRE(delta.at(id).size() == reports.size());
    std::vector<std::vector<TokenId>> joined(last.completions.size());
    for (const engine::RequestOutput& piece : delta.at(id)) {
      BOOST_TEST(piece.times.token_times.empty());
      for (const engine::Completion& completion : piece.completions) {
        auto& whole = joined.at(static_cast<size_t>(completion.index));
        whole.insert(whole.end(), completion.tokens.begin(), completion.tokens.end());
      }
    }
    for (size_t c = 0; c < last.completions.size(); ++c) {
      BOOST_TEST(joined[c] == last.completions[c].tokens, boost::test_tools::per_element());
    }
    BOOST_TEST(last.times.token_times.size() == reports.size());
  }
}

BOOST_AUTO_TEST_SUITE_END()
