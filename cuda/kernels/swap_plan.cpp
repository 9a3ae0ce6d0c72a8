#include "cuda/kernels/swap_plan.h"

#include <algorithm>
#include <string>

#include "cuda/kernels/dtype.h"

namespace pagedllm::cuda {

std::vector<SwapRun> plan_swap_runs(std::span<const kv::BlockMove> moves, int32_t num_src_blocks,
                                    int32_t num_dst_blocks) {
  std::vector<kv::BlockMove> sorted(moves.begin(), moves.end());
  for (const kv::BlockMove& move : sorted) {
    detail::require(
        move.src >= 0 && move.src < num_src_blocks,
        "swap: source block " + std::to_string(move.src) + " outside [0, " + std::to_string(num_src_blocks) + ")");
    detail::require(
        move.dst >= 0 && move.dst < num_dst_blocks,
        "swap: destination block " + std::to_string(move.dst) + " outside [0, " + std::to_string(num_dst_blocks) + ")");
  }
  // Two moves into one destination would race (and one would be lost).
  std::vector<kv::BlockId> destinations;
  destinations.reserve(sorted.size());
  for (const kv::BlockMove& move : sorted) destinations.push_back(move.dst);
  std::sort(destinations.begin(), destinations.end());
  const auto duplicate = std::adjacent_find(destinations.begin(), destinations.end());
  detail::require(duplicate == destinations.end(),
                  "swap: destination block " +
                      (duplicate == destinations.end() ? std::string() : std::to_string(*duplicate)) +
                      " is written twice");

  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const kv::BlockMove& a, const kv::BlockMove& b) { return a.src < b.src; });
  std::vector<SwapRun> runs;
  for (const kv::BlockMove& move : sorted) {
    if (!runs.empty()) {
      SwapRun& last = runs.back();
      if (move.src == last.src + last.num_blocks && move.dst == last.dst + last.num_blocks) {
        ++last.num_blocks;
        continue;
      }
    }
    runs.push_back(SwapRun{move.src, move.dst, 1});
  }
  return runs;
}

}  // namespace pagedllm::cuda
