// Replicas co-located on one host: CPU replicas on one machine share its cores. A replica's step
// profile was timed with the machine to itself; beside busy neighbours its steps run slower.
//
// The model is processor sharing: while k replicas have a step in flight, each step progresses at
// r = min(1, cores / demand) seconds of its profiled time per second, where the demand is the
// busy replicas' threads plus the serving path's CPU: every output token costs the host
// serving_cpu_seconds_per_token (the replica's HTTP threads, a router, clients on the host), spent
// while the step that made it runs. A step of n output tokens and w profiled seconds adds
// n x that / w cores at full speed, r times that at rate r; r is the fixed point.
//
// Left out: contention for memory bandwidth and caches. Measured on the 2-vCPU development VM,
// two single-threaded decode loops side by side each ran 11-17% slower than alone; a prefill
// beside a decode was not slowed (docs/SIMULATOR.md, "Against a real deployment").
#pragma once

#include <cstdint>

namespace pagedllm::sim {

struct HostSharing {
  int32_t num_cores = 0;            // the host's cores; 0: every replica on its own hardware
  int32_t threads_per_replica = 1;  // each replica's busy threads while it steps
  // CPU seconds the host spends outside the engines per output token (measured on the idle
  // deployment: tools/bench/sim_vs_replicas.py); 0: none
  double serving_cpu_seconds_per_token = 0.0;

  bool enabled() const { return num_cores > 0; }
  // Profiled seconds done per second by each of `busy_replicas` in-flight steps (1 when disabled),
  // whose serving path adds `serving_cores` cores of demand at full speed (the sum over the steps
  // of output tokens x serving_cpu_seconds_per_token / profiled seconds).
  double rate(int32_t busy_replicas, double serving_cores = 0.0) const;
  // Throws std::invalid_argument naming the field.
  void validate() const;
};

}  // namespace pagedllm::sim
