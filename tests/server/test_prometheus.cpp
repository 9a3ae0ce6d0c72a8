#include <boost/test/unit_test.hpp>

#include <atomic>
#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "tools/server/prometheus.h"

namespace server = pagedllm::server;
using server::FamilyConfig;
using server::MetricsRegistry;

namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

void check_lines(const std::string& rendered, const std::vector<std::string>& expected) {
  BOOST_TEST(!rendered.empty());
  BOOST_TEST(rendered.back() == '\n');  // the format ends every line, the last one included
  const auto lines = lines_of(rendered);
  BOOST_TEST(lines == expected, boost::test_tools::per_element());
}

}  // namespace

BOOST_AUTO_TEST_SUITE(prometheus_text_format)

BOOST_AUTO_TEST_CASE(values_are_formatted_so_prometheus_parses_them) {
  BOOST_TEST(server::format_value(0.0) == "0");
  BOOST_TEST(server::format_value(-0.0) == "0");
  BOOST_TEST(server::format_value(3.0) == "3");
  BOOST_TEST(server::format_value(-42.0) == "-42");
  BOOST_TEST(server::format_value(1e6) == "1000000");
  BOOST_TEST(server::format_value(123456789012.0) == "123456789012");
  BOOST_TEST(server::format_value(0.5) == "0.5");
  BOOST_TEST(server::format_value(0.1) == "0.1");
  BOOST_TEST(server::format_value(2.5e-7) == "2.5e-07");
  BOOST_TEST(server::format_value(1e300) == "1e+300");
  BOOST_TEST(server::format_value(std::numeric_limits<double>::infinity()) == "+Inf");
  BOOST_TEST(server::format_value(-std::numeric_limits<double>::infinity()) == "-Inf");
  BOOST_TEST(server::format_value(std::numeric_limits<double>::quiet_NaN()) == "NaN");
  // Shortest round trip: parsing the text gives the same double back.
  for (double v : {0.1 + 0.2, 1.0 / 3.0, 6.02214076e23, -1.5e-300}) {
    BOOST_TEST(std::stod(server::format_value(v)) == v);
  }
}

BOOST_AUTO_TEST_CASE(help_and_label_values_are_escaped) {
  BOOST_TEST(server::escape_help("a\\b\nc\"d") == "a\\\\b\\nc\"d");  // quotes stay in help
  BOOST_TEST(server::escape_label_value("a\\b\nc\"d") == "a\\\\b\\nc\\\"d");
  BOOST_TEST(server::escape_label_value("plain") == "plain");
}

BOOST_AUTO_TEST_CASE(counter_renders_help_type_and_sample) {
  MetricsRegistry registry;
  auto& requests = registry.counter({"pagedllm:request_success_total", "Finished requests.", {}, ""});
  requests.inc();
  requests.inc(2.5);
  requests.inc(-10.0);  // ignored: counters only go up
  check_lines(registry.render(), {
                                     "# HELP pagedllm:request_success_total Finished requests.",
                                     "# TYPE pagedllm:request_success_total counter",
                                     "pagedllm:request_success_total 3.5",
                                 });
}

BOOST_AUTO_TEST_CASE(counter_with_constant_and_variable_labels) {
  MetricsRegistry registry;
  auto& preemptions =
      registry.add_counter({"pagedllm:num_preemptions_total", "Preemptions.", {{"model_name", "tiny"}}, "mode"});
  preemptions.with("swap").inc(3);
  preemptions.with("recompute").inc();
  preemptions.with("swap").inc();
  check_lines(registry.render(), {
                                     "# HELP pagedllm:num_preemptions_total Preemptions.",
                                     "# TYPE pagedllm:num_preemptions_total counter",
                                     "pagedllm:num_preemptions_total{model_name=\"tiny\",mode=\"recompute\"} 1",
                                     "pagedllm:num_preemptions_total{model_name=\"tiny\",mode=\"swap\"} 4",
                                 });
}

BOOST_AUTO_TEST_CASE(gauge_sets_and_moves_both_ways) {
  MetricsRegistry registry;
  auto& running = registry.gauge({"pagedllm:num_requests_running", "Running.", {{"model_name", "tiny"}}, ""});
  running.set(7);
  running.inc(2);
  running.dec(4);
  auto& usage = registry.gauge({"pagedllm:gpu_cache_usage_perc", "KV usage.", {}, ""});
  usage.set(0.25);
  check_lines(registry.render(), {
                                     "# HELP pagedllm:num_requests_running Running.",
                                     "# TYPE pagedllm:num_requests_running gauge",
                                     "pagedllm:num_requests_running{model_name=\"tiny\"} 5",
                                     "# HELP pagedllm:gpu_cache_usage_perc KV usage.",
                                     "# TYPE pagedllm:gpu_cache_usage_perc gauge",
                                     "pagedllm:gpu_cache_usage_perc 0.25",
                                 });
}

BOOST_AUTO_TEST_CASE(histogram_buckets_are_cumulative_and_end_with_inf) {
  MetricsRegistry registry;
  auto& ttft = registry.histogram({"pagedllm:time_to_first_token_seconds", "TTFT.", {{"model_name", "tiny"}}, ""},
                                  {0.1, 0.5, 1.0});
  for (double v : {0.05, 0.1, 0.3, 0.7, 2.0, 5.0}) ttft.observe(v);  // 0.1 lands in le=0.1
  check_lines(registry.render(), {
                                     "# HELP pagedllm:time_to_first_token_seconds TTFT.",
                                     "# TYPE pagedllm:time_to_first_token_seconds histogram",
                                     "pagedllm:time_to_first_token_seconds_bucket{model_name=\"tiny\",le=\"0.1\"} 2",
                                     "pagedllm:time_to_first_token_seconds_bucket{model_name=\"tiny\",le=\"0.5\"} 3",
                                     "pagedllm:time_to_first_token_seconds_bucket{model_name=\"tiny\",le=\"1\"} 4",
                                     "pagedllm:time_to_first_token_seconds_bucket{model_name=\"tiny\",le=\"+Inf\"} 6",
                                     "pagedllm:time_to_first_token_seconds_sum{model_name=\"tiny\"} 8.15",
                                     "pagedllm:time_to_first_token_seconds_count{model_name=\"tiny\"} 6",
                                 });
}

BOOST_AUTO_TEST_CASE(histogram_without_observations_and_with_variable_label) {
  MetricsRegistry registry;
  auto& family = registry.add_histogram({"lat_seconds", "Latency.", {}, "phase"}, {1.0, 2.0, INFINITY});
  family.with("decode");  // created, never observed
  family.with("prefill").observe(1.5);
  check_lines(registry.render(), {
                                     "# HELP lat_seconds Latency.",
                                     "# TYPE lat_seconds histogram",
                                     "lat_seconds_bucket{phase=\"decode\",le=\"1\"} 0",
                                     "lat_seconds_bucket{phase=\"decode\",le=\"2\"} 0",
                                     "lat_seconds_bucket{phase=\"decode\",le=\"+Inf\"} 0",
                                     "lat_seconds_sum{phase=\"decode\"} 0",
                                     "lat_seconds_count{phase=\"decode\"} 0",
                                     "lat_seconds_bucket{phase=\"prefill\",le=\"1\"} 0",
                                     "lat_seconds_bucket{phase=\"prefill\",le=\"2\"} 1",
                                     "lat_seconds_bucket{phase=\"prefill\",le=\"+Inf\"} 1",
                                     "lat_seconds_sum{phase=\"prefill\"} 1.5",
                                     "lat_seconds_count{phase=\"prefill\"} 1",
                                 });
}

BOOST_AUTO_TEST_CASE(histogram_snapshot_counts_nan_only_in_inf) {
  server::Histogram histogram({1.0});
  histogram.observe(std::numeric_limits<double>::quiet_NaN());
  histogram.observe(0.5);
  const auto snapshot = histogram.snapshot();
  BOOST_TEST(snapshot.cumulative == (std::vector<uint64_t>{1, 2}), boost::test_tools::per_element());
  BOOST_TEST(snapshot.count == 2u);
}

BOOST_AUTO_TEST_CASE(label_values_and_help_are_escaped_in_output) {
  MetricsRegistry registry;
  auto& info = registry.add_gauge({"info", "Line one\nback\\slash", {{"path", "C:\\x \"q\"\nz"}}, "kind"});
  info.with("a\"b").set(1);
  check_lines(registry.render(), {
                                     "# HELP info Line one\\nback\\\\slash",
                                     "# TYPE info gauge",
                                     "info{path=\"C:\\\\x \\\"q\\\"\\nz\",kind=\"a\\\"b\"} 1",
                                 });
}

BOOST_AUTO_TEST_CASE(families_render_in_registration_order) {
  MetricsRegistry registry;
  registry.gauge({"zeta", "z", {}, ""}).set(1);
  registry.counter({"alpha_total", "a", {}, ""}).inc();
  registry.histogram({"mid", "m", {}, ""}, {1.0}).observe(0.5);
  std::vector<std::string> types;
  for (const auto& line : lines_of(registry.render()))
    if (line.starts_with("# TYPE")) types.push_back(line);
  BOOST_TEST(
      types == (std::vector<std::string>{"# TYPE zeta gauge", "# TYPE alpha_total counter", "# TYPE mid histogram"}),
      boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(invalid_registrations_are_rejected) {
  MetricsRegistry registry;
  registry.counter({"ok_total", "", {}, ""});
  BOOST_CHECK_THROW(registry.counter({"ok_total", "", {}, ""}), std::invalid_argument);  // twice
  BOOST_CHECK_THROW(registry.gauge({"ok_total", "", {}, ""}), std::invalid_argument);    // other type
  BOOST_CHECK_THROW(registry.gauge({"1bad", "", {}, ""}), std::invalid_argument);
  BOOST_CHECK_THROW(registry.gauge({"bad-name", "", {}, ""}), std::invalid_argument);
  BOOST_CHECK_THROW(registry.gauge({"g", "", {{"a:b", "x"}}, ""}), std::invalid_argument);  // no colon in labels
  BOOST_CHECK_THROW(registry.gauge({"g", "", {{"__x", "x"}}, ""}), std::invalid_argument);
  BOOST_CHECK_THROW(registry.gauge({"g", "", {{"a", "x"}}, "a"}), std::invalid_argument);  // twice
  BOOST_CHECK_THROW(registry.histogram({"h", "", {}, "le"}, {1.0}), std::invalid_argument);
  BOOST_CHECK_THROW(registry.histogram({"h", "", {}, ""}, {1.0, 1.0}), std::invalid_argument);
  BOOST_CHECK_THROW(registry.histogram({"h", "", {}, ""}, {2.0, 1.0}), std::invalid_argument);
  BOOST_CHECK_THROW(registry.histogram({"h", "", {}, ""}, {NAN}), std::invalid_argument);
  // Failed registrations leave nothing behind.
  BOOST_TEST(lines_of(registry.render()).size() == 3u);
  auto& labelled = registry.add_counter({"l_total", "", {}, "mode"});
  BOOST_CHECK_THROW(labelled.get(), std::logic_error);
  auto& plain = registry.add_counter({"p_total", "", {}, ""});
  BOOST_CHECK_THROW(plain.with("x"), std::logic_error);
}

BOOST_AUTO_TEST_CASE(aliases_render_the_same_series_under_another_name_after_every_family) {
  MetricsRegistry registry;
  auto& preemptions =
      registry.add_counter({"pagedllm:num_preemptions_total", "Preemptions.", {{"model_name", "tiny"}}, "mode"});
  auto& usage = registry.gauge({"pagedllm:kv_cache_usage_perc", "KV usage.", {{"model_name", "tiny"}}, ""});
  auto& ttft = registry.histogram({"pagedllm:ttft_seconds", "TTFT.", {}, ""}, {0.5});
  registry.add_alias({.name = "vllm:num_preemptions_total",
                      .family = "pagedllm:num_preemptions_total",
                      .help = "Summed.",
                      .sum_over_variable_label = true});
  registry.add_alias({.name = "vllm:kv_cache_usage_perc", .family = "pagedllm:kv_cache_usage_perc", .help = "U."});
  registry.add_alias({.name = "vllm:ttft_seconds", .family = "pagedllm:ttft_seconds", .help = "T."});
  preemptions.with("swap").inc(3);
  preemptions.with("recompute").inc(2);
  usage.set(0.25);
  ttft.observe(0.1);
  const std::vector<std::string> lines = lines_of(registry.render());
  const std::vector<std::string> aliases(lines.end() - 13, lines.end());
  check_lines(registry.render().substr(registry.render().find("# HELP vllm:")),
              {
                  "# HELP vllm:num_preemptions_total Summed.",
                  "# TYPE vllm:num_preemptions_total counter",
                  "vllm:num_preemptions_total{model_name=\"tiny\"} 5",
                  "# HELP vllm:kv_cache_usage_perc U.",
                  "# TYPE vllm:kv_cache_usage_perc gauge",
                  "vllm:kv_cache_usage_perc{model_name=\"tiny\"} 0.25",
                  "# HELP vllm:ttft_seconds T.",
                  "# TYPE vllm:ttft_seconds histogram",
                  "vllm:ttft_seconds_bucket{le=\"0.5\"} 1",
                  "vllm:ttft_seconds_bucket{le=\"+Inf\"} 1",
                  "vllm:ttft_seconds_sum 0.1",
                  "vllm:ttft_seconds_count 1",
              });
  BOOST_TEST(aliases.front() == "pagedllm:ttft_seconds_count 1");  // the families come first
  // Names are checked against families and aliases both ways.
  BOOST_CHECK_THROW(registry.add_alias({.name = "vllm:ttft_seconds", .family = "pagedllm:ttft_seconds", .help = ""}),
                    std::invalid_argument);
  BOOST_CHECK_THROW(
      registry.add_alias({.name = "pagedllm:ttft_seconds", .family = "pagedllm:ttft_seconds", .help = ""}),
      std::invalid_argument);
  BOOST_CHECK_THROW(registry.gauge({"vllm:kv_cache_usage_perc", "", {}, ""}), std::invalid_argument);
  BOOST_CHECK_THROW(registry.add_alias({.name = "x", .family = "no_such_family", .help = ""}), std::invalid_argument);
  BOOST_CHECK_THROW(registry.add_alias({.name = "bad-name", .family = "pagedllm:ttft_seconds", .help = ""}),
                    std::invalid_argument);
  BOOST_CHECK_THROW(
      registry.add_alias(
          {.name = "y", .family = "pagedllm:kv_cache_usage_perc", .help = "", .sum_over_variable_label = true}),
      std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(concurrent_updates_sum_correctly_while_rendering) {
  MetricsRegistry registry;
  auto& counter = registry.counter({"c_total", "", {}, ""});
  auto& family = registry.add_counter({"f_total", "", {}, "thread"});
  auto& gauge = registry.gauge({"g", "", {}, ""});
  auto& histogram = registry.histogram({"h", "", {}, ""}, {0.5});
  constexpr int kNumThreads = 8;
  constexpr int kNumUpdates = 20000;
  std::atomic<bool> done{false};
  // A reader renders throughout, as the HTTP thread would; in every rendering the histogram's
  // +Inf bucket must equal its count (a torn snapshot would differ). Boost.Test's assertions are
  // not thread-safe, so the reader only counts what it saw.
  std::atomic<int> num_renders{0};
  std::atomic<int> num_torn{0};
  std::thread reader([&] {
    while (!done.load()) {
      std::string inf_bucket;
      std::string count;
      for (const auto& line : lines_of(registry.render())) {
        if (line.starts_with("h_bucket{le=\"+Inf\"} ")) inf_bucket = line.substr(line.find(' ') + 1);
        if (line.starts_with("h_count ")) count = line.substr(line.find(' ') + 1);
      }
      if (inf_bucket.empty() || inf_bucket != count) ++num_torn;
      ++num_renders;
    }
  });
  std::vector<std::thread> writers;
  for (int t = 0; t < kNumThreads; ++t) {
    writers.emplace_back([&, t] {
      for (int i = 0; i < kNumUpdates; ++i) {
        counter.inc();
        family.with(std::to_string(t % 2)).inc(0.5);
        gauge.inc();
        gauge.dec(0.5);
        histogram.observe(i % 2 == 0 ? 0.25 : 1.0);
      }
    });
  }
  for (auto& w : writers) w.join();
  done = true;
  reader.join();
  BOOST_TEST(num_renders.load() > 0);
  BOOST_TEST(num_torn.load() == 0);
  constexpr double kTotal = double(kNumThreads) * kNumUpdates;
  BOOST_TEST(counter.value() == kTotal);
  BOOST_TEST(family.with("0").value() + family.with("1").value() == kTotal * 0.5);
  BOOST_TEST(gauge.value() == kTotal * 0.5);
  const auto snapshot = histogram.snapshot();
  BOOST_TEST(snapshot.count == uint64_t(kTotal));
  BOOST_TEST(snapshot.cumulative.front() == uint64_t(kTotal / 2));
  BOOST_TEST(snapshot.sum == kTotal / 2 * 0.25 + kTotal / 2 * 1.0);
  const auto lines = lines_of(registry.render());
  BOOST_TEST(lines[2] == "c_total " + server::format_value(kTotal));
}

BOOST_AUTO_TEST_SUITE_END()
