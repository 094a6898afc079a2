// fuzz/bundle_fuzz.cpp — opening, loading and running a bundle whose program (.pte) bytes are
// fuzzed: LoadedModel::load (ExecuTorch's loader with full verification, the delegate and
// signature checks, the kernel check) and, when it loads, the replay engine on the bundle's own
// golden inputs (replay(Bundle, LoadedModel): every case run, every output copied and gated).
//
// The input is one selector byte (which base bundle, kBases[data[0] % size]) followed by the
// program's bytes. The harness writes those bytes as the base bundle's .pte (in a private copy of
// the bundle) and fixes the manifest's artifact size and SHA-256 up to match, as a broken exporter
// would: the hash check never stops the input, so the fuzzer reaches ExecuTorch's loader. Any
// etproof::Error is a normal outcome.
//
// The base bundles are the small test bundles (python -m etproof test-bundles): the directory
// $ETPROOF_TEST_BUNDLES, else build/test-bundles of the source tree. OpenVINO's runtime is loaded
// with RTLD_DEEPBIND, which AddressSanitizer refuses: the harness runs OpenVINO-free
// (OPENVINO_LIB_PATH=/nonexistent unless set).
#include <signal.h>
#include <unistd.h>

#include <cerrno>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <openssl/evp.h>

#include "etproof/runtime/bundle.h"
#include "etproof/replay/replay.h"
#include "etproof/render/parity.h"
#include "etproof/runtime/runtime_log.h"
#include "fuzz_support.h"

namespace fs = std::filesystem;

namespace {

// Relative to the test bundles. The order is the selector's: never reorder, only append (seeds
// name a base by its index; fuzz/make_corpus.sh lists the same). Portable kernels and XNNPACK in
// fp32 and dynamic int8, a program with two methods, a dynamic batch, int64 inputs.
constexpr const char* kBases[] = {
    "tiny-portable-fp32", "tiny-xnnpack-fp32", "tiny-xnnpack-int8-dynamic-per-channel",
    "methods/encdec-xnnpack-fp32", "shapes/dynbatch-portable-fp32", "shapes/tokens-portable-fp32"};

std::vector<etproof::Bundle>& bases() {
  static std::vector<etproof::Bundle> b;
  return b;
}

std::string sha256_hex(const uint8_t* data, size_t size) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  if (!EVP_Digest(data, size, md, &n, EVP_sha256(), nullptr)) std::abort();
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < n; ++i) out += {hex[md[i] >> 4], hex[md[i] & 15]};
  return out;
}

fs::path test_bundles() {
  if (const char* e = std::getenv("ETPROOF_TEST_BUNDLES"); e && *e) return e;
  return fs::path(ETPROOF_SOURCE_DIR) / "build" / "test-bundles";
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  setenv("OPENVINO_LIB_PATH", "/nonexistent", /*overwrite=*/0);
  etproof::install_runtime_log_filter();
  etproof::prepare_for_threads();  // ExecuTorch's runtime and the registry, once
  const fs::path src = test_bundles();
  // Each process copies the bases into its own scratch directory. A process that crashed (fork
  // mode runs on through ExecuTorch's crashes, every few thousand executions) left its copy
  // behind: remove those of processes no longer alive (424 KB each; 2,500 in a 10^7 run).
  const std::string prefix = "etproof-fuzz-bundle-";
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(fs::temp_directory_path(), ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    const long pid = std::strtol(name.c_str() + prefix.size(), nullptr, 10);
    if (pid > 0 && ::kill(pid_t(pid), 0) != 0 && errno == ESRCH) fs::remove_all(e.path(), ec);
  }
  const fs::path scratch = fs::temp_directory_path() / (prefix + std::to_string(::getpid()));
  fs::remove_all(scratch);
  for (const char* name : kBases) {
    const fs::path from = src / name;
    if (!fs::is_directory(from)) {
      std::fprintf(stderr,
                   "bundle_fuzz: no test bundle %s (export them: python -m etproof test-bundles --out "
                   "build/test-bundles, or set ETPROOF_TEST_BUNDLES)\n",
                   from.c_str());
      std::exit(2);
    }
    const fs::path to = scratch / fs::path(name).filename();
    fs::create_directories(to);
    fs::copy(from, to, fs::copy_options::recursive);
    bases().push_back(etproof::open_bundle(to, {.verify_artifact = false}));
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return -1;
  // The base itself, not a copy: copying its Manifest (and the parsed document it keeps) was
  // 8% of an execution. Only the artifact's size, hash and verified bytes change, and all three
  // are set below before anything reads them; load and replay take the bundle as const.
  etproof::Bundle& b = bases()[data[0] % bases().size()];
  const uint8_t* pte = data + 1;
  const size_t n = size - 1;
  {
    std::ofstream out(b.artifact_path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(pte), std::streamsize(n));
    if (!out) std::abort();
  }
  b.manifest.artifact.bytes = n;
  b.manifest.artifact.sha256 = sha256_hex(pte, n);
  b.artifact_verified = false;
  b.program.reset();
  etproof::RuntimeLogCapture quiet;  // ExecuTorch's Error lines: collected, not printed
  try {
    etproof::verify_artifact(b);
    etproof::LoadedModel model = etproof::LoadedModel::load(b);
    const etproof::ParityReport report = etproof::replay(b, model);
    for (const auto& c : report.cases) (void)c.detail.size();
  } catch (const etproof::Error&) {
  }
  b.program.reset();  // this input's bytes are not kept past its run
  return 0;
}
