#include <boost/test/unit_test.hpp>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/engine/scripted_executor.h"
#include "core/frontend/serving_engine.h"
#include "tests/tokenizer/tiny_tokenizers.h"

namespace pagedllm::frontend {
namespace {

// The scripted executor at the pace of a small real model (half a millisecond a step), so that
// a long request is still running when the test aborts it.
class PacedExecutor final : public engine::Executor {
 public:
  PacedExecutor(const engine::ScriptedExecutorConfig& config, const kv::KvCacheConfig& cache) : inner_(config, cache) {}
  sched::StepResult execute(const sched::StepPlan& plan) override {
    std::this_thread::sleep_for(std::chrono::microseconds(500));
    return inner_.execute(plan);
  }
  std::string name() const override { return "paced scripted"; }

 private:
  engine::ScriptedExecutor inner_;
};

// A serving engine on the scripted executor (tokens are a fixed function of request, sample and
// position) with byte tokens, so the text of any output is known.
struct Harness {
  tokenizer::Tokenizer tokenizer{tokenizer::testing::byte_level_spec({})};
  ServingEngineConfig config;
  std::unique_ptr<PacedExecutor> executor;
  std::unique_ptr<ServingEngine> engine;

  explicit Harness(int32_t max_pending = 64) {
    config.engine.cache = {.block_size = 16, .num_device_blocks = 512, .num_host_blocks = 64};
    config.engine.scheduler.max_model_len = 1024;
    config.max_pending_requests = max_pending;
    engine::ScriptedExecutorConfig script;
    script.vocab_size = 256;
    executor = std::make_unique<PacedExecutor>(script, config.engine.cache);
    engine = std::make_unique<ServingEngine>(config, *executor, tokenizer);
  }
};

// Collects a request's updates; wait() returns once the final one came.
struct Collector {
  std::mutex mutex;
  std::condition_variable done;
  std::vector<RequestUpdate> updates;
  bool finished = false;

  UpdateSink sink() {
    return [this](RequestUpdate&& update) {
      const std::lock_guard lock(mutex);
      finished = finished || update.finished;
      updates.push_back(std::move(update));
      done.notify_all();
    };
  }
  bool wait(std::chrono::seconds limit = std::chrono::seconds(20)) {
    std::unique_lock lock(mutex);
    return done.wait_for(lock, limit, [&] { return finished; });
  }
  bool wait_for_tokens() {
    std::unique_lock lock(mutex);
    return done.wait_for(lock, std::chrono::seconds(20), [&] {
      for (const RequestUpdate& update : updates) {
        if (update.num_output_tokens > 0) return true;
      }
      return finished;
    });
  }
  // Per sample: its text, tokens and finish reason, from every update.
  struct Sample {
    std::string text;
    std::vector<TokenId> tokens;
    std::string finish_reason;
  };
  std::vector<Sample> samples() {
    const std::lock_guard lock(mutex);
    std::vector<Sample> result;
    for (const RequestUpdate& update : updates) {
      for (const CompletionUpdate& news : update.completions) {
        if (result.size() <= static_cast<size_t>(news.index)) result.resize(static_cast<size_t>(news.index) + 1);
        Sample& sample = result[static_cast<size_t>(news.index)];
        sample.text += news.text;
        sample.tokens.insert(sample.tokens.end(), news.tokens.begin(), news.tokens.end());
        if (!news.finish_reason.empty()) sample.finish_reason = news.finish_reason;
      }
    }
    return result;
  }
};

ServingRequest request_of(int32_t max_tokens, int32_t n = 1) {
  ServingRequest request;
  request.prompt_tokens = {'h', 'e', 'l', 'l', 'o'};
  request.sampling.max_tokens = max_tokens;
  request.sampling.n = n;
  request.sampling.ignore_eos = true;
  return request;
}

BOOST_AUTO_TEST_CASE(a_request_streams_its_tokens_as_text_and_ends_with_length) {
  Harness harness;
  Collector collector;
  BOOST_REQUIRE(harness.engine->submit(harness.engine->validate(request_of(40)), collector.sink()));
  BOOST_REQUIRE(collector.wait());
  const auto samples = collector.samples();
  BOOST_REQUIRE_EQUAL(samples.size(), 1u);
  BOOST_TEST(samples[0].tokens.size() == 40u);
  BOOST_TEST(samples[0].text == harness.tokenizer.decode(samples[0].tokens));
  BOOST_TEST(samples[0].finish_reason == "length");
  BOOST_TEST(collector.updates.back().num_output_tokens == 40);
  BOOST_TEST(collector.updates.back().num_prompt_tokens == 5);
  BOOST_TEST(collector.updates.size() > 2u);  // streamed, not one final report
  BOOST_TEST(harness.engine->num_pending() == 0);
}

BOOST_AUTO_TEST_CASE(parallel_samples_each_finish) {
  Harness harness;
  Collector collector;
  BOOST_REQUIRE(harness.engine->submit(harness.engine->validate(request_of(12, 3)), collector.sink()));
  BOOST_REQUIRE(collector.wait());
  const auto samples = collector.samples();
  BOOST_REQUIRE_EQUAL(samples.size(), 3u);
  for (const auto& sample : samples) {
    BOOST_TEST(sample.tokens.size() == 12u);
    BOOST_TEST(sample.finish_reason == "length");
  }
  BOOST_TEST(collector.updates.back().num_output_tokens == 36);
}

BOOST_AUTO_TEST_CASE(beam_search_sends_its_ranked_beams_whole_when_it_ends) {
  Harness harness;
  Collector collector;
  ServingRequest request = request_of(20, 2);
  request.sampling.beam_width = 2;
  BOOST_REQUIRE(harness.engine->submit(harness.engine->validate(request), collector.sink()));
  BOOST_REQUIRE(collector.wait());
  int32_t updates_with_text = 0;
  for (const RequestUpdate& update : collector.updates) updates_with_text += update.completions.empty() ? 0 : 1;
  BOOST_TEST(updates_with_text == 1);  // nothing before the final ranking
  const auto samples = collector.samples();
  BOOST_REQUIRE_EQUAL(samples.size(), 2u);
  for (const auto& sample : samples) {
    BOOST_TEST(sample.tokens.size() == 20u);
    BOOST_TEST(sample.text == harness.tokenizer.decode(sample.tokens));
    BOOST_TEST(sample.finish_reason == "length");
  }
  BOOST_TEST(samples[0].tokens != samples[1].tokens);
  BOOST_TEST(collector.updates.back().num_output_tokens == 40);
  BOOST_TEST(harness.engine->num_pending() == 0);
}

BOOST_AUTO_TEST_CASE(a_stop_string_ends_the_request_before_it_and_frees_its_blocks) {
  std::string full;
  {
    Harness harness;
    Collector collector;
    BOOST_REQUIRE(harness.engine->submit(harness.engine->validate(request_of(60)), collector.sink()));
    BOOST_REQUIRE(collector.wait());
    full = collector.samples()[0].text;
  }
  // A stop string from the middle of that output (the same request id 1 in a fresh engine).
  size_t at = 20;
  while (at + 2 < full.size() && (static_cast<unsigned char>(full[at]) >= 0x80 ||
                                  full.substr(0, at).find(full.substr(at, 2)) != std::string::npos))
    ++at;
  BOOST_REQUIRE(at + 2 < full.size());
  const std::string stop = full.substr(at, 2);
  Harness harness;
  Collector collector;
  ServingRequest request = request_of(60);
  request.sampling.stop = {stop};
  BOOST_REQUIRE(harness.engine->submit(harness.engine->validate(std::move(request)), collector.sink()));
  BOOST_REQUIRE(collector.wait());
  const auto samples = collector.samples();
  BOOST_TEST(samples[0].text == full.substr(0, full.find(stop)));
  BOOST_TEST(samples[0].finish_reason == "stop");
  BOOST_TEST(samples[0].tokens.size() < 60u);
  // Tokens travel with their text: while the start of the stop string is held back, so are its
  // tokens (until the update that cuts the text).
  for (const RequestUpdate& update : collector.updates) {
    for (const CompletionUpdate& news : update.completions) {
      // (Replacement characters aside: a byte that can start no character becomes U+FFFD as
      // soon as the next one shows it, while decoding a token alone may draw the line elsewhere.)
      if (news.finish_reason == "stop" || news.text.find("\xEF\xBF\xBD") != std::string::npos) continue;
      BOOST_TEST(harness.tokenizer.decode(news.tokens) == news.text);
    }
  }
  BOOST_TEST(harness.engine->num_pending() == 0);
}

BOOST_AUTO_TEST_CASE(with_parallel_samples_a_stop_string_ends_only_the_sample_that_wrote_it) {
  std::vector<Collector::Sample> free_run;
  {
    Harness harness;
    Collector collector;
    BOOST_REQUIRE(harness.engine->submit(harness.engine->validate(request_of(60, 2)), collector.sink()));
    BOOST_REQUIRE(collector.wait());
    free_run = collector.samples();
  }
  BOOST_REQUIRE_EQUAL(free_run.size(), 2u);
  // Two bytes of sample 0's text, from its middle, that sample 1 never writes.
  std::string stop;
  for (size_t at = 10; at + 2 < free_run[0].text.size() && stop.empty(); ++at) {
    const std::string candidate = free_run[0].text.substr(at, 2);
    const bool ascii =
        static_cast<unsigned char>(candidate[0]) < 0x80 && static_cast<unsigned char>(candidate[1]) < 0x80;
    if (ascii && free_run[0].text.find(candidate) == at && free_run[1].text.find(candidate) == std::string::npos) {
      stop = candidate;
    }
  }
  BOOST_REQUIRE(!stop.empty());
  Harness harness;
  Collector collector;
  ServingRequest request = request_of(60, 2);
  request.sampling.stop = {stop};
  BOOST_REQUIRE(harness.engine->submit(harness.engine->validate(std::move(request)), collector.sink()));
  BOOST_REQUIRE(collector.wait());
  const auto samples = collector.samples();
  BOOST_REQUIRE_EQUAL(samples.size(), 2u);
  BOOST_TEST(samples[0].text == free_run[0].text.substr(0, free_run[0].text.find(stop)));
  BOOST_TEST(samples[0].finish_reason == "stop");
  BOOST_TEST(samples[1].text == free_run[1].text);
  BOOST_TEST(samples[1].finish_reason == "length");
  BOOST_TEST(harness.engine->num_pending() == 0);
}

BOOST_AUTO_TEST_CASE(an_abort_ends_a_request_within_a_step) {
  Harness harness;
  Collector collector;
  const auto id = harness.engine->submit(harness.engine->validate(request_of(1000)), collector.sink());
  BOOST_REQUIRE(id);
  BOOST_REQUIRE(collector.wait_for_tokens());
  harness.engine->abort(*id);
  BOOST_REQUIRE(collector.wait());
  const auto samples = collector.samples();
  BOOST_TEST(samples[0].finish_reason == "abort");
  BOOST_TEST(samples[0].tokens.size() < 1000u);
  BOOST_TEST(harness.engine->num_pending() == 0);
}

BOOST_AUTO_TEST_CASE(submissions_beyond_the_pending_limit_are_refused) {
  Harness harness(2);
  Collector first;
  Collector second;
  Collector third;
  const auto a = harness.engine->submit(harness.engine->validate(request_of(1000)), first.sink());
  const auto b = harness.engine->submit(harness.engine->validate(request_of(1000)), second.sink());
  BOOST_TEST(a.has_value());
  BOOST_TEST(b.has_value());
  BOOST_TEST(!harness.engine->submit(harness.engine->validate(request_of(4)), third.sink()).has_value());
  harness.engine->abort(*a);
  BOOST_REQUIRE(first.wait());
  Collector fourth;
  BOOST_TEST(harness.engine->submit(harness.engine->validate(request_of(4)), fourth.sink()).has_value());  // room again
  harness.engine->abort(*b);
  BOOST_REQUIRE(second.wait());
  BOOST_REQUIRE(fourth.wait());
}

BOOST_AUTO_TEST_CASE(an_invalid_request_is_refused_before_it_is_queued) {
  Harness harness;
  try {
    harness.engine->validate(request_of(2000));  // beyond max_model_len 1024
    BOOST_FAIL("validate() let a request beyond the context length through");
  } catch (const sched::InvalidRequestError& error) {
    BOOST_TEST(error.field() == "max_tokens");
    BOOST_TEST(std::string(error.what()).find("1024") != std::string::npos);
  }
  BOOST_TEST(harness.engine->num_pending() == 0);
}

BOOST_AUTO_TEST_CASE(a_request_the_kv_cache_can_never_hold_gets_an_invalid_request_update) {
  Harness harness;
  Collector collector;
  // 16 samples of up to 1005 tokens need 16 x 63 blocks; the cache has 512.
  BOOST_REQUIRE(harness.engine->submit(harness.engine->validate(request_of(1000, 16)), collector.sink()));
  BOOST_REQUIRE(collector.wait());
  BOOST_TEST((collector.updates.back().error == RequestError::invalid_request));
  BOOST_TEST(collector.updates.back().error_message.find("can never fit") != std::string::npos);
  BOOST_TEST(harness.engine->num_pending() == 0);
}

BOOST_AUTO_TEST_CASE(shutting_down_ends_every_request_with_an_error) {
  Collector collector;
  {
    Harness harness;
    BOOST_REQUIRE(harness.engine->submit(harness.engine->validate(request_of(1000)), collector.sink()));
    BOOST_REQUIRE(collector.wait_for_tokens());
  }  // the engine stops here
  BOOST_REQUIRE(collector.wait(std::chrono::seconds(1)));
  BOOST_TEST((collector.updates.back().error == RequestError::shutting_down));
  BOOST_TEST(collector.updates.back().error_message.find("shutting down") != std::string::npos);
}

}  // namespace
}  // namespace pagedllm::frontend
