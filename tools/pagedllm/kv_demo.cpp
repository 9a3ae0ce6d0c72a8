// `pagedllm kv-demo`: the block manager at work on a small scripted workload.
//
// Two requests share a system prompt (prefix-cache hit), the second samples three answers
// (fork + copy-on-write), decoding fills the device tier until the latest request is preempted
// by swap, the first finishes, and the preempted group swaps back in and completes.
#include <boost/program_options.hpp>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "core/kv/kv_cache_manager.h"
#include "tools/pagedllm/cli_options.h"
#include "tools/pagedllm/subcommands.h"

namespace pagedllm::cli {
namespace {

namespace po = boost::program_options;

struct DemoOptions {
  kv::KvCacheConfig cache;
  int32_t system_prompt_tokens = 100;
  int32_t question_tokens = 30;
  int32_t num_samples = 3;
  int32_t max_new_tokens = 160;
  std::string event_log_path;
  bool json = false;
};

std::vector<TokenId> synthetic_tokens(int32_t count, uint32_t seed) {
  std::vector<TokenId> tokens(static_cast<size_t>(count));
  uint32_t state = seed * 2654435761u + 1;
  for (TokenId& token : tokens) {
    state = state * 1664525u + 1013904223u;
    token = static_cast<TokenId>(state >> 17);  // ids below 32768, like a small vocabulary
  }
  return tokens;
}

std::string describe_table(const kv::KvCacheManager& cache, SeqId seq) {
  std::ostringstream text;
  text << "seq " << seq << " (" << cache.num_tokens(seq) << " tokens, " << (cache.is_swapped(seq) ? "host" : "device")
       << "): [";
  const auto table = cache.block_table(seq);
  for (size_t i = 0; i < table.size(); ++i) text << (i ? " " : "") << table[i];
  text << "]";
  return text.str();
}

void print_usage_line(const kv::KvCacheManager& cache, const std::string& when) {
  const kv::KvStats stats = cache.stats();
  std::cout << "  [" << when << "] device " << stats.num_used_device_blocks() << "/" << stats.num_device_blocks
            << " used (" << static_cast<int>(100 * stats.device_usage()) << "%), "
            << stats.num_cached_free_device_blocks << " free but cached, host "
            << stats.num_host_blocks - stats.num_free_host_blocks << "/" << stats.num_host_blocks << " used\n";
}

nlohmann::json stats_json(const kv::KvStats& stats) {
  return {{"block_size", stats.block_size},
          {"device_blocks_total", stats.num_device_blocks},
          {"device_blocks_used", stats.num_used_device_blocks()},
          {"device_blocks_cached", stats.num_cached_device_blocks},
          {"host_blocks_total", stats.num_host_blocks},
          {"host_blocks_used", stats.num_host_blocks - stats.num_free_host_blocks},
          {"prefix_query_tokens", stats.prefix_query_tokens},
          {"prefix_hit_tokens", stats.prefix_hit_tokens},
          {"prefix_hit_rate", stats.prefix_hit_rate()},
          {"evictions", stats.evictions},
          {"internal_waste_slots", stats.internal_waste_slots()}};
}

struct DemoCounters {
  int64_t copies = 0;
  int64_t blocks_swapped_out = 0;
  int64_t blocks_swapped_in = 0;
  int32_t preemptions = 0;
};

// One request: its sequences decode together and are preempted together.
struct DemoRequest {
  std::string name;
  std::vector<SeqId> seqs;
  int32_t generated = 0;
  bool swapped = false;
  bool finished = false;
};

class KvDemo {
 public:
  KvDemo(const DemoOptions& options, kv::KvEventLog* log) : options_(options), cache_(options.cache, log), log_(log) {}

  int run() {
    const std::vector<TokenId> system_prompt = synthetic_tokens(options_.system_prompt_tokens, 1);
    std::cout << "pagedllm kv-demo: block size " << options_.cache.block_size << ", "
              << options_.cache.num_device_blocks << " device blocks, " << options_.cache.num_host_blocks
              << " host blocks\n\n";
    admit("A", system_prompt, 2, 1);
    admit("B", system_prompt, 3, options_.num_samples);
    for (int64_t step = 1; !all_finished(); ++step) {
      if (log_) log_->set_step(step);
      if (!decode_step()) {
        throw std::runtime_error("the demo stalled: no request fits; enlarge --device-blocks or --host-blocks");
      }
    }
    const kv::KvStats stats = cache_.stats();
    std::cout << "\nall requests finished: " << counters_.preemptions << " preemption(s) by swap, "
              << counters_.blocks_swapped_out << " blocks copied out, " << counters_.blocks_swapped_in
              << " copied back in (the rest was still cached on the device), " << counters_.copies
              << " copy-on-write(s), prefix hit rate " << static_cast<int>(100 * stats.prefix_hit_rate()) << "%, "
              << stats.num_cached_free_device_blocks << " blocks still cached for future prompts\n";
    if (stats.num_used_device_blocks() != 0 || stats.num_free_host_blocks != stats.num_host_blocks) {
      std::cerr << "kv-demo: blocks leaked\n";
      return 1;
    }
    cache_.check_invariants();
    if (options_.json) std::cout << stats_json(stats).dump(2) << "\n";
    return 0;
  }

 private:
  void admit(const std::string& name, const std::vector<TokenId>& system_prompt, uint32_t question_seed,
             int32_t num_samples) {
    std::vector<TokenId> prompt = system_prompt;
    const std::vector<TokenId> question = synthetic_tokens(options_.question_tokens, question_seed);
    prompt.insert(prompt.end(), question.begin(), question.end());
    const kv::PromptRef ref{prompt};
    DemoRequest request{name, {next_seq_++}};
    const int32_t watermark = cache_.watermark_blocks();
    const kv::AllocResult admitted = cache_.try_allocate(request.seqs[0], ref, static_cast<int32_t>(prompt.size()),
                                                         {.reserve_blocks = watermark, .min_free_after = watermark});
    if (admitted.status != kv::AllocStatus::ok) {
      throw std::runtime_error("request " + name + " cannot be admitted (" + kv::to_string(admitted.status) +
                               "): enlarge --device-blocks");
    }
    const int32_t cached = admitted.num_cached_tokens;
    std::cout << "admit " << name << ": " << prompt.size() << "-token prompt, " << cached
              << " tokens from the prefix cache\n  " << describe_table(cache_, request.seqs[0]) << "\n";
    for (int32_t i = 1; i < num_samples; ++i) {
      request.seqs.push_back(next_seq_++);
      cache_.fork(request.seqs[0], request.seqs.back());
    }
    if (num_samples > 1) {
      std::cout << "  forked into " << num_samples << " samples sharing every block\n";
    }
    requests_.push_back(request);
  }

  bool all_finished() const {
    for (const DemoRequest& request : requests_) {
      if (!request.finished) return false;
    }
    return true;
  }

  // Returns whether any sequence advanced, so that a pool too small for the demo is reported.
  bool decode_step() {
    bool progressed = false;
    for (DemoRequest& request : requests_) {
      if (request.swapped && try_resume(request)) {
        request.swapped = false;
        std::cout << "swap in " << request.name << "\n";
        print_usage_line(cache_, "after swap in");
      }
    }
    for (DemoRequest& request : requests_) {
      if (request.finished || request.swapped || !make_room_for(request)) continue;
      for (size_t i = 0; i < request.seqs.size(); ++i) {
        const TokenId token = static_cast<TokenId>(1000 + request.generated * 7 + static_cast<int32_t>(i));
        const std::vector<TokenId> one{token};
        if (cache_.append_slots(request.seqs[i], one)) ++counters_.copies;
      }
      progressed = true;
      if (++request.generated == options_.max_new_tokens) finish(request);
    }
    return progressed;
  }

  // Swap a group back in only when every running sequence, its own included, can still grow by a
  // block afterwards; otherwise it would be preempted again at once.
  bool try_resume(const DemoRequest& request) {
    size_t running = request.seqs.size();
    for (const DemoRequest& other : requests_) {
      if (!other.finished && !other.swapped) running += other.seqs.size();
    }
    const int32_t watermark = cache_.watermark_blocks();
    const kv::SwapInResult result = cache_.try_swap_in(
        request.seqs,
        {.reserve_blocks = watermark, .min_free_after = std::max(watermark, static_cast<int32_t>(running))});
    if (result.status != kv::AllocStatus::ok) return false;
    counters_.blocks_swapped_in += static_cast<int64_t>(result.moves.size());
    return true;
  }

  bool group_fits(const DemoRequest& request) const {
    int32_t needed = 0;
    for (const SeqId seq : request.seqs) needed += cache_.num_blocks_to_append(seq, 1);
    return needed <= cache_.stats().num_free_device_blocks;
  }

  // Preemption by swap as vLLM orders it: the latest-admitted running request goes to host until
  // `request` fits, or until `request` is itself the latest and goes.
  bool make_room_for(DemoRequest& request) {
    while (!group_fits(request)) {
      DemoRequest* victim = nullptr;
      for (DemoRequest& candidate : requests_) {
        if (!candidate.finished && !candidate.swapped) victim = &candidate;
      }
      if (victim == nullptr) return false;
      print_usage_line(cache_, "device full");
      const std::optional<std::vector<kv::BlockMove>> moves = cache_.try_swap_out(victim->seqs);
      if (!moves) return false;
      counters_.blocks_swapped_out += static_cast<int64_t>(moves->size());
      victim->swapped = true;
      ++counters_.preemptions;
      std::cout << "preempt " << victim->name << " by swap:\n";
      for (const SeqId seq : victim->seqs) std::cout << "  " << describe_table(cache_, seq) << "\n";
      if (victim == &request) return false;
    }
    return true;
  }

  void finish(DemoRequest& request) {
    std::cout << "finish " << request.name << " after " << request.generated << " tokens per sample:\n";
    for (const SeqId seq : request.seqs) {
      std::cout << "  " << describe_table(cache_, seq) << "\n";
      cache_.free(seq);
    }
    request.finished = true;
    print_usage_line(cache_, "after finish");
  }

  DemoOptions options_;
  kv::KvCacheManager cache_;
  kv::KvEventLog* log_;
  std::vector<DemoRequest> requests_;
  DemoCounters counters_;
  SeqId next_seq_ = 1;
};

}  // namespace

int run_kv_demo(const std::vector<std::string>& args) {
  DemoOptions options;
  options.cache.block_size = 16;
  options.cache.num_device_blocks = 48;
  options.cache.num_host_blocks = 64;
  po::options_description description("pagedllm kv-demo options");
  // clang-format off
  description.add_options()
      ("help,h", "show this help")
      ("block-size", po::value(&options.cache.block_size)->default_value(16), "tokens per KV block")
      ("device-blocks", po::value(&options.cache.num_device_blocks)->default_value(48), "device-tier blocks")
      ("host-blocks", po::value(&options.cache.num_host_blocks)->default_value(64), "host (swap) blocks")
      ("max-new-tokens", po::value(&options.max_new_tokens)->default_value(160), "tokens each sample generates")
      ("samples", po::value(&options.num_samples)->default_value(3), "parallel samples of the second request")
      ("event-log", po::value(&options.event_log_path), "write the KV event log (JSONL) to this file")
      ("json", po::bool_switch(&options.json), "print the final statistics as JSON");
  // clang-format on
  po::variables_map values;
  if (!parse_options(args, description, values)) return 0;
  if (options.max_new_tokens < 1 || options.num_samples < 1) {
    throw std::invalid_argument("--max-new-tokens and --samples must be at least 1");
  }

  std::ofstream log_file;
  std::optional<kv::KvEventLog> log;
  if (!options.event_log_path.empty()) {
    log_file.open(options.event_log_path);
    if (!log_file) throw std::runtime_error("cannot write the event log to " + options.event_log_path);
    log.emplace(log_file);
  }
  return KvDemo(options, log ? &*log : nullptr).run();
}

}  // namespace pagedllm::cli
