// Routing requests across replicas of a simulated cluster (`pagedllm simulate --replicas R`).
//   round-robin         request i goes to replica i mod R
//   least-outstanding   the replica with the fewest unfinished requests (ties: lowest index)
//   prefix-affinity     cache-aware, as SGLang's router: the replica whose prefix cache holds the
//                       longest prefix of the prompt, unless that replica's load exceeds the least
//                       loaded one's by more than `max_imbalance` requests or no replica holds a
//                       whole block of it; then least-outstanding
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "core/engine/engine.h"
#include "core/sched/request.h"

namespace pagedllm::sim {

enum class RouterPolicy : uint8_t { round_robin, least_outstanding, prefix_affinity };
const char* to_string(RouterPolicy policy);
// "round-robin", "least-outstanding" or "prefix-affinity"; throws std::invalid_argument listing them.
RouterPolicy parse_router_policy(const std::string& text);

struct RouterConfig {
  RouterPolicy policy = RouterPolicy::round_robin;
  int32_t max_imbalance = 8;  // prefix-affinity: outstanding requests over the least loaded
};

class Router {
 public:
  explicit Router(const RouterConfig& config) : config_(config) {}

  // The replica for `request`; `replicas` are the engines as they stand at its arrival.
  size_t route(const sched::Request& request, std::span<const engine::Engine* const> replicas);

 private:
  RouterConfig config_;
  uint64_t num_routed_ = 0;
};

// Requests a replica has accepted and not finished (waiting, running or swapped).
int32_t num_outstanding(const engine::Engine& engine);

}  // namespace pagedllm::sim
