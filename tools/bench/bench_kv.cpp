// bench_kv: what the paged KV cache manager (core/kv) costs on the CPU, against the issue's
// targets (at most 50 ns per append; at most 50 us for the block work of one engine step with
// 1,024 running sequences over 100k device blocks) and against a nano-vllm-style baseline block
// manager measured in the same run, so that every figure comes with ratios taken side by side.
//
//   bench_kv [--steps N] [--sequences N] [--blocks N] [--repeats N] [--quick] [--json PATH]
//
// Per-operation figures are medians over timed batches (std::chrono::steady_clock around a batch
// of calls), so a batch that lost the CPU does not move them. The decode-step figures time every
// step on its own. The workload is deterministic (fixed-seed std::mt19937_64), and all tokens and
// prompts are produced outside the timed regions.

#include <algorithm>
#include <array>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <exception>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <ostream>
#include <random>
#include <span>
#include <stdexcept>
#include <streambuf>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "core/common/types.h"
#include "core/kv/kv_cache_config.h"
#include "core/kv/kv_cache_manager.h"
#include "core/kv/kv_event_log.h"

namespace {

namespace kv = pagedllm::kv;
using pagedllm::SeqId;
using pagedllm::TokenId;
using Clock = std::chrono::steady_clock;

constexpr double kAppendTargetNs = 50.0;
constexpr double kStepTargetUs = 50.0;
constexpr int32_t kBlockSize = 16;
constexpr SeqId kNoSeq = -1;
constexpr TokenId kVocabSize = 32'000;
constexpr TokenId kUniqueTokenBase = 1 << 24;  // stamped tokens, outside the vocabulary
constexpr double kNone = std::numeric_limits<double>::quiet_NaN();
constexpr const char* kBaselineName = "nano-vllm-style baseline";

// --- sink and clock ----------------------------------------------------------------------------

// Timed loops fold every result into a local accumulator that is stored here once per loop: the
// compiler must then compute each call's result (the baseline is inline in this file), and no
// volatile access sits inside a timed loop.
volatile uint64_t g_sink = 0;
void consume(uint64_t value) { g_sink = g_sink + value; }

double elapsed_ns(Clock::time_point start, Clock::time_point stop) {
  return std::chrono::duration<double, std::nano>(stop - start).count();
}

template <typename Fn>
double time_ns(Fn&& fn) {
  const auto start = Clock::now();
  fn();
  return elapsed_ns(start, Clock::now());
}

// --- configuration -----------------------------------------------------------------------------

struct BenchConfig {
  int32_t steps = 2'000;
  int32_t warmup_steps = 200;
  int32_t sequences = 1'024;
  int32_t device_blocks = 100'000;
  int32_t host_blocks = 20'000;
  int32_t repeats = 3;                 // interleaved runs of every suite; samples are pooled
  int32_t prompt_tokens = 1'000;       // prompts of the decode workload
  int32_t shared_prefix_tokens = 512;  // a system prompt that some prompts start with
  double finish_fraction = 0.01;       // running sequences that finish (and are replaced) per step
  double shared_fraction = 0.5;        // new prompts that start with the shared prefix
  int32_t max_initial_age = 256;       // decode tokens the first sequences already hold
  int32_t micro_prompt_tokens = 512;
  int32_t micro_batches = 100;         // timed batches per operation and repeat
  int32_t append_cycles = 8;           // append cycles (4 blocks of tokens each) per repeat
  uint64_t seed = 0x5eed'cafe'f00dULL;
  bool quick = false;
  std::string json_path;
};

// Sizes of the per-operation suite, scaled to the pool so that it fits with room to spare.
struct MicroSizes {
  int32_t batch = 0;             // operations per timed batch (allocate, free, fork, match)
  int32_t append_sequences = 0;  // sequences appended to in each timed append round
  int32_t resident = 0;          // 1,000-token sequences kept alive in the background
  int32_t swap_groups = 8;
};

MicroSizes micro_sizes(const BenchConfig& config) {
  MicroSizes sizes;
  sizes.batch = std::clamp(config.device_blocks / 1'500, 4, 64);
  sizes.append_sequences = std::clamp(config.device_blocks / 400, 4, 256);
  sizes.resident = std::clamp(config.device_blocks / 400, 1, 256);
  return sizes;
}

kv::KvCacheConfig kv_config(const BenchConfig& config) {
  kv::KvCacheConfig result;
  result.block_size = kBlockSize;
  result.num_device_blocks = config.device_blocks;
  result.num_host_blocks = config.host_blocks;
  return result;  // default watermark (1%) and prefix caching on, as the engine runs it
}

// --- tokens ------------------------------------------------------------------------------------

// Every token the benchmark feeds in, from one fixed-seed generator. Prompts are slices of a random
// pool made distinct by one stamped token, so only the shared prefix is ever found in a prefix
// cache; two instances with the same seed produce the same sequence of prompts and decisions.
class TokenSource {
 public:
  TokenSource(uint64_t seed, int32_t shared_prefix_tokens)
      : rng_(seed), pool_(kPoolTokens), shared_prefix_(static_cast<size_t>(shared_prefix_tokens)) {
    std::uniform_int_distribution<TokenId> token(0, kVocabSize - 1);
    for (TokenId& t : pool_) t = token(rng_);
    for (TokenId& t : shared_prefix_) t = token(rng_);
  }

  static constexpr size_t kPoolTokens = size_t{1} << 16;

  uint64_t random() { return rng_(); }
  bool chance(double probability) {
    return static_cast<double>(rng_() >> 11) * 0x1.0p-53 < probability;
  }
  std::span<const TokenId> shared_prefix() const { return shared_prefix_; }
  TokenId decode_token(uint64_t index) const { return pool_[index % kPoolTokens]; }

  // Fills `out` with a prompt that no other call returns, after the shared prefix when `shared`.
  void fill_prompt(std::span<TokenId> out, bool shared) {
    size_t pos = 0;
    if (shared) {
      pos = std::min(shared_prefix_.size(), out.size() - 1);
      std::copy_n(shared_prefix_.begin(), pos, out.begin());
    }
    out[pos++] = kUniqueTokenBase + next_unique_++;
    const size_t rest = out.size() - pos;
    const size_t start = rng_() % (kPoolTokens - rest);
    std::copy_n(pool_.begin() + static_cast<std::ptrdiff_t>(start), rest,
                out.begin() + static_cast<std::ptrdiff_t>(pos));
  }

 private:
  std::mt19937_64 rng_;
  std::vector<TokenId> pool_;
  std::vector<TokenId> shared_prefix_;
  TokenId next_unique_ = 0;
};

// --- the two block managers behind one interface -----------------------------------------------

// pagedllm's KvCacheManager as the workloads drive it: a new sequence gets slots for its whole
// prompt at admission (no chunked prefill), and each decode step appends one token.
class PagedKv {
 public:
  static constexpr bool kHasCowAndSwap = true;

  PagedKv(const BenchConfig& config, kv::KvEventLog* log) : manager_(kv_config(config), log), log_(log) {}

  void begin_step(int64_t step) {
    if (log_ != nullptr) log_->set_step(step);
  }
  int32_t num_free_blocks() const { return manager_.device_pool().num_free(); }

  bool can_allocate(std::span<const TokenId> prompt) const {
    return manager_.can_allocate(kv::PromptRef{prompt, 0}, length(prompt)) == kv::AllocStatus::ok;
  }
  int32_t allocate(SeqId seq, std::span<const TokenId> prompt) {
    return manager_.allocate(seq, kv::PromptRef{prompt, 0}, length(prompt));
  }
  int32_t match_prefix(std::span<const TokenId> prompt) const {
    return manager_.match_prefix(kv::PromptRef{prompt, 0}).num_cached_tokens;
  }
  bool can_append(SeqId seq) const { return manager_.can_append_slots(seq, 1); }
  // Returns a value that depends on the call, for the sink.
  int64_t append(SeqId seq, TokenId token) {
    const auto copy = manager_.append_slots(seq, std::span<const TokenId>(&token, 1));
    return copy ? copy->dst : 1;
  }
  void fork(SeqId parent, SeqId child) { manager_.fork(parent, child); }
  void free(SeqId seq) { manager_.free(seq); }
  size_t swap_out(std::span<const SeqId> group) { return manager_.swap_out(group).size(); }
  size_t swap_in(std::span<const SeqId> group) { return manager_.swap_in(group).size(); }

  kv::KvCacheManager& manager() { return manager_; }

 private:
  static int32_t length(std::span<const TokenId> prompt) { return static_cast<int32_t>(prompt.size()); }

  kv::KvCacheManager manager_;
  kv::KvEventLog* log_;
};

// The nano-vllm-style baseline: nano-vllm's block manager (engine/block_manager.py) transcribed to
// C++ with the plain containers such a port would use. It is the reference point, not a strawman,
// so it stays faithful except for three changes that can only make it faster or bounded: a block
// taken for new content drops its stale prefix-cache entry (nano-vllm never erases, so its map
// grows without bound), lookups stop after the first miss, and the maps are reserved up front as
// pagedllm's prefix cache is. A sequence's block table and token ids share one map entry (the
// Python keeps both on the Sequence object). It has no copy-on-write and no swap, as nano-vllm.
class BaselineBlockManager {
 public:
  static constexpr bool kHasCowAndSwap = false;

  BaselineBlockManager(int32_t num_blocks, int32_t block_size)
      : block_size_(block_size),
        ref_counts_(static_cast<size_t>(num_blocks), 0),
        block_hashes_(static_cast<size_t>(num_blocks), kNoHash),
        block_tokens_(static_cast<size_t>(num_blocks)) {
    for (int block = 0; block < num_blocks; ++block) free_ids_.push_back(block);
    used_ids_.reserve(static_cast<size_t>(num_blocks));
    hash_to_block_.reserve(static_cast<size_t>(num_blocks));
  }

  void begin_step(int64_t /*step*/) {}
  int32_t num_free_blocks() const { return static_cast<int32_t>(free_ids_.size()); }

  bool can_allocate(std::span<const TokenId> prompt) const {
    return num_free_blocks() >= blocks_for(prompt.size());
  }

  // nano-vllm's allocate: walks the prompt's blocks, sharing cached ones until the first miss.
  int32_t allocate(SeqId seq_id, std::span<const TokenId> prompt) {
    Sequence& seq = sequences_[seq_id];
    seq.tokens.assign(prompt.begin(), prompt.end());
    const int32_t num_blocks = blocks_for(prompt.size());
    seq.block_table.reserve(static_cast<size_t>(num_blocks));
    uint64_t hash = kNoHash;
    bool cache_miss = false;
    int32_t cached_tokens = 0;
    for (int32_t i = 0; i < num_blocks; ++i) {
      const std::span<const TokenId> tokens = block_of(prompt, i);
      const bool full = static_cast<int32_t>(tokens.size()) == block_size_;
      hash = full ? hash_tokens(hash, tokens) : kNoHash;
      int block = cache_miss || !full ? -1 : find_cached(hash, tokens);
      if (block < 0) {
        cache_miss = true;
        block = take_block(free_ids_.front());
        if (full) remember(block, hash, tokens);
      } else {
        cached_tokens += block_size_;
        if (used_ids_.contains(block)) {
          ++ref_counts_[static_cast<size_t>(block)];
        } else {
          take_block(block);  // a hit on a free block: a linear search of the free deque
          remember(block, hash, tokens);
        }
      }
      seq.block_table.push_back(block);
    }
    return cached_tokens;
  }

  int32_t match_prefix(std::span<const TokenId> prompt) const {
    uint64_t hash = kNoHash;
    int32_t cached_tokens = 0;
    for (int32_t i = 0; i < blocks_for(prompt.size()); ++i) {
      const std::span<const TokenId> tokens = block_of(prompt, i);
      if (static_cast<int32_t>(tokens.size()) != block_size_) break;
      hash = hash_tokens(hash, tokens);
      if (find_cached(hash, tokens) < 0) break;
      cached_tokens += block_size_;
    }
    return cached_tokens;
  }

  // nano-vllm's can_append, asked before the token joins the sequence.
  bool can_append(SeqId seq_id) const {
    const Sequence& seq = sequences_.at(seq_id);
    const bool needs_block = seq.tokens.size() % static_cast<size_t>(block_size_) == 0;
    return free_ids_.size() >= (needs_block ? size_t{1} : size_t{0});
  }

  // nano-vllm's may_append, after the token has joined the sequence.
  int64_t append(SeqId seq_id, TokenId token) {
    Sequence& seq = sequences_.at(seq_id);
    seq.tokens.push_back(token);
    const size_t offset = seq.tokens.size() % static_cast<size_t>(block_size_);
    std::vector<int>& table = seq.block_table;
    if (offset == 1) {  // the token opens a block
      table.push_back(take_block(free_ids_.front()));
    } else if (offset == 0) {  // the token filled the last block: offer it to the prefix cache
      const uint64_t parent = table.size() > 1 ? block_hashes_[static_cast<size_t>(table[table.size() - 2])] : kNoHash;
      const auto tokens = std::span<const TokenId>(seq.tokens).last(static_cast<size_t>(block_size_));
      remember(table.back(), hash_tokens(parent, tokens), tokens);
    }
    return table.back();
  }

  void fork(SeqId parent, SeqId child) {
    Sequence copy = sequences_.at(parent);
    for (const int block : copy.block_table) ++ref_counts_[static_cast<size_t>(block)];
    sequences_.emplace(child, std::move(copy));
  }

  // nano-vllm's deallocate: the tail is released first.
  void free(SeqId seq_id) {
    const auto it = sequences_.find(seq_id);
    const std::vector<int>& table = it->second.block_table;
    for (auto block = table.rbegin(); block != table.rend(); ++block) {
      if (--ref_counts_[static_cast<size_t>(*block)] == 0) {
        used_ids_.erase(*block);
        free_ids_.push_back(*block);
      }
    }
    sequences_.erase(it);
  }

 private:
  struct Sequence {
    std::vector<int> block_table;
    std::vector<TokenId> tokens;
  };

  static constexpr uint64_t kNoHash = std::numeric_limits<uint64_t>::max();

  // std::hash of the block's tokens folded with hash_combine, chained over the parent block's hash
  // the way nano-vllm chains xxhash.
  static uint64_t hash_tokens(uint64_t parent, std::span<const TokenId> tokens) {
    uint64_t seed = std::hash<uint64_t>{}(parent);
    for (const TokenId token : tokens) {
      seed ^= std::hash<TokenId>{}(token) + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2);
    }
    return seed;
  }

  int32_t blocks_for(size_t num_tokens) const {
    const auto block_size = static_cast<size_t>(block_size_);
    return static_cast<int32_t>((num_tokens + block_size - 1) / block_size);
  }

  std::span<const TokenId> block_of(std::span<const TokenId> tokens, int32_t index) const {
    const size_t begin = static_cast<size_t>(index) * static_cast<size_t>(block_size_);
    return tokens.subspan(begin, std::min(static_cast<size_t>(block_size_), tokens.size() - begin));
  }

  // The cached block for `hash`, if its tokens match (nano-vllm checks them too), else -1.
  int find_cached(uint64_t hash, std::span<const TokenId> tokens) const {
    const auto it = hash_to_block_.find(hash);
    if (it == hash_to_block_.end()) return -1;
    const std::vector<TokenId>& held = block_tokens_[static_cast<size_t>(it->second)];
    return std::equal(held.begin(), held.end(), tokens.begin(), tokens.end()) ? it->second : -1;
  }

  // nano-vllm's _allocate_block: the block leaves the free deque (at once from the front, by a
  // linear search elsewhere), joins the used set, and forgets its old content.
  int take_block(int block) {
    const auto index = static_cast<size_t>(block);
    if (block_hashes_[index] != kNoHash) {
      const auto it = hash_to_block_.find(block_hashes_[index]);
      if (it != hash_to_block_.end() && it->second == block) hash_to_block_.erase(it);
      block_hashes_[index] = kNoHash;
    }
    block_tokens_[index].clear();
    ref_counts_[index] = 1;
    if (free_ids_.front() == block) {
      free_ids_.pop_front();
    } else {
      free_ids_.erase(std::find(free_ids_.begin(), free_ids_.end(), block));
    }
    used_ids_.insert(block);
    return block;
  }

  // nano-vllm's Block.update plus its hash_to_block_id entry.
  void remember(int block, uint64_t hash, std::span<const TokenId> tokens) {
    const auto index = static_cast<size_t>(block);
    block_hashes_[index] = hash;
    block_tokens_[index].assign(tokens.begin(), tokens.end());
    hash_to_block_[hash] = block;
  }

  int32_t block_size_;
  std::deque<int> free_ids_;
  std::unordered_set<int> used_ids_;
  std::vector<int> ref_counts_;
  std::vector<uint64_t> block_hashes_;              // kNoHash until the block is full
  std::vector<std::vector<TokenId>> block_tokens_;  // a full block's tokens, checked on a hit
  std::unordered_map<uint64_t, int> hash_to_block_;
  std::unordered_map<int64_t, Sequence> sequences_;  // block tables (and token ids) by sequence
};

// An ostream target that keeps only a byte count: the event log's formatting and write cost,
// without a buffer growing through the run.
class CountingNullBuffer : public std::streambuf {
 public:
  int64_t bytes() const { return bytes_; }

 protected:
  std::streamsize xsputn(const char* /*text*/, std::streamsize count) override {
    bytes_ += count;
    return count;
  }
  int_type overflow(int_type ch) override {
    ++bytes_;
    return traits_type::not_eof(ch);
  }

 private:
  int64_t bytes_ = 0;
};

// --- statistics --------------------------------------------------------------------------------

double median(std::vector<double> values) {
  if (values.empty()) return kNone;
  const auto middle = values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2);
  std::nth_element(values.begin(), middle, values.end());
  return *middle;
}

// Nearest-rank percentile of sorted values.
double percentile(const std::vector<double>& sorted, double fraction) {
  if (sorted.empty()) return kNone;
  const auto rank = static_cast<size_t>(std::ceil(fraction * static_cast<double>(sorted.size())));
  return sorted[std::clamp(rank, size_t{1}, sorted.size()) - 1];
}

double ratio(double numerator, double denominator) {
  return std::isfinite(numerator) && std::isfinite(denominator) && denominator > 0.0
             ? numerator / denominator
             : kNone;
}

// --- 1. per-operation suite --------------------------------------------------------------------

using SampleMap = std::map<std::string, std::vector<double>>;  // op key -> ns/op of each batch

// The operations timed one by one, in print order. `has_target`: the 50 ns append target applies.
struct OpSpec {
  const char* key;
  const char* label;
  bool has_target;
};

constexpr OpSpec kOps[] = {
    {"append_slot", "append_slots 1 token, into current block (common)", true},
    {"append_fill", "append_slots 1 token that fills its block (hash)", false},
    {"append_new_block", "append_slots 1 token that opens a new block", false},
    {"append_amortized", "append_slots 1 token, amortized over 16", true},
    {"fresh_append_new_block", "  same, new block, fresh pool (no eviction)", false},
    {"fresh_append_amortized", "  same, amortized, fresh pool (no eviction)", true},
    {"can_append", "can_append_slots(seq, 1)", false},
    {"allocate_miss", "allocate 512-token prompt, no prefix hit", false},
    {"free_unshared", "free a 512-token sequence, unshared", false},
    {"allocate_hit", "allocate 520-token prompt, 32/33 blocks hit", false},
    {"free_shared", "free a 520-token sequence, 32 blocks shared", false},
    {"match_hit", "match_prefix 520 tokens, 32 blocks hit", false},
    {"match_miss", "match_prefix 512 tokens, miss at block 0", false},
    {"fork", "fork a 520-token sequence (33 blocks)", false},
    {"cow_append", "append_slots 1 token, copy-on-write", false},
    {"swap_out", "swap_out a 4-sequence group (36 blocks)", false},
    {"swap_in", "swap_in a 4-sequence group (36 blocks)", false},
    {"swap_pair", "swap_out + swap_in, 4-sequence group", false},
};

// Runs every operation on one warm manager and records ns/op per timed batch.
template <typename Kv>
class MicroSuite {
 public:
  MicroSuite(Kv& kv, const BenchConfig& config, SampleMap& samples)
      : kv_(kv),
        config_(config),
        sizes_(micro_sizes(config)),
        tokens_(config.seed, config.micro_prompt_tokens),
        samples_(samples) {}

  void run() {
    bench_append("fresh_");  // a new pool: no free block holds cached content, nothing is evicted
    warm();
    bench_append("");
    bench_allocate_miss();
    bench_prefix_hit();
    bench_match();
    bench_fork();
    if constexpr (Kv::kHasCowAndSwap) bench_swap();
  }

 private:
  static constexpr int32_t kAppendRounds = 4 * kBlockSize;
  static constexpr int32_t kBackgroundPromptTokens = 1'000;
  static constexpr int32_t kGroupSize = 4;
  static constexpr int32_t kGroupTokens = 8;  // decode tokens each sample of a group adds

  void record(const std::string& key, double ns, size_t ops) {
    samples_[key].push_back(ns / static_cast<double>(ops));
  }

  std::span<TokenId> prompt(size_t index, int32_t length) {
    return std::span(prompts_).subspan(index * static_cast<size_t>(length), static_cast<size_t>(length));
  }

  void fill_unique_prompts(int32_t count, int32_t length) {
    prompts_.resize(static_cast<size_t>(count) * static_cast<size_t>(length));
    for (int32_t k = 0; k < count; ++k) tokens_.fill_prompt(prompt(static_cast<size_t>(k), length), false);
  }

  // Untimed: `count` new sequences with distinct prompts of `length` tokens.
  std::vector<SeqId> admit(int32_t count, int32_t length) {
    fill_unique_prompts(count, length);
    std::vector<SeqId> seqs;
    for (int32_t k = 0; k < count; ++k) {
      seqs.push_back(next_seq_++);
      kv_.allocate(seqs.back(), prompt(static_cast<size_t>(k), length));
    }
    return seqs;
  }

  std::vector<SeqId> fresh_ids(int32_t count) {
    std::vector<SeqId> seqs(static_cast<size_t>(count));
    for (SeqId& seq : seqs) seq = next_seq_++;
    return seqs;
  }

  void free_all(std::span<const SeqId> seqs) {
    for (const SeqId seq : seqs) kv_.free(seq);
  }

  // The steady state of a server that has run a while: the pool was filled and emptied once, so
  // every free block still holds cached content (allocations evict), and a background of running
  // sequences populates the maps.
  void warm() {
    const int32_t blocks_per_prompt = (kBackgroundPromptTokens + kBlockSize - 1) / kBlockSize;
    std::vector<SeqId> filler;
    while (kv_.num_free_blocks() > blocks_per_prompt) {
      const std::vector<SeqId> one = admit(1, kBackgroundPromptTokens);
      filler.push_back(one.front());
    }
    free_all(filler);
    admit(sizes_.resident, kBackgroundPromptTokens);
    // The prompt that hits: the shared prefix (32 blocks) and 8 more tokens, held by a resident.
    hit_prompt_.assign(tokens_.shared_prefix().begin(), tokens_.shared_prefix().end());
    for (int32_t t = 0; t < kGroupTokens; ++t) hit_prompt_.push_back(tokens_.decode_token(static_cast<uint64_t>(t)));
    kv_.allocate(next_seq_++, hit_prompt_);
    fork_parent_ = admit(1, config_.micro_prompt_tokens + kGroupTokens).front();
  }

  // Each cycle admits sequences of 32 blocks + 1 token, so that in round r every sequence writes
  // block offset (1 + r) % 16: rounds are grouped by what the append has to do. Keys get `prefix`.
  void bench_append(const std::string& prefix) {
    for (int32_t cycle = 0; cycle < config_.append_cycles; ++cycle) {
      const std::vector<SeqId> seqs = admit(sizes_.append_sequences, config_.micro_prompt_tokens + 1);
      uint64_t acc = 0;
      double cycle_ns = 0.0;
      for (int32_t round = 0; round < kAppendRounds; ++round) {
        const double check_ns = time_ns([&] {
          for (const SeqId seq : seqs) acc += kv_.can_append(seq) ? 1 : 0;
        });
        const double append_ns = time_ns([&] {
          for (const SeqId seq : seqs) acc += static_cast<uint64_t>(kv_.append(seq, tokens_.decode_token(cursor_++)));
        });
        record(prefix + "can_append", check_ns, seqs.size());
        record(prefix + append_key((1 + round) % kBlockSize), append_ns, seqs.size());
        cycle_ns += append_ns;
      }
      record(prefix + "append_amortized", cycle_ns, seqs.size() * kAppendRounds);
      consume(acc);
      free_all(seqs);
    }
  }

  static const char* append_key(int32_t offset) {
    if (offset == 0) return "append_new_block";
    if (offset == kBlockSize - 1) return "append_fill";
    return "append_slot";
  }

  void bench_allocate_miss() {
    const int32_t length = config_.micro_prompt_tokens;
    for (int32_t b = 0; b < config_.micro_batches; ++b) {
      fill_unique_prompts(sizes_.batch, length);
      const std::vector<SeqId> seqs = fresh_ids(sizes_.batch);
      uint64_t acc = 0;
      record("allocate_miss", time_ns([&] {
               for (size_t k = 0; k < seqs.size(); ++k) acc += static_cast<uint64_t>(kv_.allocate(seqs[k], prompt(k, length)));
             }), seqs.size());
      record("free_unshared", time_ns([&] { free_all(seqs); }), seqs.size());
      consume(acc);
    }
  }

  void bench_prefix_hit() {
    for (int32_t b = 0; b < config_.micro_batches; ++b) {
      const std::vector<SeqId> seqs = fresh_ids(sizes_.batch);
      uint64_t acc = 0;
      record("allocate_hit", time_ns([&] {
               for (const SeqId seq : seqs) acc += static_cast<uint64_t>(kv_.allocate(seq, hit_prompt_));
             }), seqs.size());
      record("free_shared", time_ns([&] { free_all(seqs); }), seqs.size());
      consume(acc);
    }
  }

  void bench_match() {
    const int32_t length = config_.micro_prompt_tokens;
    fill_unique_prompts(1, length);
    const std::span<const TokenId> missing = prompt(0, length);
    const auto batch = static_cast<size_t>(sizes_.batch);
    for (int32_t b = 0; b < config_.micro_batches; ++b) {
      uint64_t acc = 0;
      record("match_hit", time_ns([&] {
               for (size_t k = 0; k < batch; ++k) acc += static_cast<uint64_t>(kv_.match_prefix(hit_prompt_));
             }), batch);
      record("match_miss", time_ns([&] {
               for (size_t k = 0; k < batch; ++k) acc += static_cast<uint64_t>(kv_.match_prefix(missing));
             }), batch);
      consume(acc + 1);
    }
  }

  // Forks the parent, whose last block is partial; pagedllm's children then copy it on write.
  void bench_fork() {
    for (int32_t b = 0; b < config_.micro_batches; ++b) {
      const std::vector<SeqId> children = fresh_ids(sizes_.batch);
      record("fork", time_ns([&] {
               for (const SeqId child : children) kv_.fork(fork_parent_, child);
             }), children.size());
      if constexpr (Kv::kHasCowAndSwap) {
        uint64_t acc = 0;
        record("cow_append", time_ns([&] {
                 for (const SeqId child : children) acc += static_cast<uint64_t>(kv_.append(child, tokens_.decode_token(cursor_++)));
               }), children.size());
        consume(acc);
      }
      free_all(children);
    }
  }

  // Groups as one request with 4 samples makes them: a 520-token prompt forked three times, then
  // kGroupTokens tokens of its own per sample (32 shared blocks, 4 private ones).
  std::vector<std::vector<SeqId>> make_groups() {
    std::vector<std::vector<SeqId>> groups;
    for (int32_t g = 0; g < sizes_.swap_groups; ++g) {
      std::vector<SeqId> group = admit(1, config_.micro_prompt_tokens + kGroupTokens);
      for (int32_t k = 1; k < kGroupSize; ++k) {
        group.push_back(next_seq_++);
        kv_.fork(group.front(), group.back());
      }
      for (const SeqId seq : group) {
        for (int32_t t = 0; t < kGroupTokens; ++t) kv_.append(seq, tokens_.decode_token(cursor_++));
      }
      groups.push_back(std::move(group));
    }
    return groups;
  }

  void bench_swap() {
    const std::vector<std::vector<SeqId>> groups = make_groups();
    uint64_t acc = 0;
    for (int32_t b = 0; b < config_.micro_batches; ++b) {
      for (const std::vector<SeqId>& group : groups) {
        const auto start = Clock::now();
        acc += kv_.swap_out(group);
        const auto middle = Clock::now();
        acc += kv_.swap_in(group);
        const auto stop = Clock::now();
        record("swap_out", elapsed_ns(start, middle), 1);
        record("swap_in", elapsed_ns(middle, stop), 1);
        record("swap_pair", elapsed_ns(start, stop), 1);
      }
    }
    consume(acc);
    for (const std::vector<SeqId>& group : groups) free_all(group);
  }

  Kv& kv_;
  const BenchConfig& config_;
  MicroSizes sizes_;
  TokenSource tokens_;
  SampleMap& samples_;
  std::vector<TokenId> prompts_;
  std::vector<TokenId> hit_prompt_;
  SeqId next_seq_ = 1;
  SeqId fork_parent_ = kNoSeq;
  uint64_t cursor_ = 0;  // next decode token
};

struct MicroResults {
  SampleMap paged;
  SampleMap baseline;
};

MicroResults run_micro(const BenchConfig& config) {
  MicroResults results;
  for (int32_t rep = 0; rep < config.repeats; ++rep) {
    {
      PagedKv paged(config, nullptr);
      MicroSuite<PagedKv>(paged, config, results.paged).run();
      paged.manager().check_invariants();  // the suite drove the manager correctly
    }
    BaselineBlockManager baseline(config.device_blocks, kBlockSize);
    MicroSuite<BaselineBlockManager>(baseline, config, results.baseline).run();
  }
  return results;
}

// --- 2. decode-step workload -------------------------------------------------------------------

// Where a step's time goes, summed over the timed steps.
enum Phase : size_t { kFreePhase, kDecodePhase, kAdmitPhase, kNumPhases };
constexpr const char* kPhaseNames[kNumPhases] = {"free finished", "can_append+append", "can_allocate+allocate"};

struct DecodeCounters {
  std::array<double, kNumPhases> phase_ns{};
  int64_t appends = 0;
  int64_t admissions = 0;
  int64_t deferred = 0;     // admissions put off to a later step for lack of blocks
  int64_t preemptions = 0;  // running sequences freed because can_append failed
  int64_t cached_tokens = 0;
};

// The timed steps of one run of one variant.
struct DecodeRun {
  std::vector<double> step_ns;
  DecodeCounters counters;
  int64_t evictions = 0;  // pagedllm only, whole run
  int64_t log_bytes = 0;  // whole run, including the initial admissions and warm-up
};

// The block work of the scheduler's decode steps: each step some sequences finish and are freed,
// every running sequence gets can_append then append of one token, and new prompts take the free
// slots (can_allocate then allocate). Only that work is timed; picking who finishes and building
// the new prompts happens before the clock starts.
template <typename Kv>
class DecodeWorkload {
 public:
  DecodeWorkload(Kv& kv, const BenchConfig& config)
      : kv_(kv),
        config_(config),
        tokens_(config.seed, config.shared_prefix_tokens),
        slots_(static_cast<size_t>(config.sequences), kNoSeq) {}

  // Fills every slot with a sequence some decode tokens old, so that block boundaries fall on
  // different steps, as in a server that has been running.
  void admit_initial() {
    std::vector<TokenId> prompt(static_cast<size_t>(config_.prompt_tokens));
    for (SeqId& slot : slots_) {
      tokens_.fill_prompt(prompt, tokens_.chance(config_.shared_fraction));
      if (!kv_.can_allocate(prompt)) continue;
      slot = next_seq_++;
      kv_.allocate(slot, prompt);
      const auto age = static_cast<int32_t>(tokens_.random() % static_cast<uint64_t>(config_.max_initial_age));
      for (int32_t t = 0; t < age && kv_.can_append(slot); ++t) kv_.append(slot, next_decode_token());
    }
  }

  // Untimed: the first sequences, then the warm-up steps.
  void start() {
    admit_initial();
    run(config_.warmup_steps, nullptr);
  }

  // One untimed step (the caches were just used by another variant), then `steps` timed ones.
  void run_timed(int32_t steps) {
    run(1, nullptr);
    run(steps, &run_);
  }

  DecodeRun take_run() { return std::move(run_); }

 private:
  // Runs `steps` steps, recording their times and counters into `record` when given.
  void run(int32_t steps, DecodeRun* record) {
    counters_ = record != nullptr ? &record->counters : &untimed_counters_;
    for (int32_t i = 0; i < steps; ++i) {
      plan_step();
      kv_.begin_step(step_++);
      const auto start = Clock::now();
      const uint64_t acc = execute_step();
      const auto stop = Clock::now();
      consume(acc);
      if (record != nullptr) record->step_ns.push_back(elapsed_ns(start, stop));
    }
  }

  TokenId next_decode_token() { return tokens_.decode_token(decode_cursor_++); }

  std::span<const TokenId> admission_prompt(size_t index) const {
    const auto length = static_cast<size_t>(config_.prompt_tokens);
    return std::span(prompts_).subspan(index * length, length);
  }

  // Untimed: picks the sequences that finish this step (finish_fraction of them on average) and
  // builds a prompt for every slot that will be empty.
  void plan_step() {
    finishing_.clear();
    finish_credit_ += config_.finish_fraction * config_.sequences;
    const auto count = static_cast<int32_t>(finish_credit_);
    finish_credit_ -= count;
    for (int32_t k = 0; k < count; ++k) {
      const size_t slot = tokens_.random() % slots_.size();
      if (slots_[slot] == kNoSeq || std::find(finishing_.begin(), finishing_.end(), slot) != finishing_.end()) continue;
      finishing_.push_back(slot);
    }
    admitting_ = finishing_;
    for (size_t slot = 0; slot < slots_.size(); ++slot) {
      if (slots_[slot] == kNoSeq) admitting_.push_back(slot);  // deferred or preempted earlier
    }
    const auto length = static_cast<size_t>(config_.prompt_tokens);
    prompts_.resize(admitting_.size() * length);
    for (size_t k = 0; k < admitting_.size(); ++k) {
      tokens_.fill_prompt(std::span(prompts_).subspan(k * length, length), tokens_.chance(config_.shared_fraction));
    }
  }

  // Timed: the block work of one step, in the scheduler's order (finished, running, waiting), with
  // the time of each phase added to the counters.
  uint64_t execute_step() {
    const auto start = Clock::now();
    free_finished();
    const auto freed = Clock::now();
    const uint64_t acc = decode_running();
    const auto decoded = Clock::now();
    admit_waiting();
    const auto admitted = Clock::now();
    counters_->phase_ns[kFreePhase] += elapsed_ns(start, freed);
    counters_->phase_ns[kDecodePhase] += elapsed_ns(freed, decoded);
    counters_->phase_ns[kAdmitPhase] += elapsed_ns(decoded, admitted);
    return acc;
  }

  void free_finished() {
    for (const size_t slot : finishing_) {
      kv_.free(slots_[slot]);
      slots_[slot] = kNoSeq;
    }
  }

  uint64_t decode_running() {
    uint64_t acc = 0;
    for (SeqId& seq : slots_) {
      if (seq == kNoSeq) continue;
      if (kv_.can_append(seq)) {
        acc += static_cast<uint64_t>(kv_.append(seq, next_decode_token()));
        ++counters_->appends;
      } else {
        kv_.free(seq);  // preempted (by recompute): its slot is refilled by a new prompt
        seq = kNoSeq;
        ++counters_->preemptions;
      }
    }
    return acc;
  }

  void admit_waiting() {
    for (size_t k = 0; k < admitting_.size(); ++k) {
      const std::span<const TokenId> prompt = admission_prompt(k);
      if (!kv_.can_allocate(prompt)) {
        ++counters_->deferred;
        continue;
      }
      const SeqId seq = next_seq_++;
      counters_->cached_tokens += kv_.allocate(seq, prompt);
      slots_[admitting_[k]] = seq;
      ++counters_->admissions;
    }
  }

  Kv& kv_;
  const BenchConfig& config_;
  TokenSource tokens_;
  std::vector<SeqId> slots_;  // the running sequence of each batch slot, kNoSeq when empty
  std::vector<size_t> finishing_;
  std::vector<size_t> admitting_;
  std::vector<TokenId> prompts_;  // admitting_.size() prompts, back to back
  DecodeRun run_;
  DecodeCounters untimed_counters_;
  DecodeCounters* counters_ = &untimed_counters_;  // where the running steps count
  double finish_credit_ = 0.0;
  SeqId next_seq_ = 1;
  int64_t step_ = 0;
  uint64_t decode_cursor_ = 0;
};

struct StepSummary {
  double mean_us = kNone;
  double p50_us = kNone;
  double p99_us = kNone;
  double max_us = kNone;
  double ns_per_sequence_step = kNone;
};

// One variant of the decode workload: its runs' step times pooled, counters of the first run (the
// workload is deterministic, so every run has the same ones).
struct DecodeVariant {
  std::string name;
  std::vector<double> step_ns;
  DecodeRun first_run;
  int32_t runs = 0;
  std::array<double, kNumPhases> phase_ns{};  // all runs

  void add(DecodeRun run) {
    step_ns.insert(step_ns.end(), run.step_ns.begin(), run.step_ns.end());
    for (size_t phase = 0; phase < kNumPhases; ++phase) phase_ns[phase] += run.counters.phase_ns[phase];
    if (runs++ == 0) first_run = std::move(run);
  }

  double phase_mean_us(size_t phase) const {
    return step_ns.empty() ? kNone : phase_ns[phase] / static_cast<double>(step_ns.size()) / 1e3;
  }

  StepSummary summary(int32_t sequences) const {
    StepSummary result;
    if (step_ns.empty()) return result;
    std::vector<double> sorted = step_ns;
    std::sort(sorted.begin(), sorted.end());
    double total = 0.0;
    for (const double ns : sorted) total += ns;
    const double mean_ns = total / static_cast<double>(sorted.size());
    result.mean_us = mean_ns / 1e3;
    result.p50_us = percentile(sorted, 0.50) / 1e3;
    result.p99_us = percentile(sorted, 0.99) / 1e3;
    result.max_us = sorted.back() / 1e3;
    result.ns_per_sequence_step = mean_ns / sequences;
    return result;
  }
};

struct DecodeResults {
  DecodeVariant paged{"pagedllm", {}, {}, 0, {}};
  DecodeVariant baseline{kBaselineName, {}, {}, 0, {}};
  DecodeVariant paged_log{"pagedllm + KvEventLog (null ostream)", {}, {}, 0, {}};
};

// The three variants run side by side in chunks of kChunkSteps steps, so that a slow spell of the
// machine (the timings are taken on a shared one) falls on all of them alike.
constexpr int32_t kChunkSteps = 100;

void run_decode_repeat(const BenchConfig& config, DecodeResults& results) {
  CountingNullBuffer log_buffer;
  std::ostream log_stream(&log_buffer);
  kv::KvEventLog log(log_stream);
  PagedKv paged(config, nullptr);
  BaselineBlockManager baseline(config.device_blocks, kBlockSize);
  PagedKv paged_log(config, &log);
  DecodeWorkload<PagedKv> paged_work(paged, config);
  DecodeWorkload<BaselineBlockManager> baseline_work(baseline, config);
  DecodeWorkload<PagedKv> log_work(paged_log, config);
  paged_work.start();
  baseline_work.start();
  log_work.start();
  for (int32_t done = 0; done < config.steps; done += kChunkSteps) {
    const int32_t steps = std::min(kChunkSteps, config.steps - done);
    paged_work.run_timed(steps);
    baseline_work.run_timed(steps);
    log_work.run_timed(steps);
  }
  paged.manager().check_invariants();  // the workload drove the managers correctly
  paged_log.manager().check_invariants();
  DecodeRun paged_run = paged_work.take_run();
  paged_run.evictions = paged.manager().stats().evictions;
  DecodeRun log_run = log_work.take_run();
  log_run.evictions = paged_log.manager().stats().evictions;
  log_run.log_bytes = log_buffer.bytes();
  results.paged.add(std::move(paged_run));
  results.baseline.add(baseline_work.take_run());
  results.paged_log.add(std::move(log_run));
}

DecodeResults run_decode_variants(const BenchConfig& config) {
  DecodeResults results;
  for (int32_t rep = 0; rep < config.repeats; ++rep) run_decode_repeat(config, results);
  return results;
}

// --- output ------------------------------------------------------------------------------------

const char* compiler_name() {
#if defined(__clang__)
  return "clang " __VERSION__;
#elif defined(__GNUC__)
  return "gcc " __VERSION__;
#else
  return "unknown compiler";
#endif
}

bool ndebug() {
#ifdef NDEBUG
  return true;
#else
  return false;
#endif
}

const char* build_type() {
  return ndebug() ? "release (NDEBUG)" : "debug (NDEBUG not defined: debug-only checks are on)";
}

bool optimized() {
#ifdef __OPTIMIZE__
  return true;
#else
  return false;
#endif
}

std::string format_value(double value, const char* format) {
  if (!std::isfinite(value)) return "-";
  char text[32];
  std::snprintf(text, sizeof(text), format, value);
  return text;
}

std::string format_ratio(double value) { return std::isfinite(value) ? format_value(value, "%.2fx") : "-"; }

// The figures of one operation, from both managers' samples.
struct OpFigures {
  double paged_ns = kNone;
  double baseline_ns = kNone;
  double target_ns = kNone;
  size_t samples = 0;
};

OpFigures op_figures(const OpSpec& op, const MicroResults& micro) {
  OpFigures figures;
  if (const auto it = micro.paged.find(op.key); it != micro.paged.end()) {
    figures.paged_ns = median(it->second);
    figures.samples = it->second.size();
  }
  if (const auto it = micro.baseline.find(op.key); it != micro.baseline.end()) {
    figures.baseline_ns = median(it->second);
  }
  if (op.has_target) figures.target_ns = kAppendTargetNs;
  return figures;
}

void print_header(const BenchConfig& config) {
  std::printf("bench_kv: pagedllm KV cache manager (core/kv) vs the issue's targets and a %s\n", kBaselineName);
  std::printf("compiler: %s | build: %s | optimizer: %s | hardware threads: %u\n", compiler_name(), build_type(),
              optimized() ? "on" : "off", std::thread::hardware_concurrency());
  std::printf("pool: %d device blocks, %d host blocks, block size %d | decode: %d sequences, %d steps (+%d warm-up)"
              " | repeats: %d%s\n",
              config.device_blocks, config.host_blocks, kBlockSize, config.sequences, config.steps,
              config.warmup_steps, config.repeats, config.quick ? " | --quick" : "");
  std::printf("targets: <= %.0f ns per append, <= %.0f us of block work per step for 1,024 sequences over 100k blocks\n",
              kAppendTargetNs, kStepTargetUs);
  std::printf("%s: nano-vllm's block manager in C++ (std::deque free ids, std::unordered_set used ids, "
              "per-block ref counts,\n  unordered_map block tables, prefix cache keyed by a chained std::hash of "
              "each block's tokens); no CoW, no swap\n\n", kBaselineName);
}

void print_micro(const BenchConfig& config, const MicroResults& micro) {
  const MicroSizes sizes = micro_sizes(config);
  std::printf("1. Per-operation cost (ns/op, median over timed batches of %d ops; %d appends per round)\n",
              sizes.batch, sizes.append_sequences);
  std::printf("   warm manager: every free block holds cached content (allocations evict), %d resident sequences\n",
              sizes.resident);
  std::printf("%-52s %10s %7s %8s %10s %9s %8s\n", "operation", "pagedllm", "target", "/target", "baseline",
              "pd/base", "batches");
  for (const OpSpec& op : kOps) {
    const OpFigures f = op_figures(op, micro);
    std::printf("%-52s %10s %7s %8s %10s %9s %8zu\n", op.label, format_value(f.paged_ns, "%.1f").c_str(),
                format_value(f.target_ns, "%.0f").c_str(), format_ratio(ratio(f.paged_ns, f.target_ns)).c_str(),
                format_value(f.baseline_ns, "%.1f").c_str(), format_ratio(ratio(f.paged_ns, f.baseline_ns)).c_str(),
                f.samples);
  }
  std::printf("   /target: pagedllm / 50 ns target; pd/base: pagedllm / %s; '-': no target or no such baseline op\n\n",
              kBaselineName);
}

void print_decode_row(const DecodeVariant& variant, const StepSummary& s, const StepSummary& baseline) {
  std::printf("%-38s %8.2f %8.2f %8.2f %9.2f %8.1f %9s %9s %9s %9s\n", variant.name.c_str(), s.mean_us, s.p50_us,
              s.p99_us, s.max_us, s.ns_per_sequence_step, format_ratio(s.mean_us / kStepTargetUs).c_str(),
              format_ratio(s.p99_us / kStepTargetUs).c_str(), format_ratio(ratio(s.mean_us, baseline.mean_us)).c_str(),
              format_ratio(ratio(s.p99_us, baseline.p99_us)).c_str());
}

// The step split into its phases; the decode phase alone is what the 50 us target would cover
// without admissions, so it gets its own ratios.
void print_phases(const BenchConfig& config, const DecodeResults& decode) {
  std::printf("   phases, mean us per step:%11s %8s %9s %9s %10s %9s %9s\n", "", "free", "decode", "admit",
              "decode/seq", "dec/tgt", "dec/base");
  const double baseline_decode_us = decode.baseline.phase_mean_us(kDecodePhase);
  for (const DecodeVariant* variant : {&decode.paged, &decode.baseline, &decode.paged_log}) {
    const double decode_us = variant->phase_mean_us(kDecodePhase);
    std::printf("   %-36s %8.2f %9.2f %9.2f %8.1fns %9s %9s\n", variant->name.c_str(),
                variant->phase_mean_us(kFreePhase), decode_us, variant->phase_mean_us(kAdmitPhase),
                decode_us * 1e3 / config.sequences, format_ratio(decode_us / kStepTargetUs).c_str(),
                format_ratio(ratio(decode_us, baseline_decode_us)).c_str());
  }
  std::printf("   (free: %s; decode: %s for every running sequence; admit: %s of the new prompts)\n",
              kPhaseNames[kFreePhase], kPhaseNames[kDecodePhase], kPhaseNames[kAdmitPhase]);
}

void print_decode(const BenchConfig& config, const DecodeResults& decode) {
  const int32_t sequences = config.sequences;
  const StepSummary paged = decode.paged.summary(sequences);
  const StepSummary baseline = decode.baseline.summary(sequences);
  const StepSummary paged_log = decode.paged_log.summary(sequences);
  std::printf("2. Decode step: block work for %d running sequences (%d-token prompts), per step: can_append + append\n"
              "   of 1 token each, %.0f%% finish and are replaced by new prompts (%.0f%% share a %d-token prefix);\n"
              "   %d steps x %d runs per variant, each step timed on its own, variants alternating every %d steps\n",
              sequences, config.prompt_tokens, config.finish_fraction * 100.0, config.shared_fraction * 100.0,
              config.shared_prefix_tokens, config.steps, config.repeats, kChunkSteps);
  std::printf("%-38s %8s %8s %8s %9s %8s %9s %9s %9s %9s\n", "variant", "mean us", "p50 us", "p99 us", "max us",
              "ns/seq", "mean/tgt", "p99/tgt", "mean/base", "p99/base");
  print_decode_row(decode.paged, paged, baseline);
  print_decode_row(decode.baseline, baseline, baseline);
  print_decode_row(decode.paged_log, paged_log, baseline);
  std::printf("   ratios side by side: pagedllm / %s = %s mean, %s p50, %s p99\n", kBaselineName,
              format_ratio(ratio(paged.mean_us, baseline.mean_us)).c_str(),
              format_ratio(ratio(paged.p50_us, baseline.p50_us)).c_str(),
              format_ratio(ratio(paged.p99_us, baseline.p99_us)).c_str());
  std::printf("                        log-on / log-off (pagedllm) = %s mean, %s p50, %s p99\n",
              format_ratio(ratio(paged_log.mean_us, paged.mean_us)).c_str(),
              format_ratio(ratio(paged_log.p50_us, paged.p50_us)).c_str(),
              format_ratio(ratio(paged_log.p99_us, paged.p99_us)).c_str());
  print_phases(config, decode);
  for (const DecodeVariant* variant : {&decode.paged, &decode.baseline, &decode.paged_log}) {
    const DecodeRun& run = variant->first_run;
    const DecodeCounters& c = run.counters;
    std::printf("   %-36s per run: %lld appends, %lld admissions (%lld prefix-hit tokens), %lld preempted, "
                "%lld deferred",
                variant->name.c_str(), static_cast<long long>(c.appends), static_cast<long long>(c.admissions),
                static_cast<long long>(c.cached_tokens), static_cast<long long>(c.preemptions),
                static_cast<long long>(c.deferred));
    if (variant != &decode.baseline) std::printf(", %lld evictions", static_cast<long long>(run.evictions));
    if (run.log_bytes > 0) {
      std::printf(", %.1f KiB log/step", static_cast<double>(run.log_bytes) / 1024.0 /
                                             static_cast<double>(config.steps + config.warmup_steps));
    }
    std::printf("\n");
  }
}

// --- JSON (written by hand) --------------------------------------------------------------------

std::string json_number(double value) {
  if (!std::isfinite(value)) return "null";
  char text[40];
  std::snprintf(text, sizeof(text), "%.4f", value);
  return text;
}

std::string json_string(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof(escaped), "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
      out += escaped;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

void write_json_config(std::ostream& out, const BenchConfig& config) {
  out << "  \"machine\": {\"compiler\": " << json_string(compiler_name()) << ", \"build\": "
      << json_string(build_type()) << ", \"ndebug\": " << (ndebug() ? "true" : "false")
      << ", \"optimized\": " << (optimized() ? "true" : "false")
      << ", \"hardware_threads\": " << std::thread::hardware_concurrency() << "},\n";
  out << "  \"config\": {\"device_blocks\": " << config.device_blocks << ", \"host_blocks\": " << config.host_blocks
      << ", \"block_size\": " << kBlockSize << ", \"sequences\": " << config.sequences << ", \"steps\": "
      << config.steps << ", \"warmup_steps\": " << config.warmup_steps << ", \"repeats\": " << config.repeats
      << ", \"prompt_tokens\": " << config.prompt_tokens << ", \"shared_prefix_tokens\": "
      << config.shared_prefix_tokens << ", \"finish_fraction\": " << json_number(config.finish_fraction)
      << ", \"shared_fraction\": " << json_number(config.shared_fraction) << ", \"seed\": " << config.seed
      << ", \"quick\": " << (config.quick ? "true" : "false") << "},\n";
  out << "  \"targets\": {\"append_ns\": " << json_number(kAppendTargetNs) << ", \"step_us\": "
      << json_number(kStepTargetUs) << "},\n";
  out << "  \"baseline\": " << json_string(kBaselineName) << ",\n";
}

void write_json_ops(std::ostream& out, const MicroResults& micro) {
  out << "  \"ops\": [\n";
  bool first = true;
  for (const OpSpec& op : kOps) {
    const OpFigures f = op_figures(op, micro);
    out << (first ? "" : ",\n") << "    {\"key\": " << json_string(op.key) << ", \"label\": " << json_string(op.label)
        << ", \"pagedllm_ns\": " << json_number(f.paged_ns) << ", \"target_ns\": " << json_number(f.target_ns)
        << ", \"pagedllm_over_target\": " << json_number(ratio(f.paged_ns, f.target_ns))
        << ", \"baseline_ns\": " << json_number(f.baseline_ns)
        << ", \"pagedllm_over_baseline\": " << json_number(ratio(f.paged_ns, f.baseline_ns))
        << ", \"batches\": " << f.samples << "}";
    first = false;
  }
  out << "\n  ],\n";
}

void write_json_variant(std::ostream& out, const DecodeVariant& variant, const StepSummary& s,
                        const StepSummary& baseline, int32_t total_steps) {
  const DecodeRun& run = variant.first_run;
  const DecodeCounters& c = run.counters;
  out << "      {\"name\": " << json_string(variant.name) << ", \"mean_us\": " << json_number(s.mean_us)
      << ", \"p50_us\": " << json_number(s.p50_us) << ", \"p99_us\": " << json_number(s.p99_us)
      << ", \"max_us\": " << json_number(s.max_us) << ", \"ns_per_sequence_step\": "
      << json_number(s.ns_per_sequence_step) << ", \"mean_over_target\": " << json_number(s.mean_us / kStepTargetUs)
      << ", \"p99_over_target\": " << json_number(s.p99_us / kStepTargetUs)
      << ", \"mean_over_baseline\": " << json_number(ratio(s.mean_us, baseline.mean_us))
      << ", \"p99_over_baseline\": " << json_number(ratio(s.p99_us, baseline.p99_us))
      << ", \"steps_timed\": " << variant.step_ns.size() << ", \"appends\": " << c.appends
      << ", \"admissions\": " << c.admissions << ", \"prefix_hit_tokens\": " << c.cached_tokens
      << ", \"preemptions\": " << c.preemptions << ", \"deferred\": " << c.deferred
      << ", \"evictions\": " << run.evictions << ", \"log_bytes_per_step\": "
      << json_number(static_cast<double>(run.log_bytes) / total_steps) << ", \"phases_mean_us\": {\"free\": "
      << json_number(variant.phase_mean_us(kFreePhase)) << ", \"decode\": "
      << json_number(variant.phase_mean_us(kDecodePhase)) << ", \"admit\": "
      << json_number(variant.phase_mean_us(kAdmitPhase)) << "}, \"decode_phase_over_target\": "
      << json_number(variant.phase_mean_us(kDecodePhase) / kStepTargetUs) << "}";
}

void write_json_decode(std::ostream& out, const BenchConfig& config, const DecodeResults& decode) {
  const StepSummary paged = decode.paged.summary(config.sequences);
  const StepSummary baseline = decode.baseline.summary(config.sequences);
  const StepSummary paged_log = decode.paged_log.summary(config.sequences);
  const int32_t total_steps = config.steps + config.warmup_steps;
  out << "  \"decode_step\": {\n    \"variants\": [\n";
  write_json_variant(out, decode.paged, paged, baseline, total_steps);
  out << ",\n";
  write_json_variant(out, decode.baseline, baseline, baseline, total_steps);
  out << ",\n";
  write_json_variant(out, decode.paged_log, paged_log, baseline, total_steps);
  out << "\n    ],\n";
  out << "    \"pagedllm_over_baseline_mean\": " << json_number(ratio(paged.mean_us, baseline.mean_us))
      << ",\n    \"pagedllm_over_baseline_p50\": " << json_number(ratio(paged.p50_us, baseline.p50_us))
      << ",\n    \"pagedllm_over_baseline_p99\": " << json_number(ratio(paged.p99_us, baseline.p99_us))
      << ",\n    \"log_on_over_log_off_mean\": " << json_number(ratio(paged_log.mean_us, paged.mean_us))
      << ",\n    \"log_on_over_log_off_p50\": " << json_number(ratio(paged_log.p50_us, paged.p50_us))
      << ",\n    \"log_on_over_log_off_p99\": " << json_number(ratio(paged_log.p99_us, paged.p99_us)) << "\n  }\n";
}

void write_json(const BenchConfig& config, const MicroResults& micro, const DecodeResults& decode) {
  std::ofstream out(config.json_path);
  if (!out) throw std::runtime_error("cannot open " + config.json_path + " for writing");
  out << "{\n  \"benchmark\": \"bench_kv\",\n";
  write_json_config(out, config);
  write_json_ops(out, micro);
  write_json_decode(out, config, decode);
  out << "}\n";
  if (!out) throw std::runtime_error("failed writing " + config.json_path);
}

// --- command line ------------------------------------------------------------------------------

constexpr const char* kUsage =
    "usage: bench_kv [--steps N] [--sequences N] [--blocks N] [--repeats N] [--quick] [--json PATH]\n"
    "  --steps N      timed decode steps per run (default 2000)\n"
    "  --sequences N  running sequences in the decode workload (default 1024)\n"
    "  --blocks N     device blocks (default 100000; host blocks are a fifth)\n"
    "  --repeats N    interleaved runs of every suite (default 3)\n"
    "  --quick        small sizes for a smoke run (under a second)\n"
    "  --json PATH    also write the figures as JSON to PATH\n";

int32_t parse_count(std::string_view flag, std::string_view text, int32_t min_value) {
  int32_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc{} || end != text.data() + text.size() || value < min_value) {
    throw std::invalid_argument(std::string(flag) + " needs an integer >= " + std::to_string(min_value) +
                                ", got '" + std::string(text) + "'");
  }
  return value;
}

void apply_quick(BenchConfig& config) {
  config.quick = true;
  config.steps = 100;
  config.warmup_steps = 10;
  config.sequences = 64;
  config.device_blocks = 8'192;
  config.host_blocks = 2'048;
  config.repeats = 1;
  config.micro_batches = 5;
  config.append_cycles = 1;
}

// --quick sets small sizes first; explicit sizes then override it, in any order.
BenchConfig parse_args(int argc, char** argv) {
  const std::vector<std::string_view> args(argv + 1, argv + argc);
  BenchConfig config;
  if (std::find(args.begin(), args.end(), "--quick") != args.end()) apply_quick(config);
  std::optional<int32_t> host_blocks;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string_view flag = args[i];
    if (flag == "--quick") continue;
    if (flag == "--help" || flag == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    }
    if (i + 1 >= args.size()) throw std::invalid_argument("unknown flag or missing value: " + std::string(flag));
    const std::string_view value = args[++i];
    if (flag == "--steps") {
      config.steps = parse_count(flag, value, 1);
    } else if (flag == "--sequences") {
      config.sequences = parse_count(flag, value, 1);
    } else if (flag == "--blocks") {
      config.device_blocks = parse_count(flag, value, 4'096);
      host_blocks = config.device_blocks / 5;
    } else if (flag == "--repeats") {
      config.repeats = parse_count(flag, value, 1);
    } else if (flag == "--json") {
      config.json_path = std::string(value);
    } else {
      throw std::invalid_argument("unknown flag: " + std::string(flag));
    }
  }
  if (host_blocks) config.host_blocks = *host_blocks;
  config.warmup_steps = std::min(config.warmup_steps, std::max(1, config.steps / 10));
  return config;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const BenchConfig config = parse_args(argc, argv);
    const auto start = Clock::now();
    print_header(config);
    const MicroResults micro = run_micro(config);
    print_micro(config, micro);
    const DecodeResults decode = run_decode_variants(config);
    print_decode(config, decode);
    if (!config.json_path.empty()) {
      write_json(config, micro, decode);
      std::printf("\nJSON written to %s\n", config.json_path.c_str());
    }
    std::printf("\ntotal wall time %.2f s (sink %llu)\n", elapsed_ns(start, Clock::now()) / 1e9,
                static_cast<unsigned long long>(g_sink));
    return 0;
  } catch (const std::invalid_argument& error) {
    std::fprintf(stderr, "bench_kv: %s\n%s", error.what(), kUsage);
    return 2;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "bench_kv: %s\n", error.what());
    return 1;
  }
}
