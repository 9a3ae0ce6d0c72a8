// A small Prometheus registry rendered in the text exposition format 0.0.4, for GET /metrics.
//
// Families (counter, gauge, histogram) are registered once, each with a name, help text,
// constant labels (model_name="tiny", as vLLM labels its metrics) and at most one variable label
// (mode="swap"). Registration hands back references that stay valid as long as the registry and
// are cheap to update from any thread (an atomic, or a mutex held for a histogram's few fields);
// render() may run on another thread at the same time. Families render in registration order, a
// family's children in the order of their variable label's value.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace pagedllm::server {

inline constexpr std::string_view kPrometheusContentType = "text/plain; version=0.0.4; charset=utf-8";

using Labels = std::vector<std::pair<std::string, std::string>>;  // name -> value, in this order

struct FamilyConfig {
  std::string name;  // [a-zA-Z_:][a-zA-Z0-9_:]*, used as is (give counters their _total)
  std::string help;
  Labels const_labels;         // on every sample of the family
  std::string variable_label;  // "" = none; else the label that with(value) sets
};

// Monotonic; inc() with a negative amount is ignored (a counter never goes down).
class Counter {
 public:
  void inc(double amount = 1.0);
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

class Gauge {
 public:
  void set(double value) { value_.store(value, std::memory_order_relaxed); }
  void inc(double amount = 1.0) { value_.fetch_add(amount, std::memory_order_relaxed); }
  void dec(double amount = 1.0) { value_.fetch_sub(amount, std::memory_order_relaxed); }
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

// Fixed upper bounds; an observation lands in the first bucket whose bound is >= the value.
class Histogram {
 public:
  struct Snapshot {
    std::vector<double> upper_bounds;  // finite, increasing; +Inf is implied
    std::vector<uint64_t> cumulative;  // one per bound, then one for +Inf (== count)
    double sum = 0.0;
    uint64_t count = 0;
  };

  explicit Histogram(std::vector<double> upper_bounds);
  void observe(double value);
  Snapshot snapshot() const;  // consistent: taken under the lock

 private:
  const std::vector<double> upper_bounds_;
  mutable std::mutex mutex_;
  std::vector<uint64_t> bucket_counts_;  // per bucket (not cumulative), +Inf last
  double sum_ = 0.0;
  uint64_t count_ = 0;
};

enum class MetricType { counter, gauge, histogram };

// The children of one family, keyed by the variable label's value ("" without one).
template <class Metric>
class Family {
 public:
  Family(FamilyConfig config, std::vector<double> upper_bounds)
      : config_(std::move(config)), upper_bounds_(std::move(upper_bounds)) {}

  const FamilyConfig& config() const { return config_; }

  // The child for this value of the variable label, created on first use. Throws
  // std::logic_error when the family has no variable label.
  Metric& with(const std::string& label_value);
  // The single child of a family without a variable label (throws std::logic_error otherwise).
  Metric& get();

  // Visits (label value, metric) in label-value order, under the family's lock.
  template <class Visit>
  void for_each(Visit&& visit) const {
    std::lock_guard lock(mutex_);
    for (const auto& [value, metric] : children_) visit(value, *metric);
  }

 private:
  Metric& child(const std::string& label_value);

  const FamilyConfig config_;
  const std::vector<double> upper_bounds_;  // histograms only
  mutable std::mutex mutex_;
  std::map<std::string, std::unique_ptr<Metric>> children_;
};

using CounterFamily = Family<Counter>;
using GaugeFamily = Family<Gauge>;
using HistogramFamily = Family<Histogram>;

// Another name under which a registered family renders (vLLM's `vllm:` names beside ours): the
// same type, constant labels and samples, with its own help text. With sum_over_variable_label, a
// counter family's children render as one sample, their sum (vLLM's num_preemptions has no mode
// label).
struct AliasConfig {
  std::string name;
  std::string family;  // the registered family's name
  std::string help;
  bool sum_over_variable_label = false;
};

class MetricsRegistry {
 public:
  // Throw std::invalid_argument for an invalid or already registered name, an invalid label name
  // (or "le" on a histogram, a label given twice), or histogram bounds that are not finite and
  // strictly increasing (a trailing +Inf is accepted and dropped: +Inf is always rendered).
  CounterFamily& add_counter(FamilyConfig config);
  GaugeFamily& add_gauge(FamilyConfig config);
  HistogramFamily& add_histogram(FamilyConfig config, std::vector<double> upper_bounds);

  // Shorthands for a family without a variable label: its single child.
  Counter& counter(FamilyConfig config) { return add_counter(std::move(config)).get(); }
  Gauge& gauge(FamilyConfig config) { return add_gauge(std::move(config)).get(); }
  Histogram& histogram(FamilyConfig config, std::vector<double> upper_bounds) {
    return add_histogram(std::move(config), std::move(upper_bounds)).get();
  }

  // Throws std::invalid_argument for an invalid or taken name, an unknown family, or a sum over a
  // family that is not a counter with a variable label. Aliases render after every family.
  void add_alias(AliasConfig config);

  std::string render() const;

 private:
  struct Entry {
    MetricType type;
    std::unique_ptr<CounterFamily> counter;
    std::unique_ptr<GaugeFamily> gauge;
    std::unique_ptr<HistogramFamily> histogram;
  };

  struct Alias {
    FamilyConfig config;  // the family's, renamed
    size_t family = 0;    // index into families_
    bool sum_over_variable_label = false;
  };

  static const FamilyConfig& config_of(const Entry& entry);
  void check_new_family(const FamilyConfig& config, MetricType type) const;
  void render_family(std::string& out, const Entry& entry, const FamilyConfig& as, bool sum) const;

  mutable std::mutex mutex_;
  std::vector<Entry> families_;
  std::vector<Alias> aliases_;
};

// --- the text format's pieces, exposed for tests and other exporters ---

// A sample value Prometheus parses: "+Inf", "-Inf", "NaN", integers (|v| < 2^53) without
// exponent or fraction ("3", "-0" as "0"), other values as the shortest round-trip form.
std::string format_value(double value);
std::string escape_help(std::string_view text);         // \ -> \\, newline -> \n
std::string escape_label_value(std::string_view text);  // \ -> \\, " -> \", newline -> \n

}  // namespace pagedllm::server
