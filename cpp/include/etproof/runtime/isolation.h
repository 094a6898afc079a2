// etproof/runtime/isolation.h — running a bundle's program in a worker process.
//
// A corrupted program, or a bug inside ExecuTorch or a delegate, can crash the process that runs
// it: fuzzing found 88 distinct crashes inside ExecuTorch's loader, its kernels and the XNNPACK
// delegate on programs whose hash matched their manifest (fuzz/crashes-upstream/README.md).
// etproof cannot fix those, so it does not let them take it down: with Isolation::enabled,
// LoadedModel::load (bundle.h) starts a worker process (the `etproof-worker` executable, built
// beside `etproof`), which opens and verifies the bundle, loads it with ExecuTorch and runs each
// method call; only tensors and typed errors cross back. A worker that dies — a signal
// (SIGSEGV, SIGABRT, …), the kernel's out-of-memory kill, the memory limit below, or the time
// limit — becomes Error{kCrashed} naming the signal or the limit, which the replay engine makes a
// `crashed` case or column (status.h); the run goes on. The next call on the same LoadedModel
// starts a fresh worker and loads the program again, so one crashing case does not take the
// bundle's other cases with it.
//
// What the worker runs is the same code as in-process (the same LoadedModel, kernels and
// delegates: `etproof-worker` links the delegates `etproof` links), so a verdict does not depend
// on isolation; cpp/tests/integration/isolation_test.cpp checks that the two agree on every test bundle.
// Costs (measured on this project's 2-core development machine, AMD EPYC, 2026-12-02): a tiny
// test bundle written, started in a worker, loaded and run on its 3 cases ≈ 35 ms (the byte-flip
// sweep: 753 in 26 s); the golden-set matrix (18 models, 210 cells measured) 19.8 s with a worker per
// column against 12.8 s in one process, with the same output. A call's inputs and outputs are
// copied once each way through a Unix socket.
//
// Used by `matrix` by default (`--in-process` turns it off) and by `parity --isolate`; the
// library's callers ask for it with ReplayOptions::isolation (replay.h) or
// LoadedModel::load(bundle, isolation). Linux and macOS (POSIX spawn and sockets); the parent's
// death kills its workers on Linux (PR_SET_PDEATHSIG).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "etproof/runtime/emulation.h"

namespace etproof {

struct Isolation {
  // false: the program runs in the calling process (crashes inside ExecuTorch take it down).
  bool enabled = false;
  // Wall-clock limit, in seconds, for each request to the worker: the load (open, verify, load
  // every method) and each method call. A worker that exceeds it is killed (SIGKILL) and the
  // request is Error{kCrashed} "exceeded the time limit". ≤ 0: no limit. The default, 600 s, is
  // 30× the whole golden-set matrix here (every load and call of 18 models, 20 s): generous,
  // since a limit that fires on a slow machine is a false result.
  double time_limit_s = 600;
  // Address-space limit of the worker in bytes (setrlimit RLIMIT_AS), so that a program asking
  // for more than the machine has fails inside the worker (std::bad_alloc → Error{kOutOfMemory},
  // or an allocation ExecuTorch does not check → a signal → kCrashed naming this limit) instead of
  // bringing in the system's OOM killer. nullopt: three quarters of this machine's physical
  // memory (sysconf). 0: no limit. Not applied under AddressSanitizer, whose shadow memory needs
  // terabytes of address space (the fuzz build): there the limit is only reported.
  std::optional<uint64_t> memory_limit_bytes;
  // The worker executable; empty: find_worker().
  std::filesystem::path worker;
  // Set: the worker is the one cross-built for this emulated machine, started by its emulator
  // (etproof/emulation.h: find_emulator, emulated_worker_command); `worker` is then ignored. Its
  // memory limit is not applied (QEMU's user mode keeps RLIMIT_AS for itself) and its time
  // limit counts emulated time, which is several times slower than native.
  std::optional<Emulation> emulation;
};

// The memory limit a worker gets under `isolation` (0: none), as documented above.
uint64_t effective_memory_limit(const Isolation& isolation);

// This process's executable, symbolic links resolved: /proc/self/exe on Linux,
// _NSGetExecutablePath on macOS. Empty, with `ec` set, where neither answers (`ec` is
// std::errc::not_supported on other systems).
std::filesystem::path executable_path(std::error_code& ec);

// Where the worker executable is, in this order: $ETPROOF_WORKER; `etproof-worker` in the
// directory of the running executable (an installed `bin/`, or the build tree for etproof and its
// tests); the build tree this library was built in. Throws Error{kCapabilityUnavailable} naming
// the places looked at when none holds an executable file, with the remedy (build the
// `etproof-worker` target, set ETPROOF_WORKER, or run in-process).
std::filesystem::path find_worker();

// What a worker serves beyond LOAD, RUN and HELLO, given by the layer that defines it (the
// worker executable wires them): `bench(bundle_path, options_json)` runs the whole benchmark and
// returns its JSON reply (etproof/replay/bench.h serve_bench). Empty: the request is refused.
struct WorkerServices {
  std::function<nlohmann::json(const std::string& bundle, const nlohmann::json& options)> bench;
};

// The worker's side: serves LOAD, RUN, HELLO and the `services` on the connected socket `fd` until
// the parent closes it, applying `memory_limit_bytes` (0: none) to itself first. Returns the
// process's exit status (0 when the parent closed the socket). `etproof-worker`'s main() calls it;
// nothing else should.
int worker_main(int fd, uint64_t memory_limit_bytes, const WorkerServices& services = {});

}  // namespace etproof
