#include "tools/server/server_metrics.h"

#include <vector>

namespace pagedllm::server {
namespace {

// vLLM's buckets for these histograms (seconds).
const std::vector<double> kTtftBuckets = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,  0.25,  0.5,   0.75,
                                          1.0,   2.5,   5.0,  7.5,  10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0};
const std::vector<double> kItlBuckets = {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2,  0.3,  0.4, 0.5,
                                         0.75, 1.0,   2.5,  5.0,   7.5, 10.0, 20.0, 40.0, 80.0};
const std::vector<double> kRequestBuckets = {0.3,  0.5,  0.8,  1.0,  1.5,   2.0,   2.5,   5.0,   10.0,   15.0,  20.0,
                                             30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};

}  // namespace

ServerMetrics::ServerMetrics(const std::string& model_name)
    : num_running_(registry_.gauge(
          {"pagedllm:num_requests_running", "Requests in the running batch.", {{"model_name", model_name}}, ""})),
      num_waiting_(registry_.gauge(
          {"pagedllm:num_requests_waiting", "Requests waiting to be scheduled.", {{"model_name", model_name}}, ""})),
      num_swapped_(registry_.gauge(
          {"pagedllm:num_requests_swapped", "Requests swapped out to host memory.", {{"model_name", model_name}}, ""})),
      kv_usage_(registry_.gauge(
          {"pagedllm:kv_cache_usage_perc", "KV cache usage: 1 means 100 percent.", {{"model_name", model_name}}, ""})),
      prefix_queries_(registry_.counter({"pagedllm:prefix_cache_queries_total",
                                         "Prompt tokens looked up in the prefix cache.",
                                         {{"model_name", model_name}},
                                         ""})),
      prefix_hits_(registry_.counter({"pagedllm:prefix_cache_hits_total",
                                      "Prompt tokens served from the prefix cache.",
                                      {{"model_name", model_name}},
                                      ""})),
      prompt_tokens_(registry_.counter({"pagedllm:prompt_tokens_total",
                                        "Prompt tokens of requests that produced a token (vLLM's meaning: whole "
                                        "prompts, prefix-cache hits included).",
                                        {{"model_name", model_name}},
                                        ""})),
      prompt_tokens_computed_(registry_.counter({"pagedllm:prompt_tokens_computed_total",
                                                 "Prompt tokens computed: recomputation after preemption included, "
                                                 "prefix-cache hits not.",
                                                 {{"model_name", model_name}},
                                                 ""})),
      generation_tokens_(registry_.counter(
          {"pagedllm:generation_tokens_total", "Tokens generated.", {{"model_name", model_name}}, ""})),
      preemptions_(registry_.add_counter(
          {"pagedllm:num_preemptions_total", "Preemptions, by mode.", {{"model_name", model_name}}, "mode"})),
      finished_(registry_.add_counter({"pagedllm:request_success_total",
                                       "Requests finished, by finish reason.",
                                       {{"model_name", model_name}},
                                       "finished_reason"})),
      spec_drafts_(registry_.counter({"pagedllm:spec_decode_num_drafts_total",
                                      "Speculative decoding: verify passes of a sequence with proposals.",
                                      {{"model_name", model_name}},
                                      ""})),
      spec_draft_tokens_(registry_.counter({"pagedllm:spec_decode_num_draft_tokens_total",
                                            "Speculative decoding: proposed tokens verified.",
                                            {{"model_name", model_name}},
                                            ""})),
      spec_accepted_tokens_(registry_.counter({"pagedllm:spec_decode_num_accepted_tokens_total",
                                               "Speculative decoding: proposed tokens accepted.",
                                               {{"model_name", model_name}},
                                               ""})),
      spec_accepted_per_position_(registry_.add_counter({"pagedllm:spec_decode_num_accepted_tokens_per_pos_total",
                                                         "Speculative decoding: accepted proposals, by position in "
                                                         "their draft (0 = first).",
                                                         {{"model_name", model_name}},
                                                         "position"})),
      time_to_first_token_(registry_.histogram({"pagedllm:time_to_first_token_seconds",
                                                "Time from arrival to the first output token.",
                                                {{"model_name", model_name}},
                                                ""},
                                               kTtftBuckets)),
      inter_token_latency_(registry_.histogram({"pagedllm:inter_token_latency_seconds",
                                                "Time between two outputs of a request.",
                                                {{"model_name", model_name}},
                                                ""},
                                               kItlBuckets)),
      e2e_latency_(registry_.histogram({"pagedllm:e2e_request_latency_seconds",
                                        "Time from arrival to the last output token.",
                                        {{"model_name", model_name}},
                                        ""},
                                       kRequestBuckets)),
      queue_time_(registry_.histogram({"pagedllm:request_queue_time_seconds",
                                       "Time from arrival to the first scheduling.",
                                       {{"model_name", model_name}},
                                       ""},
                                      kRequestBuckets)) {
  // vLLM's names for the same series, so that dashboards, autoscalers and routers built for vLLM
  // read them unchanged (the README lists which names match and how).
  struct VllmName {
    const char* name;
    const char* ours;
    bool sum_over_mode = false;
  };
  const VllmName kVllmNames[] = {
      {"vllm:num_requests_running", "pagedllm:num_requests_running"},
      {"vllm:num_requests_waiting", "pagedllm:num_requests_waiting"},
      {"vllm:num_requests_swapped", "pagedllm:num_requests_swapped"},  // vLLM v0's
      {"vllm:kv_cache_usage_perc", "pagedllm:kv_cache_usage_perc"},
      {"vllm:gpu_cache_usage_perc", "pagedllm:kv_cache_usage_perc"},  // vLLM's older name
      {"vllm:prefix_cache_queries_total", "pagedllm:prefix_cache_queries_total"},
      {"vllm:prefix_cache_hits_total", "pagedllm:prefix_cache_hits_total"},
      {"vllm:num_preemptions_total", "pagedllm:num_preemptions_total", true},
      {"vllm:prompt_tokens_total", "pagedllm:prompt_tokens_total"},
      {"vllm:generation_tokens_total", "pagedllm:generation_tokens_total"},
      {"vllm:request_success_total", "pagedllm:request_success_total"},
      {"vllm:time_to_first_token_seconds", "pagedllm:time_to_first_token_seconds"},
      // vLLM observes each output interval into both of these.
      {"vllm:time_per_output_token_seconds", "pagedllm:inter_token_latency_seconds"},
      {"vllm:inter_token_latency_seconds", "pagedllm:inter_token_latency_seconds"},
      {"vllm:e2e_request_latency_seconds", "pagedllm:e2e_request_latency_seconds"},
      {"vllm:request_queue_time_seconds", "pagedllm:request_queue_time_seconds"},
      {"vllm:spec_decode_num_drafts_total", "pagedllm:spec_decode_num_drafts_total"},
      {"vllm:spec_decode_num_draft_tokens_total", "pagedllm:spec_decode_num_draft_tokens_total"},
      {"vllm:spec_decode_num_accepted_tokens_total", "pagedllm:spec_decode_num_accepted_tokens_total"},
      {"vllm:spec_decode_num_accepted_tokens_per_pos_total", "pagedllm:spec_decode_num_accepted_tokens_per_pos_total"},
  };
  for (const VllmName& alias : kVllmNames) {
    registry_.add_alias(
        {.name = alias.name,
         .family = alias.ours,
         .help = std::string("vLLM's name for ") + alias.ours + (alias.sum_over_mode ? " (summed over mode)." : "."),
         .sum_over_variable_label = alias.sum_over_mode});
  }
  // Every mode and reason from the start, so that rate() sees them from zero.
  preemptions_.with("swap");
  preemptions_.with("recompute");
  for (const char* reason : {"stop", "length", "abort"}) finished_.with(reason);
}

void ServerMetrics::on_step(const Snapshot& snapshot) {
  num_running_.set(snapshot.num_running);
  num_waiting_.set(snapshot.num_waiting);
  num_swapped_.set(snapshot.num_swapped);
  kv_usage_.set(snapshot.kv_usage);
  prefix_queries_.inc(static_cast<double>(snapshot.prefix_query_tokens - last_.prefix_query_tokens));
  prefix_hits_.inc(static_cast<double>(snapshot.prefix_hit_tokens - last_.prefix_hit_tokens));
  prompt_tokens_.inc(static_cast<double>(snapshot.counters.prompt_tokens - last_.counters.prompt_tokens));
  prompt_tokens_computed_.inc(
      static_cast<double>(snapshot.counters.prompt_tokens_computed - last_.counters.prompt_tokens_computed));
  generation_tokens_.inc(static_cast<double>(snapshot.counters.generation_tokens - last_.counters.generation_tokens));
  preemptions_.with("swap").inc(
      static_cast<double>(snapshot.counters.preemptions_swap - last_.counters.preemptions_swap));
  preemptions_.with("recompute")
      .inc(static_cast<double>(snapshot.counters.preemptions_recompute - last_.counters.preemptions_recompute));
  const engine::EngineCounters& now = snapshot.counters;
  spec_drafts_.inc(static_cast<double>(now.spec_drafts - last_.counters.spec_drafts));
  spec_draft_tokens_.inc(static_cast<double>(now.spec_draft_tokens - last_.counters.spec_draft_tokens));
  spec_accepted_tokens_.inc(static_cast<double>(now.spec_accepted_tokens - last_.counters.spec_accepted_tokens));
  const std::vector<int64_t>& before = last_.counters.spec_accepted_per_position;
  for (size_t j = 0; j < now.spec_accepted_per_position.size(); ++j) {
    const int64_t previous = j < before.size() ? before[j] : 0;
    spec_accepted_per_position_.with(std::to_string(j))
        .inc(static_cast<double>(now.spec_accepted_per_position[j] - previous));
  }
  last_ = snapshot;
}

void ServerMetrics::on_first_token(double ttft_seconds, double queue_seconds) {
  time_to_first_token_.observe(ttft_seconds);
  queue_time_.observe(queue_seconds);
}

void ServerMetrics::on_token_gap(double seconds) { inter_token_latency_.observe(seconds); }

void ServerMetrics::on_finished(double e2e_seconds, const std::string& finish_reason) {
  e2e_latency_.observe(e2e_seconds);
  finished_.with(finish_reason.empty() ? "abort" : finish_reason).inc();
}

}  // namespace pagedllm::server
