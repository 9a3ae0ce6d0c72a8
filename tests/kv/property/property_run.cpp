// The property run's set-up, its loop of random operations, failure reports, snapshots and final drain.
#include "tests/kv/property/property_run.h"

#include <algorithm>
#include <array>
#include <exception>
#include <span>
#include <sstream>
#include <string>
#include <vector>

namespace pagedllm::kv::property_test {

PropertyRun::PropertyRun(const RunConfig& config, std::streambuf* log_target)
    : config_(config),
      rng_(config.seed),
      log_buf_(log_target),
      log_stream_(&log_buf_),
      event_log_(log_stream_),
      manager_(kv_config(config), config.event_log ? &event_log_ : nullptr),
      memory_(config.block_size, config.num_device_blocks, config.num_host_blocks) {
  for (const Tier tier : {Tier::device, Tier::host}) {
    const auto n = static_cast<size_t>(pool(tier).num_blocks());
    refs(tier).assign(n, 0);
    fills_[index(tier)].assign(n, -1);
    marks_[index(tier)].assign(n, 0);
    group_index_[index(tier)].assign(n, 0);
  }
  for (int32_t t = 0; t < kNumTopics; ++t) {
    topics_.emplace_back();
    for (int32_t i = 0; i < 8 * config_.block_size; ++i) topics_.back().push_back(random_token());
  }
}

void PropertyRun::run() {
  try {
    require(manager_.watermark_blocks() == static_cast<int32_t>(config_.watermark * config_.num_device_blocks),
            "watermark_blocks");
    verify();
    while (counts_.ops < config_.num_ops) {
      event_log_.set_step(counts_.ops);
      if (!random_op()) continue;  // not possible in this state: draw again
      verify();
      ++counts_.ops;
    }
    drain();
  } catch (const PropertyFailure&) {
    throw;
  } catch (const std::exception& e) {
    fail(std::string("unexpected exception (a call the model expects to succeed threw?): ") + e.what());
  }
}

void PropertyRun::fail(const std::string& what) const {
  std::ostringstream out;
  out << "seed " << config_.seed << ", operation " << counts_.ops << ": " << what
      << "\nlast operations (op: what seq arg):";
  std::array<TraceEntry, kTraceLength> entries = trace_;
  std::sort(entries.begin(), entries.end(), [](const TraceEntry& a, const TraceEntry& b) { return a.op < b.op; });
  for (const TraceEntry& entry : entries) {
    if (entry.op >= 0) out << "\n  " << entry.op << ": " << entry.what << " " << entry.seq << " " << entry.arg;
  }
  throw PropertyFailure(out.str());
}

void PropertyRun::capture(Snapshot& s) const {
  s.stats = manager_.stats();
  s.ids = manager_.sequence_ids();
  s.tables.clear();
  for (const SeqId id : s.ids) {
    const std::span<const BlockId> table = manager_.block_table(id);
    s.tables.push_back(manager_.num_tokens(id));
    s.tables.push_back(manager_.is_swapped(id) ? 1 : 0);
    s.tables.push_back(static_cast<int64_t>(table.size()));
    s.tables.insert(s.tables.end(), table.begin(), table.end());
  }
  s.device_free = manager_.device_pool().free_list();
  s.host_free = manager_.host_pool().free_list();
  capture_meta(manager_.device_pool(), s.device_meta);
  capture_meta(manager_.host_pool(), s.host_meta);
  s.log_bytes = log_buf_.bytes();
}

void PropertyRun::capture_meta(const BlockPool& blocks, std::vector<BlockMeta>& out) {
  out.clear();
  for (BlockId b = 0; b < blocks.num_blocks(); ++b) out.push_back(blocks.meta(b));
}

bool PropertyRun::random_op() {
  auto r = static_cast<int32_t>(rng_.below(1000));
  for (const OpWeight& w : kOpWeights) {
    if (r < w.weight) return run_op(w.kind);
    r -= w.weight;
  }
  return false;
}

bool PropertyRun::run_op(OpKind kind) {
  switch (kind) {
    case OpKind::allocate:
      return op_allocate(false);
    case OpKind::allocate_chunk:
      return op_allocate(true);
    case OpKind::prefill_chunk:
      return op_prefill_chunk();
    case OpKind::decode:
      return op_decode(false);
    case OpKind::multi_append:
      return op_decode(true);
    case OpKind::fork:
      return op_fork();
    case OpKind::free:
      return op_free();
    case OpKind::swap_out:
      return op_swap_out();
    case OpKind::swap_in:
      return op_swap_in();
    case OpKind::reset_prefix_cache:
      return op_reset_prefix_cache();
    case OpKind::misuse:
      return op_misuse();
  }
  return false;
}

// Frees everything; every block of both tiers must then be free.
void PropertyRun::drain() {
  while (!seqs_.empty()) {
    op_free();
    verify();
  }
  const KvStats s = manager_.stats();
  require(s.num_sequences == 0 && manager_.sequence_ids().empty() && s.num_filled_device_slots == 0,
          "sequences left after freeing all");
  require(s.num_free_device_blocks == s.num_device_blocks && s.num_free_host_blocks == s.num_host_blocks,
          "blocks still used after freeing all");
  for (const Tier tier : {Tier::device, Tier::host}) {
    for (BlockId b = 0; b < pool(tier).num_blocks(); ++b) {
      require(pool(tier).meta(b).ref_count == 0, "a block is still referenced after freeing all");
    }
  }
}

}  // namespace pagedllm::kv::property_test
