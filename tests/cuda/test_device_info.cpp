#include <boost/test/unit_test.hpp>

#include <iostream>

#include "cuda/device_info.h"

namespace cuda = pagedllm::cuda;

BOOST_AUTO_TEST_SUITE(device_info)

// Runs everywhere: without a GPU it checks that the absence is explained; with one, that the
// device is one the kernels are compiled for.
BOOST_AUTO_TEST_CASE(devices_are_listed_or_their_absence_explained) {
  const cuda::DeviceQuery query = cuda::query_devices();
  if (query.devices.empty()) {
    std::cout << "SKIPPED GPU checks: " << query.error << "\n";
    BOOST_TEST(!query.error.empty());
    BOOST_TEST(cuda::describe_devices().find("no usable CUDA device") != std::string::npos);
    return;
  }
  BOOST_TEST(query.error.empty());
  for (const cuda::DeviceInfo& device : query.devices) {
    BOOST_TEST(!device.name.empty());
    BOOST_TEST(device.compute_major >= 8, "kernels are built for sm_80 and sm_90 only");
    BOOST_TEST(device.total_memory_bytes > 0u);
  }
}

BOOST_AUTO_TEST_SUITE_END()
