// An output's shape against the inputs that gave it (manifest outputs[i].dynamic_dims;
// LoadedModel::run; ErrorKind::kOutputShapeMismatch), on a real exported program and the real
// runtime: shapes/twodims-portable-fp32 (python/etproof/fixtures/shapes.py, two_dims) takes
// a [A, 4] and b [B, 4] and returns a * 2 [A, 4] and b + 1 [B, 4]. The export half records each
// output's axis 0 under its own input's Dim. A copy whose manifest swaps those names makes the
// program's (correct) outputs the wrong shape for the manifest — the same check that catches a
// delegate computing a wrong shape (bundle_test: OpenVINO's upper-bound batch) — so it is tried
// where it must pass (A == B, the real manifest) as well as where it must fail.
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "etproof/core/npy.h"
#include "etproof/core/status.h"
#include "etproof/render/parity.h"
#include "etproof/replay/replay.h"
#include "etproof/runtime/bundle.h"
#include "test_support.h"

namespace etproof {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;

bool contains(const std::string& hay, const std::string& needle) { return hay.find(needle) != std::string::npos; }

const char* const kTwoDims = "shapes/twodims-portable-fp32";

fs::path two_dims() { return testing::test_bundles() / kTwoDims; }

HostTensor ones(int64_t rows) { return testing::f32(std::vector<float>(size_t(rows) * 4, 1.0f), {rows, 4}); }

// A copy of the bundle whose manifest gives ya's axis 0 the Dim `ya_dim` and yb's `yb_dim`.
fs::path with_output_dims(const std::string& ya_dim, const std::string& yb_dim) {
  const fs::path dir = testing::scratch_dir() / "twodims-portable-fp32";
  fs::copy(two_dims(), dir, fs::copy_options::recursive);
  const fs::path manifest = dir / "twodims-portable-fp32.etproof.json";
  json doc;
  {
    std::ifstream in(manifest);
    doc = json::parse(in);
  }
  doc["outputs"][0]["dynamic_dims"][0]["name"] = ya_dim;
  doc["outputs"][1]["dynamic_dims"][0]["name"] = yb_dim;
  std::ofstream(manifest, std::ios::trunc) << doc.dump();
  return dir;
}

TEST(OutputShape, EachOutputRecordsTheInputDimItFollowsAndAgrees) {
  ETPROOF_REQUIRE_BUNDLE(two_dims());
  const Bundle b = open_bundle(two_dims());
  for (size_t i = 0; i < 2; ++i) {
    const TensorSpec& y = b.manifest.outputs.at(i);
    EXPECT_EQ(y.shape, (std::vector<int64_t>{-1, 4})) << y.name;
    ASSERT_EQ(y.dynamic_dims.size(), 1u) << y.name;
    EXPECT_EQ(y.dynamic_dims[0].axis, 0);
    EXPECT_EQ(y.dynamic_dims[0].name, i == 0 ? "A" : "B");
    EXPECT_EQ(y.dynamic_dims[0].min, 1);
    EXPECT_EQ(y.dynamic_dims[0].max, 4);
  }
  const ParityReport r = replay(two_dims());
  EXPECT_TRUE(r.passed) << to_text(r);
  LoadedModel m = LoadedModel::load(b);
  const auto out = m.run({{"a", ones(3)}, {"b", ones(2)}});
  EXPECT_EQ(out.at("ya").shape, (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(out.at("yb").shape, (std::vector<int64_t>{2, 4}));
}

TEST(OutputShape, AnOutputAtAnotherSizeThanItsInputDimIsOutputShapeMismatchNamingBoth) {
  ETPROOF_REQUIRE_BUNDLE(two_dims());
  const fs::path dir = with_output_dims("B", "A");
  LoadedModel m = LoadedModel::load(open_bundle(dir));
  // Equal sizes fit either name: the check passes what it must.
  EXPECT_EQ(m.run({{"a", ones(2)}, {"b", ones(2)}}).at("ya").shape, (std::vector<int64_t>{2, 4}));
  try {
    (void)m.run({{"a", ones(1)}, {"b", ones(3)}});
    ADD_FAILURE() << "no error for ya [1, 4] where the manifest ties its axis 0 to B = 3";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kOutputShapeMismatch) << e.what();
    for (const char* part : {"output 'ya': shape [1, 4] produced", "the manifest says [-1, 4]",
                             "axis 0 the inputs' dimension 'B', given 3", "on portable kernels"})
      EXPECT_TRUE(contains(e.cause(), part)) << e.cause();
    EXPECT_FALSE(contains(e.remedy(), "re-export the bundle")) << e.remedy();
  }
  EXPECT_EQ(status_of(Error(ErrorKind::kOutputShapeMismatch, "x", "y")), Status::kDrifted);
}

TEST(OutputShape, InAReplayAWrongOutputShapeIsADriftNotABundleInvalid) {
  ETPROOF_REQUIRE_BUNDLE(two_dims());
  const ParityReport r = replay(with_output_dims("B", "A"));
  ASSERT_EQ(r.cases.size(), 3u) << to_text(r);
  for (const CaseReport& c : r.cases) {
    // Golden sizes (A, B): (1, 4), (2, 2), (4, 1); only (2, 2) fits the swapped names.
    const bool fits = c.case_id == "a2_b2";
    EXPECT_EQ(c.status, fits ? Status::kAgreed : Status::kDrifted) << c.case_id << ": " << c.detail;
    if (!fits) EXPECT_TRUE(contains(c.detail, "the program ran and computed another shape")) << c.detail;
  }
  EXPECT_FALSE(r.passed);
  const std::string text = to_text(r);
  EXPECT_FALSE(contains(text, "bundle-invalid")) << text;
  EXPECT_FALSE(contains(text, "re-export")) << text;
}

TEST(OutputShape, RunExitsNonZeroNamingTheOutputAndBothShapes) {
  ETPROOF_REQUIRE_BUNDLE(two_dims());
  const fs::path dir = with_output_dims("B", "A");
  const fs::path a = dir / "a.npy", b = dir / "b.npy";
  write_npy(a, ones(1));
  write_npy(b, ones(3));
  const std::string inputs = " --input a=" + testing::quote(a.string()) + " --input b=" + testing::quote(b.string());
  const testing::CliResult bad = testing::run_etproof("run " + testing::quote(dir.string()) + inputs);
  EXPECT_EQ(bad.rc, 2) << bad.out << bad.err;
  EXPECT_TRUE(contains(bad.err, "error [output-shape-mismatch]")) << bad.err;
  EXPECT_TRUE(contains(bad.err, "output 'ya': shape [1, 4] produced")) << bad.err;
  // --no-ledger is accepted by run, which records nothing, as by every command that runs a bundle.
  const testing::CliResult good =
      testing::run_etproof("run " + testing::quote(two_dims().string()) + inputs + " --no-ledger");
  EXPECT_EQ(good.rc, 0) << good.out << good.err;
  EXPECT_TRUE(contains(good.out, "output ya float32 [1, 4]")) << good.out;
  // --format json: the same summary as one JSON object
  const testing::CliResult json_run =
      testing::run_etproof("run " + testing::quote(two_dims().string()) + inputs + " --format json");
  ASSERT_EQ(json_run.rc, 0) << json_run.err;
  const json doc = testing::parse(json_run);
  ASSERT_EQ(doc.at("outputs").size(), 2u) << doc.dump();
  EXPECT_EQ(doc["outputs"][0]["name"], "ya");
  EXPECT_EQ(doc["outputs"][0]["shape"], json::array({1, 4}));
  EXPECT_EQ(doc["outputs"][1]["shape"], json::array({3, 4}));
  EXPECT_EQ(doc["outputs"][0]["max"], 2.0);  // a * 2 on ones
}

TEST(OutputShape, AnOutputDimNoInputDeclaresIsManifestInvalid) {
  ETPROOF_REQUIRE_BUNDLE(two_dims());
  const fs::path dir = with_output_dims("Z", "B");
  try {
    (void)open_bundle(dir);
    ADD_FAILURE() << "no error for an output dimension named after no input's Dim";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kManifestInvalid) << e.what();
    EXPECT_TRUE(contains(e.cause(), "outputs[0].dynamic_dims[0].name")) << e.cause();
    EXPECT_TRUE(contains(e.cause(), "'Z' is no input's dynamic dimension")) << e.cause();
  }
}

}  // namespace
}  // namespace etproof
