// Worker processes (etproof/isolation.h): the parent's WorkerClient (worker.h) and the worker's
// worker_main(), speaking one small protocol over a Unix stream socket.
//
// A message: a 24-byte header {magic "ETPW", type, head_len, data_len} (native byte order: both
// ends are the same build on the same machine), then `head_len` bytes of JSON and `data_len` raw
// bytes. Requests: LOAD {"manifest": PATH}; RUN {"method": M, "tensors": [...]} with the tensors'
// bytes concatenated as data; BENCH {"bundle": PATH, "options": {...}} (etproof/bench.h, the
// whole benchmark in the worker). Replies: OK (LOAD: {"delegates": [...], "methods": [...]}; RUN:
// {"tensors": [...]} + data; BENCH: {"bench": [report]}, to_json's) or ERROR {"kind", "cause", "remedy", "et_error"?}. A tensor:
// {"name", "dtype", "shape"}, its numel × dtype_size bytes in order. The parent trusts nothing it
// reads back: a worker that a bad program corrupted may send anything, and what does not parse
// or add up is Error{kCrashed} "sent a malformed reply".
#include "runtime/worker.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>
#if defined(__aarch64__) && defined(__linux__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#ifndef HWCAP2_SME2
#define HWCAP2_SME2 (1UL << 37)  // Linux 6.2's uapi asm/hwcap.h; bookworm's cross headers (6.1) lack it
#endif
#endif
#if defined(__linux__)
#include <sys/prctl.h>
#endif
#if defined(__APPLE__)
#include <crt_externs.h>
#include <mach-o/dyld.h>  // _NSGetExecutablePath: macOS has no /proc/self/exe
#define environ (*_NSGetEnviron())
#else
extern char** environ;
#endif

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <new>
#include <optional>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "etproof/build_config.h"
#include "etproof/runtime/bundle.h"
#include "etproof/core/error.h"
#include "etproof/runtime/registry.h"
#include "etproof/runtime/runtime_log.h"
#include "core/common.h"
#include "core/json_parse.h"

// Address- and ThreadSanitizer reserve terabytes of address space for their shadow memory, so a
// worker under either cannot live within RLIMIT_AS (measured: every TSan worker of `matrix --jobs
// 4` died at its first allocation, "ThreadSanitizer: out of memory"); the limit is not applied
// there, and the worker says so.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define ETPROOF_WORKER_UNDER_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define ETPROOF_WORKER_UNDER_SANITIZER 1
#endif
#endif

namespace etproof {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr uint32_t kMagic = 0x57505445;  // "ETPW"
enum MessageType : uint32_t { kLoad = 1, kRun = 2, kOk = 3, kErrorReply = 4, kBench = 5, kHello = 6 };
constexpr uint64_t kMaxHead = uint64_t(64) << 20;  // tensor lists and error texts: a few KB

struct Header {
  uint32_t magic;
  uint32_t type;
  uint64_t head_len;
  uint64_t data_len;
};

using Clock = std::chrono::steady_clock;

// false when the peer is gone (EPIPE, ECONNRESET).
bool send_all(int fd, const void* p, size_t n) {
  const auto* b = static_cast<const uint8_t*>(p);
  while (n > 0) {
#if defined(MSG_NOSIGNAL)
    const ssize_t k = ::send(fd, b, n, MSG_NOSIGNAL);
#else
    const ssize_t k = ::send(fd, b, n, 0);  // SO_NOSIGPIPE is set on the socket (macOS)
#endif
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    b += k;
    n -= size_t(k);
  }
  return true;
}

bool send_message(int fd, uint32_t type, const std::string& head, const std::vector<uint8_t>& data) {
  const Header h{kMagic, type, head.size(), data.size()};
  return send_all(fd, &h, sizeof h) && send_all(fd, head.data(), head.size()) &&
         send_all(fd, data.data(), data.size());
}

enum class ReadResult { kOk, kEof, kTimeout };

// Reads exactly n bytes, waiting until `deadline` (nullopt: forever).
ReadResult read_all(int fd, void* p, size_t n, const std::optional<Clock::time_point>& deadline) {
  auto* b = static_cast<uint8_t*>(p);
  while (n > 0) {
    int wait_ms = -1;
    if (deadline) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*deadline - Clock::now()).count();
      if (left <= 0) return ReadResult::kTimeout;
      wait_ms = int(std::min<long long>(left, std::numeric_limits<int>::max()));
    }
    pollfd pfd{fd, POLLIN, 0};
    const int r = ::poll(&pfd, 1, wait_ms);
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) return ReadResult::kTimeout;
    if (r < 0) return ReadResult::kEof;
    const ssize_t k = ::recv(fd, b, n, 0);
    if (k < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (k <= 0) return ReadResult::kEof;
    b += k;
    n -= size_t(k);
  }
  return ReadResult::kOk;
}

// Tensors <-> {"tensors": [...]} + data.
void put_tensors(const std::map<std::string, HostTensor>& tensors, json& head, std::vector<uint8_t>& data) {
  json list = json::array();
  size_t total = 0;
  for (const auto& [name, t] : tensors) total += t.data.size();
  data.reserve(total);
  for (const auto& [name, t] : tensors) {
    list.push_back({{"name", name}, {"dtype", std::string(to_string(t.dtype))}, {"shape", t.shape}});
    data.insert(data.end(), t.data.begin(), t.data.end());
  }
  head["tensors"] = std::move(list);
}

// Throws std::runtime_error (the caller says who sent it) when the list does not add up to data.
std::map<std::string, HostTensor> take_tensors(const json& head, const std::vector<uint8_t>& data) {
  std::map<std::string, HostTensor> out;
  size_t offset = 0;
  for (const json& j : head.at("tensors")) {
    HostTensor t;
    const auto dtype = dtype_from_string(j.at("dtype").get<std::string>());
    if (!dtype) throw std::runtime_error("unknown dtype");
    t.dtype = *dtype;
    t.shape = j.at("shape").get<std::vector<int64_t>>();
    size_t bytes = dtype_size(t.dtype);
    for (const int64_t d : t.shape) {
      if (d < 0) throw std::runtime_error("negative dimension");
      if (d != 0 && bytes > std::numeric_limits<size_t>::max() / size_t(d)) throw std::runtime_error("size overflows");
      bytes *= size_t(d);
    }
    if (bytes > data.size() - offset) throw std::runtime_error("tensors larger than the data sent");
    t.data.assign(data.begin() + ptrdiff_t(offset), data.begin() + ptrdiff_t(offset + bytes));
    offset += bytes;
    if (!out.emplace(j.at("name").get<std::string>(), std::move(t)).second)
      throw std::runtime_error("a tensor named twice");
  }
  if (offset != data.size()) throw std::runtime_error("data left over after the tensors");
  return out;
}

std::string error_head(const Error& e) {
  json j = {{"kind", std::string(to_string(e.kind()))}, {"cause", e.cause()}, {"remedy", e.remedy()}};
  if (e.et_error()) j["et_error"] = *e.et_error();
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string signal_name(int sig) {
  switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGABRT: return "SIGABRT";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    case SIGKILL: return "SIGKILL";
    case SIGTERM: return "SIGTERM";
    case SIGTRAP: return "SIGTRAP";
    case SIGSYS: return "SIGSYS";
    case SIGXCPU: return "SIGXCPU";
    default: return "signal " + std::to_string(sig);
  }
}

std::string this_arch() {
  utsname u{};
  return ::uname(&u) == 0 ? std::string(u.machine) : std::string();
}

// The ISA features that select XNNPACK's kernels, as this process's auxiliary vector states them
// (the kernel's answer; under qemu-user, QEMU's for the emulated CPU model), named as
// /proc/cpuinfo names them (ledger.h machine_info's list). aarch64 Linux only; empty elsewhere
// (the parent reads its own machine from /proc/cpuinfo).
std::vector<std::string> kernel_features() {
  std::vector<std::string> out;
#if defined(__aarch64__) && defined(__linux__)
  const unsigned long hw = ::getauxval(AT_HWCAP), hw2 = ::getauxval(AT_HWCAP2);
  const std::pair<bool, const char*> bits[] = {
      {(hw & HWCAP_ASIMD) != 0, "asimd"},       {(hw & HWCAP_ASIMDHP) != 0, "asimdhp"},
      {(hw & HWCAP_ASIMDDP) != 0, "asimddp"},   {(hw & HWCAP_SVE) != 0, "sve"},
      {(hw2 & HWCAP2_SVE2) != 0, "sve2"},       {(hw2 & HWCAP2_I8MM) != 0, "i8mm"},
      {(hw2 & HWCAP2_BF16) != 0, "bf16"},
#if defined(HWCAP2_SME)
      {(hw2 & HWCAP2_SME) != 0, "sme"},
#endif
      {(hw2 & HWCAP2_SME2) != 0, "sme2"},
  };
  for (const auto& [have, name] : bits)
    if (have) out.emplace_back(name);
  std::sort(out.begin(), out.end());
#endif
  return out;
}

// HELLO's answer: what this worker is and can run ({"arch", "features", "registered"}).
json hello() {
  json registered = json::array();
  for (const RuntimeBackend& b : registered_backends())
    if (b.registered) registered.push_back(b.id);
  json j = {{"arch", this_arch()}, {"features", kernel_features()}, {"registered", registered}};
  return j;
}

std::string bytes_text(uint64_t b) {
  if (b == 0) return "none";
  return detail::format_number(double(b) / double(uint64_t(1) << 20), 6) + " MiB";
}

bool under_sanitizer() {
#if defined(ETPROOF_WORKER_UNDER_SANITIZER)
  return true;
#else
  return false;
#endif
}

}  // namespace

uint64_t effective_memory_limit(const Isolation& isolation) {
  if (isolation.memory_limit_bytes) return *isolation.memory_limit_bytes;
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return 0;
  return uint64_t(pages) * uint64_t(page) / 4 * 3;
}

fs::path executable_path(std::error_code& ec) {
  ec.clear();
#if defined(__linux__)
  return fs::read_symlink("/proc/self/exe", ec);
#elif defined(__APPLE__)
  uint32_t size = 0;
  (void)_NSGetExecutablePath(nullptr, &size);  // -1, and the size needed
  std::string buf(size, '\0');
  if (size == 0 || _NSGetExecutablePath(buf.data(), &size) != 0) {
    ec = std::make_error_code(std::errc::no_such_file_or_directory);
    return {};
  }
  return fs::weakly_canonical(fs::path(buf.c_str()), ec);  // symbolic links resolved, as /proc's
#else
  ec = std::make_error_code(std::errc::not_supported);
  return {};
#endif
}

fs::path find_worker() {
  std::vector<fs::path> tried;
  auto usable = [&](const fs::path& p) {
    tried.push_back(p);
    return ::access(p.c_str(), X_OK) == 0 && !fs::is_directory(p);
  };
  if (const char* env = std::getenv("ETPROOF_WORKER"); env && *env) {
    if (usable(env)) return env;
    throw Error(ErrorKind::kCapabilityUnavailable,
                std::string("ETPROOF_WORKER is ") + env + ", which is not an executable file",
                "point ETPROOF_WORKER at the etproof-worker executable, or unset it");
  }
  std::error_code ec;
  if (const fs::path self = executable_path(ec); !ec && usable(self.parent_path() / "etproof-worker"))
    return self.parent_path() / "etproof-worker";
  if (const fs::path built = build::kWorkerBuildPath; usable(built)) return built;
  std::vector<std::string> names;
  for (const fs::path& p : tried) names.push_back(p.string());
  throw Error(ErrorKind::kCapabilityUnavailable,
              "no etproof-worker executable to run programs in a worker process (looked at: " +
                  detail::join(names) + ")",
              "build it (cmake --build build --target etproof-worker; ./setup.sh does), set "
              "ETPROOF_WORKER to its path, or run in-process (matrix --in-process)");
}

// ---- the parent's side ---------------------------------------------------------------------------

namespace detail {

struct WorkerClient::Reply {
  uint32_t type = 0;
  json head;
  std::vector<uint8_t> data;
};

WorkerClient::WorkerClient(Isolation isolation, fs::path manifest, std::string what)
    : isolation_(std::move(isolation)), manifest_(std::move(manifest)), what_(std::move(what)) {
  memory_limit_ = effective_memory_limit(isolation_);
}

WorkerClient::~WorkerClient() { stop(); }

namespace {
// Waits up to 2 s for `pid` to exit (it closed its socket or broke the protocol: it is exiting),
// then kills it (SIGKILL) and waits. Returns its wait status.
int reap(pid_t pid) {
  int status = 0;
  for (int i = 0; i < 200; ++i) {
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) return status;
    if (r < 0 && errno != EINTR) return status;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ::kill(pid, SIGKILL);
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}
}  // namespace

void WorkerClient::stop() {
  if (fd_ >= 0) ::close(fd_);  // the worker reads EOF and exits
  fd_ = -1;
  if (pid_ > 0) (void)reap(pid_);
  pid_ = -1;
  loaded_ = false;
}

void WorkerClient::start() {
  std::vector<std::string> args;
  if (isolation_.emulation) {
    const Emulator& emulator = find_emulator(isolation_.emulation->arch);
    args = emulated_worker_command(emulator, *isolation_.emulation);
  } else {
    args = {(isolation_.worker.empty() ? find_worker() : isolation_.worker).string()};
  }
  const fs::path exe = args.front();
  int sv[2];
#if defined(SOCK_CLOEXEC)
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
#else
  if (::socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0 || ::fcntl(sv[0], F_SETFD, FD_CLOEXEC) != 0 ||
      ::fcntl(sv[1], F_SETFD, FD_CLOEXEC) != 0)
#endif
    throw Error(ErrorKind::kIo, std::string("cannot create a socket for a worker process: ") + std::strerror(errno),
                "raise the process's open-file limit (ulimit -n), or run in-process");
#if defined(SO_NOSIGPIPE)
  const int one = 1;
  ::setsockopt(sv[0], SOL_SOCKET, SO_NOSIGPIPE, &one, sizeof one);
#endif
  // dup2(3, 3) would leave close-on-exec set: move the worker's end off 3 first.
  if (sv[1] == 3) {
    const int moved = ::fcntl(sv[1], F_DUPFD_CLOEXEC, 10);
    ::close(sv[1]);
    sv[1] = moved;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, 2, 1);  // ExecuTorch's prints never reach our stdout
  posix_spawn_file_actions_adddup2(&actions, sv[1], 3);
  const std::string limit = std::to_string(memory_limit_);
  for (const char* a : {"--fd", "3", "--memory-limit"}) args.emplace_back(a);
  args.push_back(limit);
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, exe.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(sv[1]);
  if (rc != 0) {
    ::close(sv[0]);
    throw Error(ErrorKind::kIo, "cannot start the worker process " + exe.string() + ": " + std::strerror(rc),
                "check that it is the etproof-worker of this build, or run in-process");
  }
  pid_ = pid;
  fd_ = sv[0];
}

WorkerClient::Reply WorkerClient::request(uint32_t type, const std::string& head,
                                          const std::vector<uint8_t>& data, const std::string& doing) {
  if (fd_ < 0) start();
  std::optional<Clock::time_point> deadline;
  if (isolation_.time_limit_s > 0)
    deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                  std::chrono::duration<double>(isolation_.time_limit_s));
  if (!send_message(fd_, type, head, data)) died(doing, false);
  Header h{};
  ReadResult r = read_all(fd_, &h, sizeof h, deadline);
  if (r != ReadResult::kOk) died(doing, r == ReadResult::kTimeout);
  auto malformed = [&](const std::string& why) {
    stop();
    throw Error(ErrorKind::kCrashed,
                "the worker process running " + what_ + " sent a malformed reply while " + doing + " (" + why +
                    "): the program corrupted it",
                "re-export the bundle; if its hash matches, reproduce in-process (etproof parity) under a "
                "debugger and report it to ExecuTorch with the bundle");
  };
  if (h.magic != kMagic || (h.type != kOk && h.type != kErrorReply) || h.head_len > kMaxHead)
    malformed("bad header");
  if (memory_limit_ && h.data_len > memory_limit_) malformed("more data than its memory limit");
  Reply reply;
  reply.type = h.type;
  std::string text(h.head_len, '\0');
  reply.data.resize(h.data_len);
  r = read_all(fd_, text.data(), text.size(), deadline);
  if (r == ReadResult::kOk) r = read_all(fd_, reply.data.data(), reply.data.size(), deadline);
  if (r != ReadResult::kOk) died(doing, r == ReadResult::kTimeout);
  try {
    reply.head = detail::parse_json(text, {ErrorKind::kCrashed, "worker reply", ""});
  } catch (const Error&) {
    malformed("not JSON");
  }
  if (reply.type == kErrorReply) {
    std::optional<Error> e;
    try {
      const std::string kind_text = reply.head.at("kind").get<std::string>();
      const std::string cause = reply.head.at("cause").get<std::string>();
      const std::string remedy = reply.head.at("remedy").get<std::string>();
      std::optional<uint32_t> code;
      if (reply.head.contains("et_error")) code = reply.head.at("et_error").get<uint32_t>();
      if (kind_text == "internal") throw std::runtime_error(cause);  // as in-process: not an Error
      const auto kind = error_kind_from_string(kind_text);
      if (!kind) malformed("unknown error kind");
      e.emplace(*kind, cause, remedy, code);
    } catch (const nlohmann::json::exception&) {
      malformed("an error reply without its fields");
    }
    throw *e;
  }
  return reply;
}

void WorkerClient::died(const std::string& doing, bool timed_out) {
  if (timed_out && pid_ > 0) ::kill(pid_, SIGKILL);
  const bool reaped = pid_ > 0;
  const int status = reaped ? reap(pid_) : 0;
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  pid_ = -1;
  loaded_ = false;
  const std::string limits = "limits: memory " + bytes_text(memory_limit_) +
                             (under_sanitizer() && memory_limit_ ? " (not applied under a sanitizer)" : "") +
                             ", time " +
                             (isolation_.time_limit_s > 0 ? detail::format_number(isolation_.time_limit_s, 6) + " s"
                                                          : std::string("none"));
  std::string how;
  std::string remedy =
      "etproof went on without it. This is a crash inside ExecuTorch or a delegate on this program: re-export "
      "the bundle; if its hash matches and it still crashes, reproduce it in-process (etproof parity DIR) under "
      "a debugger and report it to ExecuTorch with the bundle";
  if (timed_out) {
    how = "exceeded the time limit of " + detail::format_number(isolation_.time_limit_s, 6) + " s and was killed";
    remedy = "etproof went on without it. If the program is only slow here, raise the limit (--worker-timeout "
             "SECONDS); a program that never finishes is a bug in ExecuTorch or a delegate: report it with the "
             "bundle";
  } else if (reaped && WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    how = "was killed by " + signal_name(sig) + " (" + ::strsignal(sig) + ")";
    if (sig == SIGKILL)
      how += ", most likely by the system's out-of-memory killer";
  } else if (reaped && WIFEXITED(status)) {
    how = "exited with status " + std::to_string(WEXITSTATUS(status)) + " without replying";
  } else {
    how = "stopped replying";
  }
  throw Error(ErrorKind::kCrashed, "the worker process running " + what_ + " " + how + " while " + doing +
                                       " (" + limits + ")",
              remedy);
}

WorkerClient::Loaded WorkerClient::load() {
  const std::string head = json{{"manifest", manifest_.string()}}.dump();
  Reply r = request(kLoad, head, {}, "loading the program");
  Loaded out;
  try {
    out.delegates = r.head.at("delegates").get<std::vector<std::string>>();
    out.methods = r.head.at("methods").get<std::vector<std::string>>();
  } catch (const nlohmann::json::exception&) {
    stop();
    throw Error(ErrorKind::kCrashed, "the worker process running " + what_ + " sent a malformed reply to the load",
                "re-export the bundle; if its hash matches, reproduce in-process (etproof parity) and report it");
  }
  loaded_ = true;
  return out;
}

nlohmann::json WorkerClient::hello() {
  Reply r = request(kHello, "{}", {}, "answering HELLO");
  if (!r.head.is_object() || !r.head.contains("registered") || !r.head["registered"].is_array()) {
    stop();
    throw Error(ErrorKind::kCrashed, "the worker process for " + what_ + " sent a malformed reply to HELLO",
                "rebuild the worker (./setup.sh) so that it is the etproof-worker of this build");
  }
  return std::move(r.head);
}

nlohmann::json WorkerClient::bench(const nlohmann::json& options) {
  const json head = {{"bundle", manifest_.string()}, {"options", options}};
  Reply r = request(kBench, head.dump(-1, ' ', false, json::error_handler_t::replace), {}, "benchmarking the program");
  stop();  // one benchmark per worker: the next starts clean
  return std::move(r.head);
}

std::map<std::string, HostTensor> WorkerClient::run(const std::string& method,
                                                    const std::map<std::string, HostTensor>& inputs) {
  if (!loaded_) (void)load();  // a fresh worker after a crash
  json head = {{"method", method}};
  std::vector<uint8_t> data;
  put_tensors(inputs, head, data);
  Reply r = request(kRun, head.dump(-1, ' ', false, json::error_handler_t::replace), data,
                    "running method '" + method + "'");
  try {
    return take_tensors(r.head, r.data);
  } catch (const std::exception& e) {
    stop();
    throw Error(ErrorKind::kCrashed,
                "the worker process running " + what_ + " sent malformed outputs for method '" + method + "' (" +
                    e.what() + ")",
                "re-export the bundle; if its hash matches, reproduce in-process (etproof parity) and report it");
  }
}

}  // namespace detail

// ---- the worker's side -----------------------------------------------------------------------------

int worker_main(int fd, uint64_t memory_limit_bytes, const WorkerServices& services) {
#if defined(__linux__)
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive the parent
#endif
  const rlimit no_core{0, 0};
  ::setrlimit(RLIMIT_CORE, &no_core);  // a crash here is expected and reported: no core files
  if (memory_limit_bytes && !under_sanitizer()) {
    const rlimit as{rlim_t(memory_limit_bytes), rlim_t(memory_limit_bytes)};
    ::setrlimit(RLIMIT_AS, &as);
  }
  ::signal(SIGPIPE, SIG_IGN);
  install_runtime_log_filter();
  std::optional<Bundle> bundle;
  std::optional<LoadedModel> model;
  for (;;) {
    Header h{};
    if (read_all(fd, &h, sizeof h, std::nullopt) != ReadResult::kOk) return 0;  // the parent closed
    if (h.magic != kMagic || h.head_len > kMaxHead) return 3;
    std::string head_text;
    std::vector<uint8_t> data;
    std::string reply_head;
    std::vector<uint8_t> reply_data;
    uint32_t reply_type = kOk;
    try {
      head_text.resize(h.head_len);
      data.resize(h.data_len);
      if (read_all(fd, head_text.data(), head_text.size(), std::nullopt) != ReadResult::kOk ||
          read_all(fd, data.data(), data.size(), std::nullopt) != ReadResult::kOk)
        return 0;
      const json head = detail::parse_json(head_text, {ErrorKind::kInvalidArgument, "worker request", ""});
      if (h.type == kHello) {
        reply_head = hello().dump(-1, ' ', false, json::error_handler_t::replace);
      } else if (h.type == kLoad) {
        model.reset();
        bundle.reset();
        bundle = open_bundle(head.at("manifest").get<std::string>());
        model.emplace(LoadedModel::load(*bundle));
        reply_head = json{{"delegates", model->program_delegates()}, {"methods", model->method_names()}}.dump();
      } else if (h.type == kBench) {
        model.reset();
        bundle.reset();
        if (!services.bench)
          throw Error(ErrorKind::kInvalidArgument, "this worker was built without the bench service",
                      "use the etproof-worker of this build (./setup.sh)");
        reply_head = services.bench(head.at("bundle").get<std::string>(), head.at("options"))
                         .dump(-1, ' ', false, json::error_handler_t::replace);
      } else if (h.type == kRun) {
        if (!model)
          throw Error(ErrorKind::kInvalidArgument, "the worker was asked to run before loading", "load first");
        const auto outputs = model->run(head.at("method").get<std::string>(), take_tensors(head, data));
        json out = json::object();
        put_tensors(outputs, out, reply_data);
        reply_head = out.dump(-1, ' ', false, json::error_handler_t::replace);
      } else {
        return 3;
      }
    } catch (const Error& e) {
      reply_type = kErrorReply;
      reply_head = error_head(e);
      reply_data.clear();
    } catch (const std::bad_alloc&) {
      reply_type = kErrorReply;
      reply_data.clear();
      reply_head = error_head(out_of_memory_error(
          "in the worker process (its memory limit: " + bytes_text(memory_limit_bytes) + ", --worker-memory)"));
    } catch (const std::exception& e) {
      reply_type = kErrorReply;
      reply_data.clear();
      reply_head = json{{"kind", "internal"}, {"cause", e.what()}, {"remedy", ""}}.dump(
          -1, ' ', false, json::error_handler_t::replace);
    }
    if (!send_message(fd, reply_type, reply_head, reply_data)) return 0;
  }
}

}  // namespace etproof
