// `pagedllm version`: what this binary is and which executors it was built with.
#include <omp.h>

#include <iostream>

#include "cpu_ref/openmp_wait.h"
#include "tools/pagedllm/subcommands.h"
#ifdef PAGEDLLM_HAVE_CUDA
#include "cuda/device_info.h"
#endif

namespace pagedllm::cli {

int run_version(const std::vector<std::string>&) {
  std::cout << "pagedllm " << PAGEDLLM_VERSION << "\n";
#ifdef NDEBUG
  std::cout << "build: optimized\n";
#else
  std::cout << "build: debug (assertions on)\n";
#endif
  std::cout << "cpu executor: " << omp_get_max_threads() << " OpenMP threads by default, idle wait "
            << cpu_ref::openmp_wait_setting() << "\n";
#ifdef PAGEDLLM_HAVE_CUDA
  std::cout << "cuda executor: built\n" << cuda::describe_devices();
#else
  std::cout << "cuda executor: not built (nvcc was not found at configure time)\n";
#endif
  return 0;
}

}  // namespace pagedllm::cli
