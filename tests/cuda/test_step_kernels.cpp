// The small per-step kernels: bias_add (Qwen2's q/k/v biases) and token_logprobs (the raw logprob
// of each sampled token). GPU cases print "SKIPPED GPU checks" without a device; the validate()
// cases run anywhere.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <sstream>
#include <vector>

#include "cuda/kernels/bias_add.h"
#include "cuda/kernels/token_logprobs.h"
#include "tests/cuda/gpu_test_util.h"

namespace cuda = pagedllm::cuda;
using namespace pagedllm::cuda::testing;

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();
constexpr uint16_t kPoisonBits = 0xffff;  // NaN as bf16 and fp16, as DeviceBuffer::poison writes

// log_softmax(row)[token] in double, from the fp32 logits.
double reference_logprob(const float* row, int32_t vocab, int32_t token) {
  double max = -std::numeric_limits<double>::infinity();
  for (int32_t i = 0; i < vocab; ++i) max = std::max(max, static_cast<double>(row[i]));
  double sum = 0.0;
  for (int32_t i = 0; i < vocab; ++i) sum += std::exp(static_cast<double>(row[i]) - max);
  return static_cast<double>(row[token]) - (max + std::log(sum));
}

// `call` on `good` changed by `change` throws KernelArgumentError (before any CUDA call).
template <typename Params, typename Call, typename Change>
void check_refused(const Params& good, Call call, Change change) {
  Params p = good;
  change(p);
  BOOST_CHECK_THROW(call(p), cuda::KernelArgumentError);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(step_kernels)

// Bit-exact against one fp32 add rounded to the dtype, for packed and padded rows, the 16-byte
// vector path (dim, stride multiples of 8, aligned pointers) and the scalar one (odd dim, odd
// stride, x one element past an aligned address); the padding after each row keeps its poison.
BOOST_AUTO_TEST_CASE(bias_add_matches_one_rounded_fp32_add_and_leaves_padding_alone) {
  if (skip_without_gpu()) return;
  std::mt19937_64 rng(29);
  for (const cuda::DType dtype : {cuda::DType::bf16, cuda::DType::fp16}) {
    for (const int64_t rows : {1, 3, 37}) {
      for (const int64_t dim : {64, 77, 200, 1000}) {
        // {stride (0: packed), element offset of x from the buffer start}
        const std::vector<std::pair<int64_t, int64_t>> layouts{{0, 0}, {dim + 8, 0}, {dim + 3, 0}, {dim + 8, 1}};
        for (const auto& [x_stride, offset] : layouts) {
          const int64_t stride = x_stride == 0 ? dim : x_stride;
          const std::size_t total = static_cast<std::size_t>(offset + rows * stride);
          std::vector<uint16_t> buffer(total, kPoisonBits);
          const HalfData x = random_halves(dtype, static_cast<std::size_t>(rows * dim), rng, -2.0f, 2.0f);
          const HalfData bias = random_halves(dtype, static_cast<std::size_t>(dim), rng, -1.0f, 1.0f);
          std::vector<uint16_t> expected(total, kPoisonBits);
          for (int64_t r = 0; r < rows; ++r) {
            for (int64_t j = 0; j < dim; ++j) {
              const auto src = static_cast<std::size_t>(r * dim + j);
              const auto dst = static_cast<std::size_t>(offset + r * stride + j);
              buffer[dst] = x.bits[src];
              expected[dst] = to_bits(dtype, x.values[src] + bias.values[static_cast<std::size_t>(j)]);
            }
          }
          DeviceBuffer x_dev(total * cuda::kDTypeBytes);
          x_dev.poison();  // the padding (and any element the kernel forgets) reads 0xffff
          x_dev.upload(buffer);
          DeviceBuffer bias_dev(bias.bits);
          cuda::BiasAddParams params;
          params.dtype = dtype;
          params.num_rows = rows;
          params.dim = dim;
          params.x = x_dev.as<uint16_t>() + offset;
          params.x_stride = x_stride;
          params.bias = bias_dev.get();
          cuda::bias_add(params, nullptr);
          const std::vector<uint16_t> out = x_dev.download<uint16_t>();
          std::size_t mismatches = 0;
          std::size_t first = 0;
          for (std::size_t i = 0; i < total; ++i) {
            if (out[i] != expected[i] && mismatches++ == 0) first = i;
          }
          std::ostringstream name;
          name << "bias_add " << cuda::dtype_name(dtype) << " rows " << rows << " dim " << dim << " stride " << x_stride
               << " offset " << offset;
          BOOST_TEST(mismatches == 0u, name.str()
                                           << ": " << mismatches << " of " << total << " elements differ; first at "
                                           << first << ": out " << out[first] << " expected " << expected[first]);
        }
      }
    }
  }
}

// Against log_softmax in double. Tolerance: the kernel's error is fp32 rounding of (a) x - max
// (half an ulp of the result), (b) the sum of up to vocab exp terms in [0, 1] (<= ~125 terms per
// thread, then a tree of 256): a relative error of at most ~(125 + 8) * 6e-8 < 1e-5, i.e. < 1e-5
// absolute in log(sum) (typically far less), (c) expf/logf (a few ulps) and the final subtraction
// (half an ulp of |value|). So abs error <= 1e-4 + 1e-5 * |value| holds with margin while still
// catching a wrong normalizer (a missing or doubled term shifts the result by >= 1e-4 for these
// shapes). Rows carry -inf entries, offsets of +-100 (max subtraction), a token whose logit is
// -inf (expect -inf exactly) and, where vocab = 1, the only token (expect 0).
BOOST_AUTO_TEST_CASE(token_logprobs_match_double_log_softmax) {
  if (skip_without_gpu()) return;
  std::mt19937_64 rng(31);
  for (const int32_t vocab : {1, 7, 32000}) {
    for (const int32_t rows : {1, 3, 37}) {
      std::normal_distribution<float> normal(0.0f, 4.0f);
      std::uniform_real_distribution<float> unit(0.0f, 1.0f);
      std::uniform_int_distribution<int32_t> pick(0, vocab - 1);
      std::vector<float> logits(static_cast<std::size_t>(rows) * static_cast<std::size_t>(vocab));
      std::vector<int32_t> tokens(static_cast<std::size_t>(rows));
      for (int32_t r = 0; r < rows; ++r) {
        float* row = logits.data() + static_cast<std::size_t>(r) * static_cast<std::size_t>(vocab);
        const float offset = static_cast<float>(r % 3) * 100.0f - 100.0f;
        for (int32_t i = 0; i < vocab; ++i) {
          float v = normal(rng);
          if (v == 0.0f) v = 0.25f;
          row[i] = v + offset;
          if (vocab > 1 && r % 2 == 1 && unit(rng) < 0.2f) row[i] = kNegInf;  // masked tokens
        }
        const int32_t keep = pick(rng);
        if (row[keep] == kNegInf) row[keep] = offset + 1.0f;  // at least one finite logit
        int32_t token = pick(rng);
        if (vocab > 1 && r % 4 == 3) {  // the sampled token is one of the -inf entries
          token = keep == 0 ? 1 : 0;
          row[token] = kNegInf;
        }
        tokens[static_cast<std::size_t>(r)] = token;
      }
      DeviceBuffer logits_dev(logits);
      DeviceBuffer tokens_dev(tokens);
      DeviceBuffer out_dev(static_cast<std::size_t>(rows) * sizeof(float));
      out_dev.poison();
      cuda::TokenLogprobsParams params;
      params.logits = logits_dev.as<float>();
      params.num_rows = rows;
      params.vocab_size = vocab;
      params.tokens = tokens_dev.as<int32_t>();
      params.out = out_dev.as<float>();
      cuda::token_logprobs(params, nullptr);
      const std::vector<float> out = out_dev.download<float>();
      for (int32_t r = 0; r < rows; ++r) {
        const float* row = logits.data() + static_cast<std::size_t>(r) * static_cast<std::size_t>(vocab);
        const int32_t token = tokens[static_cast<std::size_t>(r)];
        const double ref = reference_logprob(row, vocab, token);
        const double got = out[static_cast<std::size_t>(r)];
        std::ostringstream name;
        name << "token_logprobs vocab " << vocab << " rows " << rows << " row " << r << " token " << token << ": out "
             << got << " ref " << ref;
        if (std::isinf(ref)) {
          BOOST_TEST((got == ref), name.str());
        } else if (vocab == 1) {
          BOOST_TEST((got == 0.0), name.str());
        } else {
          BOOST_TEST(std::abs(got - ref) <= 1e-4 + 1e-5 * std::abs(ref), name.str());
        }
      }
    }
  }
}

// A token outside [0, vocab) gives NaN (documented; the engine never passes one), and does not
// disturb the rows around it.
BOOST_AUTO_TEST_CASE(token_logprobs_of_an_out_of_range_token_is_nan) {
  if (skip_without_gpu()) return;
  const int32_t vocab = 5;
  const std::vector<float> logits{1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 1.0f, 2.0f, 3.0f,
                                  4.0f, 5.0f, 1.0f, 2.0f, 3.0f, 4.0f, 5.0f};
  const std::vector<int32_t> tokens{-1, 4, vocab};
  DeviceBuffer logits_dev(logits);
  DeviceBuffer tokens_dev(tokens);
  DeviceBuffer out_dev(tokens.size() * sizeof(float));
  out_dev.poison();
  cuda::token_logprobs({logits_dev.as<float>(), 3, vocab, tokens_dev.as<int32_t>(), out_dev.as<float>()}, nullptr);
  const std::vector<float> out = out_dev.download<float>();
  BOOST_TEST(std::isnan(out[0]));
  BOOST_TEST(std::abs(out[1] - reference_logprob(logits.data() + vocab, vocab, 4)) <= 1e-5);
  BOOST_TEST(std::isnan(out[2]));
}

// validate() runs before any CUDA call: these need no GPU.
BOOST_AUTO_TEST_CASE(bias_add_refuses_malformed_calls) {
  cuda::BiasAddParams good;
  good.dtype = cuda::DType::fp16;
  good.num_rows = 3;
  good.dim = 200;
  good.x = fake_mut(0x10000);
  good.x_stride = 208;
  good.bias = fake(0x20000);
  BOOST_CHECK_NO_THROW(cuda::validate(good));
  const auto refused = [&good](auto change) {
    check_refused(
        good, [](const cuda::BiasAddParams& p) { cuda::bias_add(p, nullptr); }, change);
  };
  refused([](cuda::BiasAddParams& p) { p.x = nullptr; });
  refused([](cuda::BiasAddParams& p) { p.bias = nullptr; });
  refused([](cuda::BiasAddParams& p) { p.num_rows = -1; });
  refused([](cuda::BiasAddParams& p) { p.dim = 0; });
  refused([](cuda::BiasAddParams& p) { p.dim = -8; });
  refused([](cuda::BiasAddParams& p) { p.x_stride = 199; });  // < dim
  refused([](cuda::BiasAddParams& p) { p.x_stride = -208; });
  refused([](cuda::BiasAddParams& p) { p.x_stride = int64_t{1} << 31; });
  refused([](cuda::BiasAddParams& p) { p.num_rows = int64_t{1} << 31; });
  refused([](cuda::BiasAddParams& p) { p.dtype = static_cast<cuda::DType>(7); });

  // No rows: nothing to do, null pointers allowed, no CUDA call (so this passes without a GPU).
  cuda::BiasAddParams empty;
  empty.num_rows = 0;
  empty.dim = 64;
  BOOST_CHECK_NO_THROW(cuda::bias_add(empty, nullptr));
}

BOOST_AUTO_TEST_CASE(token_logprobs_refuses_malformed_calls) {
  cuda::TokenLogprobsParams good;
  good.logits = static_cast<const float*>(fake(0x10000));
  good.num_rows = 4;
  good.vocab_size = 32000;
  good.tokens = static_cast<const int32_t*>(fake(0x20000));
  good.out = static_cast<float*>(fake_mut(0x30000));
  BOOST_CHECK_NO_THROW(cuda::validate(good));
  const auto refused = [&good](auto change) {
    check_refused(
        good, [](const cuda::TokenLogprobsParams& p) { cuda::token_logprobs(p, nullptr); }, change);
  };
  refused([](cuda::TokenLogprobsParams& p) { p.logits = nullptr; });
  refused([](cuda::TokenLogprobsParams& p) { p.tokens = nullptr; });
  refused([](cuda::TokenLogprobsParams& p) { p.out = nullptr; });
  refused([](cuda::TokenLogprobsParams& p) { p.num_rows = -1; });
  refused([](cuda::TokenLogprobsParams& p) { p.vocab_size = 0; });
  refused([](cuda::TokenLogprobsParams& p) { p.vocab_size = -5; });

  cuda::TokenLogprobsParams empty;
  empty.vocab_size = 7;
  BOOST_CHECK_NO_THROW(cuda::token_logprobs(empty, nullptr));
}

BOOST_AUTO_TEST_SUITE_END()
