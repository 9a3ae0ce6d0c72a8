#include <boost/test/unit_test.hpp>

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

}  // namespace

BOOST_AUTO_TEST_SUITE(output_kinds)

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
