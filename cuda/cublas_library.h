// cuBLAS, opened with dlopen when the first GemmRunner is made instead of linked into the program.
//
// Loading libcublas pulls in libcublasLt, whose start-up costs about 0.17 s and 215 MB of resident
// memory in every process that links it (docs/BENCHMARKS.md, "Start-up cost of cuBLAS"). Linked,
// every pagedllm run paid that, GPU or not: the simulator, the CPU engine, the trace and template
// tools, each test that starts the binary. Only the projections (cuda/gemm.cu) call cuBLAS, so
// the library is opened there, once per process, and never closed.
#pragma once

#include <cublas_v2.h>

namespace pagedllm::cuda {

// The entry points pagedllm calls, resolved by their exported names (the _v2 ABI of cublas_v2.h).
struct CublasLibrary {
  decltype(&cublasCreate_v2) create = nullptr;
  decltype(&cublasDestroy_v2) destroy = nullptr;
  decltype(&cublasSetMathMode) set_math_mode = nullptr;
  decltype(&cublasSetAtomicsMode) set_atomics_mode = nullptr;
  decltype(&cublasSetPointerMode_v2) set_pointer_mode = nullptr;
  decltype(&cublasSetStream_v2) set_stream = nullptr;
  decltype(&cublasSetWorkspace_v2) set_workspace = nullptr;
  // The exported cublasGemmEx (C++ also sees an inline overload taking a cudaDataType compute type).
  cublasStatus_t (*gemm_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int m, int n, int k,
                            const void* alpha, const void* a, cudaDataType a_type, int lda, const void* b,
                            cudaDataType b_type, int ldb, const void* beta, void* c, cudaDataType c_type, int ldc,
                            cublasComputeType_t compute_type, cublasGemmAlgo_t algo) = nullptr;
  decltype(&cublasGetStatusName) get_status_name = nullptr;
  decltype(&cublasGetStatusString) get_status_string = nullptr;
};

// Opens libcublas.so.<major of the headers built against> on the first call (thread-safe): first
// by the dynamic loader's search (LD_LIBRARY_PATH, the program's RUNPATH, ld.so.cache), then in
// the toolkit directory found at build time. Throws std::runtime_error naming each file tried and
// the loader's message, or the entry point that is missing; a later call tries again.
const CublasLibrary& cublas_library();

// Whether this process has opened cuBLAS (a test of the laziness above; asks the loader).
bool cublas_library_loaded();

}  // namespace pagedllm::cuda
