// The cuBLAS projections (cuda/gemm.h): argument validation (no GPU needed), then
// y = x W^T against a double-precision host product of the same rounded inputs, in bf16 and fp16,
// with padded x and y rows, fp32 output, and a replay from a captured CUDA graph. Outputs are
// poisoned first, and the padding of y rows must stay poisoned.
#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "cuda/cublas_library.h"
#include "cuda/gemm.h"
#include "tests/cuda/gpu_test_util.h"

namespace cuda = pagedllm::cuda;
using namespace pagedllm::cuda::testing;

namespace {

cuda::LinearParams valid_linear() {
  cuda::LinearParams p;
  p.num_rows = 7;
  p.in_features = 128;
  p.out_features = 200;
  p.x = fake(0x10000);
  p.weight = fake(0x20000);
  p.y = fake_mut(0x30000);
  return p;
}

struct GemmCase {
  int64_t m, k, n;
  int64_t x_pad = 0;  // x_stride = k + x_pad (0: stride left at 0)
  int64_t y_pad = 0;  // y_stride = n + y_pad
  bool fp32_output = false;
};

// Host reference from the rounded inputs, accumulated in double: ref[i][j] = sum_l x[i][l] w[j][l].
std::vector<float> reference(const GemmCase& c, const std::vector<float>& x, int64_t x_stride,
                             const std::vector<float>& w) {
  std::vector<float> ref(static_cast<std::size_t>(c.m * c.n));
  for (int64_t i = 0; i < c.m; ++i) {
    for (int64_t j = 0; j < c.n; ++j) {
      double sum = 0.0;
      for (int64_t l = 0; l < c.k; ++l) {
        sum += static_cast<double>(x[static_cast<std::size_t>(i * x_stride + l)]) *
               static_cast<double>(w[static_cast<std::size_t>(j * c.k + l)]);
      }
      ref[static_cast<std::size_t>(i * c.n + j)] = static_cast<float>(sum);
    }
  }
  return ref;
}

// Runs one case (directly, or captured into a CUDA graph and replayed) and checks it.
void run_case(cuda::GemmRunner& runner, cuda::DType dtype, const GemmCase& c, std::mt19937_64& rng, bool graph) {
  const int64_t x_stride = c.k + c.x_pad;
  const int64_t y_stride = c.n + c.y_pad;
  // The x padding holds large finite values: read into any product, they would show.
  HalfData x = random_halves(dtype, static_cast<std::size_t>(c.m * x_stride), rng);
  for (int64_t i = 0; i < c.m; ++i) {
    for (int64_t l = c.k; l < x_stride; ++l) {
      const std::size_t at = static_cast<std::size_t>(i * x_stride + l);
      x.bits[at] = to_bits(dtype, 1000.0f);
      x.values[at] = from_bits(dtype, x.bits[at]);
    }
  }
  const HalfData w = random_halves(dtype, static_cast<std::size_t>(c.n * c.k), rng);
  const std::size_t y_elements = static_cast<std::size_t>(c.m * y_stride);
  const std::size_t y_element_bytes = c.fp32_output ? sizeof(float) : cuda::kDTypeBytes;
  DeviceBuffer x_dev(x.bits);
  DeviceBuffer w_dev(w.bits);
  DeviceBuffer y_dev(y_elements * y_element_bytes);
  y_dev.poison();

  cuda::LinearParams params;
  params.dtype = dtype;
  params.fp32_output = c.fp32_output;
  params.num_rows = c.m;
  params.in_features = c.k;
  params.out_features = c.n;
  params.x = x_dev.get();
  params.x_stride = c.x_pad == 0 ? 0 : x_stride;
  params.weight = w_dev.get();
  params.y = y_dev.get();
  params.y_stride = c.y_pad == 0 ? 0 : y_stride;

  if (graph) {
    cudaStream_t stream = nullptr;
    PAGEDLLM_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    runner.linear(params, stream);  // warm-up outside the capture (cuBLAS's lazy setup)
    PAGEDLLM_CUDA_CHECK(cudaStreamSynchronize(stream));
    y_dev.poison();
    cudaGraph_t captured = nullptr;
    cudaGraphExec_t exec = nullptr;
    PAGEDLLM_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    runner.linear(params, stream);
    PAGEDLLM_CUDA_CHECK(cudaStreamEndCapture(stream, &captured));
    PAGEDLLM_CUDA_CHECK(cudaGraphInstantiate(&exec, captured, 0));
    PAGEDLLM_CUDA_CHECK(cudaGraphLaunch(exec, stream));
    PAGEDLLM_CUDA_CHECK(cudaStreamSynchronize(stream));
    PAGEDLLM_CUDA_CHECK(cudaGraphExecDestroy(exec));
    PAGEDLLM_CUDA_CHECK(cudaGraphDestroy(captured));
    PAGEDLLM_CUDA_CHECK(cudaStreamDestroy(stream));
  } else {
    runner.linear(params, nullptr);
  }

  std::vector<float> y_all(y_elements);
  bool padding_poisoned = true;
  if (c.fp32_output) {
    const std::vector<uint32_t> bits = y_dev.download<uint32_t>();
    for (std::size_t i = 0; i < y_elements; ++i) {
      y_all[i] = bits_float(bits[i]);
      if (static_cast<int64_t>(i) % y_stride >= c.n && bits[i] != 0xffffffffu) padding_poisoned = false;
    }
  } else {
    const std::vector<uint16_t> bits = y_dev.download<uint16_t>();
    for (std::size_t i = 0; i < y_elements; ++i) {
      y_all[i] = from_bits(dtype, bits[i]);
      if (static_cast<int64_t>(i) % y_stride >= c.n && bits[i] != 0xffffu) padding_poisoned = false;
    }
  }
  std::vector<float> y(static_cast<std::size_t>(c.m * c.n));
  for (int64_t i = 0; i < c.m; ++i) {
    for (int64_t j = 0; j < c.n; ++j) {
      y[static_cast<std::size_t>(i * c.n + j)] = y_all[static_cast<std::size_t>(i * y_stride + j)];
    }
  }
  const std::vector<float> ref = reference(c, x.values, x_stride, w.values);

  std::ostringstream name;
  name << "linear " << cuda::dtype_name(dtype) << " m " << c.m << " k " << c.k << " n " << c.n << " x_stride "
       << x_stride << " y_stride " << y_stride << (c.fp32_output ? " fp32 out" : "") << (graph ? " graph" : "");
  // fp32 output skips the final rounding but keeps the inputs' dtype tolerance (tensor-core
  // products of 16-bit inputs are exact; the difference is the fp32 accumulation order).
  check_close(name.str(), y, ref, tolerance_for(dtype));
  BOOST_TEST(padding_poisoned, name.str() << ": y row padding was written");
}

}  // namespace

BOOST_AUTO_TEST_SUITE(gemm)

BOOST_AUTO_TEST_CASE(validate_rejects_bad_params) {
  BOOST_CHECK_NO_THROW(cuda::validate(valid_linear()));
  auto rejects = [](auto&& mutate) {
    cuda::LinearParams p = valid_linear();
    mutate(p);
    BOOST_CHECK_THROW(cuda::validate(p), cuda::KernelArgumentError);
  };
  rejects([](cuda::LinearParams& p) { p.dtype = static_cast<cuda::DType>(7); });
  rejects([](cuda::LinearParams& p) { p.num_rows = -1; });
  rejects([](cuda::LinearParams& p) { p.num_rows = int64_t{1} << 31; });
  rejects([](cuda::LinearParams& p) { p.in_features = 0; });
  rejects([](cuda::LinearParams& p) { p.in_features = -128; });
  rejects([](cuda::LinearParams& p) { p.out_features = 0; });
  rejects([](cuda::LinearParams& p) { p.out_features = int64_t{1} << 31; });
  rejects([](cuda::LinearParams& p) { p.x = nullptr; });
  rejects([](cuda::LinearParams& p) { p.weight = nullptr; });
  rejects([](cuda::LinearParams& p) { p.y = nullptr; });
  rejects([](cuda::LinearParams& p) { p.x_stride = p.in_features - 1; });
  rejects([](cuda::LinearParams& p) { p.x_stride = -1; });
  rejects([](cuda::LinearParams& p) { p.y_stride = p.out_features - 1; });
  rejects([](cuda::LinearParams& p) { p.y_stride = int64_t{1} << 31; });
  // fp32 output: the stride is still counted in elements (of 4 bytes) and checked the same way.
  rejects([](cuda::LinearParams& p) {
    p.fp32_output = true;
    p.y_stride = p.out_features - 1;
  });
  rejects([](cuda::LinearParams& p) {
    p.fp32_output = true;
    p.y = nullptr;
  });
  // Shapes are checked even for an empty batch; pointers are not.
  rejects([](cuda::LinearParams& p) {
    p.num_rows = 0;
    p.in_features = 0;
  });

  cuda::LinearParams ok = valid_linear();
  ok.x_stride = ok.in_features;
  ok.y_stride = ok.out_features + 8;
  ok.fp32_output = true;
  ok.dtype = cuda::DType::fp16;
  BOOST_CHECK_NO_THROW(cuda::validate(ok));
  cuda::LinearParams empty = valid_linear();
  empty.num_rows = 0;
  empty.x = nullptr;
  empty.weight = nullptr;
  empty.y = nullptr;
  BOOST_CHECK_NO_THROW(cuda::validate(empty));
}

// cuBLAS is opened on first use, not linked (cublas_library.h); no GPU is needed to open it. The
// pointers must be the library's own: a status name comes back through one.
BOOST_AUTO_TEST_CASE(cublas_opens_on_first_use_with_every_entry_point) {
  const cuda::CublasLibrary& cublas = cuda::cublas_library();
  BOOST_TEST(cuda::cublas_library_loaded());
  for (const void* entry :
       {reinterpret_cast<const void*>(cublas.create), reinterpret_cast<const void*>(cublas.destroy),
        reinterpret_cast<const void*>(cublas.set_math_mode), reinterpret_cast<const void*>(cublas.set_atomics_mode),
        reinterpret_cast<const void*>(cublas.set_pointer_mode), reinterpret_cast<const void*>(cublas.set_stream),
        reinterpret_cast<const void*>(cublas.set_workspace), reinterpret_cast<const void*>(cublas.gemm_ex)}) {
    BOOST_TEST(entry != nullptr);
  }
  BOOST_TEST(std::string(cublas.get_status_name(CUBLAS_STATUS_NOT_SUPPORTED)) == "CUBLAS_STATUS_NOT_SUPPORTED");
  BOOST_TEST(!std::string(cublas.get_status_string(CUBLAS_STATUS_NOT_SUPPORTED)).empty());
  BOOST_TEST(&cuda::cublas_library() == &cublas);  // opened once
}

BOOST_AUTO_TEST_CASE(linear_matches_host_product) {
  if (skip_without_gpu()) return;
  std::mt19937_64 rng(23);
  cuda::GemmRunner runner;
  BOOST_TEST(runner.workspace_bytes() == std::size_t{32} << 20);
  const std::vector<GemmCase> cases{
      {1, 64, 96},
      {7, 128, 200, /*x_pad=*/24},
      {33, 256, 64, 0, /*y_pad=*/40},
      {130, 96, 512, 0, /*y_pad=*/4, /*fp32_output=*/true},
  };
  for (const cuda::DType dtype : {cuda::DType::bf16, cuda::DType::fp16}) {
    for (const GemmCase& c : cases) run_case(runner, dtype, c, rng, /*graph=*/false);
  }
}

// An empty batch enqueues nothing (null pointers allowed); the runner is then still usable.
BOOST_AUTO_TEST_CASE(linear_with_no_rows_does_nothing) {
  if (skip_without_gpu()) return;
  cuda::GemmRunner runner(std::size_t{4} << 20);
  cuda::LinearParams p;
  p.in_features = 64;
  p.out_features = 96;
  BOOST_CHECK_NO_THROW(runner.linear(p, nullptr));
  device_sync();
  std::mt19937_64 rng(29);
  run_case(runner, cuda::DType::bf16, GemmCase{3, 64, 96}, rng, /*graph=*/false);
}

// With the runner's own workspace, cuBLAS allocates nothing during capture: a captured call
// replays to the same result.
BOOST_AUTO_TEST_CASE(linear_replays_from_a_captured_graph) {
  if (skip_without_gpu()) return;
  std::mt19937_64 rng(31);
  cuda::GemmRunner runner;
  for (const cuda::DType dtype : {cuda::DType::bf16, cuda::DType::fp16}) {
    run_case(runner, dtype, GemmCase{7, 128, 200, 24, 8}, rng, /*graph=*/true);
    run_case(runner, dtype, GemmCase{33, 256, 64, 0, 0, true}, rng, /*graph=*/true);
  }
}

BOOST_AUTO_TEST_SUITE_END()
