// Accelerator datasheets for the simulator's cost models: peak dense bf16 tensor throughput,
// memory bandwidth and size, and the links a step's swaps and all-reduces cross.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace pagedllm::sim {

// All quantities in SI units (FLOP/s, bytes/s, bytes); bandwidths are per direction.
struct HardwareSpec {
  std::string name;
  double peak_flops = 0.0;           // dense (not 2:4 sparse) bf16 tensor-core FLOP/s
  double memory_bandwidth = 0.0;     // device memory (HBM / GDDR) bytes/s
  int64_t memory_bytes = 0;          // device memory capacity
  double host_link_bandwidth = 0.0;  // host <-> device (PCIe) bytes/s, one direction
  double gpu_link_bandwidth = 0.0;   // GPU <-> GPU bytes/s, one direction (NVLink, else PCIe)
  double usd_per_gpu_hour = 0.0;     // an indicative on-demand price: edit for your own
};

// Throws std::invalid_argument naming the field when a figure is missing or not positive.
void validate(const HardwareSpec& hardware);

// The presets, in a fixed order: h100-sxm, h200, a100-40gb, a100-80gb, a10g, l4.
const std::vector<HardwareSpec>& hardware_presets();

// The preset of that name (case-insensitive). Throws std::invalid_argument listing the valid names.
HardwareSpec find_hardware(std::string_view name);

// "h100-sxm, h200, ...": for error messages and --help texts.
std::string hardware_names();

}  // namespace pagedllm::sim
