// The per-operation suite's driver (MicroSuite) and its runs on pagedllm and on the baseline.
#include "tools/bench/bench_kv_micro.h"

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/common/types.h"
#include "tools/bench/bench_kv_config.h"
#include "tools/bench/bench_kv_tokens.h"
#include "tools/bench/kv_baseline.h"
#include "tools/bench/kv_paged.h"

namespace pagedllm::kv_bench {
namespace {

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

  void record(const std::string& key, double ns, size_t ops) { samples_[key].push_back(ns / static_cast<double>(ops)); }

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
        const double append_ns = time_ns([&] {
          for (const SeqId seq : seqs) acc += static_cast<uint64_t>(kv_.append(seq, tokens_.decode_token(cursor_++)));
        });
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
               for (size_t k = 0; k < seqs.size(); ++k)
                 acc += static_cast<uint64_t>(kv_.allocate(seqs[k], prompt(k, length)));
             }),
             seqs.size());
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
             }),
             seqs.size());
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
             }),
             batch);
      record("match_miss", time_ns([&] {
               for (size_t k = 0; k < batch; ++k) acc += static_cast<uint64_t>(kv_.match_prefix(missing));
             }),
             batch);
      consume(acc + 1);
    }
  }

  // Forks the parent, whose last block is partial; pagedllm's children then copy it on write.
  void bench_fork() {
    for (int32_t b = 0; b < config_.micro_batches; ++b) {
      const std::vector<SeqId> children = fresh_ids(sizes_.batch);
      record("fork", time_ns([&] {
               for (const SeqId child : children) kv_.fork(fork_parent_, child);
             }),
             children.size());
      if constexpr (Kv::kHasCowAndSwap) {
        uint64_t acc = 0;
        record("cow_append", time_ns([&] {
                 for (const SeqId child : children)
                   acc += static_cast<uint64_t>(kv_.append(child, tokens_.decode_token(cursor_++)));
               }),
               children.size());
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

}  // namespace

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

}  // namespace pagedllm::kv_bench
