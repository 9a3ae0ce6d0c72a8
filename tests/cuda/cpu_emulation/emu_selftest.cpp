// Checks that EMU_SCHEDULE really changes the order threads run in between barriers, so that
// running the kernel tests under `reverse` and `shuffle` can expose an order-dependent race
// (emu.h). A deliberately racy block: thread 0 writes a shared flag, the last thread reads it with
// no barrier between. Forward: the write comes first; reverse: the read does; shuffle: either,
// but across many blocks both. Exits 1 if the observed orders do not match the schedule.
#include "emu.h"

#include <cstdio>
#include <string>

namespace {

int seen_written = 0;  // blocks whose last thread saw thread 0's write
int seen_stale = 0;

void racy_kernel() {
  __shared__ int flag;
  const int tid = static_cast<int>(threadIdx.x);
  if (tid == 0) flag = 0;
  __syncthreads();
  if (tid == 0) flag = 1;  // the race: no barrier before the read below
  if (tid == 63) (flag == 1 ? seen_written : seen_stale) += 1;
}

}  // namespace

int main() {
  constexpr unsigned kBlocks = 64;
  emu::launch(racy_kernel, emu::Config{dim3(kBlocks), dim3(64)})();
  const char* name = std::getenv("EMU_SCHEDULE");
  const std::string schedule = name != nullptr ? name : "forward";
  const bool ok = schedule == "forward"   ? seen_written == static_cast<int>(kBlocks)
                  : schedule == "reverse" ? seen_stale == static_cast<int>(kBlocks)
                                          : seen_written > 0 && seen_stale > 0;
  std::printf("emu self-test, schedule %s: the racy read saw the write in %d of %u blocks: %s\n", schedule.c_str(),
              seen_written, kBlocks, ok ? "as expected" : "NOT as expected");
  return ok ? 0 : 1;
}
