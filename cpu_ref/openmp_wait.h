// How long an idle OpenMP thread spins before it sleeps, in the processes that run cpu_ref.
//
// cpu_ref runs a few hundred parallel loops per forward pass, each ending in a barrier. GNU
// libgomp's default makes a thread that waits at a barrier spin for 300,000 rounds (milliseconds)
// before it sleeps. On an idle machine that costs nothing; on a machine with other work (a
// server's HTTP threads, another process) the spinning thread takes the core from the very thread
// it waits for, and steps stall: 2 threads on a busy 2-core machine took 125-250 ms per SmolLM2
// decode step instead of about 35 (docs/BENCHMARKS.md, tools/bench/cpu_wait_policy.sh). Passive
// waiting (no spin) removes the stalls but costs about 30% on an idle machine, since every
// barrier then pays a futex wake-up. A short spin of kDefaultSpinCount rounds (tens of
// microseconds) keeps the idle speed and most of passive's gain under load.
//
// libgomp reads its settings once, when it is loaded, before main() runs, and has no call to
// change them later. So main() calls apply_openmp_wait_default() first: when the user set neither
// OMP_WAIT_POLICY nor GOMP_SPINCOUNT, it sets GOMP_SPINCOUNT and re-executes the program in place
// (same process id, arguments and descriptors), and libgomp loads with it. A user's own setting
// is always left alone.
#pragma once

namespace pagedllm::cpu_ref {

inline constexpr const char* kDefaultSpinCount = "1000";

// Returns at once when the wait is already decided (by the user, or by an earlier re-execution);
// otherwise does not return, unless re-executing fails (then libgomp's default stays).
void apply_openmp_wait_default(char** argv);

// What decided the wait, for startup lines: "GOMP_SPINCOUNT=1000 (pagedllm's default)", the
// user's variables, or libgomp's default.
const char* openmp_wait_setting();

}  // namespace pagedllm::cpu_ref
