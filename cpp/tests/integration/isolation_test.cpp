// Worker processes (etproof/isolation.h, issue 11 §2–3) (integration): a program that crashes ExecuTorch, or
// exceeds a limit, is a `crashed` outcome naming the signal or the limit, and the caller goes
// on; a program that does not crash gives the same verdict isolated as in-process. The crashing
// programs are real: fuzz/crashes-upstream/bundle holds corrupted programs (hash fixed up) on
// which ExecuTorch 1.5.1's own loader, kernels or XNNPACK delegate crash, and the byte-flip sweep
// makes more. Finding the worker is unit/isolation_test.cpp's.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "etproof/runtime/bundle.h"
#include "etproof/core/error.h"
#include "etproof/runtime/isolation.h"
#include "etproof/replay/matrix.h"
#include "etproof/render/matrix.h"
#include "etproof/replay/replay.h"
#include "etproof/render/parity.h"
#include "test_support.h"

namespace etproof {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

Isolation isolated(double time_limit_s = 60) {
  Isolation i;
  i.enabled = true;
  i.time_limit_s = time_limit_s;
  // As the fuzzer's -rss_limit_mb=2048: the upstream OOM inputs ask XNNPACK for 6 GB and more.
  i.memory_limit_bytes = uint64_t(2048) << 20;
  return i;
}

ReplayOptions isolated_options(double time_limit_s = 60) {
  ReplayOptions o;
  o.isolation = isolated(time_limit_s);
  return o;
}

// Every bundle under the test bundles (the top level and each group folder).
std::vector<fs::path> every_test_bundle() {
  std::vector<fs::path> out;
  const fs::path root = etproof::testing::test_bundles();
  std::vector<fs::path> dirs = {root};
  for (const auto& e : fs::directory_iterator(root))
    if (e.is_directory() && !fs::exists(e.path() / (e.path().filename().string() + ".etproof.json")))
      dirs.push_back(e.path());
  for (const fs::path& d : dirs)
    for (const fs::path& b : find_bundles(d)) out.push_back(b);
  return out;
}

// A copy of test bundle `base` in `dir` whose program is `pte`, the manifest's artifact size and
// SHA-256 fixed up to match (as a broken exporter or a fuzzer would: the hash check passes).
fs::path bundle_with_program(const fs::path& dir, const std::string& base, const std::string& pte) {
  const fs::path from = etproof::testing::test_bundles() / base;
  const fs::path to = dir / fs::path(base).filename();
  fs::remove_all(to);
  fs::create_directories(to);
  fs::copy(from, to, fs::copy_options::recursive);
  const Bundle b = open_bundle(to, {.verify_artifact = false});
  std::ofstream(b.artifact_path, std::ios::binary | std::ios::trunc) << pte;
  json doc = json::parse(etproof::testing::slurp(b.manifest_path));
  doc["artifact"]["bytes"] = pte.size();
  doc["artifact"]["sha256"] = etproof::testing::sha256_file(b.artifact_path);
  std::ofstream(b.manifest_path, std::ios::trunc) << doc.dump(2) << "\n";
  return to;
}

// fuzz/bundle_fuzz.cpp's kBases: byte 0 of a filed input picks one.
const std::vector<std::string> kFuzzBases = {
    "tiny-portable-fp32", "tiny-xnnpack-fp32", "tiny-xnnpack-int8-dynamic-per-channel",
    "methods/encdec-xnnpack-fp32", "shapes/dynbatch-portable-fp32", "shapes/tokens-portable-fp32"};

// The statuses a bundle's outcome can have: its refusal, else each case's.
std::vector<Status> statuses(const ParityReport& r) {
  if (r.refused) return {*r.refused};
  std::vector<Status> out;
  for (const CaseReport& c : r.cases) out.push_back(c.status);
  return out;
}

// The worker processes this test process has started and not yet reaped (Linux: /proc).
std::vector<pid_t> live_workers() {
  std::vector<pid_t> out;
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(e.path() / "stat");
    std::string line;
    std::getline(stat, line);
    const auto close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 2));
    char state = 0;
    pid_t ppid = 0;
    rest >> state >> ppid;
    if (ppid != ::getpid() || line.find("(etproof-worker)") == std::string::npos) continue;
    out.push_back(pid_t(std::stol(name)));
  }
  return out;
}

TEST(Isolation, AWorkerThatIsNotThereIsATypedRefusal) {
  ETPROOF_REQUIRE_BUNDLE(etproof::testing::test_bundles() / "tiny-portable-fp32");
  ReplayOptions o = isolated_options();
  o.isolation.worker = "/nonexistent/etproof-worker";
  const ParityReport r = replay(etproof::testing::test_bundles() / "tiny-portable-fp32", o);
  ASSERT_TRUE(r.refused);
  ASSERT_TRUE(r.error);
  EXPECT_EQ(r.error->kind(), ErrorKind::kIo) << r.error->what();
  EXPECT_NE(r.error->cause().find("/nonexistent/etproof-worker"), std::string::npos) << r.error->cause();
}

// The same verdicts and the same numbers, isolated or not, on every test bundle: the worker runs
// the same code (LoadedModel, kernels, delegates) in another process.
TEST(Isolation, EveryTestBundleGivesTheSameOutcomeIsolatedAsInProcess) {
  ETPROOF_REQUIRE_BUNDLE(etproof::testing::test_bundles() / "tiny-portable-fp32");
  const std::vector<fs::path> bundles = every_test_bundle();
  ASSERT_GE(bundles.size(), 10u);
  size_t compared_cases = 0;
  for (const fs::path& b : bundles) {
    SCOPED_TRACE(b.string());
    const ParityReport in = replay(b);
    const ParityReport out = replay(b, isolated_options());
    EXPECT_EQ(in.refused.has_value(), out.refused.has_value());
    if (in.refused && out.refused) {
      EXPECT_EQ(*in.refused, *out.refused);
      ASSERT_TRUE(in.error && out.error);
      EXPECT_EQ(in.error->kind(), out.error->kind()) << in.error->what() << "\n" << out.error->what();
      continue;
    }
    EXPECT_EQ(in.delegates, out.delegates);
    ASSERT_EQ(in.cases.size(), out.cases.size());
    for (size_t i = 0; i < in.cases.size(); ++i) {
      const CaseReport& a = in.cases[i];
      const CaseReport& z = out.cases[i];
      EXPECT_EQ(a.case_id, z.case_id);
      EXPECT_EQ(a.status, z.status) << a.case_id << ": " << a.detail << " | " << z.detail;
      ASSERT_EQ(a.outputs.size(), z.outputs.size());
      for (size_t k = 0; k < a.outputs.size(); ++k)
        EXPECT_EQ(a.outputs[k].max_abs_error, z.outputs[k].max_abs_error) << a.case_id;
      ++compared_cases;
    }
  }
  EXPECT_GE(compared_cases, 20u);
}

// ExecuTorch's own crashes (fuzz/crashes-upstream/bundle: SEGVs and aborts in its loader, kernels
// and XNNPACK delegate, and allocations of many GB) never end this process: each is a crashed
// outcome naming the signal (or a typed error where the limits turn it into one), and every one
// of them is an outcome. Each such program is judged unfit in at least one case; an individual case
// may agree: an out-of-bounds read that SEGVs in the instrumented fuzz harness can land in mapped
// memory in the worker (ExecuTorch's libraries are uninstrumented, the heap laid out otherwise) and
// happen to give the right numbers — crash-c83c3a51c24f (XNNExecutor::prepare_args) agrees on 2
// of its cases here. That is measured, not assumed: at most one filed input may do it.
TEST(Isolation, ExecuTorchsOwnCrashesAreCrashedOutcomesAndTheCallerGoesOn) {
  ETPROOF_REQUIRE_BUNDLE(etproof::testing::test_bundles() / "tiny-portable-fp32");
  const fs::path filed = fs::path(ETPROOF_SOURCE_DIR) / "fuzz" / "crashes-upstream" / "bundle";
  const fs::path dir = etproof::testing::scratch_dir();
  std::map<std::string, size_t> tally;
  size_t inputs = 0, crashed = 0, with_agreement = 0;
  for (const auto& e : fs::directory_iterator(filed)) {
    if (e.path().extension() == ".txt") continue;
    const std::string bytes = etproof::testing::slurp(e.path());
    ASSERT_GE(bytes.size(), 2u) << e.path();
    const std::string base = kFuzzBases[uint8_t(bytes[0]) % kFuzzBases.size()];
    const fs::path b = bundle_with_program(dir / e.path().filename(), base, bytes.substr(1));
    const ParityReport r = replay(b, isolated_options());
    ++inputs;
    bool any_crashed = false, any_agreed = false, all_agreed = true;
    for (const Status s : statuses(r)) {
      ++tally[std::string(to_string(s))];
      any_agreed = any_agreed || is_agreement(s);
      all_agreed = all_agreed && is_agreement(s);
      any_crashed = any_crashed || s == Status::kCrashed;
    }
    EXPECT_FALSE(all_agreed) << e.path().filename() << ": a program ExecuTorch crashes on agreed in every case";
    with_agreement += any_agreed;
    if (any_crashed) {
      ++crashed;
      const Error* err = r.refused && r.error ? &*r.error : nullptr;
      for (const CaseReport& c : r.cases)
        if (!err && c.status == Status::kCrashed && c.error) err = &*c.error;
      ASSERT_NE(err, nullptr) << e.path().filename();
      EXPECT_EQ(err->kind(), ErrorKind::kCrashed);
      EXPECT_NE(err->cause().find("worker process"), std::string::npos) << err->cause();
      EXPECT_NE(err->cause().find("limits: memory"), std::string::npos) << err->cause();
    }
  }
  std::cout << "[ isolation ] " << inputs << " filed upstream crash inputs:";
  for (const auto& [s, n] : tally) std::cout << " " << s << " " << n;
  std::cout << " (" << crashed << " with a crashed case or refusal)\n";
  ASSERT_GE(inputs, 30u);
  // Most of them crash the worker (signals); the rest (allocations the memory limit refuses, a
  // crash that depends on the heap's state) end in typed errors. None may end this process.
  EXPECT_GE(crashed, inputs / 2);
  EXPECT_LE(with_agreement, 1u) << "filed crashes that agree in some case here";
}

TEST(Isolation, ATimeLimitKillsTheWorkerAndNamesTheLimit) {
  ETPROOF_REQUIRE_BUNDLE(etproof::testing::test_bundles() / "tiny-portable-fp32");
  const ParityReport r = replay(etproof::testing::test_bundles() / "tiny-portable-fp32", isolated_options(0.001));
  ASSERT_TRUE(r.refused);
  EXPECT_EQ(*r.refused, Status::kCrashed);
  ASSERT_TRUE(r.error);
  EXPECT_EQ(r.error->kind(), ErrorKind::kCrashed);
  EXPECT_NE(r.error->cause().find("exceeded the time limit of 0.001 s"), std::string::npos) << r.error->cause();
  EXPECT_NE(r.error->remedy().find("--worker-timeout"), std::string::npos) << r.error->remedy();
  EXPECT_TRUE(live_workers().empty());
}

TEST(Isolation, AMemoryLimitTheProgramCannotLiveWithinIsNamed) {
  ETPROOF_REQUIRE_BUNDLE(etproof::testing::test_bundles() / "tiny-portable-fp32");
  if (etproof::testing::kUnderAddressSanitizer)
    GTEST_SKIP() << "under AddressSanitizer the worker's memory limit is not applied (its shadow memory "
                    "needs terabytes of address space)";
  ReplayOptions o = isolated_options();
  o.isolation.memory_limit_bytes = uint64_t(16) << 20;  // 16 MiB: not even ExecuTorch's libraries fit
  const ParityReport r = replay(etproof::testing::test_bundles() / "tiny-xnnpack-fp32", o);
  ASSERT_TRUE(r.refused);
  ASSERT_TRUE(r.error);
  EXPECT_TRUE(r.error->kind() == ErrorKind::kCrashed || r.error->kind() == ErrorKind::kOutOfMemory)
      << r.error->what();
  EXPECT_NE(r.error->cause().find("16 MiB"), std::string::npos) << r.error->cause();
}

// A worker killed between calls (here by this test, with SIGKILL: what the OOM killer sends, and a
// signal no sanitizer's handler turns into an exit status): that call is crashed, naming it, and the next one starts a fresh worker, loads the program
// again and runs as if nothing happened.
TEST(Isolation, AfterAWorkerDiesTheNextCallRunsInAFreshOne) {
  ETPROOF_REQUIRE_BUNDLE(etproof::testing::test_bundles() / "tiny-portable-fp32");
  const Bundle b = open_bundle(etproof::testing::test_bundles() / "tiny-portable-fp32");
  LoadedModel model = LoadedModel::load(b, isolated());
  const GoldenCase& g = b.manifest.goldens.front();
  const auto inputs = read_golden_inputs(b, g);
  const auto first = model.run(inputs);
  std::vector<pid_t> workers = live_workers();
  ASSERT_EQ(workers.size(), 1u);
  ASSERT_EQ(::kill(workers.front(), SIGKILL), 0);
  try {
    (void)model.run(inputs);
    FAIL() << "a run on a killed worker returned";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kCrashed);
    EXPECT_NE(e.cause().find("killed by SIGKILL"), std::string::npos) << e.cause();
    EXPECT_NE(e.cause().find("bundle 'tiny-portable-fp32'"), std::string::npos) << e.cause();
  }
  EXPECT_TRUE(live_workers().empty());
  const auto again = model.run(inputs);
  ASSERT_EQ(again.size(), first.size());
  for (const auto& [name, t] : first) EXPECT_EQ(again.at(name).data, t.data) << name;
  EXPECT_EQ(live_workers().size(), 1u);
}

TEST(Isolation, TheWorkersErrorsComeBackTyped) {
  ETPROOF_REQUIRE_BUNDLE(etproof::testing::test_bundles() / "tiny-portable-fp32");
  const Bundle b = open_bundle(etproof::testing::test_bundles() / "tiny-portable-fp32");
  LoadedModel model = LoadedModel::load(b, isolated());
  auto inputs = read_golden_inputs(b, b.manifest.goldens.front());
  inputs.begin()->second.shape.push_back(1);
  try {
    (void)model.run(inputs);
    FAIL() << "a wrong shape ran";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kShapeMismatch) << e.what();
  }
  EXPECT_EQ(live_workers().size(), 1u);  // a typed error is no crash: the worker is still there
}

// issue 11 §3: flipping single bytes of the tiny test programs (the hash fixed up each time) used
// to crash etproof 46 times in 9,784 flips. Every flip now ends in a verdict or a typed outcome —
// `crashed` where ExecuTorch itself dies — and this process goes on. Every ETPROOF_FLIP_STRIDE-th
// byte (default 13: about 750 flips, a minute here; 1: the whole sweep, docs/reliability.md).
TEST(Isolation, SingleByteFlipSweepEndsInAVerdictOrATypedOutcome) {
  ETPROOF_REQUIRE_BUNDLE(etproof::testing::test_bundles() / "tiny-portable-fp32");
  size_t stride = etproof::testing::kUnderAddressSanitizer ? 61 : 13;
  if (const char* s = std::getenv("ETPROOF_FLIP_STRIDE"); s && *s) stride = std::max(1, std::atoi(s));
  const fs::path dir = etproof::testing::scratch_dir();
  std::map<std::string, size_t> tally;
  size_t flips = 0;
  const auto start = std::chrono::steady_clock::now();
  for (const std::string base : {"tiny-portable-fp32", "tiny-xnnpack-fp32"}) {
    const Bundle original = open_bundle(etproof::testing::test_bundles() / base, {.verify_artifact = false});
    const std::string pte = etproof::testing::slurp(original.artifact_path);
    ASSERT_GT(pte.size(), 1000u);
    for (size_t i = 0; i < pte.size(); i += stride) {
      std::string flipped = pte;
      flipped[i] = char(uint8_t(flipped[i]) ^ 0xFF);
      const fs::path b = bundle_with_program(dir, base, flipped);
      const ParityReport r = replay(b, isolated_options());
      ++flips;
      for (const Status s : statuses(r)) ++tally[std::string(to_string(s))];
      if (r.refused) EXPECT_TRUE(r.error) << base << " byte " << i << ": refused without an Error";
      for (const CaseReport& c : r.cases)
        if (!r.refused && !is_judged(c.status))
          EXPECT_TRUE(c.error) << base << " byte " << i << " " << c.case_id << ": " << c.detail;
    }
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << "[ isolation ] " << flips << " single-byte flips (stride " << stride << ") in " << s << " s:";
  for (const auto& [k, n] : tally) std::cout << " " << k << " " << n;
  std::cout << "\n";
  EXPECT_GT(flips, 0u);
  EXPECT_TRUE(live_workers().empty());
}

// A matrix over a directory in which one column's program crashes ExecuTorch: that column is
// crashed (a not-run line naming the signal), the others are measured, and the run fails (a crash
// is a failure of the claim), whatever the number of jobs.
TEST(Isolation, OneCrashingColumnOfAMatrixIsCrashedAndTheOthersAreMeasured) {
  ETPROOF_REQUIRE_BUNDLE(etproof::testing::test_bundles() / "tiny-portable-fp32");
  const fs::path filed = fs::path(ETPROOF_SOURCE_DIR) / "fuzz" / "crashes-upstream" / "bundle";
  const fs::path dir = etproof::testing::scratch_dir();
  // The first filed input that crashes the worker at load or run.
  std::optional<fs::path> crashing;
  for (const auto& e : fs::directory_iterator(filed)) {
    if (e.path().extension() == ".txt" || e.path().filename().string().rfind("crash-", 0) != 0) continue;
    const std::string bytes = etproof::testing::slurp(e.path());
    const std::string base = kFuzzBases[uint8_t(bytes[0]) % kFuzzBases.size()];
    if (base.find('/') != std::string::npos) continue;  // a top-level test bundle's name
    const fs::path b = bundle_with_program(dir / "probe", base, bytes.substr(1));
    const ParityReport r = replay(b, isolated_options());
    const auto st = statuses(r);
    if (std::find(st.begin(), st.end(), Status::kCrashed) != st.end()) {
      crashing = b;
      break;
    }
  }
  ASSERT_TRUE(crashing) << "no filed input crashes the worker";
  const fs::path matrix_dir = dir / "matrix";
  fs::create_directories(matrix_dir);
  fs::copy(*crashing, matrix_dir / "crashing", fs::copy_options::recursive);
  // A healthy column of another name beside it (the crashing copy keeps its bundle's name).
  const std::string healthy = crashing->filename() == "tiny-portable-fp32" ? "tiny-xnnpack-fp32" : "tiny-portable-fp32";
  fs::copy(etproof::testing::test_bundles() / healthy, matrix_dir / healthy, fs::copy_options::recursive);
  for (const size_t jobs : {size_t(1), size_t(2)}) {
    SCOPED_TRACE("jobs " + std::to_string(jobs));
    const Matrix m = build_matrix(matrix_dir, {}, jobs, std::nullopt, {}, isolated());
    EXPECT_GT(m.measured, 0u);
    bool crashed_named = false;
    for (const NotRun& n : m.not_run)
      crashed_named = crashed_named || (n.status == Status::kCrashed && n.reason.find("worker process") != std::string::npos);
    for (const Cell& c : m.cells)
      crashed_named = crashed_named || (c.status == Status::kCrashed && c.detail.find("worker process") != std::string::npos);
    EXPECT_TRUE(crashed_named) << to_text(m);
    EXPECT_EQ(m.exit_code(), 1);
  }
}

}  // namespace
}  // namespace etproof
