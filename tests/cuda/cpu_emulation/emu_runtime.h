// The CUDA runtime calls of the executor (cuda/*.cpp) for the CPU emulation, on top of emu.h
// (run_executor.sh force-includes this header into the executor's sources, the kernels and the
// test). Streams are the host thread (every call runs at once, in order); the device is a
// pretend 8 GiB one; stream capture records the kernel launches (emu_rt::launch, which
// run_executor.sh substitutes for emu::launch in the kernel sources), asynchronous copies and
// emulated GEMMs as closures, and a graph launch replays them, so CUDA-graph steps run the very
// kernels with the arguments they were captured with, as on a GPU.
#pragma once
#include "emu.h"

#include <functional>
#include <memory>
#include <vector>

namespace emu_rt {

using Work = std::vector<std::function<void()>>;
inline Work* capturing = nullptr;  // the recording of the stream capture in progress

inline void run_or_record(std::function<void()> work) {
  if (capturing != nullptr) {
    capturing->push_back(std::move(work));
  } else {
    work();
  }
}

template <typename Kernel>
auto launch(Kernel kernel, emu::Config config) {
  return [=](auto... args) { run_or_record([=] { emu::launch(kernel, config)(args...); }); };
}

inline cudaError_t memcpy_async(void* dst, const void* src, size_t bytes) {
  run_or_record([=] { std::memcpy(dst, src, bytes); });
  return cudaSuccess;
}
inline cudaError_t memcpy_2d(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height) {
  if (width > dpitch || width > spitch) return cudaErrorInvalidPitchValue;
  run_or_record([=] {
    for (size_t row = 0; row < height; ++row) {
      std::memcpy(static_cast<char*>(dst) + row * dpitch, static_cast<const char*>(src) + row * spitch, width);
    }
  });
  return cudaSuccess;
}

// Printed at exit, so a run shows that graphs were captured and replayed at all.
struct GraphCounts {
  long captures = 0;
  long launches = 0;
  ~GraphCounts() {
    if (captures > 0)
      std::fprintf(stderr, "emulation: %ld graphs captured, %ld graph launches replayed\n", captures, launches);
  }
};
inline GraphCounts graph_counts;

inline cudaError_t begin_capture() {
  if (capturing != nullptr) return cudaErrorIllegalState;
  capturing = new Work();
  return cudaSuccess;
}
inline cudaError_t end_capture(cudaGraph_t* graph) {
  if (capturing == nullptr) return cudaErrorIllegalState;
  *graph = reinterpret_cast<cudaGraph_t>(capturing);
  capturing = nullptr;
  return cudaSuccess;
}
inline cudaError_t instantiate(cudaGraphExec_t* exec, cudaGraph_t graph) {
  *exec = reinterpret_cast<cudaGraphExec_t>(new Work(*reinterpret_cast<Work*>(graph)));
  ++graph_counts.captures;
  return cudaSuccess;
}

inline cudaError_t graph_launch(cudaGraphExec_t exec) {
  if (capturing != nullptr) return cudaErrorStreamCaptureUnsupported;
  ++graph_counts.launches;
  for (const auto& work : *reinterpret_cast<Work*>(exec)) work();
  return cudaSuccess;
}
inline cudaError_t sync() { return capturing != nullptr ? cudaErrorStreamCaptureUnsupported : cudaSuccess; }

inline int dummy_stream_storage;
inline constexpr size_t kTotalBytes = size_t{8} << 30;  // cudaMemGetInfo: 8 GiB, 1 GiB of it in use

}  // namespace emu_rt

#undef cudaMemcpyAsync
#define cudaMemcpyAsync(d, s, n, k, st) emu_rt::memcpy_async((d), (s), (n))
#define cudaMemcpy2DAsync(d, dp, s, sp, w, h, k, st) emu_rt::memcpy_2d((d), (dp), (s), (sp), (w), (h))
#define cudaSetDevice(d) cudaSuccess
#define cudaStreamCreateWithFlags(ps, f) \
  (*(ps) = reinterpret_cast<cudaStream_t>(&emu_rt::dummy_stream_storage), cudaSuccess)
#define cudaStreamDestroy(s) cudaSuccess
#define cudaStreamSynchronize(s) emu_rt::sync()
#define cudaMemGetInfo(pf, pt) \
  (*(pf) = emu_rt::kTotalBytes - (size_t{1} << 30), *(pt) = emu_rt::kTotalBytes, cudaSuccess)
#define cudaStreamBeginCapture(s, m) emu_rt::begin_capture()
#define cudaStreamEndCapture(s, pg) emu_rt::end_capture(pg)
#define cudaGraphInstantiate(pe, g, f) emu_rt::instantiate((pe), (g))
#define cudaGraphLaunch(e, s) emu_rt::graph_launch(e)
#define cudaGraphDestroy(g) (delete reinterpret_cast<emu_rt::Work*>(g), cudaSuccess)
#define cudaGraphExecDestroy(e) (delete reinterpret_cast<emu_rt::Work*>(e), cudaSuccess)
