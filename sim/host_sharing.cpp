#include "sim/host_sharing.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

namespace pagedllm::sim {

bool HostInterference::any() const {
  return decode_by_decode != 0.0 || decode_by_prefill != 0.0 || prefill_by_decode != 0.0 || prefill_by_prefill != 0.0;
}

double HostInterference::slowdown(double step, double neighbour) const {
  return step * (neighbour * prefill_by_prefill + (1.0 - neighbour) * prefill_by_decode) +
         (1.0 - step) * (neighbour * decode_by_prefill + (1.0 - neighbour) * decode_by_decode);
}

HostInterference HostInterference::parse(const std::string& text) {
  HostInterference result;
  std::istringstream entries(text);
  std::string entry;
  while (std::getline(entries, entry, ',')) {
    const size_t equals = entry.find('=');
    const std::string name = entry.substr(0, equals);
    double* field = name == "decode_by_decode"     ? &result.decode_by_decode
                    : name == "decode_by_prefill"  ? &result.decode_by_prefill
                    : name == "prefill_by_decode"  ? &result.prefill_by_decode
                    : name == "prefill_by_prefill" ? &result.prefill_by_prefill
                                                   : nullptr;
    if (field == nullptr || equals == std::string::npos) {
      throw std::invalid_argument("host interference: '" + entry +
                                  "' is not NAME=FRACTION with NAME one of decode_by_decode, decode_by_prefill, "
                                  "prefill_by_decode, prefill_by_prefill");
    }
    const std::string value = entry.substr(equals + 1);
    size_t used = 0;
    try {
      *field = std::stod(value, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != value.size() || !std::isfinite(*field) || *field < 0.0) {
      throw std::invalid_argument("host interference: " + name + " must be a fraction of 0 or more, got '" + value +
                                  "'");
    }
  }
  return result;
}

double HostSharing::rate(int32_t busy_replicas, double serving_cores) const {
  if (!enabled() || busy_replicas <= 0) return 1.0;
  const double cores = static_cast<double>(num_cores);
  const double threads = static_cast<double>(busy_replicas) * static_cast<double>(threads_per_replica);
  if (threads + serving_cores <= cores) return 1.0;
  if (serving_cores <= 0.0) return cores / threads;
  // The serving path's demand follows the steps' speed: r x (threads + r x serving) = cores.
  return (-threads + std::sqrt(threads * threads + 4.0 * serving_cores * cores)) / (2.0 * serving_cores);
}

std::vector<double> HostSharing::rates(const std::vector<SharedStep>& steps) const {
  double serving_cores = 0.0;
  for (const SharedStep& step : steps) serving_cores += step.serving_cores;
  const auto busy = static_cast<int32_t>(steps.size());
  std::vector<double> result(steps.size(), rate(busy, serving_cores));
  if (!enabled() || !interference.any() || busy < 2) return result;
  // A neighbour runs beside a step only while both hold a core: when the busy threads outnumber
  // the cores, the neighbours' threads share the cores the step's own do not hold, so each runs
  // beside it (cores - own) / (threads - own) of the time.
  const double threads = static_cast<double>(busy) * static_cast<double>(threads_per_replica);
  const double own = static_cast<double>(threads_per_replica);
  const double beside = std::clamp((static_cast<double>(num_cores) - own) / (threads - own), 0.0, 1.0);
  for (size_t i = 0; i < steps.size(); ++i) {
    double slowdown = 0.0;
    for (size_t j = 0; j < steps.size(); ++j) {
      if (j != i) slowdown += interference.slowdown(steps[i].prefill_share, steps[j].prefill_share);
    }
    result[i] /= 1.0 + beside * slowdown;
  }
  return result;
}

void HostSharing::validate() const {
  if (num_cores < 0) throw std::invalid_argument("host sharing: num_cores must be 0 (none) or positive");
  if (threads_per_replica < 1) throw std::invalid_argument("host sharing: threads_per_replica must be at least 1");
  if (!(serving_cpu_seconds_per_token >= 0.0) || !std::isfinite(serving_cpu_seconds_per_token)) {
    throw std::invalid_argument("host sharing: serving_cpu_seconds_per_token must be 0 or more");
  }
  for (const double fraction : {interference.decode_by_decode, interference.decode_by_prefill,
                                interference.prefill_by_decode, interference.prefill_by_prefill}) {
    if (!(fraction >= 0.0) || !std::isfinite(fraction)) {
      throw std::invalid_argument("host sharing: interference fractions must be 0 or more");
    }
  }
}

}  // namespace pagedllm::sim
