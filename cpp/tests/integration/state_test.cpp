// Programs that write state (docs/design.md §5, "State"): the real accumulator bundles
// (build/test-bundles/state/accumulator-{portable,xnnpack}-fp32, etproof.fixtures.stateful: x
// float32 [1, 8] -> y = 0.5·total + h after total += h, the buffer `total` starting from a seeded
// non-zero value), and accumulator2-xnnpack-int8-static-per-channel (the same with a second
// method `read` reading the buffer: schema 2, int8 calibrated and emulated from the initial
// state) replay every case from the initial state, in process and in a worker; the
// state is in the manifest and the reports; and a golden that expects the state a previous case
// left (what a program carrying state across cases computes) still drifts, naming the case.
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "etproof/core/manifest.h"
#include "etproof/core/npy.h"
#include "etproof/render/matrix.h"
#include "etproof/render/parity.h"
#include "etproof/replay/matrix.h"
#include "etproof/replay/replay.h"
#include "etproof/runtime/bundle.h"
#include "test_support.h"

namespace etproof {
namespace {

namespace fs = std::filesystem;
using etproof::testing::scratch_dir;
using etproof::testing::test_bundles;

const std::vector<std::string> kBundles = {"accumulator-portable-fp32", "accumulator-xnnpack-fp32"};
const char* const kTwoMethodsInt8 = "accumulator2-xnnpack-int8-static-per-channel";

fs::path state_bundle(const std::string& name) { return test_bundles() / "state" / name; }

// The program's answer to case `second` when case `first` ran before it on the same loaded
// program: what a replay that carried state across cases would compare.
HostTensor carried_output(const Bundle& b, size_t first, size_t second) {
  LoadedModel model = LoadedModel::load(b);
  (void)model.run(read_golden_inputs(b, b.manifest.goldens.at(first)));
  return model.run(read_golden_inputs(b, b.manifest.goldens.at(second))).at("y");
}

double max_abs_diff(const HostTensor& a, const HostTensor& b) {
  const auto x = a.to_double(), y = b.to_double();
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i) worst = std::max(worst, std::abs(x[i] - y[i]));
  return worst;
}

TEST(State, TheManifestNamesTheBufferTheProgramWrites) {
  for (const std::string& name : kBundles) {
    ETPROOF_REQUIRE_BUNDLE(state_bundle(name));
    const Bundle b = open_bundle(state_bundle(name));
    EXPECT_EQ(b.manifest.mutable_buffers, std::vector<std::string>{"total"}) << name;
    EXPECT_EQ(b.manifest.goldens.size(), 3u) << name;
  }
}

// The program does carry state: the same case run twice on one loaded program answers twice
// differently, and only the first answer is the golden (so the replay's fresh load matters).
TEST(State, OneLoadedProgramCarriesItsStateFromCallToCall) {
  for (const std::string& name : kBundles) {
    ETPROOF_REQUIRE_BUNDLE(state_bundle(name));
    const Bundle b = open_bundle(state_bundle(name));
    const GoldenCase& g = b.manifest.goldens.at(0);
    const HostTensor golden = read_golden_outputs(b, g).at("y");
    LoadedModel model = LoadedModel::load(b);
    const HostTensor once = model.run(read_golden_inputs(b, g)).at("y");
    const HostTensor twice = model.run(read_golden_inputs(b, g)).at("y");
    EXPECT_LT(max_abs_diff(once, golden), 1e-5) << name << ": the program starts from the model's initial state";
    EXPECT_GT(max_abs_diff(twice, golden), 0.1) << name << ": the second call starts from the first one's state";
  }
}

TEST(State, EveryCaseStartsFromTheInitialStateInProcessAndInAWorker) {
  std::vector<std::string> all = kBundles;
  all.emplace_back(kTwoMethodsInt8);
  for (const std::string& name : all) {
    ETPROOF_REQUIRE_BUNDLE(state_bundle(name));
    for (bool isolated : {false, true}) {
      ReplayOptions o;
      o.isolation.enabled = isolated;
      const ParityReport r = replay(state_bundle(name), o);
      EXPECT_TRUE(r.passed) << name << (isolated ? " (worker)" : "") << ": " << to_text(r);
      ASSERT_EQ(r.cases.size(), name == kTwoMethodsInt8 ? 6u : 3u) << name;
      for (const CaseReport& c : r.cases) EXPECT_EQ(c.status, Status::kAgreed) << name << " " << c.case_id << ": " << c.detail;
      EXPECT_EQ(r.mutable_buffers, std::vector<std::string>{"total"});
    }
  }
}

// A program the caller already ran (its buffers moved on) still replays every case from the
// initial state: the replay loads it afresh for the first case too.
TEST(State, AProgramTheCallerRanBeforeStillReplaysFromTheInitialState) {
  for (const std::string& name : kBundles) {
    ETPROOF_REQUIRE_BUNDLE(state_bundle(name));
    const Bundle b = open_bundle(state_bundle(name));
    LoadedModel model = LoadedModel::load(b);
    for (int i = 0; i < 3; ++i) (void)model.run(read_golden_inputs(b, b.manifest.goldens.at(0)));
    const ParityReport r = replay(b, model, ReplayOptions{});
    EXPECT_TRUE(r.passed) << name << ": " << to_text(r);
    for (const CaseReport& c : r.cases) EXPECT_EQ(c.status, Status::kAgreed) << name << " " << c.case_id << ": " << c.detail;
  }
}

TEST(State, ReportsSayTheStateRule) {
  ETPROOF_REQUIRE_BUNDLE(state_bundle(kBundles[0]));
  const ParityReport r = replay(state_bundle(kBundles[0]), ReplayOptions{});
  EXPECT_NE(to_text(r).find("state: fresh per case (buffers: total)"), std::string::npos) << to_text(r);
  const nlohmann::json j = to_json(r);
  EXPECT_EQ(j.at("state").at("mutable_buffers"), nlohmann::json::array({"total"}));
  EXPECT_EQ(j.at("state").at("per_case"), "fresh");
  // A bundle that writes no state says nothing of it.
  ETPROOF_REQUIRE_BUNDLE(test_bundles() / "tiny-portable-fp32");
  const ParityReport tiny = replay(test_bundles() / "tiny-portable-fp32", ReplayOptions{});
  EXPECT_EQ(to_text(tiny).find("state:"), std::string::npos);
  EXPECT_FALSE(to_json(tiny).contains("state"));
}

// The matrix over the state bundles: every cell agrees, each column says its state rule.
TEST(State, TheMatrixAgreesAndSaysTheStateRule) {
  ETPROOF_REQUIRE_BUNDLE(state_bundle(kBundles[0]));
  const Matrix m = build_matrix(test_bundles() / "state");
  // the accumulators' 3, tinyllama's 4 (sequence_test.cpp), accumulator_chain's and tinyllama_pd's 2 each
  // (cross_method_test.cpp)
  ASSERT_EQ(m.columns.size(), 11u);
  EXPECT_FALSE(m.cells.empty());
  for (const Cell& c : m.cells) EXPECT_EQ(c.status, CellStatus::kAgreed) << c.case_id << ": " << c.detail;
  for (const Column& c : m.columns)
    if (c.bundle.rfind("accumulator", 0) == 0)
      EXPECT_EQ(c.mutable_buffers, std::vector<std::string>{"total"}) << c.bundle;
  const std::string text = to_text(m);
  EXPECT_NE(text.find("  state: fresh per case (buffers: total)"), std::string::npos) << text;
  // accumulator_chain: the same buffer, shared by its two methods
  EXPECT_NE(text.find("  state: fresh per case, shared by the methods (buffers: total)"), std::string::npos) << text;
  const nlohmann::json j = to_json(m);  // kept: a range-for over a temporary's member dangles
  for (const auto& col : j.at("columns"))
    EXPECT_EQ(col.at("state").at("per_case"), "fresh") << col.dump();
}

// A golden (and its references) that expects what case 1 gives after case 0 on one program —
// the history a replay without the state rule would carry — drifts on that case alone, named.
TEST(State, AGoldenExpectingACarriedStateDrifts) {
  for (const std::string& name : kBundles) {
    ETPROOF_REQUIRE_BUNDLE(state_bundle(name));
    const fs::path dir = scratch_dir() / name;
    fs::copy(state_bundle(name), dir, fs::copy_options::recursive);
    const Bundle src = open_bundle(dir);
    const HostTensor carried = carried_output(src, 0, 1);
    const GoldenCase& g = src.manifest.goldens.at(1);
    const fs::path goldens = dir / (src.manifest.name + ".goldens");
    write_npy(goldens / g.outputs.at("y"), carried);
    for (const auto& [ref, by_output] : g.references) {
      HostTensor t = read_npy(goldens / by_output.at("y").file);
      const auto v = carried.to_double();
      for (size_t i = 0; i < v.size(); ++i) {
        if (t.dtype == DType::kFloat64) reinterpret_cast<double*>(t.data.data())[i] = v[i];
        else reinterpret_cast<float*>(t.data.data())[i] = static_cast<float>(v[i]);
      }
      write_npy(goldens / by_output.at("y").file, t);
    }
    etproof::testing::rehash_references(dir);
    const ParityReport r = replay(dir, ReplayOptions{});
    EXPECT_FALSE(r.passed) << name;
    ASSERT_EQ(r.cases.size(), 3u);
    EXPECT_EQ(r.cases[0].status, Status::kAgreed) << name << ": " << r.cases[0].detail;
    EXPECT_EQ(r.cases[1].status, Status::kDrifted) << name << ": " << r.cases[1].detail;
    EXPECT_EQ(r.cases[1].case_id, g.id);
    EXPECT_EQ(r.cases[2].status, Status::kAgreed) << name << ": " << r.cases[2].detail;
  }
}

}  // namespace
}  // namespace etproof
