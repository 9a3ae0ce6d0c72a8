#include "sim/host_sharing.h"

#include <algorithm>
#include <stdexcept>

namespace pagedllm::sim {

double HostSharing::rate(int32_t busy_replicas) const {
  if (!enabled() || busy_replicas <= 0) return 1.0;
  const double demand = static_cast<double>(busy_replicas) * static_cast<double>(threads_per_replica);
  return std::min(1.0, static_cast<double>(num_cores) / demand);
}

void HostSharing::validate() const {
  if (num_cores < 0) throw std::invalid_argument("host sharing: num_cores must be 0 (none) or positive");
  if (threads_per_replica < 1) throw std::invalid_argument("host sharing: threads_per_replica must be at least 1");
}

}  // namespace pagedllm::sim
