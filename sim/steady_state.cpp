#include "sim/steady_state.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <stdexcept>

#include "core/metrics/request_records.h"
#include "sim/slo_watch.h"

namespace pagedllm::sim {

namespace {

// A rate above capacity is plain long before the span is: below this many service times a
// verdict of "not sustained" could still be the queue filling from empty.
constexpr double kMinSpanForRefusal = 5.0;

// The least-squares slope of y against x; 0 for fewer than two distinct x.
double slope(const std::vector<double>& x, const std::vector<double>& y) {
  const auto n = static_cast<double>(x.size());
  if (x.size() < 2) return 0.0;
  double mean_x = 0.0;
  double mean_y = 0.0;
  for (size_t i = 0; i < x.size(); ++i) {
    mean_x += x[i];
    mean_y += y[i];
  }
  mean_x /= n;
  mean_y /= n;
  double covariance = 0.0;
  double variance = 0.0;
  for (size_t i = 0; i < x.size(); ++i) {
    covariance += (x[i] - mean_x) * (y[i] - mean_y);
    variance += (x[i] - mean_x) * (x[i] - mean_x);
  }
  return variance > 0.0 ? covariance / variance : 0.0;
}

// How many sorted values are at most t.
int64_t count_at_most(const std::vector<double>& sorted, double t) {
  return std::upper_bound(sorted.begin(), sorted.end(), t) - sorted.begin();
}

}  // namespace

std::vector<sched::Request> tile_requests(std::span<const sched::Request> trace, double rate_scale,
                                          int64_t num_copies) {
  if (trace.empty() || !(rate_scale > 0.0) || num_copies < 1) {
    throw std::invalid_argument("tile_requests: needs requests, a positive rate scale and at least one copy");
  }
  const double first = trace.front().arrival_time;
  const double span = trace.back().arrival_time - first;
  const double gap = trace.size() > 1 ? span / static_cast<double>(trace.size() - 1) : 1.0;
  std::vector<sched::Request> tiled;
  tiled.reserve(trace.size() * static_cast<size_t>(num_copies));
  for (int64_t copy = 0; copy < num_copies; ++copy) {
    const double offset = static_cast<double>(copy) * (span + gap);
    for (const sched::Request& request : trace) {
      sched::Request r = request;
      r.id = static_cast<sched::RequestId>(tiled.size());
      r.arrival_time = (request.arrival_time - first + offset) / rate_scale;
      r.cache_salt = request.cache_salt + static_cast<uint64_t>(copy);
      tiled.push_back(std::move(r));
    }
  }
  return tiled;
}

SteadyStateReport measure_steady_state(const engine::ReplayResult& result, const SteadyStateConfig& config) {
  SteadyStateReport report;
  report.num_refused = static_cast<int64_t>(result.refused.size());
  report.num_requests = static_cast<int64_t>(result.outputs.size()) + report.num_refused;
  if (result.outputs.empty()) return report;

  std::vector<const engine::RequestOutput*> served;
  for (const engine::RequestOutput& output : result.outputs) served.push_back(&output);
  std::sort(served.begin(), served.end(),
            [](const auto* a, const auto* b) { return a->times.arrival < b->times.arrival; });
  std::vector<double> arrivals;
  std::vector<double> starts;  // first scheduled
  for (const engine::RequestOutput* output : served) {
    arrivals.push_back(output->times.arrival);
    starts.push_back(output->times.first_scheduled);
  }
  std::sort(starts.begin(), starts.end());
  const double first = arrivals.front();
  report.arrival_span = arrivals.back() - first;
  const double window_start = first + 0.5 * report.arrival_span;

  std::vector<double> x;
  std::vector<double> delays;
  std::vector<double> waiting;
  double service = 0.0;
  for (const engine::RequestOutput* output : served) {
    const sched::RequestTimes& times = output->times;
    if (times.arrival < window_start) continue;
    x.push_back(times.arrival);
    delays.push_back(times.first_scheduled - times.arrival);
    // Requests that had arrived by then and not yet started, this one excluded (it is among the
    // arrivals, and among the starts only when it started the moment it arrived).
    const int64_t self_waiting = times.first_scheduled > times.arrival ? 1 : 0;
    waiting.push_back(static_cast<double>(count_at_most(arrivals, times.arrival) -
                                          count_at_most(starts, times.arrival) - self_waiting));
    service += times.finished - times.first_scheduled;
    report.window.push_back(metrics::to_request_record(*output));
  }
  if (x.empty()) return report;
  report.mean_service_time = service / static_cast<double>(x.size());
  const double window_span = x.back() - x.front();
  const double arrival_rate = window_span > 0.0 ? static_cast<double>(x.size() - 1) / window_span : 0.0;
  report.delay_growth = slope(x, delays);
  report.waiting_growth = arrival_rate > 0.0 ? slope(x, waiting) / arrival_rate : 0.0;
  report.sustained =
      report.num_refused == 0 && report.delay_growth <= config.max_growth && report.waiting_growth <= config.max_growth;
  const double needed = config.min_span_in_service_times * report.mean_service_time;
  report.span_sufficient = report.arrival_span >= needed;
  if (!report.span_sufficient) {
    char text[200];
    std::snprintf(text, sizeof(text), "arrivals span %.1f s, less than %g mean service times (%.1f s)",
                  report.arrival_span, config.min_span_in_service_times, needed);
    report.shortfall = text;
  }
  return report;
}

SteadyStateReport run_to_steady_state(std::span<const sched::Request> trace, double rate_scale, const SimulateFn& run,
                                      const SteadyStateConfig& config) {
  if (trace.empty()) throw std::invalid_argument("run_to_steady_state: the trace has no requests");
  const auto trace_size = static_cast<int64_t>(trace.size());
  const int64_t max_copies = std::max<int64_t>(1, config.max_requests / std::max<int64_t>(trace_size, 1));
  int64_t copies = std::clamp<int64_t>((config.min_requests + trace_size - 1) / trace_size, 1, max_copies);
  for (;;) {
    std::vector<sched::Request> tiled = tile_requests(trace, rate_scale, copies);
    const auto num_tiled = static_cast<int64_t>(tiled.size());
    std::optional<SloMissWatch> watch;
    if (!config.objectives.empty()) watch.emplace(config.objectives, tiled);
    engine::ReplayResult ended;  // what the hooks were handed
    const SimulationHooks hooks{.on_finished =
                                    [&](engine::RequestOutput&& output) {
                                      if (watch) watch->observe(output);
                                      ended.outputs.push_back(std::move(output));
                                    },
                                .on_refused =
                                    [&](engine::RefusedRequest&& refused) {
                                      if (watch) watch->observe_refusal(refused);
                                      ended.refused.push_back(std::move(refused));
                                    },
                                .should_stop = [&] { return watch && watch->decided(); }};
    const engine::ReplayResult result = run(std::move(tiled), hooks);
    if (result.stopped && !(watch && watch->decided())) {
      throw std::logic_error("run_to_steady_state: the simulation stopped before its end unasked");
    }
    // In request id order, as a run that keeps its outputs returns them.
    std::sort(ended.outputs.begin(), ended.outputs.end(),
              [](const engine::RequestOutput& a, const engine::RequestOutput& b) { return a.id < b.id; });
    if (result.stopped) {
      SteadyStateReport report;
      report.num_requests = num_tiled;
      report.num_copies = copies;
      report.num_refused = static_cast<int64_t>(ended.refused.size());
      report.missed = watch->verdict();
      report.stopped_early = true;
      return report;
    }
    SteadyStateReport report = measure_steady_state(ended, config);
    report.num_copies = copies;
    if (watch && watch->decided()) {  // decided by the run's last requests: the verdict stands too
      report.missed = watch->verdict();
      report.shortfall.clear();
      return report;
    }
    const bool plainly_unsustained =
        !report.sustained && report.arrival_span >= kMinSpanForRefusal * report.mean_service_time;
    if (report.span_sufficient || plainly_unsustained || copies >= max_copies || report.window.empty()) {
      if (report.span_sufficient || plainly_unsustained) {
        report.shortfall.clear();  // the verdict stands
      } else if (copies >= max_copies) {
        report.shortfall += " (" + std::to_string(report.num_requests) + " requests simulated, the most allowed)";
      }
      return report;
    }
    // Spans scale with the copies; ask for a tenth more than the estimate, at least double.
    const double needed = config.min_span_in_service_times * report.mean_service_time;
    const double factor = report.arrival_span > 0.0 ? 1.1 * needed / report.arrival_span : 2.0;
    copies = std::min(max_copies,
                      std::max(2 * copies, static_cast<int64_t>(std::ceil(static_cast<double>(copies) * factor))));
  }
}

}  // namespace pagedllm::sim
