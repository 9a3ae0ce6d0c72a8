// CPU emulation of the CUDA execution model, to run the kernels' logic and the GPU tests on a
// machine without a GPU (a development aid, not wired into CMake; see run.sh).
//
// Each CUDA thread is a ucontext fiber; thread blocks run one after another. __syncthreads and
// warp shuffles are cooperative barriers (a thread that waits at one while others of its warp or
// block wait at another, or have exited, aborts with "EMU DEADLOCK"); __shared__ becomes a static
// local; device memory is host memory (cudaMalloc/cudaMemcpy/... become malloc/memcpy). Each
// thread runs from one barrier to the next without interruption, in an order EMU_SCHEDULE sets:
// `forward` (default, thread 0 first), `reverse`, or `shuffle` (a fresh random order every round,
// seeded by EMU_SEED). A race between barriers whose outcome depends on which thread goes first
// (a read of a value another thread writes in the same interval) changes the results under another
// order, so running the tests under all three is a CPU stand-in for racecheck; races that cannot
// change a result at this granularity (within a warp, between barriers) stay for racecheck on a
// GPU. Float math is the host's.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <ucontext.h>
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iterator>
#include <numeric>
#include <random>
#include <type_traits>
#include <vector>

#undef __global__
#define __global__
#undef __device__
#define __device__
#undef __host__
#define __host__
#undef __shared__
#define __shared__ static
#undef __launch_bounds__
#define __launch_bounds__(...)

using std::max;
using std::min;

namespace emu {
enum class State { runnable, warp_wait, block_wait, done };
struct Fiber {
  ucontext_t ctx;
  std::vector<char> stack;
  State state = State::runnable;
};
inline ucontext_t scheduler;
inline std::vector<Fiber> fibers;
inline int current = 0;
inline dim3 cur_thread, cur_block, cur_grid, cur_dim;
inline unsigned long long shfl_buf[64][2][32];
inline int shfl_parity[64][32];
inline std::function<void()> body;

// The order threads run in within one round of run_block (see the top of this file).
enum class Schedule { forward, reverse, shuffle };
inline Schedule schedule_from_env() {
  const char* name = std::getenv("EMU_SCHEDULE");
  if (name == nullptr || std::strcmp(name, "forward") == 0) return Schedule::forward;
  if (std::strcmp(name, "reverse") == 0) return Schedule::reverse;
  if (std::strcmp(name, "shuffle") == 0) return Schedule::shuffle;
  std::fprintf(stderr, "EMU_SCHEDULE must be forward, reverse or shuffle, got '%s'\n", name);
  std::abort();
}
inline const Schedule schedule = schedule_from_env();
inline std::mt19937_64 schedule_rng(std::getenv("EMU_SEED") != nullptr
                                        ? std::strtoull(std::getenv("EMU_SEED"), nullptr, 10)
                                        : 1);
inline void order_round(std::vector<int>& order) {
  std::iota(order.begin(), order.end(), 0);
  if (schedule == Schedule::reverse) std::reverse(order.begin(), order.end());
  if (schedule == Schedule::shuffle) std::shuffle(order.begin(), order.end(), schedule_rng);
}

inline void yield(State s) {
  fibers[current].state = s;
  asm volatile("" ::: "memory");
  swapcontext(&fibers[current].ctx, &scheduler);
  asm volatile("" ::: "memory");
  cur_thread = dim3(static_cast<unsigned>(current), 0, 0);
}
inline void entry() {
  body();
  fibers[current].state = State::done;
  swapcontext(&fibers[current].ctx, &scheduler);
}
inline void run_block(int nthreads) {
  fibers.assign(static_cast<size_t>(nthreads), Fiber{});
  std::memset(shfl_parity, 0, sizeof shfl_parity);
  for (int t = 0; t < nthreads; ++t) {
    Fiber& f = fibers[static_cast<size_t>(t)];
    f.stack.resize(128 * 1024);
    getcontext(&f.ctx);
    f.ctx.uc_stack.ss_sp = f.stack.data();
    f.ctx.uc_stack.ss_size = f.stack.size();
    f.ctx.uc_link = nullptr;
    makecontext(&f.ctx, entry, 0);
  }
  const int num_warps = (nthreads + 31) / 32;
  std::vector<int> order(static_cast<size_t>(nthreads));
  for (;;) {
    bool ran = false;
    order_round(order);
    for (const int t : order) {
      if (fibers[static_cast<size_t>(t)].state != State::runnable) continue;
      current = t;
      cur_thread = dim3(static_cast<unsigned>(t), 0, 0);
      swapcontext(&scheduler, &fibers[static_cast<size_t>(t)].ctx);
      ran = true;
    }
    int live = 0, block_waiting = 0;
    for (auto& f : fibers) {
      if (f.state != State::done) ++live;
      if (f.state == State::block_wait) ++block_waiting;
    }
    if (live == 0) return;
    bool released = false;
    for (int w = 0; w < num_warps; ++w) {
      int lanes_live = 0, lanes_waiting = 0;
      for (int l = 0; l < 32 && w * 32 + l < nthreads; ++l) {
        const State s = fibers[static_cast<size_t>(w * 32 + l)].state;
        if (s != State::done) ++lanes_live;
        if (s == State::warp_wait) ++lanes_waiting;
      }
      if (lanes_waiting > 0 && lanes_waiting == lanes_live) {
        for (int l = 0; l < 32 && w * 32 + l < nthreads; ++l)
          fibers[static_cast<size_t>(w * 32 + l)].state = State::runnable;
        released = true;
      }
    }
    if (block_waiting > 0 && block_waiting == live) {
      for (auto& f : fibers)
        if (f.state == State::block_wait) f.state = State::runnable;
      released = true;
    }
    if (!ran && !released) {
      std::fprintf(stderr, "EMU DEADLOCK: block (%u,%u,%u): %d live, %d at __syncthreads\n", cur_block.x, cur_block.y,
                   cur_block.z, live, block_waiting);
      for (int t = 0; t < nthreads; ++t)
        std::fprintf(stderr, "  t%d state %d\n", t, static_cast<int>(fibers[static_cast<size_t>(t)].state));
      std::abort();
    }
  }
}

struct Config {
  dim3 grid;
  dim3 block;
  size_t smem = 0;
  cudaStream_t stream = nullptr;
};

template <typename Kernel>
auto launch(Kernel kernel, Config c) {
  return [=](auto... args) {
    cur_grid = c.grid;
    cur_dim = c.block;
    const int nthreads = static_cast<int>(c.block.x * c.block.y * c.block.z);
    for (unsigned z = 0; z < c.grid.z; ++z)
      for (unsigned y = 0; y < c.grid.y; ++y)
        for (unsigned x = 0; x < c.grid.x; ++x) {
          cur_block = dim3(x, y, z);
          body = [&] { kernel(args...); };
          run_block(nthreads);
        }
  };
}

template <typename T>
T shfl(T v, int src_of_lane(int lane, int arg, int width), int arg, int width) {
  const int t = static_cast<int>(cur_thread.x);
  const int lane = t % 32, warp = t / 32;
  int& parity = shfl_parity[warp][lane];
  unsigned long long bits = 0;
  std::memcpy(&bits, &v, sizeof(T));
  shfl_buf[warp][parity][lane] = bits;
  yield(State::warp_wait);
  const int src = src_of_lane(lane, arg, width);
  const unsigned long long got = shfl_buf[warp][parity][src];
  parity ^= 1;
  T r;
  std::memcpy(&r, &got, sizeof(T));
  return r;
}
inline int xor_src(int lane, int offset, int width) {
  (void)width;
  return lane ^ offset;
}
inline int up_src(int lane, int offset, int width) {
  const int seg = lane / width * width;
  return lane - offset >= seg ? lane - offset : lane;
}
}  // namespace emu

#define threadIdx emu::cur_thread
#define blockIdx emu::cur_block
#define gridDim emu::cur_grid
#define blockDim emu::cur_dim

inline void __syncthreads() { emu::yield(emu::State::block_wait); }
inline void __syncwarp(unsigned = 0xffffffffu) { emu::yield(emu::State::warp_wait); }
template <typename T>
T __shfl_xor_sync(unsigned, T v, int offset, int width = 32) {
  return emu::shfl(v, emu::xor_src, offset, width);
}
template <typename T>
T __shfl_up_sync(unsigned, T v, int offset, int width = 32) {
  return emu::shfl(v, emu::up_src, offset, width);
}
inline float rsqrtf_emu(float x) { return 1.0f / std::sqrt(x); }
#define rsqrtf rsqrtf_emu
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline unsigned __float_as_uint(float f) { return std::bit_cast<unsigned>(f); }
inline float __uint_as_float(unsigned u) { return std::bit_cast<float>(u); }
// Cooperative fibers on one OS thread: plain read-modify-write is atomic.
inline unsigned long long atomicAdd(unsigned long long* p, unsigned long long v) {
  const auto old = *p;
  *p += v;
  return old;
}

// Kernels test this to leave out CUDA headers whose stand-ins live here (<mma.h>).
#define PAGEDLLM_CPU_EMULATION 1

// WMMA (warp matrix multiply-accumulate) as the kernels use it: whole fragments loaded from and
// stored to memory, filled, and multiplied. Every lane holds the whole tile (the hardware spreads
// it over the warp's registers, in a layout the API leaves unspecified, which the kernels never
// rely on); a load reads memory as the lane finds it and a store writes the lane's share, so a
// kernel that reads what other lanes stored without __syncwarp() first reads stale data here too. Products and sums in
// fp32, as the tensor cores accumulate (their bf16/fp16 products are exact in fp32; the order of the sums may differ).
namespace nvcuda::wmma {
struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };

template <typename Use, int M, int N, int K, typename T, typename Layout = void>
struct fragment {
  static constexpr int kRows = std::is_same_v<Use, matrix_b> ? K : M;
  static constexpr int kCols = std::is_same_v<Use, matrix_a> ? K : N;
  float x[kRows * kCols];  // row-major
};

inline float wmma_value(float v) { return v; }
inline float wmma_value(__half v) { return __half2float(v); }
inline float wmma_value(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename Use, int M, int N, int K, typename T, typename Layout>
void fill_fragment(fragment<Use, M, N, K, T, Layout>& f, float value) {
  std::fill(std::begin(f.x), std::end(f.x), value);
}

template <typename F, typename E>
void load_tile(F& f, const E* p, unsigned ldm, bool row_major_memory) {
  for (int r = 0; r < F::kRows; ++r) {
    for (int c = 0; c < F::kCols; ++c) {
      f.x[r * F::kCols + c] = wmma_value(row_major_memory ? p[r * ldm + c] : p[c * ldm + r]);
    }
  }
}

template <typename Use, int M, int N, int K, typename T, typename Layout, typename E>
void load_matrix_sync(fragment<Use, M, N, K, T, Layout>& f, const E* p, unsigned ldm) {
  static_assert(!std::is_same_v<Use, accumulator>, "an accumulator load names its memory layout");
  load_tile(f, p, ldm, std::is_same_v<Layout, row_major>);
}

template <int M, int N, int K, typename T>
void load_matrix_sync(fragment<accumulator, M, N, K, T>& f, const float* p, unsigned ldm, layout_t layout) {
  load_tile(f, p, ldm, layout == mem_row_major);
}

// Each lane stores only its share of the tile (element e by lane e % 32), as on the hardware, so a
// lane that reads the others' elements before a __syncwarp() can find them stale.
template <int M, int N, int K, typename T>
void store_matrix_sync(float* p, const fragment<accumulator, M, N, K, T>& f, unsigned ldm, layout_t layout) {
  const int lane = static_cast<int>(emu::cur_thread.x % 32);
  for (int e = lane; e < M * N; e += 32) {
    const int r = e / N;
    const int c = e % N;
    (layout == mem_row_major ? p[r * ldm + c] : p[c * ldm + r]) = f.x[e];
  }
}

template <int M, int N, int K, typename TA, typename LA, typename TB, typename LB, typename TC>
void mma_sync(fragment<accumulator, M, N, K, TC>& d, const fragment<matrix_a, M, N, K, TA, LA>& a,
              const fragment<matrix_b, M, N, K, TB, LB>& b, const fragment<accumulator, M, N, K, TC>& c) {
  float result[M * N];
  for (int i = 0; i < M; ++i) {
    for (int j = 0; j < N; ++j) {
      float sum = c.x[i * N + j];
      for (int k = 0; k < K; ++k) sum += a.x[i * K + k] * b.x[k * N + j];
      result[i * N + j] = sum;
    }
  }
  std::copy(std::begin(result), std::end(result), d.x);
}
}  // namespace nvcuda::wmma

// Host "device" memory. EMU_MALLOC_SLACK bytes past each allocation tolerate a stray read past the
// end; run.sh with EMU_SANITIZE=1 sets it to 0, so AddressSanitizer reports any access past the end.
#ifndef EMU_MALLOC_SLACK
#define EMU_MALLOC_SLACK 16
#endif
#define cudaGetLastError() cudaSuccess
#define cudaMalloc(pp, n) (*(pp) = std::malloc((n) + EMU_MALLOC_SLACK), cudaSuccess)
#define cudaFree(p) (std::free(p), cudaSuccess)
#define cudaHostAlloc(pp, n, f) (*(pp) = std::malloc((n) + EMU_MALLOC_SLACK), cudaSuccess)
#define cudaFreeHost(p) (std::free(p), cudaSuccess)
#define cudaMemcpy(d, s, n, k) (std::memcpy((d), (s), (n)), cudaSuccess)
#define cudaMemcpyAsync(d, s, n, k, st) (std::memcpy((d), (s), (n)), cudaSuccess)
#define cudaMemset(p, v, n) (std::memset((p), (v), (n)), cudaSuccess)
#define cudaDeviceSynchronize() cudaSuccess
