// Replicas co-located on one host: CPU replicas on one machine share its cores. A replica's step
// profile was timed with the machine to itself; beside busy neighbours its steps run slower.
//
// The model is processor sharing: while k replicas have a step in flight, each step progresses at
// min(1, cores / (k x threads per replica)) seconds of its profiled time per second. It leaves
// out contention for memory bandwidth and caches (two single-threaded replicas on the 2-core
// development VM: no slowdown measured) and the CPU time of whatever else runs on the host.
#pragma once

#include <cstdint>

namespace pagedllm::sim {

struct HostSharing {
  int32_t num_cores = 0;            // the host's cores; 0: every replica on its own hardware
  int32_t threads_per_replica = 1;  // each replica's busy threads while it steps

  bool enabled() const { return num_cores > 0; }
  // Profiled seconds done per second by each of `busy_replicas` in-flight steps (1 when disabled).
  double rate(int32_t busy_replicas) const;
  // Throws std::invalid_argument naming the field.
  void validate() const;
};

}  // namespace pagedllm::sim
