// etproof_load_bench — what etproof's bundle binding costs against ExecuTorch's own Module, on the
// same .pte, in one process, the two measured alternately. A benchmark, not a test:
// it prints figures and asserts nothing.
//
//   build/etproof_load_bench [--bundle DIR] [--tiny DIR] [-n N] [--batches M] [--calls B] [--fresh K]
//
// (a) load, warm: open_bundle + LoadedModel::load against Module(path) + load() +
//     load_method("forward"), N iterations each after one warm-up of each; median and p95 (ms), the
//     ratio of the medians; the SHA-256 throughput of the program bytes (OpenSSL EVP, in memory);
//     the target: bundle load <= 1.3 x (Module load + SHA-256 of the bytes). The bundle load
//     is split into open_bundle (manifest, one read, SHA-256) and, timed separately before it, the
//     manifest alone.
//     With --fresh K: also K fresh processes of each (this binary, --single), alternating.
// (b) per call, on a small model: LoadedModel::run against Module::forward on the same golden
//     inputs (Module gets tensors made with from_blob over the same bytes), M batches of B calls
//     each, alternating batches; median, p95 and minimum per call (µs), the differences.
#include <openssl/evp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <executorch/extension/module/module.h>
#include <executorch/extension/tensor/tensor.h>

#include "etproof/runtime/isolation.h"
#include "etproof/runtime/bundle.h"
#include "etproof/core/error.h"

namespace {
namespace fs = std::filesystem;
namespace et = ::executorch::runtime;
using ::executorch::extension::Module;
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

struct Stats {
  double median = 0, p95 = 0, min = 0;  // min: the least disturbed sample on a shared machine
};

Stats stats(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  Stats s;
  s.median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  s.p95 = v[size_t(std::ceil(0.95 * double(n))) - 1];
  s.min = v.front();
  return s;
}

void check(et::Error e, const char* what) {
  if (e != et::Error::Ok) throw std::runtime_error(std::string(what) + " failed: 0x" + std::to_string(int(e)));
}

// ExecuTorch's own way: a Module on the file, its program and its forward method loaded.
std::unique_ptr<Module> module_load(const fs::path& pte) {
  auto m = std::make_unique<Module>(pte.string());
  check(m->load(), "Module::load");
  check(m->load_method("forward"), "Module::load_method");
  return m;
}

etproof::LoadedModel bundle_load(const fs::path& dir) { return etproof::LoadedModel::load(etproof::open_bundle(dir)); }

std::vector<uint8_t> file_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::vector<uint8_t> v(fs::file_size(p));
  in.read(reinterpret_cast<char*>(v.data()), std::streamsize(v.size()));
  return v;
}

double sha256_ms(const std::vector<uint8_t>& bytes) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  const auto t0 = Clock::now();
  if (EVP_Digest(bytes.data(), bytes.size(), md, &len, EVP_sha256(), nullptr) != 1)
    throw std::runtime_error("OpenSSL SHA-256 failed");
  return ms_since(t0);
}

// One load in this (fresh) process, its time printed in ms: the child of --fresh.
int single(const std::string& kind, const fs::path& dir, const fs::path& pte) {
  if (kind == "module" && pte.empty()) throw std::runtime_error("--single module needs --pte");
  const auto t0 = Clock::now();
  if (kind == "bundle") {
    auto m = bundle_load(dir);
    std::printf("%.6f\n", ms_since(t0));
  } else {
    auto m = module_load(pte);
    std::printf("%.6f\n", ms_since(t0));
  }
  return 0;
}

double run_child(const std::string& kind, const fs::path& dir, const fs::path& pte) {
  std::error_code ec;
  const fs::path self = etproof::executable_path(ec);
  if (ec) throw std::runtime_error("cannot find this executable: " + ec.message());
  const std::string cmd = "'" + self.string() + "' --single " + kind + " --bundle '" +
                          dir.string() + "' --pte '" + pte.string() + "' 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) throw std::runtime_error("cannot start " + cmd);
  double ms = NAN;
  if (std::fscanf(p, "%lf", &ms) != 1) ms = NAN;
  if (pclose(p) != 0 || std::isnan(ms)) throw std::runtime_error("child failed: " + cmd);
  return ms;
}

void print_row(const char* what, const Stats& s, const char* unit) {
  std::printf("  %-54s median %8.3f %s   p95 %8.3f %s   min %8.3f %s\n", what, s.median, unit, s.p95, unit,
              s.min, unit);
}

void bench_load(const fs::path& dir, int n, int fresh) {
  const etproof::Bundle b = etproof::open_bundle(dir);
  const fs::path pte = b.artifact_path;
  const auto bytes = file_bytes(pte);
  std::printf("load: %s (%.1f MB .pte), %d warm iterations each, alternating (one warm-up each first)\n",
              b.manifest.name.c_str(), double(bytes.size()) / 1e6, n);
  bundle_load(dir);
  module_load(pte);
  std::vector<double> t_bundle, t_open, t_manifest, t_module, t_sha;
  for (int i = 0; i < n; ++i) {
    auto t0 = Clock::now();
    (void)etproof::open_bundle(dir, etproof::OpenOptions{.verify_artifact = false});
    t_manifest.push_back(ms_since(t0));
    t0 = Clock::now();
    {
      const etproof::Bundle opened = etproof::open_bundle(dir);
      t_open.push_back(ms_since(t0));
      auto m = etproof::LoadedModel::load(opened);
      t_bundle.push_back(ms_since(t0));
    }
    t0 = Clock::now();
    { auto m = module_load(pte); t_module.push_back(ms_since(t0)); }
    t_sha.push_back(sha256_ms(bytes));
  }
  const Stats sb = stats(t_bundle), so = stats(t_open), sf = stats(t_manifest), sm = stats(t_module),
              ss = stats(t_sha);
  print_row("bundle load (open_bundle + LoadedModel::load)", sb, "ms");
  print_row("  of which open_bundle (manifest, read, SHA-256)", so, "ms");
  print_row("  of which the manifest alone (verify_artifact=false)", sf, "ms");
  print_row("Module load (Module(path) + load + load_method)", sm, "ms");
  print_row("SHA-256 of the bytes in memory (OpenSSL EVP)", ss, "ms");
  std::printf("  ratio bundle/Module (medians) %.2fx; SHA-256 %.2f GB/s\n", sb.median / sm.median,
              double(bytes.size()) / (ss.median * 1e6));
  const double target = 1.3 * (sm.median + ss.median);
  std::printf("  target bundle load <= 1.3 x (Module load + SHA-256) = 1.3 x (%.2f + %.2f) = %.2f ms: %s (%.2f ms)\n",
              sm.median, ss.median, target, sb.median <= target ? "met" : "NOT met", sb.median);
  if (fresh <= 0) return;
  std::vector<double> f_bundle, f_module;
  for (int i = 0; i < fresh; ++i) {
    f_bundle.push_back(run_child("bundle", dir, pte));
    f_module.push_back(run_child("module", dir, pte));
  }
  const Stats fb = stats(f_bundle), fm = stats(f_module);
  std::printf("load in a fresh process: %d processes each, alternating (time inside the process, first load)\n", fresh);
  print_row("bundle load", fb, "ms");
  print_row("Module load", fm, "ms");
  std::printf("  ratio bundle/Module (medians) %.2fx\n", fb.median / fm.median);
}

void bench_run(const fs::path& dir, int batches, int calls) {
  const etproof::Bundle b = etproof::open_bundle(dir);
  if (b.manifest.goldens.empty()) throw std::runtime_error(dir.string() + " has no golden case");
  const auto inputs = etproof::read_golden_inputs(b, b.manifest.goldens.front());
  etproof::LoadedModel model = etproof::LoadedModel::load(b);
  auto module = module_load(b.artifact_path);
  // The raw way: tensors over the same bytes, in the manifest's input order (dtypes match: the
  // goldens are checked against the manifest).
  std::vector<::executorch::extension::TensorPtr> tensors;
  std::vector<et::EValue> values;
  for (const auto& spec : b.manifest.inputs) {
    const etproof::HostTensor& t = inputs.at(spec.name);
    auto meta = module->method_meta("forward");
    const auto type = meta->input_tensor_meta(tensors.size())->scalar_type();
    tensors.push_back(::executorch::extension::from_blob(
        const_cast<uint8_t*>(t.data.data()),
        std::vector<::executorch::aten::SizesType>(t.shape.begin(), t.shape.end()), type));
    values.emplace_back(*tensors.back());
  }
  const std::function<void()> run_etproof = [&] { (void)model.run(inputs); };
  const std::function<void()> run_module = [&] {
    if (!module->forward(values).ok()) throw std::runtime_error("Module::forward failed");
  };
  for (int i = 0; i < calls; ++i) run_etproof(), run_module();  // warm-up
  auto per_call_us = [&](const std::function<void()>& f) {
    const auto t0 = Clock::now();
    for (int i = 0; i < calls; ++i) f();
    return ms_since(t0) * 1e3 / calls;
  };
  std::vector<double> t_etproof, t_module;
  for (int i = 0; i < batches; ++i) {
    t_etproof.push_back(per_call_us(run_etproof));
    t_module.push_back(per_call_us(run_module));
  }
  const Stats se = stats(t_etproof), sm = stats(t_module);
  size_t planned = 0;
  for (size_t i = 0; i < b.manifest.inputs.size(); ++i)
    planned += module->method_meta("forward")->input_tensor_meta(i)->is_memory_planned();
  std::printf("run: %s, %d batches of %d calls each, alternating batches; %zu of %zu inputs memory-planned\n",
              b.manifest.name.c_str(), batches, calls, planned, b.manifest.inputs.size());
  print_row("LoadedModel::run (checks, tensors, outputs to host)", se, "us");
  print_row("Module::forward (tensors made once)", sm, "us");
  std::printf("  difference %+.3f us per call (%+.1f%%) in medians, %+.3f us (%+.1f%%) in minima\n",
              se.median - sm.median, 100.0 * (se.median - sm.median) / sm.median, se.min - sm.min,
              100.0 * (se.min - sm.min) / sm.min);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"etproof_load_bench: bundle load and per-call run against ExecuTorch's Module on the same file"};
  fs::path bundle = fs::path(ETPROOF_BUILD_DIR) / "demo/bundles/efficientnet_lite0-xnnpack-fp32";
  fs::path tiny = fs::path(ETPROOF_BUILD_DIR) / "test-bundles/tiny-xnnpack-fp32";
  int n = 30, batches = 50, calls = 200, fresh = 0;
  std::string single_kind;
  fs::path pte;
  app.add_option("--bundle", bundle, "bundle for the load figures")->capture_default_str();
  app.add_option("--tiny", tiny, "small bundle for the per-call figures")->capture_default_str();
  app.add_option("-n", n, "warm load iterations of each")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--batches", batches, "per-call batches of each")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--calls", calls, "calls per batch")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--fresh", fresh, "also time K loads of each in fresh processes")->capture_default_str();
  app.add_option("--single", single_kind, "internal: one load in this process (bundle|module), ms on stdout")
      ->check(CLI::IsMember({"bundle", "module"}));
  app.add_option("--pte", pte, "internal: the .pte --single module loads");
  CLI11_PARSE(app, argc, argv);
  try {
    if (!single_kind.empty()) return single(single_kind, bundle, pte);
    bench_load(bundle, n, fresh);
    bench_run(tiny, batches, calls);
  } catch (const etproof::Error& e) {
    std::fprintf(stderr, "etproof_load_bench: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "etproof_load_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
