#include "tools/pagedllm/plan_report.h"

#include <boost/program_options.hpp>
#include <cinttypes>
#include <cmath>
#include <fstream>
#include <map>
#include <stdexcept>

#include "tools/pagedllm/cli_options.h"

namespace pagedllm::cli {

PlanShard parse_plan_shard(const std::string& text) {
  const size_t slash = text.find('/');
  const auto fail = [&](const std::string& why) {
    throw std::invalid_argument("--shard: expected I/N with 0 <= I < N (e.g. 0/4), got '" + text + "': " + why);
  };
  if (slash == std::string::npos) fail("no '/'");
  PlanShard shard;
  try {
    size_t used = 0;
    shard.index = std::stoi(text.substr(0, slash), &used);
    if (used != slash) fail("the index is not an integer");
    const std::string count = text.substr(slash + 1);
    shard.count = std::stoi(count, &used);
    if (used != count.size()) fail("the count is not an integer");
  } catch (const std::logic_error&) {
    fail("not integers");
  }
  if (shard.count < 1) fail("the count must be at least 1");
  if (shard.index < 0 || shard.index >= shard.count) fail("the index must be in [0, N)");
  return shard;
}

std::string plan_fingerprint(const std::vector<std::string>& parts) {
  uint64_t hash = 0xcbf29ce484222325ULL;  // FNV-1a, 64-bit
  const auto mix = [&](unsigned char byte) {
    hash ^= byte;
    hash *= 0x100000001b3ULL;
  };
  for (const std::string& part : parts) {
    for (const char c : part) mix(static_cast<unsigned char>(c));
    mix(0x1f);  // unit separator: ("ab", "c") and ("a", "bc") differ
  }
  char text[17];
  std::snprintf(text, sizeof(text), "%016" PRIx64, hash);
  return text;
}

void print_plan(const nlohmann::json& document, std::FILE* out) {
  const double price = document.at("usd_per_gpu_hour").get<double>();
  const double target_rate = document.at("target_rate").get<double>();
  const nlohmann::json& slo = document.at("slo");
  std::fprintf(out, "plan: %s, trace %s (%lld requests, %.2f req/s as recorded); SLOs:",
               document.at("description").get<std::string>().c_str(), document.at("trace").get<std::string>().c_str(),
               static_cast<long long>(document.at("num_requests").get<int64_t>()),
               document.at("base_request_rate").get<double>());
  for (const auto& [name, ms] : slo.items()) std::fprintf(out, " %s <= %g ms", name.c_str(), ms.get<double>());
  if (price > 0.0) {
    std::fprintf(out, "; $%.2f per GPU-hour\n\n", price);
  } else {
    std::fprintf(out, "; no price for %s (--usd-per-gpu-hour)\n\n", document.at("hardware").get<std::string>().c_str());
  }
  std::fprintf(out, "%-44s %12s %12s", "configuration", "req/s/replica", "out tok/s");
  for (const auto& [name, ms] : slo.items()) std::fprintf(out, " %12s", (name + " ms").c_str());
  std::fprintf(out, " %10s", "$/M tok");
  if (target_rate > 0.0) std::fprintf(out, " %9s %9s", "replicas", "$/hour");
  std::fprintf(out, "\n");
  for (const nlohmann::json& entry : document.at("configurations")) {
    std::string label;
    for (const auto& [knob, value] : entry.at("knobs").items())
      label += knob + "=" + std::to_string(value.get<int>()) + " ";
    if (label.empty()) label = "as given";
    const bool has_best = entry.contains("max_request_rate_per_replica");
    if (entry.contains("note"))
      std::fprintf(out, "%-44s %s\n", label.c_str(), entry.at("note").get<std::string>().c_str());
    if (!has_best) continue;
    std::fprintf(out, "%-44s %12.2f %12.1f", label.c_str(), entry.at("max_request_rate_per_replica").get<double>(),
                 entry.at("output_throughput").get<double>());
    for (const auto& [name, ms] : slo.items())
      std::fprintf(out, " %12.1f", entry.at("latency_ms").at(name).get<double>());
    if (entry.contains("usd_per_million_output_tokens")) {
      std::fprintf(out, " %10.3f", entry.at("usd_per_million_output_tokens").get<double>());
    } else {
      std::fprintf(out, " %10s", "-");
    }
    if (target_rate > 0.0) {
      std::fprintf(out, " %9lld", static_cast<long long>(entry.at("replicas").get<int64_t>()));
      if (entry.contains("usd_per_hour")) {
        std::fprintf(out, " %9.2f", entry.at("usd_per_hour").get<double>());
      } else {
        std::fprintf(out, " %9s", "-");
      }
    }
    std::fprintf(out, "\n");
  }
}

nlohmann::json merge_plan_shards(const std::vector<std::pair<std::string, nlohmann::json>>& shards) {
  if (shards.empty()) throw std::invalid_argument("plan merge: give the shards' JSON files");
  std::string fingerprint;
  int64_t num_configurations = 0;
  int32_t count = 0;
  std::map<int32_t, std::string> seen;  // shard index -> its file
  for (const auto& [path, document] : shards) {
    if (!document.is_object() || !document.contains("sweep") || !document.contains("shard") ||
        !document.contains("configurations")) {
      throw std::invalid_argument(path +
                                  ": not a shard of a plan (no \"sweep\", \"shard\" or \"configurations\"; "
                                  "write shards with `pagedllm plan --shard I/N -o FILE`)");
    }
    const std::string this_fingerprint = document.at("sweep").at("fingerprint").get<std::string>();
    const int32_t index = document.at("shard").at("index").get<int32_t>();
    const int32_t this_count = document.at("shard").at("count").get<int32_t>();
    if (fingerprint.empty()) {
      fingerprint = this_fingerprint;
      num_configurations = document.at("sweep").at("num_configurations").get<int64_t>();
      count = this_count;
    } else if (this_fingerprint != fingerprint || this_count != count) {
      throw std::invalid_argument(path + ": shard " + std::to_string(index) + "/" + std::to_string(this_count) +
                                  " of another sweep (fingerprint " + this_fingerprint + "; " + shards.front().first +
                                  " is of " + fingerprint + ", in " + std::to_string(count) +
                                  " shards): run every shard with the same arguments but --shard");
    }
    if (const auto [at, inserted] = seen.emplace(index, path); !inserted) {
      throw std::invalid_argument(path + ": shard " + std::to_string(index) + "/" + std::to_string(count) +
                                  " given twice (also " + at->second + ")");
    }
  }
  for (int32_t index = 0; index < count; ++index) {
    if (!seen.contains(index)) {
      throw std::invalid_argument("plan merge: shard " + std::to_string(index) + "/" + std::to_string(count) +
                                  " is missing (run `pagedllm plan ... --shard " + std::to_string(index) + "/" +
                                  std::to_string(count) + "`)");
    }
  }
  std::map<int64_t, nlohmann::json> configurations;  // by index in the sweep
  for (const auto& [path, document] : shards) {
    for (const nlohmann::json& entry : document.at("configurations")) {
      const int64_t index = entry.at("index").get<int64_t>();
      if (!configurations.emplace(index, entry).second) {
        throw std::invalid_argument(path + ": configuration " + std::to_string(index) + " is in two shards");
      }
    }
  }
  if (static_cast<int64_t>(configurations.size()) != num_configurations) {
    throw std::invalid_argument("plan merge: the shards hold " + std::to_string(configurations.size()) + " of the " +
                                std::to_string(num_configurations) + " configurations of the sweep");
  }
  nlohmann::json merged = shards.front().second;
  merged.erase("shard");
  merged["configurations"] = nlohmann::json::array();
  for (auto& [index, entry] : configurations) merged["configurations"].push_back(std::move(entry));
  return merged;
}

int run_plan_merge(const std::vector<std::string>& args) {
  namespace po = boost::program_options;
  std::vector<std::string> paths;
  std::string output;
  po::options_description description(
      "pagedllm plan merge: the documents of a sharded plan (plan --shard I/N -o FILE on each machine) as the one\n"
      "document and table the unsharded plan gives\n"
      "  pagedllm plan merge shard-0.json shard-1.json ... [-o plan.json]");
  // clang-format off
  description.add_options()
      ("help,h", "show this help")
      ("shards", po::value(&paths)->multitoken(), "the shards' JSON files (positional)")
      ("output-json,o", po::value(&output), "write the merged document here");
  // clang-format on
  po::positional_options_description positional;
  positional.add("shards", -1);
  po::variables_map values;
  if (!parse_options(args, description, values, &positional)) return 0;
  std::vector<std::pair<std::string, nlohmann::json>> shards;
  for (const std::string& path : paths) {
    std::ifstream file(path);
    if (!file) throw std::invalid_argument(path + ": cannot open");
    nlohmann::json document = nlohmann::json::parse(file, nullptr, false);
    if (document.is_discarded()) throw std::invalid_argument(path + ": not JSON (a truncated shard?)");
    shards.emplace_back(path, std::move(document));
  }
  const nlohmann::json merged = merge_plan_shards(shards);
  print_plan(merged, stdout);
  if (!output.empty()) {
    std::ofstream file(output);
    file << merged.dump(1) << '\n';
    if (!file) throw std::runtime_error(output + ": cannot write");
    std::printf("\nwrote %s\n", output.c_str());
  }
  return 0;
}

}  // namespace pagedllm::cli
