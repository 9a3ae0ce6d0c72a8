// The tiled, fixed-order GEMM of linear.h.
//
// One kernel body (the templates below, always inlined) is compiled into generic functions (SSE
// vectors, 4 per dot product) and into __attribute__((target("avx2"))) functions (AVX vectors, 2
// per dot product). Either way lane j of an element's accumulators is exactly the acc[j] of
// dot.h, so the code is dot.h's definition with the loads shared across a tile. With
// -ffp-contract=off and no "fma" target, a lane's sequence is "multiply, round, add, round" on
// every path; the instruction set only decides how many lanes one instruction covers.
//
// Work split: OpenMP hands out tiles of outputs (static schedule). A thread computes its tile
// for all rows: R-row sub-tiles first (weights reused across R rows, inputs across O outputs),
// then the rows left over (generic and AVX2: one output at a time, a single weight stream the
// hardware prefetcher follows at full memory bandwidth; AVX-512: 4 outputs, whose 4 sums would
// otherwise each wait on one register's adds). Stored weights that
// are not fp32 are decoded one tile of outputs at a time into the thread's buffer first, and the
// same tile code then reads that buffer instead of the matrix; a single row instead runs
// stored_row_kernel.h, which decodes into registers.
#include "cpu_ref/linear.h"

#include <cpuid.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <vector>

#include "core/common/check.h"
#include "cpu_ref/dot.h"
#include "cpu_ref/stored_row_kernel.h"
#include "cpu_ref/weight_decode.h"

namespace pagedllm::cpu_ref {
namespace {

// fp32 vectors (GCC/Clang vector extensions) of one register each: SSE (generic x86-64) and
// AVX. kDotLanes / width of them hold the 16 lanes of dot.h: part p holds lanes
// [p * width, (p + 1) * width).
using Sse = float __attribute__((vector_size(4 * sizeof(float))));
using Avx = float __attribute__((vector_size(8 * sizeof(float))));
using Avx512 = float __attribute__((vector_size(16 * sizeof(float))));

// Tile shapes (rows x outputs), measured best on 2 cores of an AMD EPYC (Zen 4). A tile keeps
// rows * outputs * 16 lanes of accumulators in the 16 vector registers: 2 x 2 elements of 4 SSE
// registers each (16, some spilled), 2 x 3 elements of 2 AVX registers each (12).
constexpr int kGenericRows = 2;
constexpr int kGenericOuts = 2;
constexpr int kAvx2Rows = 2;
constexpr int kAvx2Outs = 3;
// AVX-512: an element's 16 lanes in one of 32 registers, so 4 x 4 elements (16 accumulators,
// 4 inputs, a weight vector): 8 loads per 16 multiplies and adds instead of 10 per 12 (chosen by
// that count and measured against AVX2, not tuned against other shapes). Rows left over run
// 1 x 4, four independent sums (one alone would wait on each add's latency).
constexpr int kAvx512Rows = 4;
constexpr int kAvx512Outs = 4;

// y[r][o] = dot(x[r], w[o], n) exactly as dot.h defines it, for an R x O tile, with vectors V.
// `prefetch`, when given, is fetched ahead: O * n16 floats over the loop.
template <typename V, int R, int O>
[[gnu::always_inline]] inline void dot_tile(const float* const (&x)[R], const float* const (&w)[O], std::int64_t n,
                                            const float* prefetch, float (&y)[R][O]) {
  constexpr int kWidth = sizeof(V) / sizeof(float);
  constexpr int kParts = kDotLanes / kWidth;
  V acc[R][O][kParts];
  for (int r = 0; r < R; ++r)
    for (int o = 0; o < O; ++o)
      for (int p = 0; p < kParts; ++p) acc[r][o][p] = V{};  // +0.0f, as dot.h
  const std::int64_t n16 = n - n % kDotLanes;
  for (std::int64_t k = 0; k < n16; k += kDotLanes) {
    if (prefetch != nullptr) {
      for (int o = 0; o < O; ++o) __builtin_prefetch(prefetch + k * O + o * kDotLanes);
    }
    for (int p = 0; p < kParts; ++p) {
      V xv[R];  // unaligned loads
      for (int r = 0; r < R; ++r) std::memcpy(&xv[r], x[r] + k + p * kWidth, sizeof(V));
      for (int o = 0; o < O; ++o) {
        V wv;
        std::memcpy(&wv, w[o] + k + p * kWidth, sizeof(V));
        for (int r = 0; r < R; ++r) acc[r][o][p] += xv[r] * wv;  // multiply, round, add, round
      }
    }
  }
  if (n16 == n) {  // no tail: fold the lanes where they are
    for (int r = 0; r < R; ++r)
      for (int o = 0; o < O; ++o) y[r][o] = combine_lane_parts<V>(acc[r][o]);
    return;
  }
  for (int r = 0; r < R; ++r) {
    for (int o = 0; o < O; ++o) {
      float lanes[kDotLanes];
      for (int p = 0; p < kParts; ++p)
        for (int j = 0; j < kWidth; ++j) lanes[p * kWidth + j] = acc[r][o][p][j];
      for (std::int64_t k = n16; k < n; ++k) lanes[k - n16] += x[r][k] * w[o][k];
      y[r][o] = combine_lanes(lanes);
    }
  }
}

// The fp32 weight rows of one tile of outputs: the matrix's own rows, or a decoded copy of them.
struct TileWeights {
  const float* rows;       // [tile's outputs][in_features], row `first_row` first
  std::int64_t first_row;  // the tile's first output
  bool prefetch_next;      // rows after the tile follow in memory (the matrix itself)
};

// Rows [r0, r0 + R) against the tile's O weight rows; writes only the `num_outs` real outputs.
template <typename V, int R, int O>
[[gnu::always_inline]] inline void row_tile(const LinearArgs& a, std::int64_t r0, std::int64_t o0,
                                            const float* const (&w)[O], int num_outs, const float* prefetch) {
  const float* x[R];
  for (int r = 0; r < R; ++r) x[r] = a.x + (r0 + r) * a.in_features;
  float y[R][O];
  dot_tile<V, R, O>(x, w, a.in_features, prefetch, y);
  for (int r = 0; r < R; ++r) {
    float* out = a.y + (r0 + r) * a.out_features + o0;
    for (int o = 0; o < num_outs; ++o) out[o] = a.bias ? y[r][o] + a.bias[o0 + o] : y[r][o];
  }
}

// Outputs [o0, o0 + O) for rows [r_begin, r_end) (a multiple of R of them). Past the last
// output, the weight pointers repeat the last real row (computed, never stored), so every
// sub-tile runs the same code.
template <typename V, int R, int O>
[[gnu::always_inline]] inline void sub_tile_rows(const LinearArgs& a, const TileWeights& tile, std::int64_t o0,
                                                 std::int64_t r_begin, std::int64_t r_end) {
  const int num_outs = static_cast<int>(std::min<std::int64_t>(O, a.out_features - o0));
  const float* w[O];
  for (int o = 0; o < O; ++o) {
    w[o] = tile.rows + (std::min<std::int64_t>(o0 + o, a.out_features - 1) - tile.first_row) * a.in_features;
  }
  // Several weight rows are read side by side: fetch the next O rows (contiguous) ahead, while
  // the first row tile runs; the hardware prefetcher alone falls behind on interleaved streams.
  const float* next = tile.prefetch_next && O > 1 && o0 + 2 * O <= a.out_features
                          ? tile.rows + (o0 + O - tile.first_row) * a.in_features
                          : nullptr;
  for (std::int64_t r0 = r_begin; r0 < r_end; r0 += R) {
    row_tile<V, R, O>(a, r0, o0, w, num_outs, r0 == r_begin ? next : nullptr);
  }
}

// The kTileOuts outputs of tile `tile` (the unit OpenMP distributes), as R x O sub-tiles.
template <typename V, int kTileOuts, int R, int O>
[[gnu::always_inline]] inline void tile_rows(const LinearArgs& a, const TileWeights& tile, std::int64_t r_begin,
                                             std::int64_t r_end) {
  static_assert(kTileOuts % O == 0);
  const std::int64_t o_end = std::min<std::int64_t>(tile.first_row + kTileOuts, a.out_features);
  for (std::int64_t o0 = tile.first_row; o0 < o_end; o0 += O) {
    sub_tile_rows<V, R, O>(a, tile, o0, r_begin, r_end);
  }
}

// One instruction set's kernels: tiles of `rows` rows, and single rows for the rows left over.
// Each function inlines exactly one tile shape, so the compiler keeps its accumulators in
// registers.
using TileRowsFn = void (*)(const LinearArgs&, const TileWeights& tile, std::int64_t r_begin, std::int64_t r_end);
struct TileKernels {
  std::int64_t rows;
  std::int64_t outs;
  TileRowsFn tile_rows;
  TileRowsFn single_rows;
};

void generic_tile_rows(const LinearArgs& a, const TileWeights& tile, std::int64_t r_begin, std::int64_t r_end) {
  tile_rows<Sse, kGenericOuts, kGenericRows, kGenericOuts>(a, tile, r_begin, r_end);
}
void generic_single_rows(const LinearArgs& a, const TileWeights& tile, std::int64_t r_begin, std::int64_t r_end) {
  tile_rows<Sse, kGenericOuts, 1, 1>(a, tile, r_begin, r_end);
}
__attribute__((target("avx2"))) void avx2_tile_rows(const LinearArgs& a, const TileWeights& tile, std::int64_t r_begin,
                                                    std::int64_t r_end) {
  tile_rows<Avx, kAvx2Outs, kAvx2Rows, kAvx2Outs>(a, tile, r_begin, r_end);
}
__attribute__((target("avx2"))) void avx2_single_rows(const LinearArgs& a, const TileWeights& tile,
                                                      std::int64_t r_begin, std::int64_t r_end) {
  tile_rows<Avx, kAvx2Outs, 1, 1>(a, tile, r_begin, r_end);
}

__attribute__((target("avx512f"))) void avx512_tile_rows(const LinearArgs& a, const TileWeights& tile,
                                                         std::int64_t r_begin, std::int64_t r_end) {
  tile_rows<Avx512, kAvx512Outs, kAvx512Rows, kAvx512Outs>(a, tile, r_begin, r_end);
}
__attribute__((target("avx512f"))) void avx512_single_rows(const LinearArgs& a, const TileWeights& tile,
                                                           std::int64_t r_begin, std::int64_t r_end) {
  tile_rows<Avx512, kAvx512Outs, 1, kAvx512Outs>(a, tile, r_begin, r_end);
}

// One tile of outputs for every row.
void run_tile(const TileKernels& k, const LinearArgs& a, const TileWeights& tile, std::int64_t num_tiled_rows) {
  if (num_tiled_rows > 0) k.tile_rows(a, tile, 0, num_tiled_rows);
  if (num_tiled_rows < a.num_rows) k.single_rows(a, tile, num_tiled_rows, a.num_rows);
}

constexpr TileKernels kGenericKernels{kGenericRows, kGenericOuts, generic_tile_rows, generic_single_rows};
constexpr TileKernels kAvx2Kernels{kAvx2Rows, kAvx2Outs, avx2_tile_rows, avx2_single_rows};
constexpr TileKernels kAvx512Kernels{kAvx512Rows, kAvx512Outs, avx512_tile_rows, avx512_single_rows};

const TileKernels& tile_kernels(LinearKernel kernel) {
  switch (kernel) {
    case LinearKernel::avx512:
      return kAvx512Kernels;
    case LinearKernel::avx2:
      return kAvx2Kernels;
    default:
      return kGenericKernels;
  }
}

}  // namespace

bool cpu_has_avx2() noexcept {
  // F16C widens the fp16 scales. CPUID leaf 1, ECX bit 29: Clang's __builtin_cpu_supports does
  // not know "f16c".
  static const bool has_avx2 = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    return __builtin_cpu_supports("avx2") && __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & bit_F16C) != 0;
  }();
  return has_avx2;
}

bool cpu_has_avx512() noexcept {
  static const bool has_avx512 = __builtin_cpu_supports("avx512f") && cpu_has_avx2();
  return has_avx512;
}

LinearKernel resolve_linear_kernel(LinearKernel kernel) noexcept {
  if (kernel != LinearKernel::best) return kernel;
  if (cpu_has_avx512()) return LinearKernel::avx512;
  return cpu_has_avx2() ? LinearKernel::avx2 : LinearKernel::generic;
}

const char* linear_kernel_name(LinearKernel kernel) noexcept {
  switch (kernel) {
    case LinearKernel::best:
      return "best";
    case LinearKernel::generic:
      return "generic";
    case LinearKernel::avx2:
      return "avx2";
    case LinearKernel::avx512:
      return "avx512";
  }
  return "?";
}

namespace {

// One linear's outputs cut into the units OpenMP hands out, and how a unit is computed.
struct LinearWork {
  const LinearArgs* args = nullptr;
  const TileKernels* kernels = nullptr;
  std::int64_t num_tiled_rows = 0;
  StoredRowFn row_kernel = nullptr;                // stored weights, one row, decoded in registers
  model::DequantizeBlocksFn dequantize = nullptr;  // stored weights decoded a tile at a time
  std::int64_t block_size = 1;                     // values per stored block (with dequantize)
  std::int64_t unit_outs = 0;                      // outputs per unit
  std::int64_t num_units = 0;
};

// The single-row kernel for stored weights of `type`: AVX-512 where it covers the type, else AVX2.
StoredRowFn stored_row_kernel(LinearKernel kernel, model::GgmlType type, std::int64_t in_features) {
  if (kernel == LinearKernel::avx512) {
    if (const StoredRowFn row_kernel = avx512_stored_row_kernel(type)) return row_kernel;
  }
  return avx2_stored_row_kernel(type, in_features);
}

LinearWork plan_linear(const LinearArgs& args) {
  PAGEDLLM_ASSERT(args.num_rows >= 0 && args.in_features >= 0 && args.out_features >= 0, "linear: negative size");
  LinearWork work{.args = &args};
  if (args.num_rows == 0 || args.out_features == 0) return work;  // no units
  PAGEDLLM_ASSERT(args.y != nullptr && (args.in_features == 0 || (args.x && args.weight.data)), "linear: null matrix");
  const LinearKernel kernel = resolve_linear_kernel(args.kernel);
  PAGEDLLM_ASSERT(kernel != LinearKernel::avx2 || cpu_has_avx2(),
                  "linear: AVX2 kernel asked for on a CPU without AVX2");
  PAGEDLLM_ASSERT(kernel != LinearKernel::avx512 || cpu_has_avx512(),
                  "linear: AVX-512 kernel asked for on a CPU without AVX-512F");
  const bool vector_decode = kernel != LinearKernel::generic;  // AVX2 decoders (AVX-512 CPUs have AVX2)
  work.kernels = &tile_kernels(kernel);
  work.num_tiled_rows = args.num_rows - args.num_rows % work.kernels->rows;
  work.unit_outs = work.kernels->outs;
  if (args.weight.is_f32()) {
    PAGEDLLM_ASSERT(args.weight.row_bytes == args.in_features * static_cast<std::int64_t>(sizeof(float)),
                    "linear: fp32 weight rows are not in_features long");
  } else if (vector_decode && args.num_rows < work.kernels->rows &&
             (work.row_kernel = stored_row_kernel(kernel, args.weight.type, args.in_features)) != nullptr) {
    // Fewer rows than a tile's: nothing would share a decoded tile, so decode in registers.
    work.unit_outs = kStoredRowOuts;
  } else {
    const std::optional<model::GgmlTypeTraits> traits =
        model::ggml_type_traits(static_cast<std::uint32_t>(args.weight.type));
    work.dequantize = weight_dequantizer(args.weight.type, vector_decode);
    PAGEDLLM_ASSERT(traits && work.dequantize != nullptr, "linear: weights of a type that cannot be decoded");
    work.block_size = static_cast<std::int64_t>(traits->block_size);
    PAGEDLLM_ASSERT(args.in_features % work.block_size == 0 &&
                        args.weight.row_bytes == args.in_features / work.block_size * traits->type_size,
                    "linear: stored weight rows are not in_features values of whole blocks");
  }
  work.num_units = (args.out_features + work.unit_outs - 1) / work.unit_outs;
  return work;
}

// Outputs [unit * unit_outs, + unit_outs) for every row. `decoded` is the thread's tile buffer.
void run_unit(const LinearWork& work, std::int64_t unit, std::vector<float>& decoded) {
  const LinearArgs& args = *work.args;
  const std::int64_t first = unit * work.unit_outs;
  if (work.row_kernel != nullptr) {
    const std::int64_t end = std::min(first + work.unit_outs, args.out_features);
    for (std::int64_t row = 0; row < args.num_rows; ++row) work.row_kernel(args, row, first, end);
  } else if (work.dequantize == nullptr) {
    const float* weight = args.weight.f32_data() + first * args.in_features;
    run_tile(*work.kernels, args, TileWeights{weight, first, true}, work.num_tiled_rows);
  } else {
    const std::int64_t count = std::min(work.unit_outs, args.out_features - first);
    decode_rows(args.weight, work.dequantize, work.block_size, first, count, args.in_features, decoded.data());
    run_tile(*work.kernels, args, TileWeights{decoded.data(), first, false}, work.num_tiled_rows);
  }
}

}  // namespace

void linear_each(std::span<const LinearArgs> linears) {
  std::vector<LinearWork> works;
  works.reserve(linears.size());
  std::int64_t total_units = 0;
  std::size_t tile_floats = 0;  // the largest decoded tile
  for (const LinearArgs& args : linears) {
    works.push_back(plan_linear(args));
    total_units += works.back().num_units;
    if (works.back().dequantize != nullptr) {
      tile_floats = std::max(tile_floats, static_cast<std::size_t>(works.back().unit_outs * args.in_features));
    }
  }
  if (total_units == 0) return;
#pragma omp parallel
  {
    // Independent outputs only: each element is computed whole by one thread, whichever linear
    // it belongs to.
    // This thread's decoded tile, kept across calls (OpenMP's threads persist): no allocation
    // or clearing per call in the step loop; every value read is decoded first.
    thread_local std::vector<float> decoded;
    if (decoded.size() < tile_floats) decoded.resize(tile_floats);
    std::size_t index = 0;       // the linear the last unit belonged to
    std::int64_t its_first = 0;  // its first unit in the combined numbering
#pragma omp for schedule(static)
    for (std::int64_t unit = 0; unit < total_units; ++unit) {
      if (unit < its_first) {  // not reached with a static schedule; kept for any other
        index = 0;
        its_first = 0;
      }
      while (unit >= its_first + works[index].num_units) its_first += works[index++].num_units;
      run_unit(works[index], unit - its_first, decoded);
    }
  }
}

void linear(const LinearArgs& args) { linear_each(std::span<const LinearArgs>(&args, 1)); }

}  // namespace pagedllm::cpu_ref
