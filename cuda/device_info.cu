#include "cuda/device_info.h"

#include <cuda_runtime.h>

namespace pagedllm::cuda {

DeviceQuery query_devices() {
  DeviceQuery query;
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    query.error = std::string("no usable CUDA device: ") + cudaGetErrorString(status);
    cudaGetLastError();  // clear the sticky error so later calls start clean
    return query;
  }
  for (int index = 0; index < count; ++index) {
    cudaDeviceProp props{};
    if (cudaGetDeviceProperties(&props, index) != cudaSuccess) continue;
    query.devices.push_back(
        DeviceInfo{index, props.name, props.major, props.minor, props.totalGlobalMem, props.multiProcessorCount});
  }
  if (query.devices.empty()) query.error = "no usable CUDA device: the driver reports none";
  return query;
}

std::string describe_devices() {
  const DeviceQuery query = query_devices();
  if (query.devices.empty()) return query.error + "\n";
  std::string text;
  for (const DeviceInfo& device : query.devices) {
    text += "cuda device " + std::to_string(device.index) + ": " + device.name + ", sm_" +
            std::to_string(device.compute_major) + std::to_string(device.compute_minor) + ", " +
            std::to_string(device.total_memory_bytes >> 20) + " MiB, " + std::to_string(device.multiprocessors) +
            " SMs\n";
  }
  return text;
}

}  // namespace pagedllm::cuda
