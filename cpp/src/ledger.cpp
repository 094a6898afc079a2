// The evidence ledger: records built from the commands' JSON outputs, appended with one write.
#include "etproof/ledger.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <openssl/evp.h>
#if defined(__APPLE__)
#include <sys/sysctl.h>
#endif

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "etproof/error.h"
#include "etproof/manifest.h"
#include "etproof/registry.h"

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

std::string sha256_hex(const std::string& data) {
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1 ||
      EVP_DigestUpdate(ctx.get(), data.data(), data.size()) != 1 ||
      EVP_DigestFinal_ex(ctx.get(), md, &len) != 1)
    throw Error(ErrorKind::kIo, "OpenSSL SHA-256 failed", "check the OpenSSL installation");
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned i = 0; i < len; ++i) {
    out += hex[md[i] >> 4];
    out += hex[md[i] & 15];
  }
  return out;
}

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

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string now_utc() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// A number for the ledger: finite as is, else "inf"/"-inf"/"nan" (JSON has no such numbers).
json num(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

// The bound as the ledger keeps it (the source text stays in the command's own output).
json bound_numbers(const json& b) {
  if (!b.is_object()) return nullptr;
  json out = json::object();
  for (const char* k : {"atol", "rtol", "min_cosine", "min_sqnr_db", "caller_supplied"})
    if (b.contains(k)) out[k] = b[k];
  return out;
}

std::string str(const json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_string()) return "";
  return j[key].get<std::string>();
}

// Facts of a bundle, from its manifest: bundle, bundle_sha256, model, recipe, precision,
// bundle_toolchain, bundle_created_utc. Missing/unreadable manifest: just the name.
void add_bundle_facts(json& r, const fs::path& bundle_dir) {
  r["bundle"] = bundle_dir.filename().string();
  try {
    const fs::path mpath = bundle_dir / (bundle_dir.filename().string() + ".etproof.json");
    const Manifest m = read_manifest(fs::is_regular_file(bundle_dir) ? bundle_dir : mpath);
    r["bundle"] = m.name;
    r["bundle_sha256"] = m.artifact.sha256;
    if (!m.model.empty()) r["model"] = m.model;
    if (!m.recipe.empty()) r["recipe"] = m.recipe;
    if (!m.precision.empty()) r["precision"] = m.precision;
    if (!m.backend.empty()) r["backend"] = m.backend;
    if (!m.toolchain.empty()) r["bundle_toolchain"] = m.toolchain;
    if (!m.created_utc.empty()) r["bundle_created_utc"] = m.created_utc;
    if (!r.contains("backend_ids")) r["backend_ids"] = m.delegates;
  } catch (const Error&) {
    // The record keeps what the command said; the bundle's own facts are unknown.
  }
}

json base_record(const RecordContext& ctx, const std::string& half, const std::string& backend) {
  json r = json::object();
  r["schema"] = kLedgerSchema;
  r["time_utc"] = ctx.time_utc;
  r["command"] = ctx.command;
  r["kind"] = ctx.kind;
  r["machine"] = ctx.machine;
  r["toolchain"] = ctx.toolchain;
  r["etproof_commit"] = ctx.commit;
  r["etproof_commit_source"] = ctx.commit_source;
  r["half"] = half;
  r["backend"] = backend;
  return r;
}

// Worst numbers over a set of per-tensor measurements.
struct Worst {
  size_t cases = 0;
  std::vector<std::string> case_ids;
  std::optional<double> max_abs;
  std::optional<double> cosine;
  std::optional<double> sqnr;
  bool sqnr_inf = false;  // some tensor identical (SQNR +inf) and none finite

  void add_case(const std::string& id) {
    if (std::find(case_ids.begin(), case_ids.end(), id) == case_ids.end()) {
      case_ids.push_back(id);
      ++cases;
    }
  }
  void add(const json& max_abs_j, const json& cos_j, const json& sqnr_j, bool sqnr_skipped) {
    if (max_abs_j.is_number()) max_abs = std::max(max_abs.value_or(0.0), max_abs_j.get<double>());
    if (cos_j.is_number()) cosine = std::min(cosine.value_or(1.0), cos_j.get<double>());
    if (sqnr_j.is_number())
      sqnr = std::min(sqnr.value_or(INFINITY), sqnr_j.get<double>());
    else if (sqnr_j.is_null() && !sqnr_skipped && max_abs_j.is_number())
      sqnr_inf = true;  // it ran, and the gate wrote a non-finite SQNR as null: identical outputs
  }
  json to_json(const json& bound) const {
    json n = json::object();
    n["cases"] = cases;
    n["case_ids"] = case_ids;
    if (max_abs) n["max_abs_error"] = num(*max_abs);
    if (cosine) n["cosine"] = num(*cosine);
    if (sqnr)
      n["sqnr_db"] = num(*sqnr);
    else if (sqnr_inf)
      n["sqnr_db"] = "inf";
    if (!bound.is_null()) n["bound"] = bound;
    return n;
  }
};

std::string join(const std::vector<std::string>& v, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? sep : "") + v[i];
  return out;
}

}  // namespace

// ---- context -----------------------------------------------------------------------------------
json machine_info() {
  json m = json::object();
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
  std::string cpu;
  std::ifstream ci("/proc/cpuinfo");
  for (std::string line; std::getline(ci, line);) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string k = trim(line.substr(0, colon));
    if (k == "model name" || k == "Hardware" || (k == "Model" && cpu.empty())) {
      cpu = trim(line.substr(colon + 1));
      if (k == "model name") break;
    }
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

// ---- records -----------------------------------------------------------------------------------
std::vector<json> records_from_backends(const RecordContext& ctx, const json& doc) {
  std::vector<json> out;
  const fs::path probe_dir = str(doc, "probe_bundles");
  // Export half: what the probe answered, per key.
  if (doc.contains("export") && doc["export"].is_array()) {
    for (const auto& e : doc["export"]) {
      json r = base_record(ctx, "export", str(e, "backend"));
      r["model"] = "one-operation probe";
      if (e.contains("delegates")) r["backend_ids"] = e["delegates"];
      r["status"] = str(e, "status");
      if (!str(e, "reason").empty()) {
        if (r["status"] == "available")
          r["detail"] = e["reason"];
        else
          r["reason"] = e["reason"];
      }
      out.push_back(std::move(r));
    }
  }
  // Runtime half: per key, the probe's verdict when it ran, else the registry's answer.
  if (doc.contains("runtime_by_backend") && doc["runtime_by_backend"].is_array()) {
    for (const auto& k : doc["runtime_by_backend"]) {
      json r = base_record(ctx, "runtime", str(k, "backend"));
      if (k.contains("ids")) r["backend_ids"] = k["ids"];
      const std::string reg = str(k, "status");
      r["registry"] = reg;
      const json probe = k.value("probe", json::object());
      const std::string ps = str(probe, "status");
      const std::string pdetail = str(probe, "detail");
      const std::string pbundle = str(probe, "bundle");
      if (!pbundle.empty()) {
        add_bundle_facts(r, probe_dir / pbundle);
        if (k.contains("ids")) r["backend_ids"] = k["ids"];
        r["backend"] = str(k, "backend");
      }
      if (ps == "agreed" || ps == "drifted") {
        r["status"] = ps;
        r["detail"] = pdetail;
        // The probe's numbers, as its line gives them.
        json n = json::object();
        std::smatch mt;
        if (std::regex_search(pdetail, mt, std::regex(R"((\d+) golden case\(s\))")))
          n["cases"] = std::stoul(mt[1]);
        if (std::regex_search(pdetail, mt, std::regex(R"(max \|err\| ([-+0-9.eE]+|inf|nan))")))
          n["max_abs_error"] = mt[1] == "inf" || mt[1] == "nan" ? json(mt[1].str()) : json(std::stod(mt[1]));
        if (std::regex_search(pdetail, mt, std::regex(R"(min SQNR ([-+0-9.eE]+|inf|nan) dB)")))
          n["sqnr_db"] = mt[1] == "inf" || mt[1] == "nan" ? json(mt[1].str()) : json(std::stod(mt[1]));
        if (!n.empty()) r["numbers"] = n;
        if (ps == "drifted") r["reason"] = pdetail;
      } else if (ps == "failed") {
        r["status"] = pdetail.find("[load-failed]") != std::string::npos ? "load-failed"
                      : pdetail.find("[run-failed]") != std::string::npos ? "run-failed"
                                                                          : "bundle-invalid";
        r["reason"] = pdetail;
      } else {
        // Nothing ran: the registry's answer (available but unproven, not-linked, …).
        r["status"] = reg;
        std::string why = str(k, "reason");
        if (ps == "no-bundle" || (reg == "available" && !pdetail.empty()))
          why += (why.empty() ? "" : "; ") + std::string("not run: ") + pdetail;
        r["reason"] = why;
      }
      out.push_back(std::move(r));
    }
  }
  return out;
}

// The directory a matrix column was found in (the matrix JSON gives it per column when it read
// several directories), else the one directory the caller passed.
fs::path column_dir(const json& col, const fs::path& dir) {
  const std::string d = str(col, "dir");
  return d.empty() ? dir : fs::path(d);
}

std::vector<json> records_from_matrix(const RecordContext& ctx, const json& doc,
                                      const fs::path& dir) {
  std::vector<json> out;
  const json cols = doc.value("columns", json::array());
  const json cells = doc.value("cells", json::array());
  // xfail reasons by (model?, backend, recipe, half).
  auto xfail_reason = [&](const std::string& model, const std::string& backend,
                          const std::string& recipe, const std::string& half) -> std::string {
    if (!doc.contains("xfail") || !doc["xfail"].is_object()) return "";
    for (const auto& x : doc["xfail"].value("records", json::array()))
      if (str(x, "backend") == backend && str(x, "recipe") == recipe && str(x, "half") == half &&
          (model.empty() || str(x, "model").empty() || str(x, "model") == model))
        return str(x, "reason");
    return "";
  };

  std::set<std::string> bundles_seen;
  std::set<std::string> cell_records;  // "bundle|status" already recorded from the cells
  for (size_t ci = 0; ci < cols.size(); ++ci) {
    const json& col = cols[ci];
    const std::string bundle = str(col, "bundle");
    json facts = json::object();
    if (!bundle.empty()) add_bundle_facts(facts, column_dir(col, dir) / bundle);
    auto with_facts = [&](json r) {
      for (auto it = facts.begin(); it != facts.end(); ++it)
        if (it.key() != "backend_ids") r[it.key()] = it.value();
      if (col.contains("delegates")) r["backend_ids"] = col["delegates"];
      else if (facts.contains("backend_ids")) r["backend_ids"] = facts["backend_ids"];
      if (!str(col, "recipe").empty()) r["recipe"] = col["recipe"];
      if (!str(col, "precision").empty()) r["precision"] = col["precision"];
      if (!str(col, "model").empty()) r["model"] = col["model"];
      r["backend"] = str(col, "backend");
      return r;
    };
    // Export half: the bundle exists, so it lowered (with the delegates its manifest records).
    if (!bundle.empty() && bundles_seen.insert(bundle).second) {
      json r = with_facts(base_record(ctx, "export", str(col, "backend")));
      // The delegates the manifest records for the program (the matrix's, read from the program
      // at load, when the manifest could not be read).
      if (facts.contains("backend_ids")) r["backend_ids"] = facts["backend_ids"];
      const bool delegated = r.contains("backend_ids") && !r["backend_ids"].empty();
      r["status"] = (delegated || str(col, "backend") == "portable") ? "exported" : "exported-undelegated";
      if (!delegated && str(col, "backend") != "portable")
        r["reason"] = "the bundle's program has no delegate call: the partitioner tagged nothing";
      out.push_back(std::move(r));
    }
    // Runtime half: one record per status among this column's cells.
    std::map<std::string, std::pair<Worst, std::vector<std::string>>> by_status;
    std::vector<std::string> order;
    for (const auto& c : cells) {
      const bool mine = (!bundle.empty() && str(c, "bundle") == bundle) ||
                        (bundle.empty() && str(c, "backend") == str(col, "backend") &&
                         str(c, "recipe") == str(col, "recipe"));
      if (!mine) continue;
      const std::string st = str(c, "status");
      if (!by_status.count(st)) order.push_back(st);
      auto& [w, details] = by_status[st];
      w.add_case(str(c, "case"));
      w.add(c.value("max_abs_error", json()), c.value("cosine", json()), c.value("sqnr_db", json()),
            false);
      const std::string d = str(c, "detail");
      if (!d.empty() && std::find(details.begin(), details.end(), d) == details.end())
        details.push_back(d);
    }
    for (const auto& st : order) {
      auto& [w, details] = by_status[st];
      json r = with_facts(base_record(ctx, "runtime", str(col, "backend")));
      r["status"] = st;
      cell_records.insert(bundle + "|" + st);
      // Numbers only where it ran; otherwise which cases the status covers.
      static const std::set<std::string> ran = {"agreed", "agreed-undelegated", "drifted",
                                                "xfail", "xpass", "no-bound"};
      if (ran.count(st))
        r["numbers"] = w.to_json(bound_numbers(col.value("bound", json())));
      else
        r["case_ids"] = w.case_ids;
      if (st != "agreed") {
        std::string reason;
        if (st == "xfail" || st == "xpass")
          reason = xfail_reason(r.value("model", std::string()), str(col, "backend"),
                                str(col, "recipe"), "runtime");
        if (reason.empty() && !details.empty()) reason = join(details, "; ");
        if (st == "xpass" && !details.empty()) reason = join(details, "; ");
        if (!reason.empty()) r["reason"] = reason;
      }
      out.push_back(std::move(r));
    }
  }
  // Columns (or parts of them) not measured, and the export half's refusals and failures.
  for (const auto& n : doc.value("not_run", json::array())) {
    const std::string st = str(n, "status");
    const std::string backend = str(n, "backend"), recipe = str(n, "recipe");
    const bool export_half = st == "export-refused" || st == "export-failed" ||
                             ((st == "xfail" || st == "xpass") &&
                              !xfail_reason("", backend, recipe, "export").empty() &&
                              xfail_reason("", backend, recipe, "runtime").empty());
    json r = base_record(ctx, export_half ? "export" : "runtime", backend);
    // The column it belongs to, when one was found (its cells may already say the same).
    bool duplicate = false;
    for (const auto& col : cols)
      if (str(col, "backend") == backend && str(col, "recipe") == recipe &&
          (str(n, "bundle").empty() || str(n, "bundle") == str(col, "bundle")) &&
          (str(n, "model").empty() || str(col, "model").empty() || str(n, "model") == str(col, "model"))) {
        duplicate = !str(col, "bundle").empty() && cell_records.count(str(col, "bundle") + "|" + st);
        if (!str(col, "bundle").empty()) add_bundle_facts(r, column_dir(col, dir) / str(col, "bundle"));
        if (col.contains("delegates") && !export_half) r["backend_ids"] = col["delegates"];
        if (!str(col, "precision").empty()) r["precision"] = col["precision"];
        break;
      }
    if (duplicate) continue;
    r["backend"] = backend;
    if (!recipe.empty()) r["recipe"] = recipe;
    if (!str(n, "model").empty()) r["model"] = n["model"];
    r["status"] = st;
    std::string reason = str(n, "reason");
    if (st == "xfail") {
      const std::string xr = xfail_reason(r.value("model", std::string()), backend, recipe,
                                          export_half ? "export" : "runtime");
      if (!xr.empty()) reason = xr + (reason.empty() || reason == xr ? "" : " (" + reason + ")");
    }
    if (!reason.empty()) r["reason"] = reason;
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<json> records_from_parity(const RecordContext& ctx, const json& doc,
                                      const fs::path& bundle) {
  const fs::path dir = fs::is_regular_file(bundle) ? bundle.parent_path() : bundle;
  json r = base_record(ctx, "runtime", str(doc, "backend"));
  add_bundle_facts(r, dir);
  r["backend"] = str(doc, "backend");
  if (doc.contains("delegates")) r["backend_ids"] = doc["delegates"];
  if (!str(doc, "recipe").empty()) r["recipe"] = doc["recipe"];
  if (!str(doc, "precision").empty()) r["precision"] = doc["precision"];
  Worst w;
  std::vector<std::string> failures;
  for (const auto& c : doc.value("cases", json::array())) {
    w.add_case(str(c, "case"));
    for (const auto& t : c.value("outputs", json::array())) {
      w.add(t.value("max_abs_error", json()), t.value("cosine", json()), t.value("sqnr_db", json()),
            t.value("sqnr_skipped", false));
      if (!t.value("passed", true))
        failures.push_back(str(c, "case") + "/" + str(t, "output") + ": " + str(t, "failure"));
    }
  }
  const bool passed = doc.value("passed", false);
  const bool delegated = doc.contains("delegates") && !doc["delegates"].empty();
  if (passed)
    r["status"] = (delegated || str(doc, "backend") == "portable") ? "agreed" : "agreed-undelegated";
  else if (w.cases == 0)
    r["status"] = "run-failed", r["reason"] = "no golden case ran";
  else
    r["status"] = "drifted", r["reason"] = join(failures, "; ");
  if (passed && !delegated && str(doc, "backend") != "portable")
    r["reason"] = "no delegate took the graph: ran on portable kernels";
  r["numbers"] = w.to_json(bound_numbers(doc.value("bound", json())));
  return {r};
}

json record_from_parity_error(const RecordContext& ctx, const fs::path& bundle,
                              const std::string& error_kind, const std::string& cause) {
  const fs::path dir = fs::is_regular_file(bundle) ? bundle.parent_path() : bundle;
  json r = base_record(ctx, "runtime", "");
  add_bundle_facts(r, dir);
  std::string status = "bundle-invalid";
  if (error_kind == "load-failed") status = "load-failed";
  else if (error_kind == "run-failed") status = "run-failed";
  else if (error_kind == "backend-unavailable") {
    status = "not-linked";
    for (const auto& id : r.value("backend_ids", std::vector<std::string>())) {
      const auto rb = find_backend(id);
      if (rb && rb->registered && !rb->available) status = "unavailable";
    }
  } else if (error_kind == "capability-unavailable") status = "no-bound";
  r["status"] = status;
  r["reason"] = "[" + error_kind + "] " + cause;
  return r;
}

// ---- ids, append, read -------------------------------------------------------------------------
std::string record_id(const json& record) {
  json r = record;
  if (r.is_object()) r.erase("id");
  return sha256_hex(r.dump()).substr(0, 16);
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
    batch += f.dump() + "\n";
  }
  std::error_code ec;
  if (ledger.has_parent_path()) fs::create_directories(ledger.parent_path(), ec);
  const int fd = ::open(ledger.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0)
    throw Error(ErrorKind::kIo, "cannot open ledger " + ledger.string() + ": " + std::strerror(errno),
                "check the path and its permissions, pass --ledger FILE, or --no-ledger");
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
    json r;
    try {
      r = json::parse(line);
    } catch (const std::exception& e) {
      std::string what = e.what();
      throw Error(ErrorKind::kLedgerInvalid, where + "not a JSON record (" + what.substr(0, 160) + ")",
                  remedy);
    }
    if (!r.is_object())
      throw Error(ErrorKind::kLedgerInvalid, where + "not a JSON object", remedy);
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

}  // namespace etproof
