// bench_kv's JSON output, written by hand: machine, configuration, per-operation figures and decode steps.
#include "tools/bench/bench_kv_json.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <ostream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>

#include "tools/bench/bench_kv_report.h"
#include "tools/bench/bench_kv_config.h"

namespace pagedllm::kv_bench {
namespace {

std::string json_number(double value) {
  if (!std::isfinite(value)) return "null";
  char text[40];
  std::snprintf(text, sizeof(text), "%.4f", value);
  return text;
}

std::string json_string(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof(escaped), "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
      out += escaped;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

void write_json_config(std::ostream& out, const BenchConfig& config) {
  out << "  \"machine\": {\"compiler\": " << json_string(compiler_name()) << ", \"build\": "
      << json_string(build_type()) << ", \"ndebug\": " << (ndebug() ? "true" : "false")
      << ", \"optimized\": " << (optimized() ? "true" : "false")
      << ", \"hardware_threads\": " << std::thread::hardware_concurrency() << "},\n";
  out << "  \"config\": {\"device_blocks\": " << config.device_blocks << ", \"host_blocks\": " << config.host_blocks
      << ", \"block_size\": " << kBlockSize << ", \"sequences\": " << config.sequences << ", \"steps\": "
      << config.steps << ", \"warmup_steps\": " << config.warmup_steps << ", \"repeats\": " << config.repeats
      << ", \"prompt_tokens\": " << config.prompt_tokens << ", \"shared_prefix_tokens\": "
      << config.shared_prefix_tokens << ", \"finish_fraction\": " << json_number(config.finish_fraction)
      << ", \"shared_fraction\": " << json_number(config.shared_fraction) << ", \"seed\": " << config.seed
      << ", \"quick\": " << (config.quick ? "true" : "false") << "},\n";
  out << "  \"targets\": {\"append_ns\": " << json_number(kAppendTargetNs) << ", \"step_us\": "
      << json_number(kStepTargetUs) << "},\n";
  out << "  \"baseline\": " << json_string(kBaselineName) << ",\n";
}

void write_json_ops(std::ostream& out, const MicroResults& micro) {
  out << "  \"ops\": [\n";
  bool first = true;
  for (const OpSpec& op : kOps) {
    const OpFigures f = op_figures(op, micro);
    out << (first ? "" : ",\n") << "    {\"key\": " << json_string(op.key) << ", \"label\": " << json_string(op.label)
        << ", \"pagedllm_ns\": " << json_number(f.paged_ns) << ", \"target_ns\": " << json_number(f.target_ns)
        << ", \"pagedllm_over_target\": " << json_number(ratio(f.paged_ns, f.target_ns))
        << ", \"baseline_ns\": " << json_number(f.baseline_ns)
        << ", \"pagedllm_over_baseline\": " << json_number(ratio(f.paged_ns, f.baseline_ns))
        << ", \"batches\": " << f.samples << "}";
    first = false;
  }
  out << "\n  ],\n";
}

void write_json_variant(std::ostream& out, const DecodeVariant& variant, const StepSummary& s,
                        const StepSummary& baseline, int32_t total_steps) {
  const DecodeRun& run = variant.first_run;
  const DecodeCounters& c = run.counters;
  out << "      {\"name\": " << json_string(variant.name) << ", \"mean_us\": " << json_number(s.mean_us)
      << ", \"p50_us\": " << json_number(s.p50_us) << ", \"p99_us\": " << json_number(s.p99_us)
      << ", \"max_us\": " << json_number(s.max_us) << ", \"ns_per_sequence_step\": "
      << json_number(s.ns_per_sequence_step) << ", \"mean_over_target\": " << json_number(s.mean_us / kStepTargetUs)
      << ", \"p99_over_target\": " << json_number(s.p99_us / kStepTargetUs)
      << ", \"mean_over_baseline\": " << json_number(ratio(s.mean_us, baseline.mean_us))
      << ", \"p99_over_baseline\": " << json_number(ratio(s.p99_us, baseline.p99_us))
      << ", \"steps_timed\": " << variant.step_ns.size() << ", \"appends\": " << c.appends
      << ", \"admissions\": " << c.admissions << ", \"prefix_hit_tokens\": " << c.cached_tokens
      << ", \"preemptions\": " << c.preemptions << ", \"deferred\": " << c.deferred
      << ", \"evictions\": " << run.evictions << ", \"log_bytes_per_step\": "
      << json_number(static_cast<double>(run.log_bytes) / total_steps) << ", \"phases_mean_us\": {\"free\": "
      << json_number(variant.phase_mean_us(kFreePhase)) << ", \"decode\": "
      << json_number(variant.phase_mean_us(kDecodePhase)) << ", \"admit\": "
      << json_number(variant.phase_mean_us(kAdmitPhase)) << "}, \"decode_phase_over_target\": "
      << json_number(variant.phase_mean_us(kDecodePhase) / kStepTargetUs) << "}";
}

void write_json_decode(std::ostream& out, const BenchConfig& config, const DecodeResults& decode) {
  const StepSummary paged = decode.paged.summary(config.sequences);
  const StepSummary baseline = decode.baseline.summary(config.sequences);
  const StepSummary paged_log = decode.paged_log.summary(config.sequences);
  const int32_t total_steps = config.steps + config.warmup_steps;
  out << "  \"decode_step\": {\n    \"variants\": [\n";
  write_json_variant(out, decode.paged, paged, baseline, total_steps);
  out << ",\n";
  write_json_variant(out, decode.baseline, baseline, baseline, total_steps);
  out << ",\n";
  write_json_variant(out, decode.paged_log, paged_log, baseline, total_steps);
  out << "\n    ],\n";
  out << "    \"pagedllm_over_baseline_mean\": " << json_number(ratio(paged.mean_us, baseline.mean_us))
      << ",\n    \"pagedllm_over_baseline_p50\": " << json_number(ratio(paged.p50_us, baseline.p50_us))
      << ",\n    \"pagedllm_over_baseline_p99\": " << json_number(ratio(paged.p99_us, baseline.p99_us))
      << ",\n    \"log_on_over_log_off_mean\": " << json_number(ratio(paged_log.mean_us, paged.mean_us))
      << ",\n    \"log_on_over_log_off_p50\": " << json_number(ratio(paged_log.p50_us, paged.p50_us))
      << ",\n    \"log_on_over_log_off_p99\": " << json_number(ratio(paged_log.p99_us, paged.p99_us)) << "\n  }\n";
}

}  // namespace

void write_json(const BenchConfig& config, const MicroResults& micro, const DecodeResults& decode) {
  std::ofstream out(config.json_path);
  if (!out) throw std::runtime_error("cannot open " + config.json_path + " for writing");
  out << "{\n  \"benchmark\": \"bench_kv\",\n";
  write_json_config(out, config);
  write_json_ops(out, micro);
  write_json_decode(out, config, decode);
  out << "}\n";
  if (!out) throw std::runtime_error("failed writing " + config.json_path);
}

}  // namespace pagedllm::kv_bench
