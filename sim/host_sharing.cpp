#include "sim/host_sharing.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace pagedllm::sim {

double HostSharing::rate(int32_t busy_replicas, double serving_cores) const {
  if (!enabled() || busy_replicas <= 0) return 1.0;
  const double cores = static_cast<double>(num_cores);
  const double threads = static_cast<double>(busy_replicas) * static_cast<double>(threads_per_replica);
  if (threads + serving_cores <= cores) return 1.0;
  if (serving_cores <= 0.0) return cores / threads;
  // The serving path's demand follows the steps' speed: r x (threads + r x serving) = cores.
  return (-threads + std::sqrt(threads * threads + 4.0 * serving_cores * cores)) / (2.0 * serving_cores);
}

void HostSharing::validate() const {
  if (num_cores < 0) throw std::invalid_argument("host sharing: num_cores must be 0 (none) or positive");
  if (threads_per_replica < 1) throw std::invalid_argument("host sharing: threads_per_replica must be at least 1");
  if (!(serving_cpu_seconds_per_token >= 0.0) || !std::isfinite(serving_cpu_seconds_per_token)) {
    throw std::invalid_argument("host sharing: serving_cpu_seconds_per_token must be 0 or more");
  }
}

}  // namespace pagedllm::sim
