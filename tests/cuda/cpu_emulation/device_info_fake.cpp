// A stand-in for cuda/device_info.cu in the CPU emulation: one pretend device, so the GPU tests run.
#include "cuda/device_info.h"
namespace pagedllm::cuda {
DeviceQuery query_devices() {
  DeviceQuery q;
  q.devices.push_back(DeviceInfo{0, "CPU emulation", 9, 0, 1ull << 34, 1});
  return q;
}
std::string describe_devices() { return "cuda device 0: CPU emulation\n"; }
}  // namespace pagedllm::cuda
