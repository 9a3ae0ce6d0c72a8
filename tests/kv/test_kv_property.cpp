// Randomized property test of KvCacheManager against a plain reference model.
//
// A run drives the manager with a long random mix of allocations (with and without prefix hits,
// whole prompts and first chunks), chunked prefill, decode and multi-token appends, forks,
// copy-on-write, frees, swaps of whole fork families, prefix-cache resets and calls that must be
// refused. The reference model keeps each live sequence's tokens and tier, plus a simulated KV
// memory per tier that an "executor" fills by following the block tables and applying the copies
// and moves the manager returns. After every operation the whole state is checked: the simulated
// KV at every live position equals what the sequence's tokens imply (a missing copy-on-write, a
// wrong prefix hit or a lost swap shows up here), reference counts and free lists match the
// tables, the counters in stats() agree, and the manager's own check_invariants() passes.
//
// Randomness comes from a fixed-seed std::mt19937_64 through our own uniform helpers, so a seed
// names the same operation sequence on every platform.
#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <random>
#include <span>
#include <sstream>
#include <stdexcept>
#include <streambuf>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <boost/test/unit_test.hpp>

#include "core/kv/kv_cache_manager.h"
#include "core/kv/kv_errors.h"
#include "core/kv/kv_event_log.h"

namespace pagedllm::kv {
namespace {

// --- run configuration and randomness ----------------------------------------------------------

struct RunConfig {
  uint64_t seed = 0x5eed'0001;
  int64_t num_ops = 1'000'000;
  int32_t block_size = 4;
  int32_t num_device_blocks = 96;
  int32_t num_host_blocks = 48;
  int32_t max_live_seqs = 12;
  double watermark = 0.04;
  bool enable_prefix_caching = true;
  bool event_log = true;  // log every mutation (counted, and copied to a target when one is given)
};

KvCacheConfig kv_config(const RunConfig& run) {
  KvCacheConfig config;
  config.block_size = run.block_size;
  config.num_device_blocks = run.num_device_blocks;
  config.num_host_blocks = run.num_host_blocks;
  config.watermark = run.watermark;
  config.enable_prefix_caching = run.enable_prefix_caching;
  return config;
}

// Uniform draws by our own arithmetic: std::uniform_int_distribution's output differs between
// standard libraries, mt19937_64's raw output does not.
class Rng {
 public:
  explicit Rng(uint64_t seed) : engine_(seed) {}

  // Uniform in [0, n), n > 0, by rejection of the low 2^64 mod n raw values.
  uint64_t below(uint64_t n) {
    const uint64_t threshold = (uint64_t{0} - n) % n;
    for (;;) {
      const uint64_t x = engine_();
      if (x >= threshold) return x % n;
    }
  }
  int32_t between(int32_t lo, int32_t hi) {  // inclusive
    return lo + static_cast<int32_t>(below(static_cast<uint64_t>(hi - lo) + 1));
  }
  bool percent(int32_t p) { return below(100) < static_cast<uint64_t>(p); }
  template <typename T>
  void shuffle(std::vector<T>& values) {  // Fisher-Yates; std::shuffle is implementation-defined
    for (size_t i = values.size(); i > 1; --i) std::swap(values[i - 1], values[below(i)]);
  }

 private:
  std::mt19937_64 engine_;
};

constexpr uint64_t kVocab = 32000;
constexpr int32_t kForcePercent = 40;  // how often a call that a can_* query rejects is made anyway
constexpr int32_t kNumTopics = 6;      // prefix families that many prompts start with
constexpr size_t kRecentPrompts = 16;
constexpr size_t kRecentFrees = 16;
constexpr size_t kTraceLength = 16;

// --- the simulated KV memory -------------------------------------------------------------------

// What a slot holds. Real KV at position p depends on the salt (tenant, adapter) and on every
// token up to p, so the model stores a fingerprint of exactly that: a prefix hit must reproduce
// it, and a hit across salts or across different earlier blocks shows up as a mismatch.
using KvValue = uint64_t;

constexpr uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
KvValue first_kv(uint64_t salt) { return splitmix64(salt ^ 0x243f6a8885a308d3ULL); }
KvValue next_kv(KvValue previous, TokenId token) {
  return splitmix64(previous ^ splitmix64(static_cast<uint32_t>(token)));
}

class KvMemory {
 public:
  KvMemory(int32_t block_size, int32_t device_blocks, int32_t host_blocks)
      : block_size_(block_size),
        tiers_{std::vector<KvValue>(static_cast<size_t>(device_blocks) * block_size),
               std::vector<KvValue>(static_cast<size_t>(host_blocks) * block_size)} {}

  KvValue* block(Tier tier, BlockId id) {
    return tiers_[static_cast<size_t>(tier)].data() + static_cast<size_t>(id) * block_size_;
  }
  void copy(Tier from_tier, BlockId from, Tier to_tier, BlockId to) {
    std::copy_n(block(from_tier, from), block_size_, block(to_tier, to));
  }

 private:
  int32_t block_size_;
  std::array<std::vector<KvValue>, 2> tiers_;  // indexed by Tier; persists across frees
};

// --- the reference model -----------------------------------------------------------------------

struct ModelSeq {
  SeqId id = 0;
  int64_t family = 0;  // sequences related by forks; swapped as one group
  uint64_t salt = 0;
  Tier tier = Tier::device;
  std::vector<TokenId> prompt;
  std::vector<TokenId> tokens;  // the tokens that hold slots, prompt first
  std::vector<KvValue> kv;      // the KV each of those positions must hold

  int32_t num_tokens() const { return static_cast<int32_t>(tokens.size()); }
  int32_t prompt_left() const {
    return std::max(0, static_cast<int32_t>(prompt.size()) - num_tokens());
  }
  void push(TokenId token) {
    kv.push_back(next_kv(kv.empty() ? first_kv(salt) : kv.back(), token));
    tokens.push_back(token);
  }
};

struct RecentPrompt {
  std::vector<TokenId> tokens;
  uint64_t salt = 0;
};

struct OpCounts {
  int64_t ops = 0;
  int64_t allocate = 0;
  int64_t allocate_chunk = 0;
  int64_t prefix_hit_allocs = 0;
  int64_t prefix_hit_tokens = 0;
  int64_t salted_allocs = 0;
  int64_t prefill_chunk = 0;
  int64_t decode = 0;
  int64_t multi_append = 0;
  int64_t copy_on_write = 0;
  int64_t fork = 0;
  int64_t frees = 0;
  int64_t swap_out = 0;
  int64_t swap_in = 0;
  int64_t swap_in_copied = 0;       // host blocks copied back to the device
  int64_t swap_in_reused = 0;       // host blocks brought back as still-cached device blocks
  int64_t swap_in_reused_free = 0;  // of those, distinct blocks revived from the free list
  int64_t reset_prefix_cache = 0;
  int64_t forced_ok = 0;  // a can_* query said no for the watermark only, and the call succeeded
  // Refused calls, each checked to leave the manager unchanged.
  int64_t refused_unknown = 0;
  int64_t refused_double_free = 0;
  int64_t refused_swapped_append = 0;
  int64_t refused_bad_args = 0;
  int64_t refused_alloc_full = 0;
  int64_t refused_append_full = 0;
  int64_t refused_host_full = 0;
  int64_t refused_swap_in_full = 0;

  int64_t refusals() const {
    return refused_unknown + refused_double_free + refused_swapped_append + refused_bad_args +
           refused_alloc_full + refused_append_full + refused_host_full + refused_swap_in_full;
  }
};

std::string summary(const OpCounts& c, const KvStats& stats) {
  std::ostringstream out;
  out << "ops=" << c.ops << " allocate=" << c.allocate << " allocate_chunk=" << c.allocate_chunk
      << " prefill_chunk=" << c.prefill_chunk << " decode=" << c.decode
      << " multi_append=" << c.multi_append << " fork=" << c.fork
      << " copy_on_write=" << c.copy_on_write << " free=" << c.frees
      << " swap_out=" << c.swap_out << " swap_in=" << c.swap_in
      << " swap_in_copied=" << c.swap_in_copied << " swap_in_reused=" << c.swap_in_reused
      << " swap_in_reused_free=" << c.swap_in_reused_free
      << " reset_prefix_cache=" << c.reset_prefix_cache << " prefix_hit_allocs=" << c.prefix_hit_allocs
      << " prefix_hit_tokens=" << c.prefix_hit_tokens << " salted_allocs=" << c.salted_allocs
      << " evictions=" << stats.evictions << " forced_ok=" << c.forced_ok
      << " refusals=" << c.refusals() << " (unknown=" << c.refused_unknown
      << " double_free=" << c.refused_double_free << " swapped_append=" << c.refused_swapped_append
      << " bad_args=" << c.refused_bad_args << " alloc_full=" << c.refused_alloc_full
      << " append_full=" << c.refused_append_full << " host_full=" << c.refused_host_full
      << " swap_in_full=" << c.refused_swap_in_full << ")";
  return out.str();
}

// Counts the bytes of the event log (a refused call must write none) and forwards them to an
// optional target.
class CountingBuf final : public std::streambuf {
 public:
  explicit CountingBuf(std::streambuf* target) : target_(target) {}
  int64_t bytes() const { return bytes_; }

 protected:
  std::streamsize xsputn(const char* data, std::streamsize n) override {
    bytes_ += n;
    return target_ != nullptr ? target_->sputn(data, n) : n;
  }
  int_type overflow(int_type ch) override {
    if (traits_type::eq_int_type(ch, traits_type::eof())) return traits_type::not_eof(ch);
    ++bytes_;
    return target_ != nullptr ? target_->sputc(traits_type::to_char_type(ch)) : ch;
  }

 private:
  std::streambuf* target_;
  int64_t bytes_ = 0;
};

// Everything observable about the manager, to compare before and after a refused call.
struct Snapshot {
  KvStats stats;
  std::vector<SeqId> ids;
  std::vector<int64_t> tables;  // per sequence: token count, swapped flag, table size, table
  std::vector<BlockId> device_free;
  std::vector<BlockId> host_free;
  std::vector<BlockMeta> device_meta;
  std::vector<BlockMeta> host_meta;
  int64_t log_bytes = 0;
};

auto stats_key(const KvStats& s) {
  return std::tie(s.block_size, s.num_sequences, s.device_blocks_total, s.device_blocks_free,
                  s.device_blocks_cached, s.device_blocks_cached_free, s.host_blocks_total,
                  s.host_blocks_free, s.device_slots_filled, s.prefix_query_tokens,
                  s.prefix_hit_tokens, s.evictions);
}

auto meta_key(const BlockMeta& m) {
  return std::tie(m.hash, m.ref_count, m.num_hashed_tokens, m.prev_free, m.next_free, m.has_hash,
                  m.is_cached);
}

bool same_meta(const std::vector<BlockMeta>& a, const std::vector<BlockMeta>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                    [](const BlockMeta& x, const BlockMeta& y) { return meta_key(x) == meta_key(y); });
}

bool same_snapshot(const Snapshot& a, const Snapshot& b) {
  return stats_key(a.stats) == stats_key(b.stats) && a.ids == b.ids && a.tables == b.tables &&
         a.device_free == b.device_free && a.host_free == b.host_free &&
         same_meta(a.device_meta, b.device_meta) && same_meta(a.host_meta, b.host_meta) &&
         a.log_bytes == b.log_bytes;
}

class PropertyFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class Expect : uint8_t { misuse, full };  // KvCacheError proper, or KvCacheFullError

// Which error a call threw: nullopt when none, true for KvCacheFullError.
template <typename Call>
std::optional<bool> refusal_of(Call&& call) {
  try {
    call();
  } catch (const KvCacheFullError&) {
    return true;
  } catch (const KvCacheError&) {
    return false;
  }
  return std::nullopt;
}

enum class OpKind : uint8_t {
  allocate, allocate_chunk, prefill_chunk, decode, multi_append, fork, free, swap_out, swap_in,
  reset_prefix_cache, misuse,
};

struct OpWeight {
  OpKind kind;
  int32_t weight;  // per mille
};

constexpr std::array<OpWeight, 11> kOpWeights{{
    {OpKind::allocate, 110},
    {OpKind::allocate_chunk, 50},
    {OpKind::prefill_chunk, 80},
    {OpKind::decode, 340},
    {OpKind::multi_append, 80},
    {OpKind::fork, 80},
    {OpKind::free, 70},
    {OpKind::swap_out, 60},
    {OpKind::swap_in, 80},
    {OpKind::reset_prefix_cache, 1},
    {OpKind::misuse, 49},
}};

struct TraceEntry {
  int64_t op = -1;
  const char* what = "";
  SeqId seq = 0;
  int64_t arg = 0;
};

// --- the run -----------------------------------------------------------------------------------

class PropertyRun {
 public:
  // `log_target`, when not null, receives the event log (config.event_log must be set).
  PropertyRun(const RunConfig& config, std::streambuf* log_target)
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
  PropertyRun(const PropertyRun&) = delete;
  PropertyRun& operator=(const PropertyRun&) = delete;

  // Runs config.num_ops operations, then frees everything. Throws PropertyFailure.
  void run() {
    try {
      require(manager_.watermark_blocks() ==
                  static_cast<int32_t>(config_.watermark * config_.num_device_blocks),
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

  const OpCounts& counts() const { return counts_; }
  KvStats stats() const { return manager_.stats(); }

 private:
  static size_t index(Tier tier) { return static_cast<size_t>(tier); }
  std::vector<int32_t>& refs(Tier tier) { return refs_[index(tier)]; }
  const BlockPool& pool(Tier tier) const {
    return tier == Tier::device ? manager_.device_pool() : manager_.host_pool();
  }
  int32_t num_free(Tier tier) const { return pool(tier).num_free(); }
  int32_t blocks_for(int64_t num_tokens) const {
    return static_cast<int32_t>((num_tokens + config_.block_size - 1) / config_.block_size);
  }
  int32_t max_seq_tokens() const { return 16 * config_.block_size; }
  int32_t max_prompt_tokens() const { return 10 * config_.block_size; }
  bool at_max_live() const { return static_cast<int32_t>(seqs_.size()) >= config_.max_live_seqs; }
  TokenId random_token() { return static_cast<TokenId>(rng_.below(kVocab)); }

  // --- failure reporting -----------------------------------------------------------------------

  void note(const char* what, SeqId seq, int64_t arg) {
    trace_[static_cast<size_t>(counts_.ops) % kTraceLength] = TraceEntry{counts_.ops, what, seq, arg};
  }

  [[noreturn]] void fail(const std::string& what) const {
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

  void require(bool ok, const char* what) const {
    if (!ok) [[unlikely]] fail(what);
  }

  // --- refused calls ---------------------------------------------------------------------------

  void capture(Snapshot& s) const {
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

  static void capture_meta(const BlockPool& blocks, std::vector<BlockMeta>& out) {
    out.clear();
    for (BlockId b = 0; b < blocks.num_blocks(); ++b) out.push_back(blocks.meta(b));
  }

  // The call must throw the expected kind of KvCacheError and leave the manager (and its log)
  // exactly as it was.
  template <typename Call>
  void expect_refused(Expect expect, const char* what, Call&& call) {
    capture(before_);
    const std::optional<bool> thrown_full = refusal_of(std::forward<Call>(call));
    if (!thrown_full) fail(std::string(what) + ": the call was not refused");
    if (*thrown_full != (expect == Expect::full)) {
      fail(std::string(what) + (*thrown_full ? ": threw KvCacheFullError, expected a plain KvCacheError"
                                             : ": threw a plain KvCacheError, expected KvCacheFullError"));
    }
    capture(after_);
    if (!same_snapshot(before_, after_)) fail(std::string(what) + ": the refused call changed the manager");
  }

  // --- operations ------------------------------------------------------------------------------

  bool random_op() {
    auto r = static_cast<int32_t>(rng_.below(1000));
    for (const OpWeight& w : kOpWeights) {
      if (r < w.weight) return run_op(w.kind);
      r -= w.weight;
    }
    return false;
  }

  bool run_op(OpKind kind) {
    switch (kind) {
      case OpKind::allocate: return op_allocate(false);
      case OpKind::allocate_chunk: return op_allocate(true);
      case OpKind::prefill_chunk: return op_prefill_chunk();
      case OpKind::decode: return op_decode(false);
      case OpKind::multi_append: return op_decode(true);
      case OpKind::fork: return op_fork();
      case OpKind::free: return op_free();
      case OpKind::swap_out: return op_swap_out();
      case OpKind::swap_in: return op_swap_in();
      case OpKind::reset_prefix_cache: return op_reset_prefix_cache();
      case OpKind::misuse: return op_misuse();
    }
    return false;
  }

  // Prompts: many start with one of a few topics (prefix hits), some repeat or extend a recent
  // prompt (hits up to one token short of the whole prompt), the rest are random; a few carry a
  // salt so that equal tokens must not hit content computed under another salt.
  void draw_prompt(ModelSeq& seq) {
    const int32_t bs = config_.block_size;
    const uint64_t roll = rng_.below(100);
    seq.salt = rng_.percent(12) ? static_cast<uint64_t>(rng_.between(1, 3)) : 0;
    if (roll < 55) {
      const std::vector<TokenId>& topic = topics_[rng_.below(topics_.size())];
      const int32_t k = rng_.between(bs, static_cast<int32_t>(topic.size()));
      seq.prompt.assign(topic.begin(), topic.begin() + k);
      if (k >= 3 * bs && rng_.percent(20)) {
        // An edited history: one block dropped, so later blocks follow another chain and a hit
        // on them is only right if the block hash covers everything before the block.
        const int32_t dropped = rng_.between(1, k / bs - 2);
        seq.prompt.erase(seq.prompt.begin() + dropped * bs, seq.prompt.begin() + (dropped + 1) * bs);
      }
      for (int32_t i = rng_.between(0, 3 * bs); i > 0; --i) seq.prompt.push_back(random_token());
    } else if (roll < 75 && !recent_.empty()) {
      const RecentPrompt& recent = recent_[rng_.below(recent_.size())];
      seq.prompt = recent.tokens;
      seq.salt = recent.salt;
      if (roll >= 65) {
        for (int32_t i = rng_.between(1, 2 * bs); i > 0; --i) seq.prompt.push_back(random_token());
      }
    } else {
      for (int32_t i = rng_.between(1, 6 * bs); i > 0; --i) seq.prompt.push_back(random_token());
    }
    if (static_cast<int32_t>(seq.prompt.size()) > max_prompt_tokens()) {
      seq.prompt.resize(static_cast<size_t>(max_prompt_tokens()));
    }
  }

  // A prompt longer than the device tier less the watermark: can_allocate must say never.
  void draw_huge_prompt(ModelSeq& seq) {
    const int32_t blocks = config_.num_device_blocks - manager_.watermark_blocks() + 1;
    for (int32_t i = 0; i < blocks * config_.block_size; ++i) seq.prompt.push_back(random_token());
  }

  AllocStatus expected_status(int32_t whole_blocks, int32_t needed) const {
    if (whole_blocks > config_.num_device_blocks - manager_.watermark_blocks()) return AllocStatus::never;
    return num_free(Tier::device) - needed >= manager_.watermark_blocks() ? AllocStatus::ok
                                                                           : AllocStatus::later;
  }

  // Bounds on a prefix match; in particular, full blocks that a live device sequence with the
  // same salt and tokens holds in the cache must be found.
  void check_match(const ModelSeq& seq, const PrefixMatch& match) {
    const int32_t bs = config_.block_size;
    if (!config_.enable_prefix_caching) {
      require(match.num_cached_tokens == 0 && match.num_hit_blocks == 0 && match.num_free_hit_blocks == 0,
              "prefix match with prefix caching off");
      return;
    }
    const int32_t max_hits = (static_cast<int32_t>(seq.prompt.size()) - 1) / bs;
    require(match.num_cached_tokens == match.num_hit_blocks * bs && match.num_hit_blocks >= 0 &&
                match.num_hit_blocks <= max_hits && match.num_free_hit_blocks >= 0 &&
                match.num_free_hit_blocks <= match.num_hit_blocks,
            "prefix match out of bounds (hits must stop one token short of the prompt)");
    int32_t must_hit = 0;
    for (const ModelSeq& other : seqs_) {
      if (other.tier != Tier::device || other.salt != seq.salt) continue;
      const std::span<const BlockId> table = manager_.block_table(other.id);
      const int32_t full = std::min(other.num_tokens() / bs, max_hits);
      int32_t j = 0;
      while (j < full && manager_.device_pool().meta(table[static_cast<size_t>(j)]).is_cached &&
             std::equal(seq.prompt.begin() + j * bs, seq.prompt.begin() + (j + 1) * bs,
                        other.tokens.begin() + j * bs)) {
        ++j;
      }
      must_hit = std::max(must_hit, j);
    }
    require(match.num_hit_blocks >= must_hit, "prefix match missed blocks a live sequence holds in the cache");
  }

  bool op_allocate(bool chunked) {
    if (at_max_live()) return false;
    ModelSeq seq;
    const bool huge = !chunked && rng_.below(100) == 0;
    if (huge) {
      draw_huge_prompt(seq);
    } else {
      draw_prompt(seq);
    }
    const auto len = static_cast<int32_t>(seq.prompt.size());
    if (chunked && len < 2) return false;
    const int32_t num_tokens = chunked ? rng_.between(1, len - 1) : len;
    seq.id = next_id_++;
    PromptRef prompt{seq.prompt, seq.salt};
    if (rng_.percent(25)) {
      // As a scheduler retrying a waiting request does: the chain hashes computed once, up front.
      prompt_hashes_ = hash_prompt_blocks(seq.prompt, config_.block_size, seq.salt);
      prompt.block_hashes = prompt_hashes_;
    }
    const PrefixMatch match = manager_.match_prefix(prompt);
    check_match(seq, match);
    const int32_t slots = std::max(num_tokens, match.num_cached_tokens);
    // Reviving a free hit block takes it off the free list just like a fresh block.
    const int32_t needed = blocks_for(slots) - match.num_hit_blocks + match.num_free_hit_blocks;
    const int32_t free_before = num_free(Tier::device);
    const AllocStatus status = manager_.can_allocate(prompt, num_tokens);
    require(status == expected_status(blocks_for(len), needed), "can_allocate disagrees with the blocks it needs");
    if (status != AllocStatus::ok) {
      if (!huge && !rng_.percent(kForcePercent)) return false;
      if (needed > free_before) {
        note("allocate refused", seq.id, num_tokens);
        expect_refused(Expect::full, "allocate beyond the free blocks",
                       [&] { manager_.allocate(seq.id, prompt, num_tokens); });
        ++counts_.refused_alloc_full;
        return true;
      }
      ++counts_.forced_ok;  // refused for the watermark only, which allocate itself leaves to the caller
    }
    note(chunked ? "allocate chunk" : "allocate", seq.id, num_tokens);
    const int32_t cached = manager_.allocate(seq.id, prompt, num_tokens);
    require(cached == match.num_cached_tokens, "allocate returned another cached count than match_prefix");
    require(num_free(Tier::device) == free_before - needed, "allocate took another number of free blocks");
    const std::span<const BlockId> table = manager_.block_table(seq.id);
    int32_t revived = 0;
    for (size_t i = 0; i < table.size(); ++i) {
      const int32_t refs_before = refs(Tier::device)[static_cast<size_t>(table[i])];
      if (static_cast<int32_t>(i) < match.num_hit_blocks) {
        if (refs_before == 0) ++revived;
      } else {
        require(refs_before == 0, "allocate handed out a block that another table holds");
      }
    }
    require(revived == match.num_free_hit_blocks, "num_free_hit_blocks is not the number of free hit blocks");
    for (int32_t p = 0; p < slots; ++p) seq.push(seq.prompt[static_cast<size_t>(p)]);
    seq.family = next_family_++;
    // The executor computes KV past the cached prefix only: the hit blocks must already hold the
    // prompt's KV, which verify() checks with every other position.
    write_kv(seq, cached, slots);
    ++(chunked ? counts_.allocate_chunk : counts_.allocate);
    if (cached > 0) {
      ++counts_.prefix_hit_allocs;
      counts_.prefix_hit_tokens += cached;
    }
    if (seq.salt != 0) ++counts_.salted_allocs;
    remember_prompt(seq);
    seqs_.push_back(std::move(seq));
    return true;
  }

  void remember_prompt(const ModelSeq& seq) {
    RecentPrompt recent{seq.prompt, seq.salt};
    if (recent_.size() < kRecentPrompts) {
      recent_.push_back(std::move(recent));
    } else {
      recent_[rng_.below(recent_.size())] = std::move(recent);
    }
  }

  void write_kv(const ModelSeq& seq, int32_t from, int32_t to) {
    const int32_t bs = config_.block_size;
    const std::span<const BlockId> table = manager_.block_table(seq.id);
    for (int32_t p = from; p < to; ++p) {
      memory_.block(seq.tier, table[static_cast<size_t>(p / bs)])[p % bs] = seq.kv[static_cast<size_t>(p)];
    }
  }

  // A random model sequence satisfying `pred`, or null.
  template <typename Pred>
  ModelSeq* pick_seq(Pred pred) {
    candidates_.clear();
    for (size_t i = 0; i < seqs_.size(); ++i) {
      if (pred(seqs_[i])) candidates_.push_back(i);
    }
    if (candidates_.empty()) return nullptr;
    return &seqs_[candidates_[rng_.below(candidates_.size())]];
  }

  ModelSeq& model(SeqId id) {
    for (ModelSeq& seq : seqs_) {
      if (seq.id == id) return seq;
    }
    fail("no model sequence " + std::to_string(id));
  }

  bool op_prefill_chunk() {
    ModelSeq* seq = pick_seq([](const ModelSeq& s) { return s.tier == Tier::device && s.prompt_left() > 0; });
    if (seq == nullptr) return false;
    const int32_t left = seq->prompt_left();
    const int32_t n = rng_.percent(40) ? left : rng_.between(1, left);
    const auto chunk = std::span<const TokenId>(seq->prompt).subspan(static_cast<size_t>(seq->num_tokens()),
                                                                     static_cast<size_t>(n));
    return append(*seq, chunk, "prefill chunk", counts_.prefill_chunk);
  }

  bool op_decode(bool multi) {
    const int32_t min_room = multi ? 2 : 1;
    ModelSeq* seq = pick_seq([&](const ModelSeq& s) {
      return s.tier == Tier::device && s.prompt_left() == 0 && max_seq_tokens() - s.num_tokens() >= min_room;
    });
    if (seq == nullptr) return false;
    const int32_t n =
        multi ? rng_.between(2, std::min(2 * config_.block_size + 1, max_seq_tokens() - seq->num_tokens())) : 1;
    new_tokens_.clear();
    for (int32_t i = 0; i < n; ++i) new_tokens_.push_back(random_token());
    return multi ? append(*seq, new_tokens_, "multi append", counts_.multi_append)
                 : append(*seq, new_tokens_, "decode", counts_.decode);
  }

  bool append(ModelSeq& seq, std::span<const TokenId> tokens, const char* what, int64_t& counter) {
    const int32_t bs = config_.block_size;
    const int32_t before = seq.num_tokens();
    const auto n = static_cast<int32_t>(tokens.size());
    const std::span<const BlockId> old_table = manager_.block_table(seq.id);
    old_table_.assign(old_table.begin(), old_table.end());
    const BlockId last = old_table_.back();
    // A partial last block that another table also holds must be copied before this one writes.
    const bool cow = before % bs != 0 && refs(Tier::device)[static_cast<size_t>(last)] > 1;
    const int32_t needed = blocks_for(before + n) - blocks_for(before) + (cow ? 1 : 0);
    require(manager_.num_blocks_to_append(seq.id, n) == needed, "num_blocks_to_append is wrong");
    const int32_t free_before = num_free(Tier::device);
    const bool fits = manager_.can_append_slots(seq.id, n);
    require(fits == (needed <= free_before), "can_append_slots disagrees with the free blocks");
    if (!fits) {
      if (!rng_.percent(kForcePercent)) return false;
      note("append refused", seq.id, n);
      expect_refused(Expect::full, "append beyond the free blocks", [&] { manager_.append_slots(seq.id, tokens); });
      ++counts_.refused_append_full;
      return true;
    }
    note(what, seq.id, n);
    const std::optional<BlockCopy> copy = manager_.append_slots(seq.id, tokens);
    require(copy.has_value() == cow, cow ? "no copy-on-write of a shared partial block" : "needless copy-on-write");
    const std::span<const BlockId> table = manager_.block_table(seq.id);
    require(static_cast<int32_t>(table.size()) == blocks_for(before + n), "block table has the wrong length");
    for (size_t i = 0; i < old_table_.size(); ++i) {
      const bool copied = cow && i + 1 == old_table_.size();
      require(copied || table[i] == old_table_[i], "append changed a block it must keep");
    }
    if (copy) {
      require(copy->src == last && copy->dst == table[old_table_.size() - 1] &&
                  refs(Tier::device)[static_cast<size_t>(copy->dst)] == 0,
              "copy-on-write names the wrong blocks");
      memory_.copy(Tier::device, copy->src, Tier::device, copy->dst);  // before this step's writes
      ++counts_.copy_on_write;
    }
    for (size_t i = old_table_.size(); i < table.size(); ++i) {
      require(refs(Tier::device)[static_cast<size_t>(table[i])] == 0,
              "append handed out a block that another table holds");
    }
    require(num_free(Tier::device) == free_before - needed, "append took another number of free blocks");
    for (const TokenId token : tokens) seq.push(token);
    write_kv(seq, before, before + n);
    ++counter;
    return true;
  }

  bool op_fork() {
    if (at_max_live()) return false;
    // Mostly fork at a partial last block: the next append to either side must copy it.
    const bool want_partial = rng_.percent(70);
    ModelSeq* parent =
        pick_seq([&](const ModelSeq& s) { return !want_partial || s.num_tokens() % config_.block_size != 0; });
    if (parent == nullptr) parent = pick_seq([](const ModelSeq&) { return true; });
    if (parent == nullptr) return false;
    const SeqId parent_id = parent->id;
    const SeqId child = next_id_++;
    const int32_t device_free = num_free(Tier::device);
    const int32_t host_free = num_free(Tier::host);
    note("fork", child, parent_id);
    manager_.fork(parent_id, child);
    ModelSeq copy = *parent;
    copy.id = child;
    seqs_.push_back(std::move(copy));
    const std::span<const BlockId> parent_table = manager_.block_table(parent_id);
    const std::span<const BlockId> child_table = manager_.block_table(child);
    require(std::equal(parent_table.begin(), parent_table.end(), child_table.begin(), child_table.end()),
            "fork: the child does not share the parent's blocks");
    require(num_free(Tier::device) == device_free && num_free(Tier::host) == host_free, "fork took blocks");
    ++counts_.fork;
    return true;
  }

  bool op_free() {
    if (seqs_.empty()) return false;
    const size_t at = rng_.below(seqs_.size());
    const ModelSeq& seq = seqs_[at];
    int32_t released = 0;  // blocks only this table holds return to the free list
    for (const BlockId b : manager_.block_table(seq.id)) {
      if (refs(seq.tier)[static_cast<size_t>(b)] == 1) ++released;
    }
    const int32_t free_before = num_free(seq.tier);
    note("free", seq.id, 0);
    manager_.free(seq.id);
    require(num_free(seq.tier) == free_before + released, "free released another number of blocks");
    remember_free(seq.id);
    if (at + 1 != seqs_.size()) seqs_[at] = std::move(seqs_.back());
    seqs_.pop_back();
    ++counts_.frees;
    return true;
  }

  void remember_free(SeqId id) {
    if (recent_frees_.size() < kRecentFrees) {
      recent_frees_.push_back(id);
    } else {
      recent_frees_[rng_.below(recent_frees_.size())] = id;
    }
  }

  // The whole fork family, in a random order (which decides the order of the moves).
  void collect_family(int64_t family, Tier tier) {
    group_.clear();
    for (const ModelSeq& seq : seqs_) {
      if (seq.family != family) continue;
      require(seq.tier == tier, "model: a fork family is split across tiers");
      group_.push_back(seq.id);
    }
    rng_.shuffle(group_);
  }

  // Distinct blocks of group_ in first-use order, with how many of the group's tables hold each;
  // and, per table entry of the group (in group order), which of those blocks it names.
  void collect_group_blocks(Tier tier) {
    group_blocks_.clear();
    group_block_refs_.clear();
    group_entries_.clear();
    std::vector<int32_t>& slot_of = group_index_[index(tier)];
    for (const SeqId id : group_) {
      for (const BlockId b : manager_.block_table(id)) {
        int32_t& entry = slot_of[static_cast<size_t>(b)];
        if (entry == 0) {
          group_blocks_.push_back(b);
          group_block_refs_.push_back(0);
          entry = static_cast<int32_t>(group_blocks_.size());
        }
        ++group_block_refs_[static_cast<size_t>(entry - 1)];
        group_entries_.push_back(entry - 1);
      }
    }
    for (const BlockId b : group_blocks_) slot_of[static_cast<size_t>(b)] = 0;
  }

  // After a swap every table of the group must name, entry by entry, where its old block went.
  void check_group_tables() {
    size_t k = 0;
    bool ok = true;
    for (const SeqId id : group_) {
      for (const BlockId b : manager_.block_table(id)) {
        ok = ok && k < group_entries_.size() && b == group_targets_[static_cast<size_t>(group_entries_[k])];
        ++k;
      }
    }
    require(ok && k == group_entries_.size(), "swap: a block table does not follow its blocks");
  }

  // Moves copy the group blocks that need a copy (those without a planned target), in first-use
  // order, into distinct blocks of `to_tier` that were free; fills in their targets.
  void check_moves(const std::vector<BlockMove>& moves, Tier to_tier) {
    std::vector<uint8_t>& taken = marks_[index(to_tier)];
    size_t next = 0;
    bool ok = true;
    for (size_t i = 0; i < group_blocks_.size() && ok; ++i) {
      if (group_targets_[i] != kNoBlock) continue;
      ok = next < moves.size() && moves[next].from == group_blocks_[i];
      if (!ok) break;
      const BlockId to = moves[next++].to;
      ok = to >= 0 && to < pool(to_tier).num_blocks() && refs(to_tier)[static_cast<size_t>(to)] == 0 &&
           taken[static_cast<size_t>(to)] == 0;
      if (ok) {
        taken[static_cast<size_t>(to)] = 1;
        group_targets_[i] = to;
      }
    }
    ok = ok && next == moves.size();
    for (const BlockMove& move : moves) {
      if (move.to >= 0 && move.to < pool(to_tier).num_blocks()) taken[static_cast<size_t>(move.to)] = 0;
    }
    require(ok, "swap moves are not the group's blocks to copy, in first-use order, into distinct free blocks");
  }

  bool op_swap_out() {
    ModelSeq* seq = pick_seq([](const ModelSeq& s) { return s.tier == Tier::device; });
    if (seq == nullptr) return false;
    collect_family(seq->family, Tier::device);
    collect_group_blocks(Tier::device);
    const auto needed = static_cast<int32_t>(group_blocks_.size());
    const int32_t host_free = num_free(Tier::host);
    const int32_t device_free = num_free(Tier::device);
    const bool fits = manager_.can_swap_out(group_);
    require(fits == (needed <= host_free), "can_swap_out disagrees with the free host blocks");
    if (!fits) {
      if (!rng_.percent(kForcePercent)) return false;
      note("swap out refused", group_.front(), needed);
      expect_refused(Expect::full, "swap out into a full host tier", [&] { manager_.swap_out(group_); });
      ++counts_.refused_host_full;
      return true;
    }
    // Blocks held by the group alone are freed; prefix hits shared with other requests stay.
    int32_t released = 0;
    for (size_t i = 0; i < group_blocks_.size(); ++i) {
      if (refs(Tier::device)[static_cast<size_t>(group_blocks_[i])] == group_block_refs_[i]) ++released;
    }
    note("swap out", group_.front(), static_cast<int64_t>(group_.size()));
    const std::vector<BlockMove> moves = manager_.swap_out(group_);
    group_targets_.assign(group_blocks_.size(), kNoBlock);  // every block is copied
    check_moves(moves, Tier::host);
    check_group_tables();
    for (const BlockMove& move : moves) memory_.copy(Tier::device, move.from, Tier::host, move.to);
    for (const SeqId id : group_) model(id).tier = Tier::host;
    require(num_free(Tier::host) == host_free - needed, "swap out took another number of host blocks");
    require(num_free(Tier::device) == device_free + released, "swap out freed another number of device blocks");
    ++counts_.swap_out;
    return true;
  }

  // The model's own swap-in plan: a full host block whose hash is still in the device prefix
  // cache comes back as that cached block (no copy); every other block is copied into a free one.
  struct SwapInPlan {
    int32_t consumed = 0;     // free device blocks the swap-in takes (a reused free block once)
    int32_t reused = 0;       // group blocks that come back without a copy
    int32_t reused_free = 0;  // distinct reused blocks that were on the free list
  };

  SwapInPlan plan_swap_in() {
    cached_blocks_.clear();
    for (BlockId b = 0; b < config_.num_device_blocks; ++b) {
      if (manager_.device_pool().meta(b).is_cached) cached_blocks_.push_back(b);
    }
    group_targets_.assign(group_blocks_.size(), kNoBlock);
    std::vector<uint8_t>& counted = marks_[index(Tier::device)];
    SwapInPlan plan;
    for (size_t i = 0; i < group_blocks_.size(); ++i) {
      const BlockMeta& host_meta = manager_.host_pool().meta(group_blocks_[i]);
      for (const BlockId b : cached_blocks_) {
        if (host_meta.has_hash && manager_.device_pool().meta(b).hash == host_meta.hash) group_targets_[i] = b;
      }
      const BlockId target = group_targets_[i];
      if (target == kNoBlock) {
        ++plan.consumed;
        continue;
      }
      ++plan.reused;
      if (refs(Tier::device)[static_cast<size_t>(target)] == 0 && counted[static_cast<size_t>(target)] == 0) {
        counted[static_cast<size_t>(target)] = 1;
        ++plan.consumed;
        ++plan.reused_free;
      }
    }
    for (const BlockId target : group_targets_) {
      if (target != kNoBlock) counted[static_cast<size_t>(target)] = 0;
    }
    return plan;
  }

  bool op_swap_in() {
    ModelSeq* seq = pick_seq([](const ModelSeq& s) { return s.tier == Tier::host; });
    if (seq == nullptr) return false;
    collect_family(seq->family, Tier::host);
    collect_group_blocks(Tier::host);
    for (size_t i = 0; i < group_blocks_.size(); ++i) {
      require(refs(Tier::host)[static_cast<size_t>(group_blocks_[i])] == group_block_refs_[i],
              "model: a host block is held outside its fork family");
    }
    const auto distinct = static_cast<int32_t>(group_blocks_.size());
    const int32_t host_free = num_free(Tier::host);
    const int32_t device_free = num_free(Tier::device);
    const SwapInPlan plan = plan_swap_in();
    const int32_t consumed = plan.consumed;
    const AllocStatus status = manager_.can_swap_in(group_);
    if (status != expected_status(distinct, consumed)) {
      fail(std::string("can_swap_in says ") + to_string(status) + " for " + std::to_string(distinct) +
           " host blocks of which " + std::to_string(plan.reused) + " are still cached on the device, taking " +
           std::to_string(consumed) + " of " + std::to_string(device_free) + " free device blocks (watermark " +
           std::to_string(manager_.watermark_blocks()) + ")");
    }
    if (status != AllocStatus::ok) {
      if (!rng_.percent(kForcePercent)) return false;
      if (consumed > device_free) {
        note("swap in refused", group_.front(), consumed);
        expect_refused(Expect::full, "swap in beyond the free device blocks", [&] { manager_.swap_in(group_); });
        ++counts_.refused_swap_in_full;
        return true;
      }
      ++counts_.forced_ok;
    }
    note("swap in", group_.front(), static_cast<int64_t>(group_.size()));
    const std::vector<BlockMove> moves = manager_.swap_in(group_);
    check_moves(moves, Tier::device);  // reused blocks need no move; verify() checks their content
    check_group_tables();
    for (const BlockMove& move : moves) memory_.copy(Tier::host, move.from, Tier::device, move.to);
    for (const SeqId id : group_) model(id).tier = Tier::device;
    require(num_free(Tier::device) == device_free - consumed, "swap in took another number of device blocks");
    require(num_free(Tier::host) == host_free + distinct, "swap in freed another number of host blocks");
    ++counts_.swap_in;
    counts_.swap_in_copied += static_cast<int64_t>(moves.size());
    counts_.swap_in_reused += plan.reused;
    counts_.swap_in_reused_free += plan.reused_free;
    return true;
  }

  bool op_reset_prefix_cache() {
    const KvStats before = manager_.stats();
    note("reset prefix cache", 0, before.device_blocks_cached);
    const int32_t uncached = manager_.reset_prefix_cache();
    const KvStats after = manager_.stats();
    require(uncached == before.device_blocks_cached && after.device_blocks_cached == 0 &&
                after.device_blocks_cached_free == 0 && after.device_blocks_free == before.device_blocks_free,
            "reset_prefix_cache");
    ++counts_.reset_prefix_cache;
    return true;
  }

  // --- calls that must be refused --------------------------------------------------------------

  bool op_misuse() {
    switch (rng_.below(7)) {
      case 0: return misuse_unknown_sequence();
      case 1: return misuse_double_free();
      case 2: return misuse_append_swapped();
      case 3: return misuse_bad_allocate();
      case 4: return misuse_bad_fork();
      case 5: return misuse_bad_swap_group();
      default: return misuse_bad_query();
    }
  }

  bool misuse_unknown_sequence() {
    const SeqId id = rng_.percent(50) ? -1 - static_cast<SeqId>(rng_.below(1000))
                                      : next_id_ + 1 + static_cast<SeqId>(rng_.below(1000));
    require(!manager_.contains(id), "contains() of a sequence never allocated");
    const TokenId token = random_token();
    const std::array<SeqId, 1> group{id};
    const uint64_t call = rng_.below(10);
    note("unknown sequence", id, static_cast<int64_t>(call));
    const char* what = "call on an unknown sequence";
    switch (call) {
      case 0: expect_refused(Expect::misuse, what, [&] { manager_.append_slots(id, std::span(&token, 1)); }); break;
      case 1: expect_refused(Expect::misuse, what, [&] { manager_.free(id); }); break;
      case 2: expect_refused(Expect::misuse, what, [&] { manager_.fork(id, next_id_); }); break;
      case 3: expect_refused(Expect::misuse, what, [&] { manager_.num_blocks_to_append(id, 1); }); break;
      case 4: expect_refused(Expect::misuse, what, [&] { manager_.swap_out(group); }); break;
      case 5: expect_refused(Expect::misuse, what, [&] { manager_.swap_in(group); }); break;
      case 6: expect_refused(Expect::misuse, what, [&] { manager_.can_swap_out(group); }); break;
      case 7: expect_refused(Expect::misuse, what, [&] { manager_.can_swap_in(group); }); break;
      case 8: expect_refused(Expect::misuse, what, [&] { manager_.block_table(id); }); break;
      default: expect_refused(Expect::misuse, what, [&] { manager_.num_tokens(id); }); break;
    }
    ++counts_.refused_unknown;
    return true;
  }

  bool misuse_double_free() {
    if (recent_frees_.empty()) return false;
    const SeqId id = recent_frees_[rng_.below(recent_frees_.size())];
    note("double free", id, 0);
    expect_refused(Expect::misuse, "double free", [&] { manager_.free(id); });
    ++counts_.refused_double_free;
    return true;
  }

  bool misuse_append_swapped() {
    const ModelSeq* seq = pick_seq([](const ModelSeq& s) { return s.tier == Tier::host; });
    if (seq == nullptr) return false;
    new_tokens_.clear();
    for (int32_t i = rng_.between(1, 2 * config_.block_size); i > 0; --i) new_tokens_.push_back(random_token());
    note("append to swapped", seq->id, static_cast<int64_t>(new_tokens_.size()));
    expect_refused(Expect::misuse, "append to a swapped sequence",
                   [&] { manager_.append_slots(seq->id, new_tokens_); });
    ++counts_.refused_swapped_append;
    return true;
  }

  bool misuse_bad_allocate() {
    new_tokens_.clear();
    for (int32_t i = rng_.between(1, 3 * config_.block_size); i > 0; --i) new_tokens_.push_back(random_token());
    const PromptRef prompt{new_tokens_, 0};
    const auto len = static_cast<int32_t>(new_tokens_.size());
    const uint64_t call = rng_.below(config_.enable_prefix_caching ? 5 : 4);
    note("bad allocate", next_id_, static_cast<int64_t>(call));
    switch (call) {
      case 4: {  // precomputed hashes that do not match the prompt's full blocks
        prompt_hashes_ = hash_prompt_blocks(new_tokens_, config_.block_size, 0);
        prompt_hashes_.push_back(kRootBlockHash);
        const PromptRef mismatched{new_tokens_, 0, prompt_hashes_};
        expect_refused(Expect::misuse, "allocate with the wrong number of block hashes",
                       [&] { manager_.allocate(next_id_, mismatched, len); });
        break;
      }
      case 0: {
        const ModelSeq* existing = pick_seq([](const ModelSeq&) { return true; });
        if (existing == nullptr) return false;
        expect_refused(Expect::misuse, "allocate of a live sequence",
                       [&] { manager_.allocate(existing->id, prompt, len); });
        break;
      }
      case 1:
        expect_refused(Expect::misuse, "allocate of 0 tokens", [&] { manager_.allocate(next_id_, prompt, 0); });
        break;
      case 2:
        expect_refused(Expect::misuse, "allocate past the prompt",
                       [&] { manager_.allocate(next_id_, prompt, len + 1); });
        break;
      default:
        expect_refused(Expect::misuse, "allocate of an empty prompt",
                       [&] { manager_.allocate(next_id_, PromptRef{}, 1); });
        break;
    }
    ++counts_.refused_bad_args;
    return true;
  }

  bool misuse_bad_fork() {
    const ModelSeq* parent = pick_seq([](const ModelSeq&) { return true; });
    if (parent == nullptr) return false;
    const SeqId parent_id = parent->id;
    const SeqId child = pick_seq([](const ModelSeq&) { return true; })->id;  // may be the parent
    note("bad fork", child, parent_id);
    expect_refused(Expect::misuse, "fork onto a live sequence", [&] { manager_.fork(parent_id, child); });
    ++counts_.refused_bad_args;
    return true;
  }

  bool misuse_bad_swap_group() {
    const ModelSeq* seq = pick_seq([](const ModelSeq&) { return true; });
    if (seq == nullptr) return false;
    const bool on_device = seq->tier == Tier::device;
    const uint64_t call = rng_.below(4);
    note("bad swap group", seq->id, static_cast<int64_t>(call));
    group_.assign({seq->id});
    switch (call) {
      case 0:  // a group must hold each sequence once
        group_.push_back(seq->id);
        if (on_device) {
          expect_refused(Expect::misuse, "swap out with a repeated sequence", [&] { manager_.swap_out(group_); });
        } else {
          expect_refused(Expect::misuse, "swap in with a repeated sequence", [&] { manager_.swap_in(group_); });
        }
        break;
      case 1:  // swap towards the tier the sequence is already in
        if (on_device) {
          expect_refused(Expect::misuse, "swap in of a device sequence", [&] { manager_.swap_in(group_); });
        } else {
          expect_refused(Expect::misuse, "swap out of a swapped sequence", [&] { manager_.swap_out(group_); });
        }
        break;
      case 2:
        if (on_device) {
          expect_refused(Expect::misuse, "can_swap_in of a device sequence", [&] { manager_.can_swap_in(group_); });
        } else {
          expect_refused(Expect::misuse, "can_swap_out of a swapped sequence", [&] { manager_.can_swap_out(group_); });
        }
        break;
      default:
        group_.clear();
        expect_refused(Expect::misuse, "swap of an empty group",
                       [&] { on_device ? manager_.swap_out(group_) : manager_.swap_in(group_); });
        break;
    }
    ++counts_.refused_bad_args;
    return true;
  }

  bool misuse_bad_query() {
    const ModelSeq* seq = pick_seq([](const ModelSeq&) { return true; });
    if (seq == nullptr) return false;
    const SeqId id = seq->id;
    const int32_t n = seq->num_tokens();
    const uint64_t call = rng_.below(3);
    note("bad query", id, static_cast<int64_t>(call));
    switch (call) {
      case 0:
        expect_refused(Expect::misuse, "negative token count", [&] { manager_.num_blocks_to_append(id, -1); });
        break;
      case 1: expect_refused(Expect::misuse, "slot past the end", [&] { manager_.slot(id, n); }); break;
      default: expect_refused(Expect::misuse, "negative slot", [&] { manager_.slot(id, -1); }); break;
    }
    ++counts_.refused_bad_args;
    return true;
  }

  // --- the full check after every operation ----------------------------------------------------

  void verify() {
    try {
      manager_.check_invariants();
    } catch (const std::logic_error& e) {
      fail(std::string("check_invariants: ") + e.what());
    }
    for (const Tier tier : {Tier::device, Tier::host}) {
      std::fill(refs(tier).begin(), refs(tier).end(), 0);
      std::fill(fills_[index(tier)].begin(), fills_[index(tier)].end(), -1);
    }
    verify_ids();
    for (const ModelSeq& seq : seqs_) verify_sequence(seq);
    const PoolTally device = verify_pool(Tier::device);
    verify_pool(Tier::host);
    verify_stats(device);
    verify_slot();
  }

  void verify_ids() {
    model_ids_.clear();
    for (const ModelSeq& seq : seqs_) model_ids_.push_back(seq.id);
    std::sort(model_ids_.begin(), model_ids_.end());
    require(manager_.sequence_ids() == model_ids_, "sequence_ids differ from the live sequences");
  }

  // Counts the table's references and compares every position's simulated KV with the model.
  void verify_sequence(const ModelSeq& seq) {
    const int32_t bs = config_.block_size;
    const int32_t n = seq.num_tokens();
    require(manager_.num_tokens(seq.id) == n, "num_tokens differs from the model");
    require(manager_.is_swapped(seq.id) == (seq.tier == Tier::host), "is_swapped differs from the model");
    const std::span<const BlockId> table = manager_.block_table(seq.id);
    require(static_cast<int32_t>(table.size()) == blocks_for(n), "block table length != ceil(tokens / block_size)");
    std::vector<int32_t>& tier_refs = refs(seq.tier);
    std::vector<int32_t>& tier_fills = fills_[index(seq.tier)];
    for (size_t i = 0; i < table.size(); ++i) {
      const BlockId b = table[i];
      require(b >= 0 && b < pool(seq.tier).num_blocks(), "block id out of range");
      const auto at = static_cast<size_t>(b);
      ++tier_refs[at];
      const int32_t fill = std::min(bs, n - static_cast<int32_t>(i) * bs);
      if (tier_fills[at] < 0) tier_fills[at] = fill;
      require(tier_fills[at] == fill, "tables sharing a block disagree on its fill");
      const KvValue* expected = seq.kv.data() + i * static_cast<size_t>(bs);
      if (!std::equal(expected, expected + fill, memory_.block(seq.tier, b))) fail_content(seq, i);
    }
  }

  [[noreturn]] void fail_content(const ModelSeq& seq, size_t block_index) {
    const int32_t bs = config_.block_size;
    const BlockId b = manager_.block_table(seq.id)[block_index];
    const KvValue* held = memory_.block(seq.tier, b);
    int32_t offset = 0;
    while (held[offset] == seq.kv[block_index * static_cast<size_t>(bs) + static_cast<size_t>(offset)]) ++offset;
    fail("sequence " + std::to_string(seq.id) + " position " +
         std::to_string(static_cast<int64_t>(block_index) * bs + offset) + " (" +
         (seq.tier == Tier::device ? "device" : "host") + " block " + std::to_string(b) + " slot " +
         std::to_string(offset) +
         ") does not hold the KV of its tokens (lost copy-on-write, wrong prefix hit or lost swap)");
  }

  struct PoolTally {
    int64_t filled = 0;       // slots filled in used blocks, as their holders' token counts say
    int32_t cached = 0;       // blocks marked cached
    int32_t cached_free = 0;  // of those, free ones
  };

  // Reference counts, fills and free list of one tier against the tables.
  PoolTally verify_pool(Tier tier) {
    const BlockPool& blocks = pool(tier);
    const std::vector<int32_t>& tier_refs = refs(tier);
    int32_t used = 0;
    PoolTally tally;
    for (BlockId b = 0; b < blocks.num_blocks(); ++b) {
      const BlockMeta& meta = blocks.meta(b);
      const auto at = static_cast<size_t>(b);
      require(meta.ref_count == tier_refs[at], "ref_count differs from the number of tables holding the block");
      if (meta.is_cached) {
        ++tally.cached;
        if (meta.ref_count == 0) ++tally.cached_free;
      }
      if (tier_refs[at] == 0) continue;
      ++used;
      tally.filled += fills_[index(tier)][at];
    }
    require(tier == Tier::device || tally.cached == 0, "a host block is marked cached");
    require(used == blocks.num_used() && blocks.num_free() + blocks.num_used() == blocks.num_blocks(),
            "free + used != total");
    free_list_ = blocks.free_list();
    require(static_cast<int32_t>(free_list_.size()) == blocks.num_free(), "free list length != num_free");
    std::vector<uint8_t>& on_list = marks_[index(tier)];
    bool ok = true;
    for (const BlockId b : free_list_) {
      const auto at = static_cast<size_t>(b);
      ok = ok && b >= 0 && b < blocks.num_blocks() && tier_refs[at] == 0 && on_list[at] == 0;
      if (!ok) break;
      on_list[at] = 1;
    }
    for (const BlockId b : free_list_) {
      if (b >= 0 && b < blocks.num_blocks()) on_list[static_cast<size_t>(b)] = 0;
    }
    require(ok, "a block on the free list is held by a table (or listed twice)");
    return tally;
  }

  void verify_stats(const PoolTally& device) {
    const KvStats s = manager_.stats();
    require(s.num_sequences == static_cast<int32_t>(seqs_.size()) && s.block_size == config_.block_size &&
                s.device_blocks_total == config_.num_device_blocks &&
                s.host_blocks_total == config_.num_host_blocks &&
                s.device_blocks_free == num_free(Tier::device) && s.host_blocks_free == num_free(Tier::host),
            "stats() sizes differ from the pools");
    require(s.device_slots_filled == device.filled, "stats().device_slots_filled differs from the tables");
    require(s.device_blocks_cached == device.cached && s.device_blocks_cached_free == device.cached_free,
            "stats() cached counts differ from the blocks marked cached");
    require(s.evictions >= last_stats_.evictions && s.prefix_query_tokens >= last_stats_.prefix_query_tokens &&
                s.prefix_hit_tokens >= last_stats_.prefix_hit_tokens,
            "a cumulative stats() counter went down");
    if (!config_.enable_prefix_caching) {
      require(s.device_blocks_cached == 0 && s.evictions == 0 && s.prefix_hit_tokens == 0,
              "prefix cache in use with prefix caching off");
    }
    last_stats_ = s;
  }

  // One position per check (rotating) against the documented slot formula.
  void verify_slot() {
    if (seqs_.empty()) return;
    const auto op = static_cast<size_t>(counts_.ops);
    const ModelSeq& seq = seqs_[op % seqs_.size()];
    const auto p = static_cast<int32_t>(op % static_cast<size_t>(seq.num_tokens()));
    const int32_t bs = config_.block_size;
    const BlockId block = manager_.block_table(seq.id)[static_cast<size_t>(p / bs)];
    const int64_t expected = static_cast<int64_t>(block) * bs + p % bs;
    require(manager_.slot(seq.id, p) == expected, "slot() differs from block_table * block_size + offset");
  }

  // Frees everything; every block of both tiers must then be free.
  void drain() {
    while (!seqs_.empty()) {
      op_free();
      verify();
    }
    const KvStats s = manager_.stats();
    require(s.num_sequences == 0 && manager_.sequence_ids().empty() && s.device_slots_filled == 0,
            "sequences left after freeing all");
    require(s.device_blocks_free == s.device_blocks_total && s.host_blocks_free == s.host_blocks_total,
            "blocks still used after freeing all");
    for (const Tier tier : {Tier::device, Tier::host}) {
      for (BlockId b = 0; b < pool(tier).num_blocks(); ++b) {
        require(pool(tier).meta(b).ref_count == 0, "a block is still referenced after freeing all");
      }
    }
  }

  RunConfig config_;
  Rng rng_;
  CountingBuf log_buf_;
  std::ostream log_stream_;
  KvEventLog event_log_;
  KvCacheManager manager_;
  KvMemory memory_;

  std::vector<ModelSeq> seqs_;  // live sequences, in an order the generator picks from
  std::vector<std::vector<TokenId>> topics_;
  std::vector<RecentPrompt> recent_;
  std::vector<SeqId> recent_frees_;
  SeqId next_id_ = 1;
  int64_t next_family_ = 1;
  OpCounts counts_;
  KvStats last_stats_;
  std::array<TraceEntry, kTraceLength> trace_{};

  // Recomputed by verify() after every operation, so valid at the start of the next one.
  std::array<std::vector<int32_t>, 2> refs_;   // per tier: tables holding each block
  std::array<std::vector<int32_t>, 2> fills_;  // per tier: the holders' fill of each block, -1 if none
  std::array<std::vector<uint8_t>, 2> marks_;  // per tier scratch, all zero between uses
  std::array<std::vector<int32_t>, 2> group_index_;  // per tier: block -> group_blocks_ index + 1, else 0

  // Scratch buffers reused across operations.
  std::vector<size_t> candidates_;
  std::vector<SeqId> group_;
  std::vector<BlockId> group_blocks_;
  std::vector<int32_t> group_block_refs_;
  std::vector<int32_t> group_entries_;   // per table entry of the group: index into group_blocks_
  std::vector<BlockId> group_targets_;   // per group block: where the swap puts it
  std::vector<BlockId> cached_blocks_;
  std::vector<BlockId> old_table_;
  std::vector<BlockId> free_list_;
  std::vector<SeqId> model_ids_;
  std::vector<TokenId> new_tokens_;
  std::vector<BlockHash> prompt_hashes_;
  Snapshot before_;
  Snapshot after_;
};

struct RunResult {
  OpCounts counts;
  KvStats stats;
};

RunResult run_checked(const RunConfig& config, std::streambuf* log_target = nullptr) {
  PropertyRun run(config, log_target);
  try {
    run.run();
  } catch (const PropertyFailure& failure) {
    BOOST_FAIL(failure.what());
  }
  return RunResult{run.counts(), run.stats()};
}

std::string event_log_of(uint64_t seed) {
  RunConfig config;
  config.seed = seed;
  config.num_ops = 100'000;
  std::ostringstream log;
  run_checked(config, log.rdbuf());
  return std::move(log).str();
}

}  // namespace

BOOST_AUTO_TEST_SUITE(kv_property)

BOOST_AUTO_TEST_CASE(million_random_operations_match_the_reference_model) {
  const RunConfig config;
  const RunResult result = run_checked(config);
  const OpCounts& c = result.counts;
  BOOST_TEST_MESSAGE("kv_property: " << summary(c, result.stats));

  // Each path must keep being exercised: the test is only as good as its generator.
  BOOST_TEST(c.ops == config.num_ops);
  BOOST_TEST(c.allocate > 1000);
  BOOST_TEST(c.allocate_chunk > 1000);
  BOOST_TEST(c.prefix_hit_allocs > 1000);
  BOOST_TEST(c.salted_allocs > 1000);
  BOOST_TEST(c.prefill_chunk > 1000);
  BOOST_TEST(c.decode > 1000);
  BOOST_TEST(c.multi_append > 1000);
  BOOST_TEST(c.fork > 1000);
  BOOST_TEST(c.copy_on_write > 1000);
  BOOST_TEST(c.frees > 1000);
  BOOST_TEST(c.swap_out > 1000);
  BOOST_TEST(c.swap_in > 1000);
  BOOST_TEST(c.swap_in_copied > 1000);
  BOOST_TEST(c.swap_in_reused > 1000);
  BOOST_TEST(c.reset_prefix_cache > 100);
  BOOST_TEST(result.stats.evictions > 1000);
  BOOST_TEST(c.refused_unknown > 1000);
  BOOST_TEST(c.refused_double_free > 1000);
  BOOST_TEST(c.refused_swapped_append > 1000);
  BOOST_TEST(c.refused_bad_args > 1000);
  BOOST_TEST(c.refused_alloc_full > 500);
  BOOST_TEST(c.refused_append_full > 500);
  BOOST_TEST(c.refused_host_full > 500);
  BOOST_TEST(c.refused_swap_in_full > 500);
}

BOOST_AUTO_TEST_CASE(odd_block_size_without_prefix_caching) {
  RunConfig config;
  config.seed = 0x5eed'0002;
  config.num_ops = 200'000;
  config.block_size = 3;
  config.enable_prefix_caching = false;
  config.event_log = false;
  const RunResult result = run_checked(config);
  BOOST_TEST_MESSAGE("kv_property (block_size 3, no prefix caching): " << summary(result.counts, result.stats));
  BOOST_TEST(result.counts.prefix_hit_allocs == 0);
  BOOST_TEST(result.stats.evictions == 0);
  BOOST_TEST(result.counts.copy_on_write > 1000);
  BOOST_TEST(result.counts.swap_out > 1000);
  BOOST_TEST(result.counts.swap_in > 1000);
}

BOOST_AUTO_TEST_CASE(single_token_blocks_with_prefix_caching) {
  RunConfig config;
  config.seed = 0x5eed'0003;
  config.num_ops = 100'000;
  config.block_size = 1;  // every block is full at once: no partial block, so no copy-on-write
  const RunResult result = run_checked(config);
  BOOST_TEST_MESSAGE("kv_property (block_size 1): " << summary(result.counts, result.stats));
  BOOST_TEST(result.counts.copy_on_write == 0);
  BOOST_TEST(result.counts.prefix_hit_allocs > 1000);
  BOOST_TEST(result.stats.evictions > 1000);
  BOOST_TEST(result.counts.swap_in > 1000);
}

BOOST_AUTO_TEST_CASE(same_seed_gives_a_byte_identical_event_log) {
  const std::string first = event_log_of(2024);
  const std::string second = event_log_of(2024);
  const std::string other = event_log_of(2025);
  BOOST_TEST(!first.empty());
  BOOST_TEST((first == second));  // extra parentheses: do not print megabytes on failure
  BOOST_TEST((first != other));
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace pagedllm::kv
