#include "sim/latency_objective.h"

#include <array>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <utility>

namespace pagedllm::sim {

namespace {

constexpr std::array<std::pair<const char*, LatencyMetric>, 4> kMetrics{{{"ttft", LatencyMetric::ttft},
                                                                         {"tpot", LatencyMetric::tpot},
                                                                         {"itl", LatencyMetric::itl},
                                                                         {"e2el", LatencyMetric::e2el}}};
constexpr std::array<std::pair<const char*, LatencyStatistic>, 4> kStatistics{{{"mean", LatencyStatistic::mean},
                                                                               {"p50", LatencyStatistic::p50},
                                                                               {"p90", LatencyStatistic::p90},
                                                                               {"p99", LatencyStatistic::p99}}};

template <typename Enum, size_t N>
const char* name_of(const std::array<std::pair<const char*, Enum>, N>& names, Enum value) {
  for (const auto& [name, named] : names) {
    if (named == value) return name;
  }
  return "?";
}

template <typename Enum, size_t N>
std::optional<Enum> value_of(const std::array<std::pair<const char*, Enum>, N>& names, const std::string& text) {
  for (const auto& [name, value] : names) {
    if (text == name) return value;
  }
  return std::nullopt;
}

}  // namespace

std::string LatencyObjective::name() const {
  return std::string(name_of(kMetrics, metric)) + "_" + name_of(kStatistics, statistic);
}

std::vector<LatencyObjective> parse_latency_objectives(const std::string& text) {
  std::vector<LatencyObjective> objectives;
  std::stringstream list(text);
  for (std::string item; std::getline(list, item, ',');) {
    const size_t equals = item.find('=');
    const size_t underscore = item.find('_');
    if (equals == std::string::npos || underscore == std::string::npos || underscore > equals) {
      throw std::invalid_argument("expected METRIC_STAT=MS (e.g. ttft_p99=500), got '" + item + "'");
    }
    const std::string metric = item.substr(0, underscore);
    const std::string statistic = item.substr(underscore + 1, equals - underscore - 1);
    LatencyObjective objective;
    const std::optional<LatencyMetric> known_metric = value_of(kMetrics, metric);
    if (!known_metric) throw std::invalid_argument("unknown latency '" + metric + "' (ttft, tpot, itl, e2el)");
    const std::optional<LatencyStatistic> known_statistic = value_of(kStatistics, statistic);
    if (!known_statistic) throw std::invalid_argument("unknown statistic '" + statistic + "' (mean, p50, p90, p99)");
    objective.metric = *known_metric;
    objective.statistic = *known_statistic;
    try {
      objective.ms = std::stod(item.substr(equals + 1));
    } catch (const std::exception&) {
      throw std::invalid_argument("'" + item.substr(equals + 1) + "' is not a number of milliseconds");
    }
    if (!(objective.ms > 0.0)) throw std::invalid_argument(objective.name() + " must be positive");
    objectives.push_back(objective);
  }
  if (objectives.empty()) throw std::invalid_argument("give at least one objective, e.g. ttft_p99=500,tpot_p99=50");
  return objectives;
}

double statistic_ms(const metrics::ServingMetrics& metrics, const LatencyObjective& objective) {
  const metrics::LatencySummary& summary = objective.metric == LatencyMetric::ttft   ? metrics.ttft
                                           : objective.metric == LatencyMetric::tpot ? metrics.tpot
                                           : objective.metric == LatencyMetric::itl  ? metrics.itl
                                                                                     : metrics.e2el;
  const double seconds = objective.statistic == LatencyStatistic::mean  ? summary.mean
                         : objective.statistic == LatencyStatistic::p50 ? summary.median
                         : objective.statistic == LatencyStatistic::p90 ? summary.p90
                                                                        : summary.p99;
  return metrics::kMillisecondsPerSecond * seconds;
}

}  // namespace pagedllm::sim
