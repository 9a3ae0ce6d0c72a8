// Functions that the host and CUDA kernels share: marked __host__ __device__ when nvcc compiles
// them, plain functions otherwise (the core builds without CUDA).
#pragma once

#if defined(__CUDACC__)
#define PAGEDLLM_HOST_DEVICE __host__ __device__
#else
#define PAGEDLLM_HOST_DEVICE
#endif
