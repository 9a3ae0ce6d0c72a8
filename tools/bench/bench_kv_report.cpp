// bench_kv's text report: the header, the per-operation table and the decode-step tables.
#include "tools/bench/bench_kv_report.h"

#include <cstdint>
#include <cstdio>
#include <string>

#include "tools/bench/bench_kv_config.h"
#include "tools/bench/bench_output.h"

namespace pagedllm::kv_bench {
namespace {

void print_decode_row(const DecodeVariant& variant, const StepSummary& s, const StepSummary& baseline) {
  std::printf("%-38s %8.2f %8.2f %8.2f %9.2f %8.1f %9s %9s %9s %9s\n", variant.name.c_str(), s.mean_us, s.p50_us,
              s.p99_us, s.max_us, s.ns_per_sequence_step, format_ratio(s.mean_us / kStepTargetUs).c_str(),
              format_ratio(s.p99_us / kStepTargetUs).c_str(), format_ratio(ratio(s.mean_us, baseline.mean_us)).c_str(),
              format_ratio(ratio(s.p99_us, baseline.p99_us)).c_str());
}

// The step split into its phases; the decode phase alone is what the 50 us target would cover
// without admissions, so it gets its own ratios.
void print_phases(const BenchConfig& config, const DecodeResults& decode) {
  std::printf("   phases, mean us per step:%11s %8s %9s %9s %10s %9s %9s\n", "", "free", "decode", "admit",
              "decode/seq", "dec/tgt", "dec/base");
  const double baseline_decode_us = decode.baseline.phase_mean_us(kDecodePhase);
  for (const DecodeVariant* variant : {&decode.paged, &decode.baseline, &decode.paged_log}) {
    const double decode_us = variant->phase_mean_us(kDecodePhase);
    std::printf("   %-36s %8.2f %9.2f %9.2f %8.1fns %9s %9s\n", variant->name.c_str(),
                variant->phase_mean_us(kFreePhase), decode_us, variant->phase_mean_us(kAdmitPhase),
                decode_us * 1e3 / config.sequences, format_ratio(decode_us / kStepTargetUs).c_str(),
                format_ratio(ratio(decode_us, baseline_decode_us)).c_str());
  }
  std::printf("   (free: %s; decode: %s for every running sequence; admit: %s of the new prompts)\n",
              kPhaseNames[kFreePhase], kPhaseNames[kDecodePhase], kPhaseNames[kAdmitPhase]);
}

}  // namespace

OpFigures op_figures(const OpSpec& op, const MicroResults& micro) {
  OpFigures figures;
  if (const auto it = micro.paged.find(op.key); it != micro.paged.end()) {
    figures.paged_ns = median(it->second);
    figures.samples = it->second.size();
  }
  if (const auto it = micro.baseline.find(op.key); it != micro.baseline.end()) {
    figures.baseline_ns = median(it->second);
  }
  if (op.has_target) figures.target_ns = kAppendTargetNs;
  return figures;
}

void print_header(const BenchConfig& config) {
  std::printf("bench_kv: pagedllm KV cache manager (core/kv) vs the issue's targets and a %s\n", kBaselineName);
  std::printf("%s\n", build_line(build_info()).c_str());
  std::printf(
      "pool: %d device blocks, %d host blocks, block size %d | decode: %d sequences, %d steps (+%d warm-up)"
      " | repeats: %d%s\n",
      config.device_blocks, config.host_blocks, kBlockSize, config.sequences, config.steps, config.warmup_steps,
      config.repeats, config.quick ? " | --quick" : "");
  std::printf(
      "targets: <= %.0f ns per append, <= %.0f us of block work per step for 1,024 sequences over 100k blocks\n",
      kAppendTargetNs, kStepTargetUs);
  std::printf(
      "%s: nano-vllm's block manager in C++ (std::deque free ids, std::unordered_set used ids, "
      "per-block ref counts,\n  unordered_map block tables, prefix cache keyed by a chained std::hash of "
      "each block's tokens); no CoW, no swap\n\n",
      kBaselineName);
}

void print_micro(const BenchConfig& config, const MicroResults& micro) {
  const MicroSizes sizes = micro_sizes(config);
  std::printf("1. Per-operation cost (ns/op, median over timed batches of %d ops; %d appends per round)\n", sizes.batch,
              sizes.append_sequences);
  std::printf("   warm manager: every free block holds cached content (allocations evict), %d resident sequences\n",
              sizes.resident);
  std::printf("%-52s %10s %7s %8s %10s %9s %8s\n", "operation", "pagedllm", "target", "/target", "baseline", "pd/base",
              "batches");
  for (const OpSpec& op : kOps) {
    const OpFigures f = op_figures(op, micro);
    std::printf("%-52s %10s %7s %8s %10s %9s %8zu\n", op.label, format_value(f.paged_ns, "%.1f").c_str(),
                format_value(f.target_ns, "%.0f").c_str(), format_ratio(ratio(f.paged_ns, f.target_ns)).c_str(),
                format_value(f.baseline_ns, "%.1f").c_str(), format_ratio(ratio(f.paged_ns, f.baseline_ns)).c_str(),
                f.samples);
  }
  std::printf("   /target: pagedllm / 50 ns target; pd/base: pagedllm / %s; '-': no target or no such baseline op\n\n",
              kBaselineName);
}

void print_decode(const BenchConfig& config, const DecodeResults& decode) {
  const int32_t sequences = config.sequences;
  const StepSummary paged = decode.paged.summary(sequences);
  const StepSummary baseline = decode.baseline.summary(sequences);
  const StepSummary paged_log = decode.paged_log.summary(sequences);
  std::printf(
      "2. Decode step: block work for %d running sequences (%d-token prompts), per step: a slot for 1 token\n"
      "   each (try_append_slots; the baseline: can_append + append), %.0f%% finish and are replaced by new\n"
      "   prompts (%.0f%% share a %d-token prefix);\n"
      "   %d steps x %d runs per variant, each step timed on its own, variants alternating every %d steps\n",
      sequences, config.prompt_tokens, config.finish_fraction * 100.0, config.shared_fraction * 100.0,
      config.shared_prefix_tokens, config.steps, config.repeats, kChunkSteps);
  std::printf("%-38s %8s %8s %8s %9s %8s %9s %9s %9s %9s\n", "variant", "mean us", "p50 us", "p99 us", "max us",
              "ns/seq", "mean/tgt", "p99/tgt", "mean/base", "p99/base");
  print_decode_row(decode.paged, paged, baseline);
  print_decode_row(decode.baseline, baseline, baseline);
  print_decode_row(decode.paged_log, paged_log, baseline);
  std::printf("   ratios side by side: pagedllm / %s = %s mean, %s p50, %s p99\n", kBaselineName,
              format_ratio(ratio(paged.mean_us, baseline.mean_us)).c_str(),
              format_ratio(ratio(paged.p50_us, baseline.p50_us)).c_str(),
              format_ratio(ratio(paged.p99_us, baseline.p99_us)).c_str());
  std::printf("                        log-on / log-off (pagedllm) = %s mean, %s p50, %s p99\n",
              format_ratio(ratio(paged_log.mean_us, paged.mean_us)).c_str(),
              format_ratio(ratio(paged_log.p50_us, paged.p50_us)).c_str(),
              format_ratio(ratio(paged_log.p99_us, paged.p99_us)).c_str());
  print_phases(config, decode);
  for (const DecodeVariant* variant : {&decode.paged, &decode.baseline, &decode.paged_log}) {
    const DecodeRun& run = variant->first_run;
    const DecodeCounters& c = run.counters;
    std::printf(
        "   %-36s per run: %lld appends, %lld admissions (%lld prefix-hit tokens), %lld preempted, "
        "%lld deferred",
        variant->name.c_str(), static_cast<long long>(c.appends), static_cast<long long>(c.admissions),
        static_cast<long long>(c.cached_tokens), static_cast<long long>(c.preemptions),
        static_cast<long long>(c.deferred));
    if (variant != &decode.baseline) std::printf(", %lld evictions", static_cast<long long>(run.evictions));
    if (run.log_bytes > 0) {
      std::printf(", %.1f KiB log/step", static_cast<double>(run.log_bytes) / 1024.0 /
                                             static_cast<double>(config.steps + config.warmup_steps));
    }
    std::printf("\n");
  }
}

}  // namespace pagedllm::kv_bench
