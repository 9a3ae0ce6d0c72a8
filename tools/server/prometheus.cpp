#include "tools/server/prometheus.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <optional>
#include <stdexcept>
#include <type_traits>

namespace pagedllm::server {

namespace {

bool valid_name(std::string_view name, bool allow_colon) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (allow_colon && c == ':');
    const bool digit = c >= '0' && c <= '9';
    if (!letter && !(digit && i > 0)) return false;
  }
  return true;
}

const char* type_name(MetricType type) {
  switch (type) {
    case MetricType::counter:
      return "counter";
    case MetricType::gauge:
      return "gauge";
    case MetricType::histogram:
      return "histogram";
  }
  return "untyped";
}

// `{a="x",b="y"}` from the constant labels, the variable label (when the family has one) and an
// extra label (histograms' le); "" when there are none at all.
std::string label_set(const FamilyConfig& config, const std::string& variable_value, std::string_view extra_name = {},
                      std::string_view extra_value = {}) {
  std::string out;
  auto add = [&out](std::string_view name, std::string_view value) {
    out += out.empty() ? "{" : ",";
    out += name;
    out += "=\"";
    out += escape_label_value(value);
    out += '"';
  };
  for (const auto& [name, value] : config.const_labels) add(name, value);
  if (!config.variable_label.empty()) add(config.variable_label, variable_value);
  if (!extra_name.empty()) add(extra_name, extra_value);
  if (!out.empty()) out += '}';
  return out;
}

void add_sample(std::string& out, std::string_view name, const std::string& labels, double value) {
  out += name;
  out += labels;
  out += ' ';
  out += format_value(value);
  out += '\n';
}

void add_header(std::string& out, const FamilyConfig& config, MetricType type) {
  out += "# HELP ";
  out += config.name;
  out += ' ';
  out += escape_help(config.help);
  out += "\n# TYPE ";
  out += config.name;
  out += ' ';
  out += type_name(type);
  out += '\n';
}

std::vector<double> checked_bounds(std::vector<double> bounds) {
  if (!bounds.empty() && bounds.back() == INFINITY) bounds.pop_back();
  for (size_t i = 0; i < bounds.size(); ++i) {
    if (!std::isfinite(bounds[i])) throw std::invalid_argument("histogram bucket bounds must be finite");
    if (i > 0 && !(bounds[i] > bounds[i - 1]))
      throw std::invalid_argument("histogram bucket bounds must be strictly increasing");
  }
  return bounds;
}

}  // namespace

// --- metrics ---

void Counter::inc(double amount) {
  if (!(amount > 0.0)) return;  // negative and NaN amounts would break monotonicity
  value_.fetch_add(amount, std::memory_order_relaxed);
}

Histogram::Histogram(std::vector<double> upper_bounds)
    : upper_bounds_(checked_bounds(std::move(upper_bounds))), bucket_counts_(upper_bounds_.size() + 1, 0) {}

void Histogram::observe(double value) {
  // The bucket search needs no lock: the bounds never change. NaN counts only in +Inf.
  const auto bucket = std::isnan(value)
                          ? upper_bounds_.size()
                          : static_cast<size_t>(std::lower_bound(upper_bounds_.begin(), upper_bounds_.end(), value) -
                                                upper_bounds_.begin());
  std::lock_guard lock(mutex_);
  ++bucket_counts_[bucket];
  sum_ += value;
  ++count_;
}

Histogram::Snapshot Histogram::snapshot() const {
  Snapshot snapshot;
  snapshot.upper_bounds = upper_bounds_;
  std::lock_guard lock(mutex_);
  snapshot.cumulative.reserve(bucket_counts_.size());
  uint64_t running = 0;
  for (uint64_t n : bucket_counts_) snapshot.cumulative.push_back(running += n);
  snapshot.sum = sum_;
  snapshot.count = count_;
  return snapshot;
}

// --- families ---

template <class Metric>
Metric& Family<Metric>::with(const std::string& label_value) {
  if (config_.variable_label.empty()) throw std::logic_error(config_.name + " has no variable label");
  return child(label_value);
}

template <class Metric>
Metric& Family<Metric>::get() {
  if (!config_.variable_label.empty())
    throw std::logic_error(config_.name + " needs a value for its label " + config_.variable_label);
  return child("");
}

template <class Metric>
Metric& Family<Metric>::child(const std::string& label_value) {
  std::lock_guard lock(mutex_);
  auto& slot = children_[label_value];
  if (!slot) {
    if constexpr (std::is_same_v<Metric, Histogram>) {
      slot = std::make_unique<Histogram>(upper_bounds_);
    } else {
      slot = std::make_unique<Metric>();
    }
  }
  return *slot;
}

template class Family<Counter>;
template class Family<Gauge>;
template class Family<Histogram>;

// --- registry ---

const FamilyConfig& MetricsRegistry::config_of(const Entry& entry) {
  return entry.counter ? entry.counter->config() : entry.gauge ? entry.gauge->config() : entry.histogram->config();
}

void MetricsRegistry::check_new_family(const FamilyConfig& config, MetricType type) const {
  if (!valid_name(config.name, true)) throw std::invalid_argument("invalid metric name '" + config.name + "'");
  std::vector<std::string_view> label_names;
  for (const auto& [name, value] : config.const_labels) label_names.push_back(name);
  if (!config.variable_label.empty()) label_names.push_back(config.variable_label);
  for (size_t i = 0; i < label_names.size(); ++i) {
    const std::string label(label_names[i]);
    // Names starting with __ are reserved for Prometheus itself.
    if (!valid_name(label, false) || label.starts_with("__"))
      throw std::invalid_argument(config.name + ": invalid label name '" + label + "'");
    if (type == MetricType::histogram && label == "le")
      throw std::invalid_argument(config.name + ": a histogram cannot have a label named le");
    if (std::find(label_names.begin(), label_names.begin() + static_cast<std::ptrdiff_t>(i), label_names[i]) !=
        label_names.begin() + static_cast<std::ptrdiff_t>(i))
      throw std::invalid_argument(config.name + ": label '" + label + "' given twice");
  }
  for (const Entry& entry : families_) {
    if (config_of(entry).name == config.name)
      throw std::invalid_argument("metric " + config.name + " registered twice");
  }
  for (const Alias& alias : aliases_) {
    if (alias.config.name == config.name) throw std::invalid_argument("metric " + config.name + " is an alias");
  }
}

CounterFamily& MetricsRegistry::add_counter(FamilyConfig config) {
  std::lock_guard lock(mutex_);
  check_new_family(config, MetricType::counter);
  Entry entry{MetricType::counter, std::make_unique<CounterFamily>(std::move(config), std::vector<double>{}), {}, {}};
  return *families_.emplace_back(std::move(entry)).counter;
}

GaugeFamily& MetricsRegistry::add_gauge(FamilyConfig config) {
  std::lock_guard lock(mutex_);
  check_new_family(config, MetricType::gauge);
  Entry entry{MetricType::gauge, {}, std::make_unique<GaugeFamily>(std::move(config), std::vector<double>{}), {}};
  return *families_.emplace_back(std::move(entry)).gauge;
}

HistogramFamily& MetricsRegistry::add_histogram(FamilyConfig config, std::vector<double> upper_bounds) {
  std::lock_guard lock(mutex_);
  check_new_family(config, MetricType::histogram);
  // Checked here, so that a bad bound fails at registration rather than at the first child.
  auto bounds = checked_bounds(std::move(upper_bounds));
  Entry entry{MetricType::histogram, {}, {}, std::make_unique<HistogramFamily>(std::move(config), std::move(bounds))};
  return *families_.emplace_back(std::move(entry)).histogram;
}

void MetricsRegistry::add_alias(AliasConfig config) {
  std::lock_guard lock(mutex_);
  if (!valid_name(config.name, true)) throw std::invalid_argument("invalid metric name '" + config.name + "'");
  std::optional<size_t> family;
  for (size_t i = 0; i < families_.size(); ++i) {
    if (config_of(families_[i]).name == config.name) throw std::invalid_argument("metric '" + config.name + "' exists");
    if (config_of(families_[i]).name == config.family) family = i;
  }
  for (const Alias& alias : aliases_) {
    if (alias.config.name == config.name) throw std::invalid_argument("metric '" + config.name + "' exists");
  }
  if (!family) throw std::invalid_argument("alias '" + config.name + "': no family '" + config.family + "'");
  const Entry& entry = families_[*family];
  FamilyConfig renamed = config_of(entry);
  if (config.sum_over_variable_label && (entry.type != MetricType::counter || renamed.variable_label.empty())) {
    throw std::invalid_argument("alias '" + config.name + "': only a counter with a variable label can be summed");
  }
  renamed.name = std::move(config.name);
  renamed.help = std::move(config.help);
  aliases_.push_back({std::move(renamed), *family, config.sum_over_variable_label});
}

void MetricsRegistry::render_family(std::string& out, const Entry& entry, const FamilyConfig& as, bool sum) const {
  add_header(out, as, entry.type);
  switch (entry.type) {
    case MetricType::counter: {
      if (sum) {
        double total = 0.0;
        entry.counter->for_each([&](const std::string&, const Counter& counter) { total += counter.value(); });
        FamilyConfig without_label = as;
        without_label.variable_label.clear();
        add_sample(out, as.name, label_set(without_label, ""), total);
        break;
      }
      entry.counter->for_each([&](const std::string& value, const Counter& counter) {
        add_sample(out, as.name, label_set(as, value), counter.value());
      });
      break;
    }
    case MetricType::gauge:
      entry.gauge->for_each([&](const std::string& value, const Gauge& gauge) {
        add_sample(out, as.name, label_set(as, value), gauge.value());
      });
      break;
    case MetricType::histogram: {
      const std::string bucket_name = as.name + "_bucket";
      entry.histogram->for_each([&](const std::string& value, const Histogram& histogram) {
        const Histogram::Snapshot snapshot = histogram.snapshot();
        for (size_t i = 0; i < snapshot.cumulative.size(); ++i) {
          const double bound = i < snapshot.upper_bounds.size() ? snapshot.upper_bounds[i] : INFINITY;
          add_sample(out, bucket_name, label_set(as, value, "le", format_value(bound)),
                     static_cast<double>(snapshot.cumulative[i]));
        }
        const std::string labels = label_set(as, value);
        add_sample(out, as.name + "_sum", labels, snapshot.sum);
        add_sample(out, as.name + "_count", labels, static_cast<double>(snapshot.count));
      });
      break;
    }
  }
}

std::string MetricsRegistry::render() const {
  std::string out;
  std::lock_guard lock(mutex_);
  for (const Entry& entry : families_) {
    render_family(out, entry, config_of(entry), false);
  }
  for (const Alias& alias : aliases_)
    render_family(out, families_[alias.family], alias.config, alias.sum_over_variable_label);
  return out;
}

// --- text format ---

std::string format_value(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  constexpr double kExactIntegers = 9007199254740992.0;  // 2^53: every integer below is exact
  if (value == std::floor(value) && std::fabs(value) < kExactIntegers)
    return std::to_string(static_cast<int64_t>(value));  // also turns -0 into 0
  char buffer[32];
  const auto result = std::to_chars(buffer, buffer + sizeof(buffer), value);  // shortest round trip
  return std::string(buffer, result.ptr);
}

std::string escape_help(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string escape_label_value(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace pagedllm::server
