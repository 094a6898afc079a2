// The evidence ledger (etproof/ledger.h): the run's context (machine, toolchain, commit), record
// ids, appending with one write, reading and merging. The records themselves: ledger_records.cpp.
#include "etproof/evidence/ledger.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__APPLE__)
#include <sys/sysctl.h>
#endif

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <set>
#include <sstream>
#include <vector>

#include "etproof/core/error.h"
#include "etproof/core/schema.h"
#include "core/common.h"
#include "core/json_parse.h"

#ifndef ETPROOF_VERSION
#define ETPROOF_VERSION "unknown"
#endif
#ifndef ETPROOF_EXECUTORCH_VERSION
#define ETPROOF_EXECUTORCH_VERSION "unknown"
#endif
#ifndef ETPROOF_EXECUTORCH_BUILD_VERSION
#define ETPROOF_EXECUTORCH_BUILD_VERSION ETPROOF_EXECUTORCH_VERSION
#endif
#ifndef ETPROOF_BUILD_COMMIT
#define ETPROOF_BUILD_COMMIT ""
#endif
#ifndef ETPROOF_LEDGER_SOURCE_DIR
#define ETPROOF_LEDGER_SOURCE_DIR ""
#endif

namespace fs = std::filesystem;
using nlohmann::json;

namespace etproof {
namespace {

using detail::join;
using detail::sha256_hex;

std::string trim(std::string s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  const auto e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

// stdout of a shell command, and whether it exited 0.
std::optional<std::string> capture(const std::string& cmd) {
  FILE* f = popen(cmd.c_str(), "r");
  if (!f) return std::nullopt;
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  const int st = pclose(f);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) return std::nullopt;
  return out;
}

using detail::shell_quote;

std::string now_utc() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace

// ---- context -----------------------------------------------------------------------------------
json machine_info() {
  json m = json::object();
  // A name the runner gives itself (CI: one per runner kind), so that two configurations of one
  // host, or runners on look-alike hosts, stay two machines on the coverage page.
  if (const char* name = std::getenv("ETPROOF_MACHINE_NAME"); name && *name) m["name"] = std::string(name);
  struct utsname u {};
  const bool have_uname = uname(&u) == 0;
  std::string os;
  std::ifstream osr("/etc/os-release");
  for (std::string line; std::getline(osr, line);)
    if (line.rfind("PRETTY_NAME=", 0) == 0) {
      os = line.substr(12);
      if (os.size() >= 2 && (os.front() == '"' || os.front() == '\'')) os = os.substr(1, os.size() - 2);
    }
#if defined(__APPLE__)
  // macOS has no /etc/os-release or /proc/cpuinfo: ask sysctl.
  auto sysctl_string = [](const char* name) -> std::string {
    size_t len = 0;
    if (sysctlbyname(name, nullptr, &len, nullptr, 0) != 0 || len == 0) return "";
    std::string v(len, '\0');
    if (sysctlbyname(name, v.data(), &len, nullptr, 0) != 0) return "";
    return trim(std::string(v.c_str()));
  };
  if (os.empty() && !sysctl_string("kern.osproductversion").empty())
    os = "macOS " + sysctl_string("kern.osproductversion");
  const std::string apple_cpu = sysctl_string("machdep.cpu.brand_string");
#endif
  if (os.empty() && have_uname) os = u.sysname;
  if (!os.empty()) m["os"] = os;
  if (have_uname) {
    m["kernel"] = std::string(u.sysname) + " " + u.release;
    m["arch"] = u.machine;
  }
  std::string cpu, flags;
  bool cpu_from_model_name = false;
  std::ifstream ci("/proc/cpuinfo");
  for (std::string line; std::getline(ci, line);) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string k = trim(line.substr(0, colon));
    if ((k == "flags" || k == "Features") && flags.empty()) flags = line.substr(colon + 1);
    if ((k == "model name" && !cpu_from_model_name) ||
        ((k == "Hardware" || k == "Model") && cpu.empty())) {
      cpu = trim(line.substr(colon + 1));
      cpu_from_model_name = k == "model name";
    }
    if (cpu_from_model_name && !flags.empty()) break;  // the first processor says both
  }
  // The ISA features that select ExecuTorch's and its delegates' kernels (XNNPACK's
  // microkernels, OpenVINO's precision), as /proc/cpuinfo names them; sorted, those present.
  static constexpr const char* kKernelFeatures[] = {
      // x86-64: AVX2/FMA, AVX-512 and its VNNI/BF16/FP16 extensions, AVX-VNNI, AMX
      "avx2", "fma", "avx512f", "avx512bw", "avx512_vnni", "avx512_bf16", "avx512_fp16",
      "avx_vnni", "amx_tile", "amx_bf16", "amx_int8",
      // aarch64: NEON fp16, dot product, int8 matrix multiply, bf16, SVE/SVE2, SME/SME2
      "asimd", "asimdhp", "asimddp", "i8mm", "bf16", "sve", "sve2", "sme", "sme2"};
  if (!flags.empty()) {
    std::set<std::string> have;
    std::istringstream words(flags);
    for (std::string f; words >> f;) have.insert(f);
    std::vector<std::string> features;
    for (const char* f : kKernelFeatures)
      if (have.count(f)) features.emplace_back(f);
    std::sort(features.begin(), features.end());
    m["features"] = features;
  }
#if defined(__APPLE__)
  if (cpu.empty()) cpu = apple_cpu;
#endif
  if (!cpu.empty()) m["cpu"] = cpu;
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  if (online > 0) m["cores"] = online;
  return m;
}

json toolchain_info() {
  json t = json::object();
  t["etproof"] = ETPROOF_VERSION;
  t["executorch"] = ETPROOF_EXECUTORCH_VERSION;
  t["executorch_build"] = ETPROOF_EXECUTORCH_BUILD_VERSION;
#if defined(__clang__)
  t["compiler"] = std::string("clang ") + __clang_version__;
#elif defined(__GNUC__)
  t["compiler"] = "gcc " + std::to_string(__GNUC__) + "." + std::to_string(__GNUC_MINOR__) + "." +
                  std::to_string(__GNUC_PATCHLEVEL__);
#else
  t["compiler"] = "unknown";
#endif
  return t;
}

CommitInfo etproof_commit(const std::vector<fs::path>& exclude) {
  const char* env = std::getenv("ETPROOF_SOURCE_DIR");
  const fs::path src = (env && *env) ? fs::path(env) : fs::path(ETPROOF_LEDGER_SOURCE_DIR);
  std::error_code ec;
  if (!src.empty() && fs::exists(src / ".git", ec)) {
    const std::string git = "git -C " + shell_quote(src.string()) + " ";
    if (auto head = capture(git + "rev-parse --short=12 HEAD 2>/dev/null")) {
      std::string commit = trim(*head);
      std::string pathspec = " -- .";
      const fs::path canon_src = fs::weakly_canonical(src, ec);
      for (const auto& x : exclude) {
        const fs::path cx = fs::weakly_canonical(x, ec);
        const fs::path rel = cx.lexically_relative(canon_src);
        if (!rel.empty() && rel.native().rfind("..", 0) != 0)
          pathspec += " " + shell_quote(":(exclude)" + rel.string());
      }
      if (auto st = capture(git + "status --porcelain --untracked-files=no" + pathspec + " 2>/dev/null"))
        if (!trim(*st).empty()) commit += "+dirty";
      if (!commit.empty()) return {commit, "git"};
    }
  }
  const std::string built = ETPROOF_BUILD_COMMIT;
  if (!built.empty()) return {built, "build"};
  return {"unknown", "unknown"};
}

RecordContext current_context(const std::string& kind, const std::string& command,
                              const fs::path& ledger) {
  RecordContext c;
  c.time_utc = now_utc();
  c.command = command;
  c.kind = kind;
  c.machine = machine_info();
  c.toolchain = toolchain_info();
  std::vector<fs::path> exclude{ledger};
  const char* env = std::getenv("ETPROOF_SOURCE_DIR");
  const fs::path src = (env && *env) ? fs::path(env) : fs::path(ETPROOF_LEDGER_SOURCE_DIR);
  if (!src.empty()) exclude.push_back(src / "docs" / "backend-coverage.md");
  const CommitInfo ci = etproof_commit(exclude);
  c.commit = ci.commit;
  c.commit_source = ci.source;
  return c;
}

// ---- ids, append, read -------------------------------------------------------------------------
// A record's line: nlohmann's compact dump, a byte that is not UTF-8 (a path's, on Linux) written
// as U+FFFD rather than thrown as type_error.316; read back, it dumps to the same bytes, so the id
// still matches.
std::string line_of(const json& record) {
  return record.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string record_id(const json& record) {
  json r = record;
  if (r.is_object()) r.erase("id");
  return sha256_hex(line_of(r)).substr(0, 16);
}

json finalize(json record) {
  record["id"] = record_id(record);
  return record;
}

void append_records(const fs::path& ledger, const std::vector<json>& records) {
  if (records.empty()) return;
  std::string batch;
  for (const auto& r : records) {
    const json f = r.contains("id") ? r : finalize(r);
    batch += line_of(f) + "\n";
  }
  std::error_code ec;
  if (ledger.has_parent_path()) fs::create_directories(ledger.parent_path(), ec);
  const int fd = ::open(ledger.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0)
    throw Error(ErrorKind::kIo, "cannot open ledger " + ledger.string() + ": " + std::strerror(errno),
                "check the path and its permissions, pass --ledger FILE, or --no-ledger");
  // One appender at a time (another etproof process, e.g. two matrix runs sharing a ledger):
  // the look at the last byte below and the write are one step. Advisory: flock(2) on the file,
  // released when fd is closed. A filesystem without locks (ENOLCK, EOPNOTSUPP) still appends:
  // one write(2) with O_APPEND never interleaves within the batch on a local filesystem.
  while (::flock(fd, LOCK_EX) != 0 && errno == EINTR) {
  }
  // An interrupted earlier write left a line without its newline: end it, so it stays alone.
  struct stat st {};
  if (fstat(fd, &st) == 0 && st.st_size > 0) {
    const int rfd = ::open(ledger.c_str(), O_RDONLY | O_CLOEXEC);
    char last = '\n';
    if (rfd >= 0) {
      if (pread(rfd, &last, 1, st.st_size - 1) != 1) last = '\n';
      ::close(rfd);
    }
    if (last != '\n') batch.insert(batch.begin(), '\n');
  }
  size_t off = 0;
  while (off < batch.size()) {
    const ssize_t n = ::write(fd, batch.data() + off, batch.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      const std::string why = std::strerror(errno);
      ::close(fd);
      throw Error(ErrorKind::kIo, "cannot append to ledger " + ledger.string() + ": " + why,
                  "check free space and permissions");
    }
    off += size_t(n);
  }
  if (::close(fd) != 0)
    throw Error(ErrorKind::kIo, "cannot close ledger " + ledger.string() + ": " + std::strerror(errno),
                "check free space");
}

std::vector<json> read_ledger(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in)
    throw Error(ErrorKind::kIo, "cannot read ledger " + file.string() + " (missing or unreadable)",
                "check the path; a ledger is written by backends/matrix/parity runs");
  std::vector<json> out;
  std::string line;
  size_t n = 0;
  const std::string remedy =
      "repair or delete that line (a truncated last line comes from an interrupted write; "
      "deleting it loses only that record), then re-run";
  while (std::getline(in, line)) {
    ++n;
    if (trim(line).empty()) continue;
    const std::string where = file.string() + ":" + std::to_string(n) + ": ";
    json r = detail::parse_json(line, {ErrorKind::kLedgerInvalid, file.string() + ":" + std::to_string(n), remedy});
    if (!r.is_object())
      throw Error(ErrorKind::kLedgerInvalid, where + "not a JSON object", remedy);
    // The structure: schema/ledger-record.schema.json, every problem of the record at once.
    if (auto problems = schema::validate(r, schema::Document::kLedgerRecord); !problems.empty())
      throw Error(ErrorKind::kLedgerInvalid, where + join(schema::problem_lines(problems), "; "), remedy);
    std::vector<std::string> missing;
    for (const char* k : {"id", "time_utc", "half", "backend", "status"})
      if (!r.contains(k) || !r[k].is_string()) missing.push_back(k);
    if (!r.contains("machine") || !r["machine"].is_object()) missing.push_back("machine");
    if (!missing.empty())
      throw Error(ErrorKind::kLedgerInvalid,
                  where + "record lacks " + join(missing, ", ") + " (or has the wrong type)", remedy);
    if (r["id"].get<std::string>() != record_id(r))
      throw Error(ErrorKind::kLedgerInvalid,
                  where + "record id " + r["id"].get<std::string>() +
                      " does not match its content (" + record_id(r) + "): it was edited",
                  "records are never edited: restore the line from version control, or delete it");
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<json> merge_records(const std::vector<std::vector<json>>& ledgers) {
  std::vector<json> out;
  std::set<std::string> seen;
  for (const auto& l : ledgers)
    for (const auto& r : l) {
      const std::string id = r.value("id", record_id(r));
      if (seen.insert(id).second) out.push_back(r);
    }
  std::stable_sort(out.begin(), out.end(), [](const json& a, const json& b) {
    const std::string ta = a.value("time_utc", ""), tb = b.value("time_utc", "");
    if (ta != tb) return ta < tb;
    return a.value("id", "") < b.value("id", "");
  });
  return out;
}

std::optional<fs::path> default_ledger_path(std::string* why) {
  if (const char* e = std::getenv("ETPROOF_LEDGER"); e && *e) {
    if (why) *why = "ETPROOF_LEDGER";
    return fs::path(e);
  }
  if (const char* x = std::getenv("XDG_STATE_HOME"); x && *x) {
    if (why) *why = "$XDG_STATE_HOME/etproof/ledger.jsonl";
    return fs::path(x) / "etproof" / "ledger.jsonl";
  }
  if (const char* h = std::getenv("HOME"); h && *h) {
    if (why) *why = "~/.local/state/etproof/ledger.jsonl";
    return fs::path(h) / ".local" / "state" / "etproof" / "ledger.jsonl";
  }
  if (why) *why = "neither ETPROOF_LEDGER, XDG_STATE_HOME nor HOME is set";
  return std::nullopt;
}

std::string command_line_text(int argc, char** argv) {
  std::string out;
  for (int i = 0; i < argc; ++i) {
    std::string a = i == 0 ? fs::path(argv[0]).filename().string() : std::string(argv[i]);
    if (a.find_first_of(" \t'\"$") != std::string::npos) a = shell_quote(a);
    out += (i ? " " : "") + a;
  }
  return out;
}

}  // namespace etproof
