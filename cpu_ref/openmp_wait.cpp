#include "cpu_ref/openmp_wait.h"

#include <unistd.h>

#include <cstdlib>
#include <string>

namespace pagedllm::cpu_ref {
namespace {

// Marks a GOMP_SPINCOUNT that this file set (so that reports can tell it from the user's).
constexpr const char* kMarker = "PAGEDLLM_OPENMP_WAIT_DEFAULT";

}  // namespace

void apply_openmp_wait_default(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") != nullptr || std::getenv("GOMP_SPINCOUNT") != nullptr) return;
  setenv("GOMP_SPINCOUNT", kDefaultSpinCount, 1);
  setenv(kMarker, "1", 1);
  execv("/proc/self/exe", argv);
  // No /proc, say: run on with libgomp's default, and say so.
  unsetenv("GOMP_SPINCOUNT");
  unsetenv(kMarker);
}

const char* openmp_wait_setting() {
  static const std::string setting = [] {
    const char* policy = std::getenv("OMP_WAIT_POLICY");
    const char* spin = std::getenv("GOMP_SPINCOUNT");
    if (spin != nullptr && policy == nullptr && std::getenv(kMarker) != nullptr) {
      return "GOMP_SPINCOUNT=" + std::string(spin) + " (pagedllm's default)";
    }
    if (policy == nullptr && spin == nullptr) return std::string("libgomp's default (spins long)");
    std::string user;
    if (policy != nullptr) user += "OMP_WAIT_POLICY=" + std::string(policy);
    if (spin != nullptr) user += (user.empty() ? "" : ", ") + std::string("GOMP_SPINCOUNT=") + spin;
    return user + " (the user's)";
  }();
  return setting.c_str();
}

}  // namespace pagedllm::cpu_ref
