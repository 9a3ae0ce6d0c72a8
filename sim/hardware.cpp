#include "sim/hardware.h"

#include <stdexcept>

#include "core/common/preset_lookup.h"

namespace pagedllm::sim {
namespace {

constexpr double kTera = 1e12;
constexpr double kGiga = 1e9;
// Datasheets say "80 GB"; HBM and GDDR parts come in binary sizes, so capacities are read as GiB.
// The driver reports a little less (an H100 80GB shows about 79.6 GiB), which the
// gpu_memory_utilization fraction absorbs.
constexpr int64_t kGiB = int64_t{1} << 30;

// Per-direction link figures: NVIDIA quotes NVLink and PCIe bandwidth bidirectional
// (H100 SXM: "NVLink 900 GB/s, PCIe Gen5 128 GB/s"); one direction carries half.
constexpr double kPcieGen4 = 32 * kGiga;  // x16, per direction (64 GB/s bidirectional)
constexpr double kPcieGen5 = 64 * kGiga;  // x16, per direction (128 GB/s bidirectional)

// Prices: indicative on-demand list prices per GPU-hour seen in 2024-25 (Lambda for H100, H200
// and A100; AWS g5.xlarge for A10G; GCP g2-standard-4 for L4, both whole small instances). They
// vary by provider, region and contract: set usd_per_gpu_hour to your own.
std::vector<HardwareSpec> make_presets() {
  return {
      // NVIDIA H100 Tensor Core GPU datasheet, SXM column: BF16 tensor 1,979 TFLOPS "with
      // sparsity", so 989 dense; HBM3 3.35 TB/s, 80 GB; NVLink 900 GB/s; PCIe Gen5 128 GB/s.
      {.name = "h100-sxm",
       .peak_flops = 989 * kTera,
       .memory_bandwidth = 3.35 * kTera,
       .memory_bytes = 80 * kGiB,
       .host_link_bandwidth = kPcieGen5,
       .gpu_link_bandwidth = 450 * kGiga,
       .usd_per_gpu_hour = 2.99},
      // NVIDIA H200 Tensor Core GPU datasheet, SXM column: BF16 1,979 TFLOPS with sparsity (989
      // dense, the H100's compute); HBM3e 4.8 TB/s, 141 GB; NVLink 900 GB/s; PCIe Gen5 128 GB/s.
      {.name = "h200",
       .peak_flops = 989 * kTera,
       .memory_bandwidth = 4.8 * kTera,
       .memory_bytes = 141 * kGiB,
       .host_link_bandwidth = kPcieGen5,
       .gpu_link_bandwidth = 450 * kGiga,
       .usd_per_gpu_hour = 3.79},
      // NVIDIA A100 Tensor Core GPU datasheet, 40GB SXM: BF16 tensor 312 TFLOPS (624 sparse);
      // HBM2 1,555 GB/s; NVLink 600 GB/s; PCIe Gen4 64 GB/s.
      {.name = "a100-40gb",
       .peak_flops = 312 * kTera,
       .memory_bandwidth = 1555 * kGiga,
       .memory_bytes = 40 * kGiB,
       .host_link_bandwidth = kPcieGen4,
       .gpu_link_bandwidth = 300 * kGiga,
       .usd_per_gpu_hour = 1.29},
      // Same datasheet, 80GB SXM: BF16 312 TFLOPS; HBM2e 2,039 GB/s; NVLink 600 GB/s; PCIe Gen4.
      {.name = "a100-80gb",
       .peak_flops = 312 * kTera,
       .memory_bandwidth = 2039 * kGiga,
       .memory_bytes = 80 * kGiB,
       .host_link_bandwidth = kPcieGen4,
       .gpu_link_bandwidth = 300 * kGiga,
       .usd_per_gpu_hour = 1.79},
      // A10G (AWS G5): NVIDIA publishes no datasheet for this AWS variant of the A10. 24 GB GDDR6
      // at 600 GB/s as the A10 datasheet; BF16 tensor 70 TFLOPS dense per Baseten's "NVIDIA A10
      // vs A10G for ML model inference" (the A10's 125 at full rate; 80 SMs x 1.71 GHz x 512
      // FLOP/clock agrees). PCIe Gen4 x16, no NVLink: GPUs all-reduce over PCIe.
      {.name = "a10g",
       .peak_flops = 70 * kTera,
       .memory_bandwidth = 600 * kGiga,
       .memory_bytes = 24 * kGiB,
       .host_link_bandwidth = kPcieGen4,
       .gpu_link_bandwidth = kPcieGen4,
       .usd_per_gpu_hour = 1.006},
      // NVIDIA L4 Tensor Core GPU datasheet: BF16 tensor 242 TFLOPS with sparsity (121 dense);
      // 24 GB GDDR6 at 300 GB/s; PCIe Gen4 x16 64 GB/s; no NVLink.
      {.name = "l4",
       .peak_flops = 121 * kTera,
       .memory_bandwidth = 300 * kGiga,
       .memory_bytes = 24 * kGiB,
       .host_link_bandwidth = kPcieGen4,
       .gpu_link_bandwidth = kPcieGen4,
       .usd_per_gpu_hour = 0.71},
  };
}

void require_positive(double value, const HardwareSpec& hardware, const char* field) {
  if (!(value > 0.0)) {
    throw std::invalid_argument("hardware '" + hardware.name + "': " + field + " must be positive, got " +
                                std::to_string(value));
  }
}

}  // namespace

void validate(const HardwareSpec& hardware) {
  require_positive(hardware.peak_flops, hardware, "peak_flops");
  require_positive(hardware.memory_bandwidth, hardware, "memory_bandwidth");
  require_positive(static_cast<double>(hardware.memory_bytes), hardware, "memory_bytes");
  require_positive(hardware.host_link_bandwidth, hardware, "host_link_bandwidth");
  require_positive(hardware.gpu_link_bandwidth, hardware, "gpu_link_bandwidth");
  if (hardware.usd_per_gpu_hour < 0.0) {
    throw std::invalid_argument("hardware '" + hardware.name + "': usd_per_gpu_hour must not be negative");
  }
}

const std::vector<HardwareSpec>& hardware_presets() {
  static const std::vector<HardwareSpec> presets = make_presets();
  return presets;
}

HardwareSpec find_hardware(std::string_view name) {
  if (const auto* preset = find_preset(hardware_presets(), name)) return *preset;
  throw std::invalid_argument("unknown hardware '" + std::string(name) + "'; valid names: " + hardware_names());
}

std::string hardware_names() { return preset_names(hardware_presets()); }

}  // namespace pagedllm::sim
