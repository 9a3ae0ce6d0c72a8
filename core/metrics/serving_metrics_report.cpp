#include "core/metrics/serving_metrics_report.h"

#include <cstdio>
#include <ostream>
#include <string>

namespace pagedllm::metrics {
namespace {

constexpr size_t kBannerWidth = 50;
constexpr size_t kLabelWidth = 40;
constexpr size_t kValueWidth = 10;

// Python's "{s:{c}^{n}}": centred, the odd fill character on the right.
std::string banner(std::string_view text, char fill) {
  if (text.size() >= kBannerWidth) return std::string(text);
  const size_t padding = kBannerWidth - text.size();
  return std::string(padding / 2, fill) + std::string(text) + std::string(padding - padding / 2, fill);
}

std::string pad_right(std::string text, size_t width) {
  if (text.size() < width) text.append(width - text.size(), ' ');
  return text;
}

std::string fixed2(double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.2f", value);
  return buffer;
}

// "{:<40} {:<10}": trailing spaces included, as vLLM prints them.
void row(std::ostream& out, const std::string& label, const std::string& value) {
  out << pad_right(label, kLabelWidth) << ' ' << pad_right(value, kValueWidth) << '\n';
}

void latency_section(std::ostream& out, const LatencySummary& summary, const std::string& name,
                     std::string_view header) {
  out << banner(header, '-') << '\n';
  row(out, "Mean " + name + " (ms):", fixed2(summary.mean * kMillisecondsPerSecond));
  row(out, "Median " + name + " (ms):", fixed2(summary.median * kMillisecondsPerSecond));
  for (const PercentileValue& entry : summary.percentiles) {
    if (entry.percent == 50.0) continue;
    std::string label = "P";
    label.append(percentile_label(entry.percent)).append(" ").append(name).append(" (ms):");
    row(out, label, fixed2(entry.value * kMillisecondsPerSecond));
  }
  if (!summary.exact) {
    out << "(" << summary.count << " values: percentiles from a histogram, within "
        << fixed2(100.0 * kHistogramRelativeError) << "%)\n";
  }
}

}  // namespace

void print_serving_metrics(const ServingMetrics& metrics, std::ostream& out, std::string_view title) {
  std::string spaced_title = " ";
  spaced_title.append(title).append(" ");
  out << banner(spaced_title, '=') << '\n';
  row(out, "Successful requests:", std::to_string(metrics.num_completed));
  row(out, "Failed requests:", std::to_string(metrics.num_failed));
  for (const auto& [message, count] : metrics.errors) {
    std::string label = "  ";
    label += message.empty() ? "(no message)" : message;
    row(out, label, std::to_string(count));
  }
  row(out, "Benchmark duration (s):", fixed2(metrics.duration));
  row(out, "Total input tokens:", std::to_string(metrics.total_input_tokens));
  row(out, "Total generated tokens:", std::to_string(metrics.total_output_tokens));
  row(out, "Request throughput (req/s):", fixed2(metrics.request_throughput));
  if (metrics.request_goodput) row(out, "Request goodput (req/s):", fixed2(*metrics.request_goodput));
  row(out, "Output token throughput (tok/s):", fixed2(metrics.output_throughput));
  row(out, "Total Token throughput (tok/s):", fixed2(metrics.total_token_throughput));
  latency_section(out, metrics.ttft, "TTFT", "Time to First Token");
  latency_section(out, metrics.tpot, "TPOT", "Time per Output Token (excl. 1st token)");
  latency_section(out, metrics.itl, "ITL", "Inter-token Latency");
  latency_section(out, metrics.e2el, "E2EL", "End-to-end Latency");
  out << std::string(kBannerWidth, '=') << '\n';
}

}  // namespace pagedllm::metrics
