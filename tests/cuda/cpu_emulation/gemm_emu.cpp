// A stand-in for cuda/gemm.cu in the CPU emulation (run_executor.sh): GemmRunner::linear on the
// host, y[m][n] = sum_k x[m][k] * weight[n][k] with 16-bit inputs, fp32 accumulation in k order,
// y rounded to nearest even to the input dtype (or kept in fp32). Recorded, not run, inside a
// stream capture (emu_runtime.h), as cuBLAS's kernels would be.
#include "cuda/gemm.h"

#include <vector>

#include "core/model/half.h"

namespace pagedllm::cuda {
namespace {

float load(DType dtype, const void* base, std::size_t index) {
  const std::uint16_t bits = static_cast<const std::uint16_t*>(base)[index];
  return dtype == DType::bf16 ? model::bf16_to_float(bits) : model::fp16_to_float(bits);
}

}  // namespace

GemmRunner::GemmRunner(std::size_t workspace_bytes) : workspace_(workspace_bytes) {}
GemmRunner::~GemmRunner() = default;

void GemmRunner::linear(const LinearParams& params, cudaStream_t) {
  validate(params);
  if (params.num_rows == 0) return;
  emu_rt::run_or_record([p = params] {
    const int64_t m = p.num_rows, k = p.in_features, n = p.out_features;
    const int64_t ldx = p.x_stride == 0 ? k : p.x_stride;
    const int64_t ldy = p.y_stride == 0 ? n : p.y_stride;
    std::vector<float> w(static_cast<std::size_t>(n * k));
    for (std::size_t i = 0; i < w.size(); ++i) w[i] = load(p.dtype, p.weight, i);
#pragma omp parallel for schedule(static)
    for (int64_t row = 0; row < m; ++row) {
      std::vector<float> x(static_cast<std::size_t>(k));
      for (int64_t i = 0; i < k; ++i)
        x[static_cast<std::size_t>(i)] = load(p.dtype, p.x, static_cast<std::size_t>(row * ldx + i));
      for (int64_t col = 0; col < n; ++col) {
        const float* wr = w.data() + col * k;
        float acc = 0.0f;
        for (int64_t i = 0; i < k; ++i) acc += x[static_cast<std::size_t>(i)] * wr[i];
        const std::size_t at = static_cast<std::size_t>(row * ldy + col);
        if (p.fp32_output) {
          static_cast<float*>(p.y)[at] = acc;
        } else {
          static_cast<std::uint16_t*>(p.y)[at] =
              p.dtype == DType::bf16 ? model::float_to_bf16(acc) : model::float_to_fp16(acc);
        }
      }
    }
  });
}

}  // namespace pagedllm::cuda
