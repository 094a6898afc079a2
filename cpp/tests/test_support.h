// Shared test helpers: where the exported bundles are, and skipping by name when they are absent.
// test.sh exports them before CTest runs (python -m etproof test-bundles / demo); CMake passes
// their locations in the environment (CMakeLists.txt, ETPROOF_TEST_ENV).
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <optional>
#include <string>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <openssl/evp.h>

#include "etproof/core/error.h"
#include "etproof/core/npy.h"
#include "etproof/runtime/registry.h"

namespace etproof::testing {

inline std::filesystem::path env_dir(const char* var) {
  const char* v = std::getenv(var);
  return v ? std::filesystem::path(v) : std::filesystem::path();
}

// build/test-bundles: tiny-portable-fp32, tiny-xnnpack-fp32, tiny-xnnpack-int8-dynamic-per-channel,
// tiny-openvino-fp32 (python/etproof/fixtures/testbundles.py); tests name what they need, never a count
inline std::filesystem::path test_bundles() { return env_dir("ETPROOF_TEST_BUNDLES"); }
// build/demo/bundles: efficientnet_lite0-{portable-fp32,xnnpack-fp32,xnnpack-int8-dynamic-per-channel}
// A bundle with its tapped twin under test_bundles()/SUBDIR/NAME; empty when no test bundles.
inline std::filesystem::path twin_test_bundle(const std::string& subdir, const std::string& name) {
  const std::filesystem::path root = test_bundles();
  return root.empty() ? std::filesystem::path() : root / subdir / name;
}

// Skips the test, by name, when `bundle_dir` has no tapped twin (NAME/NAME.taps).
#define SKIP_WITHOUT_TWIN(bundle_dir)                                                                   \
  if ((bundle_dir).empty() ||                                                                          \
      !std::filesystem::is_directory(std::filesystem::path(bundle_dir) /                               \
                                     ((bundle_dir).filename().string() + ".taps")))                     \
  GTEST_SKIP() << "no tapped twin at " << (bundle_dir)                                                 \
               << " (python -m etproof test-bundles --out build/test-bundles exports it)"

inline std::filesystem::path demo_bundles() { return env_dir("ETPROOF_DEMO_BUNDLES"); }
// build/demo/photos: chelsea.png, coffee.png, astronaut.png, rocket.jpg, china.jpg, flower.jpg
inline std::filesystem::path demo_photos() { return env_dir("ETPROOF_DEMO_PHOTOS"); }

inline std::filesystem::path fixture(const std::string& name) {
  return std::filesystem::path(ETPROOF_SOURCE_DIR) / "tests" / "fixtures" / name;
}

// A tensor of `v` in dtype `D` (element type T), shaped `shape` (default: 1-D of v's size).
template <typename T, DType D>
inline HostTensor tensor_of(const std::vector<T>& v, std::vector<int64_t> shape = {}) {
  HostTensor t;
  t.dtype = D;
  t.shape = shape.empty() ? std::vector<int64_t>{static_cast<int64_t>(v.size())} : shape;
  t.data.resize(v.size() * sizeof(T));
  if (!v.empty()) std::memcpy(t.data.data(), v.data(), t.data.size());
  return t;
}
// Float64 and float32 tensors for the gate's own tests.
inline HostTensor f64(const std::vector<double>& v, std::vector<int64_t> shape = {}) {
  return tensor_of<double, DType::kFloat64>(v, std::move(shape));
}
inline HostTensor f32(const std::vector<float>& v, std::vector<int64_t> shape = {}) {
  return tensor_of<float, DType::kFloat32>(v, std::move(shape));
}

// Where this checkout's tests keep their scratch files: TMPDIR/etproof-tests-<hash of the source
// directory>, so that two clones testing at the same time never share (or remove) each other's.
inline std::filesystem::path tests_tmp_root() {
  char tag[32];
  std::snprintf(tag, sizeof tag, "etproof-tests-%016zx", std::hash<std::string>{}(ETPROOF_SOURCE_DIR));
  return std::filesystem::temp_directory_path() / tag;
}

// A fresh, empty scratch directory for one test (removed at the start of the next run).
inline std::filesystem::path scratch_dir() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  auto dir = tests_tmp_root() /
             (std::string(info->test_suite_name()) + "." + info->name());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// A text report with its wrapped lines joined again (etproof::fit_text keeps reports within 120
// columns by breaking long lines at spaces): every newline and the indentation after it become one
// space, so a phrase can be found whichever line it was broken on.
inline std::string unwrapped(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\n') {
      out += s[i];
      continue;
    }
    while (i + 1 < s.size() && s[i + 1] == ' ') ++i;
    out += ' ';
  }
  return out;
}

// A file's bytes ("" when it cannot be read).
inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// SHA-256 (lower-case hex) of a file's bytes ("" when it cannot be read).
inline std::string sha256_file(const std::filesystem::path& p) {
  const std::string bytes = slurp(p);
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  if (!EVP_Digest(bytes.data(), bytes.size(), md, &n, EVP_sha256(), nullptr)) return "";
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < n; ++i) out += {hex[md[i] >> 4], hex[md[i] & 15]};
  return out;
}

// A manifest's golden case entries in Manifest::goldens order: schema 1's `goldens`, or every
// method's in turn (schema 2).
inline std::vector<nlohmann::json*> golden_entries(nlohmann::json& doc) {
  std::vector<nlohmann::json*> out;
  if (doc.contains("goldens"))
    for (auto& g : doc["goldens"]) out.push_back(&g);
  if (doc.contains("methods"))
    for (auto& m : doc["methods"])
      for (auto& g : m["goldens"]) out.push_back(&g);
  return out;
}

// After a test edits a golden case's files (NAME.goldens/*.npy: its goldens, goldens[i].files, or
// its references), records their new sizes and SHA-256 in the manifest so the bundle still opens:
// the edit then stands for a golden or reference that says otherwise, not for a damaged bundle.
inline void rehash_references(const std::filesystem::path& bundle_dir) {
  for (const auto& e : std::filesystem::directory_iterator(bundle_dir)) {
    const std::string f = e.path().filename().string();
    if (f.size() < 13 || f.substr(f.size() - 13) != ".etproof.json") continue;
    nlohmann::json doc = nlohmann::json::parse(slurp(e.path()));
    const auto goldens = bundle_dir / (doc["name"].get<std::string>() + ".goldens");
    for (nlohmann::json* gp : golden_entries(doc)) {
      nlohmann::json& g = *gp;
      if (g.contains("files"))
        for (auto& ref : g["files"]) {
          const auto file = goldens / ref["file"].get<std::string>();
          ref["bytes"] = std::filesystem::file_size(file);
          ref["sha256"] = sha256_file(file);
        }
      if (!g.contains("references")) continue;
      for (auto& [name, by_output] : g["references"].items())
        for (auto& [output, ref] : by_output.items()) {
          const auto file = goldens / ref["file"].get<std::string>();
          ref["bytes"] = std::filesystem::file_size(file);
          ref["sha256"] = sha256_file(file);
        }
    }
    std::ofstream(e.path()) << doc.dump(2) << "\n";
  }
}

// Scales by `factor` every float golden output of a bundle's golden cases (`only_case` >= 0: that
// case alone) and every float reference of those cases (the float64 truth, the recipe's or the
// precision's emulation), then records the references' new hashes: the copy stands for a program
// whose numbers moved by that factor, whatever its columns are judged against (references.h).
inline void scale_goldens(const std::filesystem::path& bundle_dir, double factor,
                          int only_case = -1) {
  for (const auto& e : std::filesystem::directory_iterator(bundle_dir)) {
    const std::string f = e.path().filename().string();
    if (f.size() < 13 || f.substr(f.size() - 13) != ".etproof.json") continue;
    nlohmann::json doc = nlohmann::json::parse(slurp(e.path()));
    const auto goldens = bundle_dir / (doc["name"].get<std::string>() + ".goldens");
    std::vector<std::filesystem::path> files;
    const std::vector<nlohmann::json*> entries = golden_entries(doc);
    for (size_t i = 0; i < entries.size(); ++i) {
      if (only_case >= 0 && static_cast<size_t>(only_case) != i) continue;
      const nlohmann::json& g = *entries[i];
      for (const auto& [name, file] : g["outputs"].items())
        files.push_back(goldens / file.get<std::string>());
      if (g.contains("references"))
        for (const auto& [ref, by_output] : g["references"].items())
          for (const auto& [output, r] : by_output.items())
            files.push_back(goldens / r["file"].get<std::string>());
    }
    for (const auto& file : files) {
      HostTensor t = read_npy(file);
      if (t.dtype == DType::kFloat32) {
        auto* v = reinterpret_cast<float*>(t.data.data());
        for (size_t i = 0; i < t.numel(); ++i) v[i] = static_cast<float>(v[i] * factor);
      } else if (t.dtype == DType::kFloat64) {
        auto* v = reinterpret_cast<double*>(t.data.data());
        for (size_t i = 0; i < t.numel(); ++i) v[i] *= factor;
      } else {
        continue;  // integer and bool outputs are exact: left as they are
      }
      write_npy(file, t);
    }
  }
  rehash_references(bundle_dir);
}

// `s` single-quoted for /bin/sh.
inline std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

#ifdef ETPROOF_CLI
struct CliResult {
  int rc = -1;  // exit status; -1 when it did not exit normally
  std::string out;
  std::string err;
};

// Runs the built `etproof ARGS` (each already quoted as needed) through /bin/sh, after the
// environment assignments `env` and in `cwd` when given. stdout and stderr go to files in a
// directory of this test's own: CTest runs tests in parallel processes.
inline CliResult run_etproof(const std::string& args, const std::string& env = "",
                             const std::filesystem::path& cwd = {}) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const auto dir = tests_tmp_root() / "cli-io" /
                   (std::string(info->test_suite_name()) + "." + info->name());
  std::filesystem::create_directories(dir);
  const auto out = dir / "stdout", err = dir / "stderr";
  const std::string cmd = (cwd.empty() ? "" : "cd " + quote(cwd.string()) + " && ") + env +
                          (env.empty() ? "" : " ") + quote(ETPROOF_CLI) + " " + args + " >" +
                          quote(out.string()) + " 2>" + quote(err.string());
  const int status = std::system(cmd.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(out), slurp(err)};
}

// stdout of a CLI run parsed as JSON; a test failure (and an empty object) when it is not JSON.
inline nlohmann::json parse(const CliResult& r) {
  try {
    return nlohmann::json::parse(r.out);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "stdout is not JSON (" << e.what() << ", exit " << r.rc << "):\n" << r.out << "\nstderr:\n"
                  << r.err;
    return nlohmann::json::object();
  }
}

// The kind of the etproof::Error `f` throws; a test failure (and kCrashed) when it throws none.
template <class F>
ErrorKind kind_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.kind();
  }
  ADD_FAILURE() << "no etproof::Error thrown";
  return ErrorKind::kCrashed;
}
#endif

// Whether this test binary is built with AddressSanitizer (the sanitizer build: fuzz/README.md,
// docs/reliability.md). GCC says so with __SANITIZE_ADDRESS__, clang with __has_feature.
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kUnderAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kUnderAddressSanitizer = true;
#else
inline constexpr bool kUnderAddressSanitizer = false;
#endif
#else
inline constexpr bool kUnderAddressSanitizer = false;
#endif

// Why a test that counts OpenVINO's column as measured cannot here: this process runs under
// AddressSanitizer, which refuses the RTLD_DEEPBIND OpenVINO's runtime is loaded with (so the
// sanitizer build runs with OPENVINO_LIB_PATH=/nonexistent), and OpenVINO reports itself
// unavailable. nullopt in every other build, whatever OpenVINO says: there such a test fails
// as it always did.
inline std::optional<std::string> openvino_off_under_asan() {
  if (!kUnderAddressSanitizer) return std::nullopt;
  const DelegateAvailability a = delegate_availability({"OpenvinoBackend"});
  if (a.ok() || !a.not_linked.empty()) return std::nullopt;
  return std::string("OpenVINO is unavailable under AddressSanitizer (its runtime is loaded with "
                     "RTLD_DEEPBIND, which ASan refuses; the sanitizer build runs with "
                     "OPENVINO_LIB_PATH=/nonexistent): this test counts OpenVINO's column as measured");
}

}  // namespace etproof::testing

// Skips the current test, by name, when it needs OpenVINO's column measured and this is the
// sanitizer build with OpenVINO unavailable (openvino_off_under_asan).
#define ETPROOF_SKIP_IF_OPENVINO_OFF_UNDER_ASAN()                            \
  do {                                                                        \
    if (const auto why = ::etproof::testing::openvino_off_under_asan()) GTEST_SKIP() << *why; \
  } while (0)

// Skips the current test, by name, when a bundle directory has not been exported.
#define ETPROOF_REQUIRE_BUNDLE(path)                                                     \
  do {                                                                                   \
    if ((path).empty() || !std::filesystem::exists(path))                                \
      GTEST_SKIP() << "bundle not exported: " << (path)                                  \
                   << " (run ./test.sh, which exports the test and demo bundles first)"; \
  } while (0)
