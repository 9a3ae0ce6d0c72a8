// `pagedllm plan`'s result as one JSON document (every configuration of the sweep with its
// rate-latency curve), the table printed from that document, and the merge of a sharded sweep's
// documents (`plan --shard I/N` on several machines, then `plan merge`).
//
// The document's "sweep" object identifies the sweep: a fingerprint of the arguments that decide
// the result (everything but --shard, --jobs and the output file) and of the trace, and the
// number of configurations. A shard's document adds "shard": {"index", "count"} and holds only
// its configurations, each with its "index" in the sweep; the merge of all shards is the
// unsharded document, field for field.
#pragma once

#include <cstdint>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace pagedllm::cli {

// Which configurations of a sweep one run computes: index % count == this index.
struct PlanShard {
  int32_t index = 0;
  int32_t count = 1;
  bool sharded() const { return count > 1; }
  bool owns(size_t configuration) const { return static_cast<int64_t>(configuration % count) == index; }
};
// "I/N" with 0 <= I < N; throws std::invalid_argument naming the problem.
PlanShard parse_plan_shard(const std::string& text);

// A sweep's fingerprint: 16 hex digits of FNV-1a over `parts`, each followed by a separator.
std::string plan_fingerprint(const std::vector<std::string>& parts);

// The header and one line per configuration, as `plan` prints them, from its document.
void print_plan(const nlohmann::json& document, std::FILE* out);

// The shards' documents, each with the file it came from, as the one document the unsharded
// plan writes. Throws std::invalid_argument naming the file and the fault: not a shard of a
// plan, a shard of another sweep, a shard given twice, or a shard missing.
nlohmann::json merge_plan_shards(const std::vector<std::pair<std::string, nlohmann::json>>& shards);

// `pagedllm plan merge SHARD.json... [-o merged.json]`.
int run_plan_merge(const std::vector<std::string>& args);

}  // namespace pagedllm::cli
