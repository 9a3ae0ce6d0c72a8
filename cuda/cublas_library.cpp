#include "cuda/cublas_library.h"

#include <dlfcn.h>

#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

namespace pagedllm::cuda {
namespace {

std::string library_file_name() { return "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR); }

std::vector<std::string> candidate_paths() {
  std::vector<std::string> paths = {library_file_name()};
#ifdef PAGEDLLM_CUDA_LIBRARY_DIR
  paths.push_back(std::string(PAGEDLLM_CUDA_LIBRARY_DIR) + "/" + library_file_name());
#endif
  return paths;
}

void* open_library() {
  std::string tried;
  for (const std::string& path : candidate_paths()) {
    // RTLD_LOCAL: cuBLAS's symbols stay out of the global namespace; only dlsym reaches them.
    if (void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) return handle;
    const char* reason = dlerror();
    tried += "\n  " + path + ": " + (reason != nullptr ? reason : "not found");
  }
  throw std::runtime_error(
      "cannot open cuBLAS (the GPU executor needs it; set LD_LIBRARY_PATH to the CUDA "
      "toolkit's library directory):" +
      tried);
}

template <typename Function>
void resolve(void* handle, const char* symbol, Function& out) {
  dlerror();
  void* address = dlsym(handle, symbol);
  if (address == nullptr) {
    throw std::runtime_error(library_file_name() + " has no entry point " + symbol +
                             " (a cuBLAS older than the headers pagedllm was built with?)");
  }
  out = reinterpret_cast<Function>(address);
}

CublasLibrary load() {
  void* handle = open_library();  // held for the life of the process: never dlclose'd
  CublasLibrary library;
  resolve(handle, "cublasCreate_v2", library.create);
  resolve(handle, "cublasDestroy_v2", library.destroy);
  resolve(handle, "cublasSetMathMode", library.set_math_mode);
  resolve(handle, "cublasSetAtomicsMode", library.set_atomics_mode);
  resolve(handle, "cublasSetPointerMode_v2", library.set_pointer_mode);
  resolve(handle, "cublasSetStream_v2", library.set_stream);
  resolve(handle, "cublasSetWorkspace_v2", library.set_workspace);
  resolve(handle, "cublasGemmEx", library.gemm_ex);
  resolve(handle, "cublasGetStatusName", library.get_status_name);
  resolve(handle, "cublasGetStatusString", library.get_status_string);
  return library;
}

}  // namespace

const CublasLibrary& cublas_library() {
  static std::mutex mutex;
  static CublasLibrary library;
  static bool loaded = false;
  const std::lock_guard<std::mutex> lock(mutex);
  if (!loaded) {
    library = load();
    loaded = true;
  }
  return library;
}

bool cublas_library_loaded() {
  // RTLD_NOLOAD: a handle only if the library is already in the process (then one more reference).
  void* handle = dlopen(library_file_name().c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (handle == nullptr) return false;
  dlclose(handle);
  return true;
}

}  // namespace pagedllm::cuda
