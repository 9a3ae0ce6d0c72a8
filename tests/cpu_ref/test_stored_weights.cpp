// cpu_ref computing from weights in their stored type: bit-identical to the load-time fp32 path.
//   - linear: every dequantizable ggml type, decoded tile by tile inside the kernel, against the
//     same matrix dequantized whole first, for both instruction sets, odd row and output counts
//     and 1 or 2 threads (one row: the register-decoding kernel of stored_row_kernel.h);
//   - the forward pass: the tiny model written as GGUF in every type make-model writes, and as
//     safetensors F16 / BF16, loaded stored and loaded as fp32: logits byte for byte;
//   - what the weights take in memory, and a type the engine cannot compute from.
#include <boost/test/unit_test.hpp>

#include <omp.h>

#include <cstring>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "core/frontend/model_bundle.h"
#include "core/model/dequantize.h"
#include "cpu_ref/cpu_executor.h"
#include "cpu_ref/linear.h"
#include "cpu_ref/llama_model.h"
#include "tests/cpu_ref/random_weights.h"
#include "tools/make_model/tiny_model.h"

namespace pagedllm {
namespace {

using model::GgmlType;
using test::random_floats;
using test::random_matrix;

std::vector<cpu_ref::LinearKernel> available_kernels() {
  std::vector<cpu_ref::LinearKernel> kernels{cpu_ref::LinearKernel::generic};
  if (cpu_ref::cpu_has_avx2()) kernels.push_back(cpu_ref::LinearKernel::avx2);
  if (cpu_ref::cpu_has_avx512()) kernels.push_back(cpu_ref::LinearKernel::avx512);
  return kernels;
}

std::vector<float> run_linear(const std::vector<float>& x, std::int64_t rows, const cpu_ref::WeightMatrix& weight,
                              const float* bias, std::int64_t in, std::int64_t out, cpu_ref::LinearKernel kernel) {
  std::vector<float> y(static_cast<std::size_t>(rows * out), -1.0f);
  cpu_ref::linear(cpu_ref::LinearArgs{.x = x.data(),
                                      .weight = weight,
                                      .bias = bias,
                                      .y = y.data(),
                                      .num_rows = rows,
                                      .in_features = in,
                                      .out_features = out,
                                      .kernel = kernel});
  return y;
}

const GgmlType kEveryType[] = {GgmlType::f32,  GgmlType::f16,  GgmlType::bf16, GgmlType::q4_0, GgmlType::q4_1,
                               GgmlType::q5_0, GgmlType::q5_1, GgmlType::q8_0, GgmlType::q2_k, GgmlType::q3_k,
                               GgmlType::q4_k, GgmlType::q5_k, GgmlType::q6_k, GgmlType::q8_k};

BOOST_AUTO_TEST_SUITE(stored_weights)

BOOST_AUTO_TEST_CASE(linear_on_stored_weights_is_bit_identical_to_dequantizing_first) {
  constexpr std::int64_t kIn = 512;  // two K-quant super-blocks, 16 blocks of 32
  constexpr std::int64_t kOut = 7;   // not a multiple of either tile width
  const std::vector<float> bias = random_floats(kOut, 3, 1.0f);
  for (const GgmlType type : kEveryType) {
    const model::GgmlTypeTraits traits = *model::ggml_type_traits(static_cast<std::uint32_t>(type));
    const std::vector<std::byte> stored = random_matrix(type, kOut, kIn, 11);
    std::vector<float> dequantized(static_cast<std::size_t>(kOut * kIn));
    model::dequantize_row(type, stored, dequantized);
    const cpu_ref::WeightMatrix as_stored{type, stored.data(),
                                          static_cast<std::int64_t>(kIn / traits.block_size * traits.type_size)};
    const cpu_ref::WeightMatrix as_f32 = cpu_ref::WeightMatrix::f32(dequantized.data(), kIn);
    for (const std::int64_t rows : {1, 2, 3, 5, 17}) {
      const std::vector<float> x =
          random_floats(static_cast<std::size_t>(rows * kIn), static_cast<std::uint32_t>(5 + rows), 1.0f);
      for (const cpu_ref::LinearKernel kernel : available_kernels()) {
        for (const int threads : {1, 2}) {
          omp_set_num_threads(threads);
          for (const float* b : {static_cast<const float*>(nullptr), bias.data()}) {
            const std::vector<float> expected = run_linear(x, rows, as_f32, b, kIn, kOut, kernel);
            const std::vector<float> got = run_linear(x, rows, as_stored, b, kIn, kOut, kernel);
            BOOST_TEST(std::memcmp(expected.data(), got.data(), expected.size() * sizeof(float)) == 0,
                       traits.name << ": rows " << rows << ", kernel " << cpu_ref::linear_kernel_name(kernel)
                                   << ", threads " << threads << (b ? ", bias" : ""));
          }
        }
      }
    }
  }
}

// Linears run together in one region (q, k, v; gate, up) are bit-identical to each alone, for
// any mix of fp32 and stored weights, row counts (a single row decodes in registers, more rows
// through tiles), an empty one among them, and 1 to 3 threads.
BOOST_AUTO_TEST_CASE(linears_run_together_are_bit_identical_to_each_alone) {
  constexpr std::int64_t kIn = 256;
  const GgmlType types[] = {GgmlType::q4_1, GgmlType::f32, GgmlType::q6_k, GgmlType::q8_0};
  const std::int64_t outs[] = {9, 5, 0, 14};
  std::vector<std::vector<std::byte>> stored;
  std::vector<std::vector<float>> f32_rows;
  for (std::size_t i = 0; i < std::size(types); ++i) {
    f32_rows.push_back(
        random_floats(static_cast<std::size_t>(outs[i] * kIn), static_cast<std::uint32_t>(30 + i), 1.0f));
    stored.push_back(random_matrix(types[i], outs[i], kIn, static_cast<std::uint32_t>(40 + i)));
  }
  const int default_threads = omp_get_max_threads();
  for (const std::int64_t rows : {1, 2, 5}) {
    const std::vector<float> x = random_floats(static_cast<std::size_t>(rows * kIn), 50, 1.0f);
    for (const int threads : {1, 2, 3}) {
      omp_set_num_threads(threads);
      std::vector<std::vector<float>> alone;
      std::vector<std::vector<float>> together;
      together.reserve(std::size(types));  // args keep pointers into these
      std::vector<cpu_ref::LinearArgs> args;
      for (std::size_t i = 0; i < std::size(types); ++i) {
        const model::GgmlTypeTraits traits = *model::ggml_type_traits(static_cast<std::uint32_t>(types[i]));
        const cpu_ref::WeightMatrix weight =
            types[i] == GgmlType::f32
                ? cpu_ref::WeightMatrix::f32(f32_rows[i].data(), kIn)
                : cpu_ref::WeightMatrix{types[i], stored[i].data(),
                                        static_cast<std::int64_t>(kIn / traits.block_size * traits.type_size)};
        alone.push_back(run_linear(x, rows, weight, nullptr, kIn, outs[i], cpu_ref::LinearKernel::best));
        together.emplace_back(static_cast<std::size_t>(rows * outs[i]), -1.0f);
        args.push_back(cpu_ref::LinearArgs{.x = x.data(),
                                           .weight = weight,
                                           .y = together.back().data(),
                                           .num_rows = rows,
                                           .in_features = kIn,
                                           .out_features = outs[i]});
      }
      cpu_ref::linear_each(args);
      for (std::size_t i = 0; i < std::size(types); ++i) {
        BOOST_REQUIRE_EQUAL(alone[i].size(), together[i].size());
        BOOST_TEST((alone[i].empty() ||  // memcmp takes no null pointer, even for 0 bytes
                    std::memcmp(alone[i].data(), together[i].data(), alone[i].size() * sizeof(float)) == 0),
                   "linear " << i << ", rows " << rows << ", threads " << threads);
      }
    }
  }
  omp_set_num_threads(default_threads);
}

// Half-precision rows that are not a whole number of 32 values (no register decoding for the
// single-row kernel there): still bit-identical, through the decoded-tile path.
BOOST_AUTO_TEST_CASE(half_precision_rows_of_any_length_are_bit_identical) {
  constexpr std::int64_t kOut = 5;
  for (const std::int64_t in : {8, 40, 200}) {
    for (const GgmlType type : {GgmlType::f16, GgmlType::bf16}) {
      const std::vector<std::byte> stored = random_matrix(type, kOut, in, 4);
      std::vector<float> dequantized(static_cast<std::size_t>(kOut * in));
      model::dequantize_row(type, stored, dequantized);
      const cpu_ref::WeightMatrix as_stored{type, stored.data(), in * 2};
      const cpu_ref::WeightMatrix as_f32 = cpu_ref::WeightMatrix::f32(dequantized.data(), in);
      for (const std::int64_t rows : {1, 3}) {
        const std::vector<float> x = random_floats(static_cast<std::size_t>(rows * in), 8, 1.0f);
        for (const cpu_ref::LinearKernel kernel : available_kernels()) {
          const std::vector<float> expected = run_linear(x, rows, as_f32, nullptr, in, kOut, kernel);
          const std::vector<float> got = run_linear(x, rows, as_stored, nullptr, in, kOut, kernel);
          BOOST_TEST(std::memcmp(expected.data(), got.data(), expected.size() * sizeof(float)) == 0,
                     model::ggml_type_traits(static_cast<std::uint32_t>(type))->name
                         << ": in " << in << ", rows " << rows << ", kernel " << cpu_ref::linear_kernel_name(kernel));
        }
      }
    }
  }
}

// The check can fail: one bit of one stored block changes a result.
BOOST_AUTO_TEST_CASE(a_changed_stored_bit_changes_the_result) {
  constexpr std::int64_t kIn = 256;
  std::vector<std::byte> stored = random_matrix(GgmlType::q4_k, 3, kIn, 2);
  const cpu_ref::WeightMatrix weight{GgmlType::q4_k, stored.data(), 144};
  const std::vector<float> x = random_floats(kIn, 9, 1.0f);
  const std::vector<float> before = run_linear(x, 1, weight, nullptr, kIn, 3, cpu_ref::LinearKernel::best);
  stored[144 + 40] ^= std::byte{0x10};  // a nibble of row 1
  const std::vector<float> after = run_linear(x, 1, weight, nullptr, kIn, 3, cpu_ref::LinearKernel::best);
  BOOST_TEST(before[0] == after[0]);
  BOOST_TEST(before[1] != after[1]);
  BOOST_TEST(before[2] == after[2]);
}

// Logits of a small mixed batch (a 19-token prompt, then a decode token of another sequence).
std::vector<float> tiny_logits(const cpu_ref::LlamaModel& model) {
  const kv::KvLayout layout = cpu_ref::kv_layout_for(model.config(), 4, 16);
  cpu_ref::HostKvStore cache(layout, 0);
  const std::vector<kv::BlockId> table0{0, 1, 2, 3, 4};
  const std::vector<kv::BlockId> table1{5, 6};
  cpu_ref::ForwardBatch batch;
  for (std::int32_t p = 0; p < 19; ++p) {
    batch.tokens.push_back((p * 37 + 11) % model.vocab_size());
    batch.positions.push_back(p);
    batch.sequence_index.push_back(0);
  }
  for (std::int32_t p = 0; p < 6; ++p) {
    batch.tokens.push_back((p * 53 + 5) % model.vocab_size());
    batch.positions.push_back(p);
    batch.sequence_index.push_back(1);
  }
  batch.block_tables = {table0, table1};
  batch.logits_rows = {0, 7, 18, 24};
  return model.forward(batch, cache);
}

std::string write_tiny(const make_model::TinyModelSpec& spec, const std::string& name) {
  const auto directory = std::filesystem::temp_directory_path() / ("pagedllm_test_stored_" + name);
  make_model::write_tiny_model(spec, directory.string());
  return directory.string();
}

void check_model(const std::string& path, const std::string& what, model::WeightMemory* memory = nullptr) {
  const frontend::ModelBundle bundle = frontend::open_model(path);
  const cpu_ref::LlamaModel stored(frontend::load_weights(bundle, {model::WeightDType::stored}));
  const cpu_ref::LlamaModel f32(frontend::load_weights(bundle, {model::WeightDType::f32}));
  const std::vector<float> expected = tiny_logits(f32);
  const std::vector<float> got = tiny_logits(stored);
  BOOST_REQUIRE(expected.size() == got.size());
  BOOST_TEST(std::memcmp(expected.data(), got.data(), got.size() * sizeof(float)) == 0, what);
  if (memory != nullptr) *memory = stored.weight_memory();
}

BOOST_AUTO_TEST_CASE(the_tiny_model_in_every_written_type_gives_bit_identical_logits) {
  for (const GgmlType type : {GgmlType::f32, GgmlType::f16, GgmlType::bf16, GgmlType::q8_0, GgmlType::q4_0,
                              GgmlType::q4_1, GgmlType::q5_0, GgmlType::q5_1}) {
    for (const bool tied : {false, true}) {
      make_model::TinyModelSpec spec;
      spec.gguf_type = type;
      spec.tie_word_embeddings = tied;
      std::ostringstream name;
      name << type << (tied ? "_tied" : "");
      const std::string directory = write_tiny(spec, name.str());
      check_model(directory + "/model.gguf", "GGUF " + name.str());
    }
  }
  for (const model::SafetensorsDtype dtype : {model::SafetensorsDtype::f16, model::SafetensorsDtype::bf16}) {
    make_model::TinyModelSpec spec;
    spec.safetensors_dtype = dtype;
    const std::string name = "safetensors_" + std::string(model::to_string(dtype));
    check_model(write_tiny(spec, name), name);
  }
}

BOOST_AUTO_TEST_CASE(stored_weights_are_read_in_place) {
  make_model::TinyModelSpec spec;
  spec.gguf_type = GgmlType::q8_0;
  const std::string directory = write_tiny(spec, "memory_q8_0");
  model::WeightMemory memory;
  check_model(directory + "/model.gguf", "GGUF Q8_0", &memory);
  const model::ModelConfig config = tiny_model_config(spec, 1024);
  // Copied: the fp32 norms, and q_proj / k_proj, whose rows load reorders (llama.cpp's rotary order).
  const std::uint64_t q8_row = static_cast<std::uint64_t>(config.hidden_size) / 32 * 34;
  const std::uint64_t norms = static_cast<std::uint64_t>((2 * config.num_layers + 1) * config.hidden_size) * 4;
  const std::uint64_t qk = static_cast<std::uint64_t>(config.num_layers * (config.q_dim() + config.kv_dim())) * q8_row;
  BOOST_TEST(memory.copied_bytes == norms + qk);
  BOOST_TEST(memory.mapped_bytes > 2 * qk);  // v, o, the MLP, the embedding and the head
  const std::string text = model::describe_weight_memory(memory);
  BOOST_TEST(text.find("mapped from the file") != std::string::npos, text);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace pagedllm
