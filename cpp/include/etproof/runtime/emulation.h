// etproof/runtime/emulation.h — the runtime half on another CPU, by emulation.
//
// A column run under emulation is a run of the same program, by the same ExecuTorch release's
// runtime and kernels built for that CPU (the aarch64 executorch wheel's C++ SDK), on an emulated
// CPU: `etproof-worker` cross-compiled for aarch64 (./setup.sh: build/arm64/etproof-worker, with
// Debian's g++-aarch64-linux-gnu) and started by QEMU's user-mode emulator (`qemu-aarch64 -cpu
// CPU`, Debian's qemu-user) through the worker protocol (etproof/isolation.h). Which kernels
// XNNPACK picks there follows the emulated CPU's features (NEON, dot product, i8mm, SVE, SME), as
// on hardware with those features — but the arithmetic is QEMU's, so such a run is evidence about
// the program and the kernels, never about a device: every report, JSON cell, JUnit case and
// ledger record carries the machine it ran on with `emulated: true` and the emulator, and the
// coverage page counts it apart ("agrees under emulation").
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace etproof {

// One emulated machine: an architecture and a QEMU CPU model, with QEMU's feature switches.
struct Emulation {
  std::string arch;  // "arm64" (the only one today)
  std::string cpu;   // QEMU's -cpu: a model ("cortex-a53", "neoverse-n1", "max"), optionally with
                     // feature switches ("max,sme=off")
  // "arm64/neoverse-n1": the column suffix (" @ arm64/neoverse-n1") and the --emulate spelling.
  [[nodiscard]] std::string label() const { return arch + "/" + cpu; }
};

// The named sets `--emulate arm64/NAME` expands to (the common case):
//   arm64/phones  cortex-a53 (NEON only), neoverse-n1 (+ dot product), max,sme=off (+ i8mm, bf16,
//                 SVE2: what XNNPACK's int8 GEMMs select without SME), max (+ SME/SME2)
// What each profile's features are is asked of the emulated CPU itself (probe_emulated_worker).
[[nodiscard]] const std::vector<std::pair<std::string, std::vector<std::string>>>& emulation_sets();

// Parses one --emulate value: ARCH/CPU or ARCH/SET (emulation_sets). ARCH is "arm64" (aarch64 is
// accepted and spelled arm64). Error{kInvalidArgument} naming the value for anything else, an
// empty CPU, or characters QEMU's -cpu does not take (letters, digits, '-', '_', ',', '=', '.').
// The CPU model itself is checked against the emulator (check_emulation).
[[nodiscard]] std::vector<Emulation> parse_emulation(const std::string& spec);

// What runs an emulated worker on this machine.
struct Emulator {
  std::filesystem::path qemu;     // qemu-aarch64: $ETPROOF_QEMU_AARCH64, else on PATH
  std::string version;            // its first line of --version, e.g. "qemu-aarch64 version 7.2.22 (...)"
  std::filesystem::path worker;   // the cross-built etproof-worker: $ETPROOF_ARM64_WORKER, else
                                  // arm64/build/etproof-worker in this binary's build folder (./setup.sh)
  std::filesystem::path sysroot;  // QEMU's -L; empty (the default): the guest's loader finds
                                  // Debian's multiarch arm64 libraries at the host's own paths
  std::vector<std::string> cpus;  // the CPU models it knows (qemu-aarch64 -cpu help)
};

// Finds the emulator for `arch` (asked once per process and arch). Error{kCapabilityUnavailable}
// naming what is missing (qemu-aarch64, the cross-built worker, the sysroot) with the remedy
// (./setup.sh installs and builds them; the environment variables above point elsewhere).
[[nodiscard]] const Emulator& find_emulator(const std::string& arch);

// Error{kInvalidArgument} when the emulator knows no CPU model `e.cpu` names (the part before the
// first ','), listing the ones it knows.
void check_emulation(const Emulator& emulator, const Emulation& e);

// The argv that starts the emulated worker, before the worker's own arguments:
// {qemu, "-cpu", e.cpu, worker}, with "-L", sysroot before the worker where sysroot is set.
[[nodiscard]] std::vector<std::string> emulated_worker_command(const Emulator& emulator, const Emulation& e);

// The machine an emulated column ran on, as the ledger and every report carry it:
// {arch (the guest's uname machine, "aarch64"), cpu ("qemu-aarch64 -cpu neoverse-n1"),
//  features (the guest's ISA features that select kernels, from its auxiliary vector, named as
//  /proc/cpuinfo names them: asimd, asimddp, i8mm, sve, sme, …), emulated: true,
//  emulator ("qemu-aarch64 7.2.22"), profile ("arm64/neoverse-n1"), os, kernel, cores (the host's,
//  which the guest shares), host (the host's cpu and arch)}.
// `guest`: the worker's answer to HELLO (probe_emulated_worker); `host`: machine_info() here.
[[nodiscard]] nlohmann::json emulated_machine(const Emulation& e, const Emulator& emulator,
                                              const nlohmann::json& guest, const nlohmann::json& host);

// Starts the emulated worker once and asks it HELLO: {"arch", "features", "registered"} (the
// delegate ids registered in it). Throws Error{kCapabilityUnavailable} when the emulator is
// missing, Error{kCrashed} when the worker does not answer (QEMU refused the CPU, the worker's
// libraries are missing: the worker's own message is on stderr).
[[nodiscard]] nlohmann::json probe_emulated_worker(const Emulation& e);

}  // namespace etproof
