// The runtime half on another CPU, by emulation (etproof/emulation.h).
#include "etproof/runtime/emulation.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <sstream>

#include "etproof/build_config.h"
#include "etproof/core/error.h"
#include "etproof/runtime/isolation.h"
#include "core/common.h"
#include "runtime/worker.h"

namespace etproof {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

bool executable(const fs::path& p) {
  std::error_code ec;
  return !p.empty() && ::access(p.c_str(), X_OK) == 0 && !fs::is_directory(p, ec);
}

fs::path on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "/usr/bin:/bin");
  for (std::string d; std::getline(dirs, d, ':');)
    if (!d.empty() && executable(fs::path(d) / name)) return fs::path(d) / name;
  return {};
}

// A command's standard output (stderr discarded), or "" when it cannot be run. `args` is a fixed
// text of this file's; `exe` (from PATH or $ETPROOF_QEMU_AARCH64) is single-quoted for the shell,
// each ' in it written '\''.
std::string output_of(const fs::path& exe, const std::string& args) {
  std::string quoted = "'";
  for (const char c : exe.string()) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  const std::string cmd = quoted + "' " + args + " 2>/dev/null";
  std::string out;
  if (FILE* f = ::popen(cmd.c_str(), "r")) {
    char buf[4096];
    for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) out.append(buf, n);
    ::pclose(f);
  }
  return out;
}

bool cpu_text_ok(const std::string& cpu) {
  if (cpu.empty()) return false;
  for (const char c : cpu)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == ',' || c == '=' || c == '.'))
      return false;
  return true;
}

Emulator locate_arm64() {
  Emulator e;
  std::vector<std::string> missing;
  if (const char* q = std::getenv("ETPROOF_QEMU_AARCH64"); q && *q) {
    e.qemu = q;
    if (!executable(e.qemu)) missing.push_back(std::string("ETPROOF_QEMU_AARCH64 (") + q + ") is not an executable file");
  } else {
    e.qemu = on_path("qemu-aarch64");
    if (e.qemu.empty()) missing.push_back("qemu-aarch64 is not on PATH (Debian's qemu-user)");
  }
  if (const char* w = std::getenv("ETPROOF_ARM64_WORKER"); w && *w) {
    e.worker = w;
    if (!executable(e.worker)) missing.push_back(std::string("ETPROOF_ARM64_WORKER (") + w + ") is not an executable file");
  } else {
    std::error_code ec;
    const fs::path self = executable_path(ec);
    const fs::path beside = ec ? fs::path() : self.parent_path() / "arm64" / "build" / "etproof-worker";
    if (executable(beside)) e.worker = beside;
    else if (executable(build::kArm64WorkerBuildPath)) e.worker = build::kArm64WorkerBuildPath;
    else
      missing.push_back("no etproof-worker built for aarch64 (looked at " +
                        (beside.empty() ? std::string() : beside.string() + ", ") + build::kArm64WorkerBuildPath + ")");
  }
  // The target's C and C++ runtime from Debian's multiarch packages (libc6:arm64, libstdc++6:arm64,
  // libssl3:arm64), found by the guest's loader at the host's own paths: no -L. The cross
  // toolchain's copy under /usr/aarch64-linux-gnu is another glibc build, and a loader from one
  // with a libc from the other hangs the first pthread_create (measured: QEMU 7.2, glibc 2.36-8
  // against 2.36-9+deb12u14).
  std::error_code ec;
  for (const char* lib : {"/lib/ld-linux-aarch64.so.1", "/usr/lib/aarch64-linux-gnu/libstdc++.so.6"})
    if (!fs::exists(lib, ec))
      missing.push_back(std::string("no ") + lib + " (Debian's libc6:arm64 and libstdc++6:arm64, multiarch)");
  if (!missing.empty())
    throw Error(ErrorKind::kCapabilityUnavailable,
                "cannot run programs on an emulated arm64 CPU here: " + detail::join(missing, "; "),
                "./setup.sh installs qemu-user, g++-aarch64-linux-gnu and the arm64 runtime libraries and "
                "cross-builds the worker into build/arm64/ (on Debian or Ubuntu); or point ETPROOF_QEMU_AARCH64 and ETPROOF_ARM64_WORKER at them");
  std::string v = output_of(e.qemu, "--version");
  e.version = trim(v.substr(0, v.find('\n')));
  // "  cortex-a53" lines (QEMU 7.2: "Available CPUs:" then one model a line).
  std::istringstream lines(output_of(e.qemu, "-cpu help"));
  for (std::string line; std::getline(lines, line);) {
    const std::string t = trim(line);
    if (t.empty() || t.back() == ':' || t.find(' ') != std::string::npos) continue;
    e.cpus.push_back(t);
  }
  return e;
}

}  // namespace

const std::vector<std::pair<std::string, std::vector<std::string>>>& emulation_sets() {
  static const std::vector<std::pair<std::string, std::vector<std::string>>> sets = {
      {"phones", {"cortex-a53", "neoverse-n1", "max,sme=off", "max"}},
  };
  return sets;
}

std::vector<Emulation> parse_emulation(const std::string& spec) {
  const auto slash = spec.find('/');
  std::string arch = slash == std::string::npos ? spec : spec.substr(0, slash);
  const std::string cpu = slash == std::string::npos ? std::string() : spec.substr(slash + 1);
  if (arch == "aarch64") arch = "arm64";
  std::string sets;
  for (const auto& [name, cpus] : emulation_sets()) sets += (sets.empty() ? "" : ", ") + ("arm64/" + name);
  const std::string remedy = "give ARCH/CPU with ARCH arm64 and CPU a QEMU CPU model, with feature switches "
                             "after commas (arm64/cortex-a53, arm64/neoverse-n1, arm64/max,sme=off), or a named "
                             "set (" + sets + ")";
  if (arch != "arm64")
    throw Error(ErrorKind::kInvalidArgument,
                "--emulate " + spec + ": " + (slash == std::string::npos ? "no CPU given" : "unknown architecture '" + arch + "' (only arm64 is emulated)"),
                remedy);
  if (!cpu_text_ok(cpu))
    throw Error(ErrorKind::kInvalidArgument, "--emulate " + spec + ": '" + cpu + "' is not a QEMU CPU model", remedy);
  for (const auto& [name, cpus] : emulation_sets())
    if (cpu == name) {
      std::vector<Emulation> out;
      for (const std::string& c : cpus) out.push_back({arch, c});
      return out;
    }
  return {{arch, cpu}};
}

const Emulator& find_emulator(const std::string& arch) {
  static std::mutex mu;
  static std::map<std::string, Emulator> found;
  std::lock_guard lock(mu);
  if (arch != "arm64")
    throw Error(ErrorKind::kInvalidArgument, "no emulator for architecture '" + arch + "'", "emulate arm64");
  if (auto it = found.find(arch); it != found.end()) return it->second;
  return found.emplace(arch, locate_arm64()).first->second;
}

void check_emulation(const Emulator& emulator, const Emulation& e) {
  const std::string model = e.cpu.substr(0, e.cpu.find(','));
  if (emulator.cpus.empty()) return;  // the emulator did not list them: it answers at start
  for (const std::string& c : emulator.cpus)
    if (c == model) return;
  throw Error(ErrorKind::kInvalidArgument,
              "--emulate " + e.label() + ": " + emulator.qemu.filename().string() + " (" + emulator.version +
                  ") knows no CPU model '" + model + "'",
              "use one it knows: " + detail::join(emulator.cpus, ", "));
}

std::vector<std::string> emulated_worker_command(const Emulator& emulator, const Emulation& e) {
  std::vector<std::string> argv = {emulator.qemu.string(), "-cpu", e.cpu};
  if (!emulator.sysroot.empty()) {
    argv.push_back("-L");
    argv.push_back(emulator.sysroot.string());
  }
  argv.push_back(emulator.worker.string());
  return argv;
}

json emulated_machine(const Emulation& e, const Emulator& emulator, const json& guest, const json& host) {
  json m = json::object();
  if (host.contains("os")) m["os"] = host["os"];
  if (host.contains("kernel")) m["kernel"] = host["kernel"];
  m["arch"] = guest.value("arch", std::string("aarch64"));
  m["cpu"] = emulator.qemu.filename().string() + " -cpu " + e.cpu;
  m["features"] = guest.contains("features") ? guest["features"] : json::array();
  if (host.contains("cores")) m["cores"] = host["cores"];
  m["emulated"] = true;
  // "qemu-aarch64 version 7.2.22 (Debian 1:7.2+dfsg-7+deb12u18+b3)" -> "qemu-aarch64 7.2.22"
  std::string version = emulator.version;
  if (const auto at = version.find(" version "); at != std::string::npos) {
    const std::string rest = version.substr(at + 9);
    version = version.substr(0, at) + " " + rest.substr(0, rest.find(' '));
  }
  m["emulator"] = version;
  m["profile"] = e.label();
  json h = json::object();
  for (const char* k : {"arch", "cpu"})
    if (host.contains(k)) h[k] = host[k];
  m["host"] = h;
  return m;
}

json probe_emulated_worker(const Emulation& e) {
  const Emulator& emulator = find_emulator(e.arch);
  check_emulation(emulator, e);
  Isolation isolation;
  isolation.enabled = true;
  isolation.emulation = e;
  isolation.time_limit_s = 120;
  detail::WorkerClient client(isolation, fs::path(), "the emulated machine " + e.label());
  return client.hello();
}

}  // namespace etproof
