// What CUDA devices this process can use; the first piece of the CUDA executor.
#pragma once

#include <string>
#include <vector>

namespace pagedllm::cuda {

struct DeviceInfo {
  int index = 0;
  std::string name;
  int compute_major = 0;
  int compute_minor = 0;
  size_t total_memory_bytes = 0;
  int multiprocessors = 0;
};

struct DeviceQuery {
  std::vector<DeviceInfo> devices;
  std::string error;  // why no device is usable (no driver, no GPU), empty when the query worked
};

DeviceQuery query_devices();

// One line per device, or the reason there is none.
std::string describe_devices();

}  // namespace pagedllm::cuda
