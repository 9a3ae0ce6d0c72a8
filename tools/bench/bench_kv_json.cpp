// bench_kv's JSON output: machine, configuration, per-operation figures and decode steps.
#include "tools/bench/bench_kv_json.h"

#include <cstdint>
#include <string>

#include "tools/bench/bench_kv_config.h"
#include "tools/bench/bench_kv_report.h"
#include "tools/bench/bench_output.h"

namespace pagedllm::kv_bench {
namespace {

Json config_json(const BenchConfig& config) {
  return {{"device_blocks", config.device_blocks},
          {"host_blocks", config.host_blocks},
          {"block_size", kBlockSize},
          {"sequences", config.sequences},
          {"steps", config.steps},
          {"warmup_steps", config.warmup_steps},
          {"repeats", config.repeats},
          {"prompt_tokens", config.prompt_tokens},
          {"shared_prefix_tokens", config.shared_prefix_tokens},
          {"finish_fraction", config.finish_fraction},
          {"shared_fraction", config.shared_fraction},
          {"seed", config.seed},
          {"quick", config.quick}};
}

Json ops_json(const MicroResults& micro) {
  Json ops = Json::array();
  for (const OpSpec& op : kOps) {
    const OpFigures f = op_figures(op, micro);
    ops.push_back({{"key", op.key},
                   {"label", op.label},
                   {"pagedllm_ns", f.paged_ns},
                   {"target_ns", f.target_ns},
                   {"pagedllm_over_target", ratio(f.paged_ns, f.target_ns)},
                   {"baseline_ns", f.baseline_ns},
                   {"pagedllm_over_baseline", ratio(f.paged_ns, f.baseline_ns)},
                   {"batches", f.samples}});
  }
  return ops;
}

Json variant_json(const DecodeVariant& variant, const StepSummary& s, const StepSummary& baseline,
                  int32_t total_steps) {
  const DecodeRun& run = variant.first_run;
  const DecodeCounters& c = run.counters;
  return {{"name", variant.name},
          {"mean_us", s.mean_us},
          {"p50_us", s.p50_us},
          {"p99_us", s.p99_us},
          {"max_us", s.max_us},
          {"ns_per_sequence_step", s.ns_per_sequence_step},
          {"mean_over_target", s.mean_us / kStepTargetUs},
          {"p99_over_target", s.p99_us / kStepTargetUs},
          {"mean_over_baseline", ratio(s.mean_us, baseline.mean_us)},
          {"p99_over_baseline", ratio(s.p99_us, baseline.p99_us)},
          {"steps_timed", variant.step_ns.size()},
          {"appends", c.appends},
          {"admissions", c.admissions},
          {"prefix_hit_tokens", c.cached_tokens},
          {"preemptions", c.preemptions},
          {"deferred", c.deferred},
          {"evictions", run.evictions},
          {"log_bytes_per_step", static_cast<double>(run.log_bytes) / total_steps},
          {"phases_mean_us",
           {{"free", variant.phase_mean_us(kFreePhase)},
            {"decode", variant.phase_mean_us(kDecodePhase)},
            {"admit", variant.phase_mean_us(kAdmitPhase)}}},
          {"decode_phase_over_target", variant.phase_mean_us(kDecodePhase) / kStepTargetUs}};
}

Json decode_json(const BenchConfig& config, const DecodeResults& decode) {
  const StepSummary paged = decode.paged.summary(config.sequences);
  const StepSummary baseline = decode.baseline.summary(config.sequences);
  const StepSummary paged_log = decode.paged_log.summary(config.sequences);
  const int32_t total_steps = config.steps + config.warmup_steps;
  return {{"variants",
           {variant_json(decode.paged, paged, baseline, total_steps),
            variant_json(decode.baseline, baseline, baseline, total_steps),
            variant_json(decode.paged_log, paged_log, baseline, total_steps)}},
          {"pagedllm_over_baseline_mean", ratio(paged.mean_us, baseline.mean_us)},
          {"pagedllm_over_baseline_p50", ratio(paged.p50_us, baseline.p50_us)},
          {"pagedllm_over_baseline_p99", ratio(paged.p99_us, baseline.p99_us)},
          {"log_on_over_log_off_mean", ratio(paged_log.mean_us, paged.mean_us)},
          {"log_on_over_log_off_p50", ratio(paged_log.p50_us, paged.p50_us)},
          {"log_on_over_log_off_p99", ratio(paged_log.p99_us, paged.p99_us)}};
}

}  // namespace

void write_json(const BenchConfig& config, const MicroResults& micro, const DecodeResults& decode) {
  write_json_file(config.json_path, Json{{"benchmark", "bench_kv"},
                                         {"machine", build_json(build_info())},
                                         {"config", config_json(config)},
                                         {"targets", {{"append_ns", kAppendTargetNs}, {"step_us", kStepTargetUs}}},
                                         {"baseline", kBaselineName},
                                         {"ops", ops_json(micro)},
                                         {"decode_step", decode_json(config, decode)}});
}

}  // namespace pagedllm::kv_bench
