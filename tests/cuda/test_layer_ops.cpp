#include <boost/test/unit_test.hpp>

#include <random>
#include <sstream>
#include <vector>

#include "cpu_ref/activation.h"
#include "cpu_ref/rms_norm.h"
#include "cpu_ref/rotary.h"
#include "cuda/kernels/activation.h"
#include "cuda/kernels/embedding.h"
#include "cuda/kernels/rms_norm.h"
#include "cuda/kernels/rotary.h"
#include "tests/cuda/gpu_test_util.h"

namespace cuda = pagedllm::cuda;
namespace model = pagedllm::model;
using namespace pagedllm::cuda::testing;

BOOST_AUTO_TEST_SUITE(layer_ops)

// out = norm(x + residual) with the residual updated (bit-exact: one fp32 add, rounded), plain
// norm without a residual, and out written over x.
BOOST_AUTO_TEST_CASE(rms_norm_with_and_without_residual_matches_cpu_ref) {
  if (skip_without_gpu()) return;
  std::mt19937_64 rng(17);
  for (const cuda::DType dtype : {cuda::DType::bf16, cuda::DType::fp16}) {
    for (const int64_t dim : {1000, 4096}) {
      for (const bool fused : {false, true}) {
        for (const bool in_place : {false, true}) {
          const int64_t rows = 5;
          const std::size_t n = static_cast<std::size_t>(rows * dim);
          const HalfData x = random_halves(dtype, n, rng, -2.0f, 2.0f);
          const HalfData residual = random_halves(dtype, n, rng, -2.0f, 2.0f);
          const HalfData weight = random_halves(dtype, static_cast<std::size_t>(dim), rng, 0.5f, 1.5f);
          DeviceBuffer x_dev(x.bits);
          DeviceBuffer residual_dev(residual.bits);
          DeviceBuffer weight_dev(weight.bits);
          DeviceBuffer out_dev(n * cuda::kDTypeBytes);
          out_dev.poison();
          cuda::RmsNormParams params;
          params.dtype = dtype;
          params.num_rows = rows;
          params.dim = dim;
          params.x = x_dev.get();
          params.residual = fused ? residual_dev.get() : nullptr;
          params.weight = weight_dev.get();
          params.out = in_place ? x_dev.get() : out_dev.get();
          params.eps = 1e-5f;
          cuda::rms_norm(params, nullptr);
          const std::vector<float> out = to_floats(dtype, (in_place ? x_dev : out_dev).download<uint16_t>());

          // The reference normalizes the residual stream as the device rounded it.
          std::vector<uint16_t> summed_bits(n);
          std::vector<float> normalized_input(n);
          for (std::size_t i = 0; i < n; ++i) {
            summed_bits[i] = to_bits(dtype, x.values[i] + residual.values[i]);
            normalized_input[i] = fused ? from_bits(dtype, summed_bits[i]) : x.values[i];
          }
          std::vector<float> ref(n);
          pagedllm::cpu_ref::rms_norm({normalized_input.data(), weight.values.data(), ref.data(), rows, dim, 1e-5f});
          std::ostringstream name;
          name << "rms_norm " << cuda::dtype_name(dtype) << " dim " << dim << (fused ? " fused" : "")
               << (in_place ? " in place" : "");
          check_close(name.str(), out, ref, tolerance_for(dtype));
          const std::vector<uint16_t> residual_out = residual_dev.download<uint16_t>();
          BOOST_TEST((residual_out == (fused ? summed_bits : residual.bits)), name.str() << ": residual");
        }
      }
    }
  }
}

// Rotate-half pairing, default and Llama-3 frequencies, positions inside and past the reference's
// cos/sin cache, q and k read from one fused row.
BOOST_AUTO_TEST_CASE(rotary_matches_cpu_ref_for_default_and_llama3_scaling) {
  if (skip_without_gpu()) return;
  std::mt19937_64 rng(19);
  for (const cuda::DType dtype : {cuda::DType::bf16, cuda::DType::fp16}) {
    for (const int32_t head_dim : {64, 128}) {
      for (const bool llama3 : {false, true}) {
        pagedllm::cpu_ref::RotaryConfig config;
        config.head_dim = head_dim;
        config.rope_theta = llama3 ? 500000.0 : 10000.0;
        config.num_cached_positions = 4096;
        if (llama3) {
          config.scaling.kind = model::RopeScaling::Kind::llama3;
          config.scaling.factor = 8.0;
          config.scaling.low_freq_factor = 1.0;
          config.scaling.high_freq_factor = 4.0;
          config.scaling.original_max_position_embeddings = 8192;
        }
        const pagedllm::cpu_ref::RotaryEmbedding rotary(config);
        const int32_t num_tokens = 7;
        const int32_t num_heads = 8;
        const int32_t num_kv_heads = 2;
        const int64_t row = static_cast<int64_t>(num_heads + 2 * num_kv_heads) * head_dim;  // [q | k | v]
        const HalfData qkv = random_halves(dtype, static_cast<std::size_t>(num_tokens * row), rng);
        const std::vector<int32_t> positions{0, 1, 17, 4095, 4096, 30001, 131071};
        const std::vector<float> inv_freq(rotary.inv_freq().begin(), rotary.inv_freq().end());
        DeviceBuffer qkv_dev(qkv.bits);
        DeviceBuffer positions_dev(positions);
        DeviceBuffer inv_freq_dev(inv_freq);
        cuda::RotaryParams params;
        params.dtype = dtype;
        params.num_tokens = num_tokens;
        params.num_heads = num_heads;
        params.num_kv_heads = num_kv_heads;
        params.head_dim = head_dim;
        params.q = qkv_dev.get();
        params.k = qkv_dev.as<uint16_t>() + static_cast<int64_t>(num_heads) * head_dim;
        params.q_stride = row;
        params.k_stride = row;
        params.positions = positions_dev.as<int32_t>();
        params.inv_freq = inv_freq_dev.as<float>();
        cuda::apply_rotary(params, nullptr);
        const std::vector<float> out = to_floats(dtype, qkv_dev.download<uint16_t>());

        std::vector<float> ref = qkv.values;
        for (int32_t t = 0; t < num_tokens; ++t) {
          // q and k heads are adjacent in the row: rotate both in one call; v stays as it was.
          rotary.apply(ref.data() + t * row, num_heads + num_kv_heads, positions[static_cast<std::size_t>(t)]);
        }
        std::ostringstream name;
        name << "rotary " << cuda::dtype_name(dtype) << " head_dim " << head_dim << (llama3 ? " llama3" : " default");
        check_close(name.str(), out, ref, tolerance_for(dtype));
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(silu_and_mul_matches_cpu_ref_swiglu) {
  if (skip_without_gpu()) return;
  std::mt19937_64 rng(23);
  for (const cuda::DType dtype : {cuda::DType::bf16, cuda::DType::fp16}) {
    const int64_t rows = 3;
    const int64_t dim = 1001;
    const HalfData input = random_halves(dtype, static_cast<std::size_t>(rows * 2 * dim), rng, -6.0f, 6.0f);
    DeviceBuffer input_dev(input.bits);
    DeviceBuffer out_dev(static_cast<std::size_t>(rows * dim) * cuda::kDTypeBytes);
    out_dev.poison();
    cuda::silu_and_mul({dtype, rows, dim, input_dev.get(), out_dev.get()}, nullptr);
    const std::vector<float> out = to_floats(dtype, out_dev.download<uint16_t>());
    std::vector<float> ref(static_cast<std::size_t>(rows * dim));
    for (int64_t r = 0; r < rows; ++r) {
      const float* gate = input.values.data() + r * 2 * dim;
      pagedllm::cpu_ref::swiglu({gate, gate + dim, ref.data() + r * dim, dim});
    }
    check_close(std::string("silu_and_mul ") + cuda::dtype_name(dtype), out, ref, tolerance_for(dtype));
  }
}

BOOST_AUTO_TEST_CASE(embedding_copies_rows_bit_exactly) {
  if (skip_without_gpu()) return;
  std::mt19937_64 rng(29);
  const int32_t vocab = 1000;
  const int64_t hidden = 520;
  const HalfData table = random_halves(cuda::DType::bf16, static_cast<std::size_t>(vocab * hidden), rng);
  const std::vector<int32_t> ids{5, 999, 0, 5, 431, 77, 998};
  DeviceBuffer table_dev(table.bits);
  DeviceBuffer ids_dev(ids);
  DeviceBuffer out_dev(ids.size() * static_cast<std::size_t>(hidden) * cuda::kDTypeBytes);
  out_dev.poison();
  cuda::embedding({cuda::DType::bf16, static_cast<int32_t>(ids.size()), vocab, hidden, ids_dev.as<int32_t>(),
                   table_dev.get(), out_dev.get()},
                  nullptr);
  const std::vector<uint16_t> out = out_dev.download<uint16_t>();
  std::vector<uint16_t> expected;
  for (const int32_t id : ids) {
    expected.insert(expected.end(), table.bits.begin() + id * hidden, table.bits.begin() + (id + 1) * hidden);
  }
  BOOST_TEST((out == expected));
}

BOOST_AUTO_TEST_SUITE_END()
