// etproof bench (etproof/bench.h): load time, per-call latency and memory of a bundle on its own
// golden inputs.
#include "etproof/replay/bench.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <iomanip>
#include <numeric>
#include <sstream>

#include "etproof/runtime/bundle.h"
#include "etproof/replay/replay.h"
#include "core/common.h"
#include "replay/report_identity.h"
#include "runtime/worker.h"

// ExecuTorch's shared thread pool (extension/threadpool/threadpool.h in ExecuTorch 1.5.1, built
// into the wheel's libexecutorch_threadpool.so, target executorch::threadpool). The wheel ships the
// library but not that header, so the two members used here are declared as upstream declares
// them; the class has no virtual members, so a call through the pointer get_threadpool() returns
// is the library's own.
namespace executorch::extension::threadpool {
class ThreadPool {
 public:
  size_t get_thread_count() const;
  bool _unsafe_reset_threadpool(uint32_t num_threads);
};
ThreadPool* get_threadpool();
}  // namespace executorch::extension::threadpool

namespace etproof {
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using nlohmann::json;

namespace {

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// Linux /proc/self/status fields, in kB; nullopt elsewhere.
std::optional<double> status_kb(const std::string& field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(field + ":", 0) == 0) return std::stod(line.substr(field.size() + 1));
  return std::nullopt;
}

// Resets the process's peak resident size (VmHWM) to its current one (Linux ≥ 4.0).
bool reset_peak_rss() {
  std::ofstream out("/proc/self/clear_refs");
  out << "5";
  out.flush();
  return bool(out);
}

size_t pool_threads() {
  auto* pool = ::executorch::extension::threadpool::get_threadpool();
  return pool ? pool->get_thread_count() : 0;
}

}  // namespace

Latency latency_of(std::vector<double> v) {
  if (v.empty()) throw Error(ErrorKind::kInvalidArgument, "no call times to summarise", "time at least one call");
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  auto rank = [&](double q) { return v[std::min(n - 1, size_t(std::ceil(q * double(n))) - (q > 0 ? 1 : 0))]; };
  Latency l;
  l.runs = n;
  l.median_ms = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  l.p90_ms = rank(0.90);
  l.p99_ms = rank(0.99);
  l.min_ms = v.front();
  l.mean_ms = std::accumulate(v.begin(), v.end(), 0.0) / double(n);
  l.throughput_per_s = l.mean_ms > 0 ? 1000.0 / l.mean_ms : 0;
  return l;
}

namespace {
// The tokens of one call: the size of the first dynamic dimension of the first input that has one
// (the manifest's dynamic_dims); in a method without one (a static prefill [1, S]), the last
// dimension of its first integer input of rank >= 2 (token ids, [batch, S]); else 1.
size_t tokens_of(const Manifest& m, const GoldenCase& g, const std::map<std::string, HostTensor>& inputs) {
  for (const MethodSpec& s : m.methods) {
    if (s.name != g.method) continue;
    for (const TensorSpec& t : s.inputs) {
      auto it = inputs.find(t.name);
      if (t.dynamic_dims.empty() || it == inputs.end()) continue;
      const auto axis = static_cast<size_t>(t.dynamic_dims.front().axis);
      if (axis < it->second.shape.size()) return static_cast<size_t>(it->second.shape[axis]);
    }
    for (const TensorSpec& t : s.inputs) {
      auto it = inputs.find(t.name);
      if (it == inputs.end() || it->second.shape.size() < 2) continue;
      if (t.dtype == DType::kInt64 || t.dtype == DType::kInt32)
        return static_cast<size_t>(it->second.shape.back());
    }
  }
  return 1;
}

double median_of(std::vector<double> v) { return latency_of(std::move(v)).median_ms; }

// SequenceBench of the first sequence case whose steps' methods are all in `methods`; nullopt
// where there is none.
std::optional<SequenceBench> bench_sequence(const Bundle& b, const std::vector<std::string>& methods,
                                            const BenchOptions& o) {
  for (const std::vector<const GoldenCase*>& run : case_runs(b.manifest)) {
    if (!run.front()->sequence) continue;
    if (!std::all_of(run.begin(), run.end(), [&](const GoldenCase* g) {
          return std::find(methods.begin(), methods.end(), g->method) != methods.end();
        }))
      continue;
    SequenceBench s;
    s.case_id = run.front()->sequence->case_id;
    s.steps = run.size();
    try {
      std::vector<std::map<std::string, HostTensor>> inputs;
      for (size_t k = 0; k < run.size(); ++k) {
        inputs.push_back(read_golden_inputs(b, *run[k]));
        (k == 0 ? s.prefill_tokens : s.decode_tokens) += tokens_of(b.manifest, *run[k], inputs.back());
      }
      std::vector<double> prefill, decode;
      const auto start = Clock::now();
      for (size_t r = 0;; ++r) {  // run 0 untimed
        LoadedModel model = LoadedModel::load(b);
        double decode_ms = 0;
        for (size_t k = 0; k < run.size(); ++k) {
          const auto c0 = Clock::now();
          (void)model.run(run[k]->method, inputs[k]);
          if (k == 0) prefill.push_back(ms_since(c0));
          else decode_ms += ms_since(c0);
        }
        decode.push_back(decode_ms);
        if (r == 0) {
          prefill.clear();
          decode.clear();
          continue;
        }
        if (o.runs > 0 ? prefill.size() >= o.runs : prefill.size() >= 3 && ms_since(start) >= o.seconds * 1000.0) break;
      }
      s.runs = prefill.size();
      s.prefill_ms = median_of(prefill);
      s.prefill_p90_ms = latency_of(prefill).p90_ms;
      s.prefill_tokens_per_s = s.prefill_ms > 0 ? 1000.0 * double(s.prefill_tokens) / s.prefill_ms : 0;
      if (s.decode_tokens > 0) {
        s.decode_ms_per_token = median_of(decode) / double(s.decode_tokens);
        s.decode_tokens_per_s = s.decode_ms_per_token > 0 ? 1000.0 / s.decode_ms_per_token : 0;
        s.decode_p90_ms_per_token = latency_of(decode).p90_ms / double(s.decode_tokens);
      }
    } catch (const Error& e) {
      SequenceBench failed;
      failed.case_id = s.case_id;
      failed.steps = s.steps;
      failed.error = e;
      s = std::move(failed);
    }
    return s;
  }
  return std::nullopt;
}
}  // namespace

bool BenchReport::ok() const {
  if (refused) return false;
  for (const MethodBench& m : methods)
    if (m.error) return false;
  if (sequence && sequence->error) return false;
  return !methods.empty();
}

BenchReport bench(const fs::path& path, const BenchOptions& o) {
  BenchReport r;
  r.path = path.string();
  r.bundle = path.filename().string();
  r.threads_requested = o.threads;
  if (o.threads > 0) ::executorch::extension::threadpool::get_threadpool()->_unsafe_reset_threadpool(uint32_t(o.threads));
  const bool peak_known = reset_peak_rss();
  const std::optional<double> rss_before = status_kb("VmRSS");
  const auto t0 = Clock::now();
  Prepared p = prepare(path);
  r.first_load_ms = ms_since(t0);
  if (p.bundle) {
    const Manifest& m = p.bundle->manifest;
    detail::copy_identity(r, m);
    if (!p.refused)
      if (auto e = unknown_methods_error(m, o.methods)) {
        p.refused = Status::kBundleInvalid;
        p.error = *e;
      }
  }
  if (p.refused) {
    r.refused = p.refused;
    r.error = p.error;
    return r;
  }
  r.delegates = p.model->program_delegates();
  r.threads_used = pool_threads();
  const Bundle& b = *p.bundle;
  for (const std::string& method : select_methods(b.manifest, o.methods).selected) {
    MethodBench mb;
    mb.method = method;
    const auto g = std::find_if(b.manifest.goldens.begin(), b.manifest.goldens.end(),
                                [&](const GoldenCase& c) { return c.method == method || (c.method.empty() && method == "forward"); });
    try {
      if (g == b.manifest.goldens.end())
        throw Error(ErrorKind::kInvalidArgument, "bundle '" + b.manifest.name + "' has no golden case for method '" + method + "'",
                    "re-export the bundle with golden inputs for every method");
      mb.case_id = case_label(b.manifest, *g);
      const auto inputs = read_golden_inputs(b, *g);
      for (size_t i = 0; i < o.warmup; ++i) (void)p.model->run(method, inputs);
      std::vector<double> samples;
      const auto start = Clock::now();
      for (;;) {
        const auto c0 = Clock::now();
        (void)p.model->run(method, inputs);
        samples.push_back(ms_since(c0));
        if (o.runs > 0 ? samples.size() >= o.runs
                       : samples.size() >= 10 && ms_since(start) >= o.seconds * 1000.0)
          break;
      }
      mb.latency = latency_of(std::move(samples));
    } catch (const Error& e) {
      mb.error = e;
    }
    r.methods.push_back(std::move(mb));
  }
  r.sequence = bench_sequence(b, select_methods(b.manifest, o.methods).selected, o);
  const std::optional<double> peak = status_kb("VmHWM");
  if (peak_known && peak && rss_before) r.peak_rss_mb = std::max(0.0, *peak - *rss_before) / 1024.0;
  // Warm loads: the verified bytes again, after the peak was read (each adds a model's memory).
  std::vector<double> loads;
  for (size_t i = 0; i < o.warm_loads; ++i) {
    const auto l0 = Clock::now();
    try {
      LoadedModel again = LoadedModel::load(b);
    } catch (const Error&) {
      break;  // it loaded once; a second refusal is not a load time
    }
    loads.push_back(ms_since(l0));
  }
  if (!loads.empty()) r.warm_load_ms = latency_of(loads).median_ms;
  return r;
}

json bench_options_json(const BenchOptions& o) {
  return {{"threads", o.threads}, {"warmup", o.warmup},         {"runs", o.runs},
          {"seconds", o.seconds}, {"warm_loads", o.warm_loads}, {"methods", o.methods}};
}

json serve_bench(const std::string& bundle, const json& options) {
  BenchOptions o;
  o.threads = options.at("threads").get<size_t>();
  o.warmup = options.at("warmup").get<size_t>();
  o.runs = options.at("runs").get<size_t>();
  o.seconds = options.at("seconds").get<double>();
  o.warm_loads = options.at("warm_loads").get<size_t>();
  o.methods = options.at("methods").get<std::vector<std::string>>();
  return to_json({bench(bundle, o)});
}

BenchReport bench(const fs::path& path, const BenchOptions& o, const Isolation& isolation) {
  if (!isolation.enabled) return bench(path, o);
  BenchReport r;
  r.path = path.string();
  r.bundle = path.filename().string();
  r.threads_requested = o.threads;
  try {
    // The worker opens the bundle itself; the manifest is read here only to name it.
    const Bundle b = open_bundle(path, OpenOptions{.verify_artifact = false});
    detail::WorkerClient worker(isolation, b.manifest_path, "bundle '" + b.manifest.name + "'");
    const json doc = worker.bench(bench_options_json(o));
    BenchReport back = bench_report_from_json(doc.at("bench").at(0));
    back.path = r.path;
    return back;
  } catch (const Error& e) {
    r.refused = status_of(e);
    r.error = e;
  } catch (const nlohmann::json::exception& e) {
    r.refused = Status::kCrashed;
    r.error = Error(ErrorKind::kCrashed, "the worker process benchmarking " + r.path + " sent a malformed report (" +
                                             e.what() + ")",
                    "re-export the bundle; if its hash matches, benchmark it in-process and report it");
  }
  return r;
}

BenchReport bench_report_from_json(const json& j) {
  auto error_of = [](const json& e) -> std::optional<Error> {
    if (e.is_null()) return std::nullopt;
    const auto kind = error_kind_from_string(e.at("kind").get<std::string>());
    if (!kind) throw Error(ErrorKind::kCrashed, "a benchmark report with an unknown error kind", "report it");
    return Error(*kind, e.at("cause").get<std::string>(), e.at("remedy").get<std::string>());
  };
  auto number = [](const json& v) -> std::optional<double> { return detail::read_json_number(v); };
  try {
    BenchReport r;
    r.path = j.at("path").get<std::string>();
    r.bundle = j.at("bundle").get<std::string>();
    r.model = j.at("model").get<std::string>();
    r.backend = j.at("backend").get<std::string>();
    r.recipe = j.at("recipe").get<std::string>();
    r.precision = j.at("precision").get<std::string>();
    r.bundle_sha256 = j.value("bundle_sha256", std::string());
    r.bundle_created_utc = j.value("bundle_created_utc", std::string());
    r.bundle_toolchain = j.value("bundle_toolchain", std::map<std::string, std::string>());
    r.delegates = j.at("delegates").get<std::vector<std::string>>();
    const std::string status = j.at("status").get<std::string>();
    if (status != "measured") {
      r.refused = status_from_string(status);
      if (!r.refused) throw Error(ErrorKind::kCrashed, "a benchmark report with an unknown status", "report it");
    }
    r.error = error_of(j.at("error"));
    r.first_load_ms = number(j.at("first_load_ms")).value_or(0);
    r.warm_load_ms = number(j.at("warm_load_ms"));
    r.threads_requested = j.at("threads_requested").get<size_t>();
    r.threads_used = j.at("threads_used").get<size_t>();
    r.peak_rss_mb = number(j.at("peak_rss_mb"));
    for (const json& m : j.at("methods")) {
      MethodBench mb;
      mb.method = m.at("method").get<std::string>();
      mb.case_id = m.at("case").get<std::string>();
      mb.error = error_of(m.at("error"));
      if (!m.at("latency").is_null()) {
        const json& l = m.at("latency");
        Latency lat;
        lat.runs = l.at("runs").get<size_t>();
        lat.median_ms = number(l.at("median_ms")).value_or(0);
        lat.p90_ms = number(l.at("p90_ms")).value_or(0);
        lat.p99_ms = number(l.at("p99_ms")).value_or(0);
        lat.min_ms = number(l.at("min_ms")).value_or(0);
        lat.mean_ms = number(l.at("mean_ms")).value_or(0);
        lat.throughput_per_s = number(l.at("throughput_per_s")).value_or(0);
        mb.latency = lat;
      }
      r.methods.push_back(std::move(mb));
    }
    if (auto q = j.find("sequence"); q != j.end() && !q->is_null()) {
      SequenceBench sb;
      sb.case_id = q->at("case").get<std::string>();
      sb.steps = q->at("steps").get<size_t>();
      sb.error = error_of(q->at("error"));
      sb.prefill_tokens = q->at("prefill_tokens").get<size_t>();
      sb.decode_tokens = q->at("decode_tokens").get<size_t>();
      sb.runs = q->at("runs").get<size_t>();
      sb.prefill_ms = number(q->at("prefill_ms")).value_or(0);
      sb.prefill_tokens_per_s = number(q->at("prefill_tokens_per_s")).value_or(0);
      sb.decode_ms_per_token = number(q->at("decode_ms_per_token")).value_or(0);
      sb.decode_tokens_per_s = number(q->at("decode_tokens_per_s")).value_or(0);
      sb.prefill_p90_ms = number(q->at("prefill_p90_ms")).value_or(0);
      sb.decode_p90_ms_per_token = number(q->at("decode_p90_ms_per_token")).value_or(0);
      r.sequence = sb;
    }
    return r;
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorKind::kCrashed, std::string("a benchmark report that does not parse: ") + e.what(),
                "re-export the bundle; if its hash matches, benchmark it in-process and report it");
  }
}

namespace {
std::string ms_text(double ms) { return detail::format_number(ms, 3) + " ms"; }
// Tokens per second to the token (17390, not 1.739e+04); below 100 with 3 significant digits.
std::string tokens_per_s_text(double v) {
  if (!(v >= 100) || !std::isfinite(v)) return detail::format_number(v, 3);
  std::ostringstream os;
  os << std::fixed << std::setprecision(0) << v;
  return os.str();
}

std::string reason_of(const BenchReport& r) {
  return std::string(to_string(*r.refused)) + ": " + (r.error ? detail::error_line(*r.error) : std::string("refused"));
}
}  // namespace

std::string to_text(const std::vector<BenchReport>& reports) {
  std::ostringstream os;
  for (const BenchReport& r : reports) {
    os << r.bundle;
    if (!r.backend.empty()) os << " (" << r.backend << "/" << r.recipe << ", " << r.precision << ")";
    if (r.refused) {
      os << ": not measured, " << reason_of(r) << "\n";
      continue;
    }
    os << ": load " << ms_text(r.first_load_ms) << " first";
    if (r.warm_load_ms) os << ", " << ms_text(*r.warm_load_ms) << " warm";
    os << "; threads " << r.threads_used << (r.threads_requested ? " (asked " + std::to_string(r.threads_requested) + ")" : "");
    if (r.peak_rss_mb) os << "; peak memory +" << detail::format_number(*r.peak_rss_mb, 3) << " MiB";
    os << "\n";
    for (const MethodBench& m : r.methods) {
      os << "  " << m.method;
      if (!m.case_id.empty()) os << " on " << m.case_id;
      if (m.error) {
        os << ": failed, " << detail::error_line(*m.error) << "\n";
        continue;
      }
      const Latency& l = *m.latency;
      os << ": median " << ms_text(l.median_ms) << ", p90 " << ms_text(l.p90_ms) << ", p99 " << ms_text(l.p99_ms)
         << ", min " << ms_text(l.min_ms) << " over " << l.runs << " runs; "
         << detail::format_number(l.throughput_per_s, 4) << " calls/s\n";
    }
    if (const auto& q = r.sequence) {
      os << "  sequence " << q->case_id << " (" << q->steps << " steps, from a fresh load)";
      if (q->error) {
        os << ": failed, " << detail::error_line(*q->error) << "\n";
        continue;
      }
      os << ": prefill " << q->prefill_tokens << " tokens in " << ms_text(q->prefill_ms) << " (p90 "
         << ms_text(q->prefill_p90_ms) << "), " << tokens_per_s_text(q->prefill_tokens_per_s) << " tokens/s";
      if (q->decode_tokens > 0)
        os << "; decode " << ms_text(q->decode_ms_per_token) << " per token (p90 " << ms_text(q->decode_p90_ms_per_token)
           << "), " << tokens_per_s_text(q->decode_tokens_per_s) << " tokens/s";
      os << " (medians over " << q->runs << " runs)\n";
    }
  }
  return os.str();
}

std::string to_markdown(const std::vector<BenchReport>& reports) {
  std::ostringstream os;
  os << "| bundle | backend | recipe | method | median ms | p90 ms | p99 ms | min ms | runs | calls/s | first load ms | warm load ms | peak MiB | threads |\n"
     << "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n";
  auto n = [](double v, int p = 3) { return detail::format_number(v, p); };
  for (const BenchReport& r : reports) {
    const std::string head = "| " + r.bundle + " | " + r.backend + " | " + r.recipe + " | ";
    if (r.refused) {
      os << head << "— | " << reason_of(r) << " | | | | | | | | | |\n";
      continue;
    }
    const std::string tail = " | " + n(r.first_load_ms) + " | " + (r.warm_load_ms ? n(*r.warm_load_ms) : "—") + " | " +
                             (r.peak_rss_mb ? n(*r.peak_rss_mb) : "—") + " | " + std::to_string(r.threads_used) + " |\n";
    for (const MethodBench& m : r.methods) {
      if (m.error) {
        os << head << m.method << " | failed: " << detail::error_line(*m.error) << " | | | | | |" << tail;
        continue;
      }
      const Latency& l = *m.latency;
      os << head << m.method << " | " << n(l.median_ms) << " | " << n(l.p90_ms) << " | " << n(l.p99_ms) << " | "
         << n(l.min_ms) << " | " << l.runs << " | " << n(l.throughput_per_s, 4) << tail;
    }
  }
  return os.str();
}

json to_json(const std::vector<BenchReport>& reports) {
  json list = json::array();
  auto error_json = [](const std::optional<Error>& e) -> json {
    if (!e) return nullptr;
    return {{"kind", std::string(to_string(e->kind()))}, {"cause", e->cause()}, {"remedy", e->remedy()}};
  };
  for (const BenchReport& r : reports) {
    json methods = json::array();
    for (const MethodBench& m : r.methods) {
      json jm = {{"method", m.method}, {"case", m.case_id}, {"error", error_json(m.error)}, {"latency", nullptr}};
      if (m.latency)
        jm["latency"] = {{"runs", m.latency->runs},
                         {"median_ms", detail::json_number(m.latency->median_ms)},
                         {"p90_ms", detail::json_number(m.latency->p90_ms)},
                         {"p99_ms", detail::json_number(m.latency->p99_ms)},
                         {"min_ms", detail::json_number(m.latency->min_ms)},
                         {"mean_ms", detail::json_number(m.latency->mean_ms)},
                         {"throughput_per_s", detail::json_number(m.latency->throughput_per_s)}};
      methods.push_back(std::move(jm));
    }
    list.push_back({{"path", r.path},
                    {"bundle", r.bundle},
                    {"model", r.model},
                    {"backend", r.backend},
                    {"recipe", r.recipe},
                    {"precision", r.precision},
                    {"bundle_sha256", r.bundle_sha256},
                    {"bundle_created_utc", r.bundle_created_utc},
                    {"bundle_toolchain", r.bundle_toolchain},
                    {"delegates", r.delegates},
                    {"status", r.refused ? json(std::string(to_string(*r.refused))) : json("measured")},
                    {"error", error_json(r.error)},
                    {"first_load_ms", detail::json_number(r.first_load_ms)},
                    {"warm_load_ms", r.warm_load_ms ? detail::json_number(*r.warm_load_ms) : json(nullptr)},
                    {"threads_requested", r.threads_requested},
                    {"threads_used", r.threads_used},
                    {"peak_rss_mb", r.peak_rss_mb ? detail::json_number(*r.peak_rss_mb) : json(nullptr)},
                    {"methods", methods}});
    json& jr = list.back();
    jr["sequence"] = nullptr;
    if (const auto& q = r.sequence)
      jr["sequence"] = {{"case", q->case_id},
                        {"steps", q->steps},
                        {"error", error_json(q->error)},
                        {"prefill_tokens", q->prefill_tokens},
                        {"decode_tokens", q->decode_tokens},
                        {"runs", q->runs},
                        {"prefill_ms", detail::json_number(q->prefill_ms)},
                        {"prefill_tokens_per_s", detail::json_number(q->prefill_tokens_per_s)},
                        {"decode_ms_per_token", detail::json_number(q->decode_ms_per_token)},
                        {"decode_tokens_per_s", detail::json_number(q->decode_tokens_per_s)},
                        {"prefill_p90_ms", detail::json_number(q->prefill_p90_ms)},
                        {"decode_p90_ms_per_token", detail::json_number(q->decode_p90_ms_per_token)}};
  }
  return {{"bench", list}};
}

}  // namespace etproof
