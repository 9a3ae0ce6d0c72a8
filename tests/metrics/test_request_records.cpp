// Engine outputs as serving records: the consuming conversion equals the copying one and frees
// the outputs.
#include <boost/test/unit_test.hpp>

#include <utility>
#include <vector>

#include "core/metrics/request_records.h"

namespace pagedllm::metrics {
namespace {

engine::RequestOutput finished_output(sched::RequestId id, std::vector<double> token_times, int32_t samples) {
  engine::RequestOutput output;
  output.id = id;
  output.num_prompt_tokens = 10 + static_cast<int32_t>(id);
  output.finished = true;
  output.finish_reason = sched::FinishReason::length;
  output.times.arrival = 0.5 * static_cast<double>(id);
  output.times.first_token = token_times.front();
  output.times.finished = token_times.back();
  for (int32_t i = 0; i < samples; ++i) {
    engine::Completion completion;
    completion.index = i;
    completion.tokens.assign(token_times.size(), 7);
    output.completions.push_back(std::move(completion));
  }
  output.times.token_times = std::move(token_times);
  return output;
}

void check_same(const RequestRecord& a, const RequestRecord& b) {
  BOOST_TEST(a.id == b.id);
  BOOST_TEST(a.send_time == b.send_time);
  BOOST_TEST(a.first_token_time == b.first_token_time);
  BOOST_TEST(a.end_time == b.end_time);
  BOOST_TEST(a.chunk_times == b.chunk_times);
  BOOST_TEST(a.prompt_tokens == b.prompt_tokens);
  BOOST_TEST(a.output_tokens == b.output_tokens);
  BOOST_TEST(a.success == b.success);
  BOOST_TEST(a.error == b.error);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(request_records)

BOOST_AUTO_TEST_CASE(consuming_a_result_gives_the_same_records_and_frees_its_outputs) {
  engine::ReplayResult result;
  result.outputs.push_back(finished_output(4, {2.0, 2.1, 2.3}, 2));
  result.outputs.push_back(finished_output(1, {0.7, 0.9}, 1));
  engine::RequestOutput rejected;
  rejected.id = 3;
  rejected.finished = true;
  rejected.finish_reason = sched::FinishReason::rejected;
  rejected.message = "too long";
  result.outputs.push_back(rejected);
  result.refused.push_back({.id = 2, .arrival_time = 1.0, .num_prompt_tokens = 9, .message = "prompt too long"});
  result.end_time = 3.0;

  const std::vector<RequestRecord> copied = to_request_records(result);
  const std::vector<RequestRecord> consumed = to_request_records(std::move(result));
  BOOST_REQUIRE(copied.size() == 4u);
  BOOST_REQUIRE(consumed.size() == copied.size());
  for (size_t i = 0; i < copied.size(); ++i) {
    BOOST_TEST_CONTEXT("record " << i) { check_same(copied[i], consumed[i]); }
  }
  BOOST_TEST(copied[0].id == 1);  // by request id
  BOOST_TEST(copied[3].output_tokens == 6);
  BOOST_TEST(copied[3].chunk_times == (std::vector<double>{2.0, 2.1, 2.3}));
  BOOST_TEST(!copied[1].success);
  BOOST_TEST(copied[1].error == "refused: prompt too long");
  BOOST_TEST(result.outputs.empty());  // NOLINT(bugprone-use-after-move): consumed on purpose
  BOOST_TEST(result.end_time == 3.0);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace pagedllm::metrics
