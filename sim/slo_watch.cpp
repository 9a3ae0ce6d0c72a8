#include "sim/slo_watch.h"

#include <algorithm>
#include <cstdio>

#include "core/common/numpy_stats.h"

namespace pagedllm::sim {

namespace {

// Rounding room: numpy's interpolation and pairwise sums may land an ulp or so below the values
// they combine, so a value decides only when it clears the limit by more than that.
constexpr double kRelativeMargin = 1e-9;

double percent_of(LatencyStatistic statistic) {
  return statistic == LatencyStatistic::p50 ? 50.0 : statistic == LatencyStatistic::p90 ? 90.0 : 99.0;
}

// The fewest values above the limit that put np.percentile above it for every population of 1 to
// `max_size` values: n minus the index it interpolates from, at its largest.
int64_t exceedances_needed(int64_t max_size, double percent) {
  int64_t needed = 0;
  for (int64_t n = 1; n <= max_size; ++n) {
    const auto floor_index = static_cast<int64_t>(stats::percentile_floor_index(static_cast<size_t>(n), percent));
    needed = std::max(needed, n - floor_index);
  }
  return needed;
}

}  // namespace

SloMissWatch::SloMissWatch(std::span<const LatencyObjective> objectives, std::span<const sched::Request> requests) {
  if (requests.empty()) return;
  const auto [first, last] = std::minmax_element(
      requests.begin(), requests.end(),
      [](const sched::Request& a, const sched::Request& b) { return a.arrival_time < b.arrival_time; });
  // measure_steady_state's arithmetic, so that both draw the same line.
  const double arrival_span = last->arrival_time - first->arrival_time;
  window_start_ = first->arrival_time + 0.5 * arrival_span;
  window_size_ = std::count_if(requests.begin(), requests.end(),
                               [&](const sched::Request& r) { return r.arrival_time >= window_start_; });
  for (const LatencyObjective& objective : objectives) {
    if (objective.metric == LatencyMetric::itl) continue;
    Tally tally{.objective = objective};
    if (objective.statistic != LatencyStatistic::mean) {
      tally.exceedances_needed = exceedances_needed(window_size_, percent_of(objective.statistic));
    }
    tallies_.push_back(tally);
  }
}

void SloMissWatch::observe(const engine::RequestOutput& output) {
  const sched::RequestTimes& times = output.times;
  if (decided() || tallies_.empty() || times.arrival < window_start_) return;
  if (output.finish_reason == sched::FinishReason::rejected || output.finish_reason == sched::FinishReason::abort) {
    return;  // a failed request enters no latency
  }
  int64_t num_output_tokens = 0;
  for (const engine::Completion& completion : output.completions) {
    num_output_tokens += static_cast<int64_t>(completion.tokens.size());
  }
  // core/metrics/serving_metrics.cpp's arithmetic on the request's record.
  const double ttft = times.first_token - times.arrival;
  const double e2el = times.finished - times.arrival;
  for (Tally& tally : tallies_) {
    double seconds = 0.0;
    switch (tally.objective.metric) {
      case LatencyMetric::ttft:
        seconds = ttft;
        break;
      case LatencyMetric::e2el:
        seconds = e2el;
        break;
      case LatencyMetric::tpot:
        if (num_output_tokens <= 1) continue;  // no TPOT
        seconds = (e2el - ttft) / static_cast<double>(num_output_tokens - 1);
        break;
      case LatencyMetric::itl:
        continue;
    }
    const double limit_ms = tally.objective.ms * (1.0 + kRelativeMargin);
    char text[300];
    if (tally.objective.statistic == LatencyStatistic::mean) {
      tally.sum_seconds += seconds;
      const double floor_ms = metrics::kMillisecondsPerSecond * tally.sum_seconds / static_cast<double>(window_size_);
      if (floor_ms <= limit_ms) continue;
      std::snprintf(text, sizeof(text),
                    "%s certainly above %g ms: the window's requests finished by t=%.1f s already average %.1f ms "
                    "over all %lld",
                    tally.objective.name().c_str(), tally.objective.ms, times.finished, floor_ms,
                    static_cast<long long>(window_size_));
    } else {
      if (metrics::kMillisecondsPerSecond * seconds <= limit_ms) continue;
      if (++tally.num_exceeding < tally.exceedances_needed) continue;
      std::snprintf(text, sizeof(text),
                    "%s certainly above %g ms: %lld of the window's %lld requests exceeded it by t=%.1f s",
                    tally.objective.name().c_str(), tally.objective.ms, static_cast<long long>(tally.num_exceeding),
                    static_cast<long long>(window_size_), times.finished);
    }
    verdict_ = text;
    return;
  }
}

void SloMissWatch::observe_refusal(const engine::RefusedRequest& refused) {
  if (decided()) return;
  verdict_ = "request " + std::to_string(refused.id) + " was refused (" + refused.message +
             "): a rate with refused requests is not sustained";
}

}  // namespace pagedllm::sim
