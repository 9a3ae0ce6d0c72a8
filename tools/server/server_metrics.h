// The server's Prometheus metrics: what vLLM exports, under a `pagedllm:` prefix, fed by the
// engine loop (frontend::ServingObserver) and rendered for GET /metrics.
#pragma once

#include <mutex>
#include <string>

#include "core/frontend/serving_engine.h"
#include "tools/server/prometheus.h"

namespace pagedllm::server {

class ServerMetrics final : public frontend::ServingObserver {
 public:
  explicit ServerMetrics(const std::string& model_name);

  void on_step(const Snapshot& snapshot) override;
  void on_first_token(double ttft_seconds, double queue_seconds) override;
  void on_token_gap(double seconds) override;
  void on_finished(double e2e_seconds, const std::string& finish_reason) override;

  std::string render() const { return registry_.render(); }
  double kv_usage() const { return kv_usage_.value(); }

 private:
  MetricsRegistry registry_;
  Gauge& num_running_;
  Gauge& num_waiting_;
  Gauge& num_swapped_;
  Gauge& kv_usage_;
  Counter& prefix_queries_;
  Counter& prefix_hits_;
  Counter& prompt_tokens_;
  Counter& prompt_tokens_computed_;
  Counter& generation_tokens_;
  CounterFamily& preemptions_;
  CounterFamily& finished_;
  // Speculative decoding (vLLM's spec_decode counters); zero while it is off.
  Counter& spec_drafts_;
  Counter& spec_draft_tokens_;
  Counter& spec_accepted_tokens_;
  CounterFamily& spec_accepted_per_position_;
  Histogram& time_to_first_token_;
  Histogram& inter_token_latency_;
  Histogram& e2e_latency_;
  Histogram& queue_time_;
  Snapshot last_;  // the engine's totals at the previous step: counters grow by the difference
};

}  // namespace pagedllm::server
