#include "sim/router.h"

#include <stdexcept>

#include "core/kv/block_hash.h"

namespace pagedllm::sim {

const char* to_string(RouterPolicy policy) {
  switch (policy) {
    case RouterPolicy::round_robin:
      return "round-robin";
    case RouterPolicy::least_outstanding:
      return "least-outstanding";
    case RouterPolicy::prefix_affinity:
      return "prefix-affinity";
  }
  return "?";
}

RouterPolicy parse_router_policy(const std::string& text) {
  if (text == "round-robin") return RouterPolicy::round_robin;
  if (text == "least-outstanding") return RouterPolicy::least_outstanding;
  if (text == "prefix-affinity") return RouterPolicy::prefix_affinity;
  throw std::invalid_argument("unknown router '" + text + "' (round-robin, least-outstanding, prefix-affinity)");
}

int32_t num_outstanding(const engine::Engine& engine) {
  const sched::Scheduler& scheduler = engine.scheduler();
  return scheduler.num_waiting() + scheduler.num_running() + scheduler.num_swapped();
}

namespace {

size_t least_outstanding(std::span<const engine::Engine* const> replicas) {
  size_t best = 0;
  for (size_t i = 1; i < replicas.size(); ++i) {
    if (num_outstanding(*replicas[i]) < num_outstanding(*replicas[best])) best = i;
  }
  return best;
}

}  // namespace

size_t Router::route(const sched::Request& request, std::span<const engine::Engine* const> replicas) {
  if (replicas.empty()) throw std::invalid_argument("router: no replicas");
  const uint64_t index = num_routed_++;
  switch (config_.policy) {
    case RouterPolicy::round_robin:
      return static_cast<size_t>(index % replicas.size());
    case RouterPolicy::least_outstanding:
      return least_outstanding(replicas);
    case RouterPolicy::prefix_affinity: {
      const size_t least = least_outstanding(replicas);
      const int32_t least_load = num_outstanding(*replicas[least]);
      const int32_t block_size = replicas.front()->kv().config().block_size;
      // Hashed once, looked up in every replica's prefix cache. A described prompt's full blocks are
      // all named by its content ids: its tokens need not be written.
      const int32_t num_unstored = request.prompt_tokens.empty() ? sched::prompt_length(request) : 0;
      const std::vector<kv::BlockHash> hashes = kv::hash_prompt_blocks(request.prompt_tokens, num_unstored, block_size,
                                                                       request.cache_salt, request.content_ids);
      const int32_t num_named = request.content_ids.num_named_blocks(block_size);
      size_t best = least;
      int32_t best_tokens = 0;
      for (size_t i = 0; i < replicas.size(); ++i) {
        if (num_outstanding(*replicas[i]) > least_load + config_.max_imbalance) continue;
        const kv::PrefixMatch match = replicas[i]->kv().match_prefix({.tokens = request.prompt_tokens,
                                                                      .salt = request.cache_salt,
                                                                      .block_hashes = hashes,
                                                                      .num_named_hashes = num_named,
                                                                      .num_unstored_tokens = num_unstored});
        if (match.num_cached_tokens > best_tokens) {
          best = i;
          best_tokens = match.num_cached_tokens;
        }
      }
      return best;
    }
  }
  return 0;
}

}  // namespace pagedllm::sim
