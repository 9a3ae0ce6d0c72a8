// Replicas co-located on one host: CPU replicas on one machine share its cores, caches and memory
// bandwidth. A replica's step profile was timed with the machine to itself; beside busy
// neighbours its steps run slower, for two reasons modelled here:
//
// - Cores (processor sharing). While k replicas have a step in flight, each step progresses at
//   r = min(1, cores / demand) seconds of its profiled time per second, where the demand is the
//   busy replicas' threads plus the serving path's CPU: every output token costs the host
//   serving_cpu_seconds_per_token (the replica's HTTP threads, a router, clients on the host),
//   spent while the step that made it runs. A step of n output tokens and w profiled seconds adds
//   n x that / w cores at full speed, r times that at rate r; r is the fixed point.
// - Interference (caches, memory bandwidth). A step beside a neighbour that runs at the same time
//   takes longer by a measured fraction that depends on what each does: decode rows stream the
//   weights (memory-bound), prompt tokens reuse them (compute-bound). On the 2-vCPU development
//   VM a decode beside decodes took 11-17% longer, a prefill beside either 1.5-4.2% (40% in
//   three measurements by hand, not explained; docs/SIMULATOR.md, "Against a real
//   deployment"). A step's prefill share is its prompt tokens over its prompt tokens and decode
//   rows; the four fractions mix bilinearly by both shares. Neighbours beyond the cores run part
//   of the time only, so each counts (cores - own threads) / (threads - own threads) of its
//   fraction when the busy threads outnumber the cores.
//
// Left out: replicas time-sliced on fewer cores than their threads lose more than processor
// sharing and these fractions together predict (each switch refills the caches).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace pagedllm::sim {

// How much longer a step takes beside one neighbour stepping at the same time (0.15: 15% longer),
// by what the step and its neighbour do.
struct HostInterference {
  double decode_by_decode = 0.0;
  double decode_by_prefill = 0.0;
  double prefill_by_decode = 0.0;
  double prefill_by_prefill = 0.0;

  bool any() const;
  // Of a step with prefill share `step` beside a neighbour with prefill share `neighbour`.
  double slowdown(double step, double neighbour) const;
  // "decode_by_decode=0.14,prefill_by_prefill=0.37" (names as the fields; absent ones 0). Throws
  // std::invalid_argument naming the entry at fault.
  static HostInterference parse(const std::string& text);
};

// A step in flight on a shared host, as the sharing model sees it.
struct SharedStep {
  double serving_cores = 0.0;  // the serving path's CPU for its output tokens, in cores at full speed
  double prefill_share = 0.0;  // prompt tokens / (prompt tokens + decode rows)
};

struct HostSharing {
  int32_t num_cores = 0;            // the host's cores; 0: every replica on its own hardware
  int32_t threads_per_replica = 1;  // each replica's busy threads while it steps
  // CPU seconds the host spends outside the engines per output token (measured on the idle
  // deployment: tools/bench/sim_vs_replicas.py); 0: none
  double serving_cpu_seconds_per_token = 0.0;
  HostInterference interference = {};

  bool enabled() const { return num_cores > 0; }
  // Profiled seconds done per second by each of `busy_replicas` in-flight steps (1 when disabled),
  // whose serving path adds `serving_cores` cores of demand at full speed (the sum over the steps
  // of output tokens x serving_cpu_seconds_per_token / profiled seconds). Interference aside.
  double rate(int32_t busy_replicas, double serving_cores = 0.0) const;
  // Each in-flight step's rate: the processor-sharing rate over every step, slowed by its
  // neighbours' interference.
  std::vector<double> rates(const std::vector<SharedStep>& steps) const;
  // Throws std::invalid_argument naming the field.
  void validate() const;
};

}  // namespace pagedllm::sim
