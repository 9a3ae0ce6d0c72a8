// The cluster's discrete-event loop: one replica reproduces replay_requests exactly; routers
// place requests as they say; every request is served once; replicas sharing a host's cores
// progress at the processor-sharing rate, their serving path's CPU counted, slowed by measured
// interference while they run side by side; the serving path's latency reaches every client time.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <vector>

#include "core/engine/replay.h"
#include "sim/cluster.h"
#include "sim/roofline_cost_model.h"
#include "sim/sim_executor.h"
#include "tests/sim/roofline_fixture.h"

namespace pagedllm::test {
namespace {

engine::EngineConfig engine_config() {
  engine::EngineConfig config;
  config.cache.num_device_blocks = 400;
  config.cache.num_host_blocks = 100;
  config.scheduler.max_model_len = 1024;
  return config;
}

// Requests every 20 ms; every fourth shares a 64-token prefix.
std::vector<sched::Request> requests(int32_t count) {
  std::vector<sched::Request> result;
  for (int32_t i = 0; i < count; ++i) {
    sched::Request request;
    request.id = i;
    request.arrival_time = 0.02 * i;
    for (int32_t p = 0; p < 100 + 7 * (i % 5); ++p) {
      request.prompt_tokens.push_back(i % 4 == 0 && p < 64 ? 5 + p : 100 + (i * 977 + p * 31) % 20000);
    }
    request.params.max_tokens = 20 + i % 13;
    request.params.ignore_eos = true;
    result.push_back(request);
  }
  return result;
}

sim::ClusterConfig cluster_config(int32_t replicas, sim::RouterPolicy policy) {
  sim::ClusterConfig config;
  config.num_replicas = replicas;
  config.router.policy = policy;
  config.engine = engine_config();
  config.make_executor = [](int32_t) {
    return std::make_unique<sim::SimExecutor>(sim::SimExecutorConfig{.cost_model = llama2_7b_on_h100()},
                                              engine_config().cache);
  };
  return config;
}

// One prefill step (200 prompt tokens, one output token), arriving at `arrival`.
sched::Request one_step_request(sched::RequestId id, double arrival) {
  sched::Request request;
  request.id = id;
  request.arrival_time = arrival;
  for (int32_t p = 0; p < 200; ++p) request.prompt_tokens.push_back(100 + (static_cast<int32_t>(id) * 131 + p) % 20000);
  request.params.max_tokens = 1;
  request.params.ignore_eos = true;
  return request;
}

BOOST_AUTO_TEST_SUITE(cluster)

BOOST_AUTO_TEST_CASE(one_replica_reproduces_the_replay_driver_exactly) {
  sim::ClusterSimulation cluster(cluster_config(1, sim::RouterPolicy::round_robin));
  const engine::ReplayResult simulated = cluster.run(requests(60));

  sim::SimExecutor executor({.cost_model = llama2_7b_on_h100()}, engine_config().cache);
  engine::VirtualClock clock;
  engine::Engine engine(engine_config(), executor, clock);
  const engine::ReplayResult replayed =
      engine::replay_requests(engine, clock, requests(60), engine::TimeMode::virtual_clock);

  BOOST_REQUIRE_EQUAL(simulated.outputs.size(), replayed.outputs.size());
  for (size_t i = 0; i < simulated.outputs.size(); ++i) {
    BOOST_TEST(simulated.outputs[i].id == replayed.outputs[i].id);
    BOOST_TEST(simulated.outputs[i].times.first_token == replayed.outputs[i].times.first_token);
    BOOST_TEST(simulated.outputs[i].times.finished == replayed.outputs[i].times.finished);
    BOOST_TEST(simulated.outputs[i].completions.front().tokens == replayed.outputs[i].completions.front().tokens);
  }
  BOOST_TEST(simulated.end_time == replayed.end_time);
  BOOST_TEST(cluster.replica(0).num_steps() == engine.num_steps());
  BOOST_TEST(cluster.counters().num_arrivals == 60);
}

BOOST_AUTO_TEST_CASE(round_robin_alternates_and_every_request_is_served_once) {
  sim::ClusterSimulation cluster(cluster_config(3, sim::RouterPolicy::round_robin));
  const engine::ReplayResult result = cluster.run(requests(30));
  BOOST_REQUIRE_EQUAL(result.outputs.size(), 30u);
  for (int32_t i = 0; i < 30; ++i) {
    BOOST_TEST(result.outputs[static_cast<size_t>(i)].id == i);
    BOOST_TEST(cluster.replica_of(i) == i % 3);
  }
  int64_t finished = 0;
  for (int32_t r = 0; r < 3; ++r) finished += cluster.replica(r).counters().requests_finished;
  BOOST_TEST(finished == 30);
}

BOOST_AUTO_TEST_CASE(prefix_affinity_sends_shared_prefixes_where_they_are_cached) {
  // Three replicas: round-robin then spreads the every-fourth shared-prefix requests over all.
  sim::ClusterSimulation affinity(cluster_config(3, sim::RouterPolicy::prefix_affinity));
  affinity.run(requests(80));
  sim::ClusterSimulation round_robin(cluster_config(3, sim::RouterPolicy::round_robin));
  round_robin.run(requests(80));
  int64_t affinity_hits = 0;
  int64_t round_robin_hits = 0;
  for (int32_t r = 0; r < 3; ++r) {
    affinity_hits += affinity.replica(r).kv().stats().prefix_hit_tokens;
    round_robin_hits += round_robin.replica(r).kv().stats().prefix_hit_tokens;
  }
  BOOST_TEST(affinity_hits > round_robin_hits);
  // After the first, every request with the shared prefix went to one replica.
  for (int32_t i = 8; i < 80; i += 4) BOOST_TEST(affinity.replica_of(i) == affinity.replica_of(4));
}

// Requests whose prompts are described, not written (as `simulate` materializes a length-only
// trace): every fourth names a shared 64-token prefix by content ids (4 ids of 16 tokens), the
// rest of each prompt is the request's own stream; some prompts are shorter than a KV block.
std::vector<sched::Request> described_requests(int32_t count) {
  const sched::SyntheticTokens synthesis(7, 100, 20000);
  std::vector<sched::Request> result;
  for (int32_t i = 0; i < count; ++i) {
    sched::Request request;
    request.id = i;
    request.arrival_time = 0.02 * i;
    const int32_t length = i % 7 == 3 ? 5 + i % 9 : 100 + 7 * (i % 5);
    const bool shared = i % 4 == 0 && length > 64;
    request.content_ids = {.ids = shared ? std::vector<uint64_t>{1, 2, 3, 4} : std::vector<uint64_t>{},
                           .tokens_per_id = 16,
                           .num_tokens = shared ? 64 : 0,
                           .seed = synthesis.content_seed(),
                           .num_stream_tokens = length - (shared ? 64 : 0),
                           .stream = static_cast<uint64_t>(i)};
    request.prompt_synthesis = synthesis;
    request.params.max_tokens = 20 + i % 13;
    request.params.ignore_eos = true;
    result.push_back(request);
  }
  return result;
}

BOOST_AUTO_TEST_CASE(described_prompts_route_and_run_as_written_ones) {
  // The prefix-affinity router hashes a described prompt from its description; each replica's
  // engine stores only its last block (the simulator reads no prompt). Written out, the same
  // requests must go to the same replicas and produce the same tokens, times and hits.
  std::vector<sched::Request> written = described_requests(80);
  for (sched::Request& request : written) sched::write_prompt(request);
  sim::ClusterConfig config = cluster_config(3, sim::RouterPolicy::prefix_affinity);
  int32_t calls = 0;
  config.on_arrival = [&](sched::Request& request) {
    ++calls;
    BOOST_TEST(request.prompt_tokens.empty());  // nothing writes it on the way in
  };
  sim::ClusterSimulation described(std::move(config));
  const engine::ReplayResult by_description = described.run(described_requests(80));
  sim::ClusterSimulation given(cluster_config(3, sim::RouterPolicy::prefix_affinity));
  const engine::ReplayResult by_tokens = given.run(written);
  BOOST_TEST(calls == 80);
  BOOST_TEST(by_description.refused.empty());
  BOOST_REQUIRE_EQUAL(by_description.outputs.size(), by_tokens.outputs.size());
  for (size_t i = 0; i < by_tokens.outputs.size(); ++i) {
    BOOST_TEST(by_description.outputs[i].id == by_tokens.outputs[i].id);
    BOOST_TEST(by_description.outputs[i].times.finished == by_tokens.outputs[i].times.finished);
    BOOST_TEST(by_description.outputs[i].completions.front().tokens == by_tokens.outputs[i].completions.front().tokens);
    BOOST_TEST(described.replica_of(by_tokens.outputs[i].id) == given.replica_of(by_tokens.outputs[i].id));
  }
  int64_t hits = 0;
  for (int32_t r = 0; r < 3; ++r) {
    hits += described.replica(r).kv().stats().prefix_hit_tokens;
    BOOST_TEST(described.replica(r).kv().stats().prefix_hit_tokens == given.replica(r).kv().stats().prefix_hit_tokens);
  }
  BOOST_TEST(hits > 0);
}

// A source that hands out requests one at a time and counts how far ahead of the run it was asked.
class CountingSource final : public engine::RequestSource {
 public:
  explicit CountingSource(std::vector<sched::Request> requests) : requests_(std::move(requests)) {}
  std::optional<sched::Request> next() override {
    if (next_ == requests_.size()) return std::nullopt;
    ++num_pulled;
    return std::move(requests_[next_++]);
  }
  int64_t num_pulled = 0;

 private:
  std::vector<sched::Request> requests_;
  size_t next_ = 0;
};

BOOST_AUTO_TEST_CASE(requests_pulled_from_a_source_and_outputs_handed_on_run_as_a_vector_does) {
  sim::ClusterConfig config = cluster_config(3, sim::RouterPolicy::least_outstanding);
  std::vector<engine::RequestOutput> finished;
  std::vector<engine::RefusedRequest> refused;
  int64_t arrivals = 0;
  CountingSource* source_seen = nullptr;
  int64_t most_pulled_ahead = 0;
  config.on_arrival = [&](sched::Request&) {
    ++arrivals;
    most_pulled_ahead = std::max(most_pulled_ahead, source_seen->num_pulled - arrivals);
  };
  config.on_finished = [&](engine::RequestOutput&& output) { finished.push_back(std::move(output)); };
  config.on_refused = [&](engine::RefusedRequest&& request) { refused.push_back(std::move(request)); };
  std::vector<sched::Request> input = requests(90);
  input[17].prompt_tokens.assign(2000, 7);  // over max_model_len: refused at add_request
  CountingSource source(input);
  source_seen = &source;
  sim::ClusterSimulation streamed(std::move(config));
  const engine::ReplayResult result = streamed.run(source);
  sim::ClusterSimulation whole(cluster_config(3, sim::RouterPolicy::least_outstanding));
  const engine::ReplayResult given = whole.run(input);

  BOOST_TEST(result.outputs.empty());  // handed on, not kept
  BOOST_TEST(result.refused.empty());
  BOOST_TEST(most_pulled_ahead <= 1);  // one request read ahead of the arrivals, never the whole trace
  BOOST_REQUIRE_EQUAL(refused.size(), 1U);
  BOOST_TEST(refused[0].id == 17);
  BOOST_TEST(given.refused.size() == 1U);
  BOOST_TEST(result.end_time == given.end_time);
  std::sort(finished.begin(), finished.end(),
            [](const engine::RequestOutput& a, const engine::RequestOutput& b) { return a.id < b.id; });
  BOOST_REQUIRE_EQUAL(finished.size(), given.outputs.size());
  for (size_t i = 0; i < finished.size(); ++i) {
    BOOST_TEST(finished[i].id == given.outputs[i].id);
    BOOST_TEST(finished[i].times.finished == given.outputs[i].times.finished);
    BOOST_TEST(finished[i].times.token_times == given.outputs[i].times.token_times);
    BOOST_TEST(streamed.replica_of(finished[i].id) == whole.replica_of(finished[i].id));
  }
  // A source out of arrival order is refused where it goes wrong.
  std::vector<sched::Request> late = requests(5);
  late[3].arrival_time = 0.001;
  CountingSource out_of_order(std::move(late));
  sim::ClusterSimulation refuses(cluster_config(1, sim::RouterPolicy::round_robin));
  BOOST_CHECK_THROW(refuses.run(out_of_order), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(configs_without_replicas_or_executors_are_refused) {
  sim::ClusterConfig config = cluster_config(0, sim::RouterPolicy::round_robin);
  BOOST_CHECK_THROW(sim::ClusterSimulation{config}, std::invalid_argument);
  config = cluster_config(1, sim::RouterPolicy::round_robin);
  config.make_executor = nullptr;
  BOOST_CHECK_THROW(sim::ClusterSimulation{config}, std::invalid_argument);
  BOOST_CHECK_THROW(sim::parse_router_policy("random"), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(host_sharing_rate_is_cores_over_busy_threads) {
  BOOST_TEST(sim::HostSharing{}.rate(5) == 1.0);  // disabled: every replica on its own hardware
  const sim::HostSharing two_cores{.num_cores = 2, .threads_per_replica = 1};
  BOOST_TEST(two_cores.rate(1) == 1.0);
  BOOST_TEST(two_cores.rate(2) == 1.0);
  BOOST_TEST(two_cores.rate(3) == 2.0 / 3.0);
  const sim::HostSharing two_threads{.num_cores = 4, .threads_per_replica = 2};
  BOOST_TEST(two_threads.rate(2) == 1.0);
  BOOST_TEST(two_threads.rate(4) == 0.5);
  BOOST_CHECK_THROW((sim::HostSharing{.num_cores = -1, .threads_per_replica = 1}.validate()), std::invalid_argument);
  BOOST_CHECK_THROW((sim::HostSharing{.num_cores = 2, .threads_per_replica = 0}.validate()), std::invalid_argument);
  BOOST_CHECK_THROW(
      (sim::HostSharing{.num_cores = 2, .threads_per_replica = 1, .serving_cpu_seconds_per_token = -1e-6}.validate()),
      std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(the_serving_paths_cpu_competes_for_the_cores_once_they_are_full) {
  const sim::HostSharing two_cores{.num_cores = 2, .threads_per_replica = 1};
  BOOST_TEST(two_cores.rate(1, 0.5) == 1.0);  // one engine and its serving path fit on two cores
  BOOST_TEST(two_cores.rate(2, 0.0) == 1.0);
  // Two engines and 0.5 cores of serving at full speed: r (2 + 0.5 r) = 2, r = sqrt(8) - 2.
  const double shared = two_cores.rate(2, 0.5);
  BOOST_TEST(shared == std::sqrt(8.0) - 2.0, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(shared * (2.0 + 0.5 * shared) == 2.0, boost::test_tools::tolerance(1e-12));
  // Three engines on two cores: the serving path slows them below cores / threads.
  BOOST_TEST(two_cores.rate(3, 0.3) < 2.0 / 3.0);
  BOOST_TEST(two_cores.rate(3, 0.0) == 2.0 / 3.0);
}

BOOST_AUTO_TEST_CASE(steps_on_a_shared_host_progress_at_the_processor_sharing_rate) {
  sim::ClusterSimulation alone(cluster_config(1, sim::RouterPolicy::round_robin));
  const double step = alone.run({one_step_request(0, 0.0)}).outputs.at(0).times.finished;
  BOOST_REQUIRE(step > 0.0);

  // Two replicas on one core, the second request arriving half-way through the first's step:
  // replica 0 runs alone for step/2, then both at half speed, so it needs another full `step`
  // (ends at 1.5 step); replica 1 has then done step/2 and finishes the rest alone (ends at 2 step).
  sim::ClusterConfig config = cluster_config(2, sim::RouterPolicy::round_robin);
  config.host = {.num_cores = 1, .threads_per_replica = 1};
  const auto both = [&] {
    sim::ClusterSimulation cluster(config);
    return cluster.run({one_step_request(0, 0.0), one_step_request(1, step / 2)});
  };
  engine::ReplayResult shared = both();
  BOOST_REQUIRE_EQUAL(shared.outputs.size(), 2u);
  BOOST_TEST(shared.outputs[0].times.finished == 1.5 * step, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(shared.outputs[1].times.finished == 2.0 * step, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(shared.end_time == 2.0 * step, boost::test_tools::tolerance(1e-9));

  // A core each: neither slows the other.
  config.host.num_cores = 2;
  shared = both();
  BOOST_TEST(shared.outputs[0].times.finished == step, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(shared.outputs[1].times.finished == 1.5 * step, boost::test_tools::tolerance(1e-9));
}

BOOST_AUTO_TEST_CASE(the_serving_paths_cpu_slows_replicas_that_fill_the_host) {
  sim::ClusterSimulation alone(cluster_config(1, sim::RouterPolicy::round_robin));
  const double step = alone.run({one_step_request(0, 0.0)}).outputs.at(0).times.finished;
  BOOST_REQUIRE(step > 0.0);

  // Two replicas on two cores, both stepping from time 0, each step making one output token
  // whose serving path costs half a step of CPU: each adds 0.5 cores at full speed (1 in all), so
  // both progress at r = sqrt(3) - 1 (the fixed point of r (2 + r) = 2) and end at step / r.
  sim::ClusterConfig config = cluster_config(2, sim::RouterPolicy::round_robin);
  config.host = {.num_cores = 2, .threads_per_replica = 1, .serving_cpu_seconds_per_token = step / 2};
  sim::ClusterSimulation cluster(config);
  const engine::ReplayResult shared = cluster.run({one_step_request(0, 0.0), one_step_request(1, 0.0)});
  BOOST_REQUIRE_EQUAL(shared.outputs.size(), 2u);
  const double rate = std::sqrt(3.0) - 1.0;
  BOOST_TEST(shared.outputs[0].times.finished == step / rate, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(shared.outputs[1].times.finished == step / rate, boost::test_tools::tolerance(1e-9));

  // One replica alone: its serving path has the second core to itself.
  sim::ClusterConfig single = cluster_config(1, sim::RouterPolicy::round_robin);
  single.host = config.host;
  sim::ClusterSimulation lone(single);
  BOOST_TEST(lone.run({one_step_request(0, 0.0)}).outputs.at(0).times.finished == step,
             boost::test_tools::tolerance(1e-9));
}

BOOST_AUTO_TEST_CASE(host_interference_parses_named_fractions_and_refuses_the_rest) {
  const sim::HostInterference parsed = sim::HostInterference::parse("decode_by_decode=0.14,prefill_by_prefill=0.375");
  BOOST_TEST(parsed.decode_by_decode == 0.14);
  BOOST_TEST(parsed.prefill_by_prefill == 0.375);
  BOOST_TEST(parsed.decode_by_prefill == 0.0);
  BOOST_TEST(parsed.prefill_by_decode == 0.0);
  BOOST_TEST(parsed.any());
  BOOST_TEST(!sim::HostInterference{}.any());
  for (const char* bad : {"decode_by_decode", "decode=0.1", "decode_by_decode=-0.1", "decode_by_decode=0.1x",
                          "decode_by_decode=", "prefill_by_prefill=nan"}) {
    BOOST_CHECK_THROW(sim::HostInterference::parse(bad), std::invalid_argument);
  }
}

BOOST_AUTO_TEST_CASE(host_interference_mixes_by_prefill_share_and_by_the_time_neighbours_run_beside) {
  const sim::HostInterference interference{
      .decode_by_decode = 0.2, .decode_by_prefill = 0.1, .prefill_by_decode = 0.0, .prefill_by_prefill = 0.4};
  BOOST_TEST(interference.slowdown(0.0, 0.0) == 0.2);
  BOOST_TEST(interference.slowdown(0.0, 1.0) == 0.1);
  BOOST_TEST(interference.slowdown(1.0, 0.0) == 0.0);
  BOOST_TEST(interference.slowdown(1.0, 1.0) == 0.4);
  BOOST_TEST(interference.slowdown(0.5, 0.5) == (0.2 + 0.1 + 0.0 + 0.4) / 4, boost::test_tools::tolerance(1e-12));

  const sim::HostSharing host{.num_cores = 2, .threads_per_replica = 1, .interference = interference};
  const sim::SharedStep decode{.prefill_share = 0.0};
  const sim::SharedStep prefill{.prefill_share = 1.0};
  BOOST_TEST(host.rates({decode}) == std::vector<double>{1.0});  // alone: as profiled
  // A core each: every neighbour runs beside the step the whole time.
  std::vector<double> rates = host.rates({decode, prefill});
  BOOST_TEST(rates[0] == 1.0 / 1.1, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(rates[1] == 1.0, boost::test_tools::tolerance(1e-12));
  // Three on two cores: processor sharing at 2/3, and each neighbour beside the step half the time
  // (the one core left, shared by two).
  rates = host.rates({decode, decode, decode});
  for (const double rate : rates)
    BOOST_TEST(rate == (2.0 / 3.0) / (1.0 + 0.5 * (0.2 + 0.2)), boost::test_tools::tolerance(1e-12));
  // Interference needs a shared host.
  BOOST_TEST(sim::HostSharing{.interference = interference}.rates({decode, decode}) == std::vector<double>(2, 1.0),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(interfering_prefills_on_a_shared_host_slow_each_other_while_both_run) {
  sim::ClusterSimulation alone(cluster_config(1, sim::RouterPolicy::round_robin));
  const double step = alone.run({one_step_request(0, 0.0)}).outputs.at(0).times.finished;
  BOOST_REQUIRE(step > 0.0);

  // Two one-step prefills on two cores, each 25% slower beside the other. The second arrives
  // half-way through the first: from then both progress at 0.8, so the first's other half takes
  // 0.625 step (ends at 1.125 step); the second has then done half its step and ends alone at
  // 1.625 step.
  sim::ClusterConfig config = cluster_config(2, sim::RouterPolicy::round_robin);
  config.host = {.num_cores = 2, .threads_per_replica = 1, .interference = {.prefill_by_prefill = 0.25}};
  sim::ClusterSimulation cluster(config);
  const engine::ReplayResult shared = cluster.run({one_step_request(0, 0.0), one_step_request(1, step / 2)});
  BOOST_REQUIRE_EQUAL(shared.outputs.size(), 2u);
  BOOST_TEST(shared.outputs[0].times.finished == 1.125 * step, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(shared.outputs[1].times.finished == 1.625 * step, boost::test_tools::tolerance(1e-9));

  // Decodes do not slow prefills here (prefill_by_decode = 0): the same two requests as decodes'
  // neighbours would not change the first's end, and a decode-only fraction leaves prefills alone.
  config.host.interference = {.decode_by_decode = 0.5};
  sim::ClusterSimulation decode_only(config);
  const engine::ReplayResult unaffected = decode_only.run({one_step_request(0, 0.0), one_step_request(1, step / 2)});
  BOOST_TEST(unaffected.outputs[0].times.finished == step, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(unaffected.outputs[1].times.finished == 1.5 * step, boost::test_tools::tolerance(1e-9));
}

BOOST_AUTO_TEST_CASE(a_lone_replica_on_a_shared_host_runs_as_profiled) {
  sim::ClusterSimulation plain(cluster_config(1, sim::RouterPolicy::round_robin));
  const engine::ReplayResult expected = plain.run(requests(40));
  sim::ClusterConfig config = cluster_config(1, sim::RouterPolicy::round_robin);
  config.host = {.num_cores = 1, .threads_per_replica = 1};
  sim::ClusterSimulation shared(config);
  const engine::ReplayResult result = shared.run(requests(40));
  BOOST_REQUIRE_EQUAL(result.outputs.size(), expected.outputs.size());
  for (size_t i = 0; i < result.outputs.size(); ++i) {
    BOOST_TEST(result.outputs[i].times.finished == expected.outputs[i].times.finished,
               boost::test_tools::tolerance(1e-9));
  }
  BOOST_TEST(shared.replica(0).num_steps() == plain.replica(0).num_steps());
}

BOOST_AUTO_TEST_CASE(the_serving_path_adds_to_every_client_visible_time) {
  sim::ClusterSimulation plain(cluster_config(2, sim::RouterPolicy::least_outstanding));
  const engine::ReplayResult expected = plain.run(requests(30));
  sim::ClusterConfig config = cluster_config(2, sim::RouterPolicy::least_outstanding);
  config.serving_path_seconds = 0.015;
  sim::ClusterSimulation delayed(config);
  const engine::ReplayResult result = delayed.run(requests(30));
  BOOST_REQUIRE_EQUAL(result.outputs.size(), expected.outputs.size());
  for (size_t i = 0; i < result.outputs.size(); ++i) {
    const sched::RequestTimes& times = result.outputs[i].times;
    const sched::RequestTimes& base = expected.outputs[i].times;
    BOOST_TEST(times.arrival == base.arrival);
    BOOST_TEST(times.first_scheduled == base.first_scheduled);  // the engine's own view is unchanged
    BOOST_TEST(times.first_token == base.first_token + 0.015, boost::test_tools::tolerance(1e-12));
    BOOST_TEST(times.finished == base.finished + 0.015, boost::test_tools::tolerance(1e-12));
    BOOST_REQUIRE_EQUAL(times.token_times.size(), base.token_times.size());
    for (size_t t = 0; t < times.token_times.size(); ++t) {
      BOOST_TEST(times.token_times[t] == base.token_times[t] + 0.015, boost::test_tools::tolerance(1e-12));
    }
    BOOST_TEST(result.outputs[i].completions.front().tokens == expected.outputs[i].completions.front().tokens);
  }
  BOOST_TEST(result.end_time == expected.end_time + 0.015, boost::test_tools::tolerance(1e-12));
  config.serving_path_seconds = -0.001;
  BOOST_CHECK_THROW(sim::ClusterSimulation{config}, std::invalid_argument);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace pagedllm::test
