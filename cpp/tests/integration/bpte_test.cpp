// ExecuTorch's BundledProgram (.bpte) judged as a bundle (etproof/runtime/bpte.h), on files written
// by ExecuTorch's API alone (etproof.fixtures.bundled, build/test-bundles/bpte/): the tiny model
// lowered to XNNPACK and with no delegate, three test cases each with the eager model's outputs,
// and drifted/tiny-xnnpack.bpte whose test case 1 expects the outputs times 1.01. parity, a worker,
// matrix, EXPECT_BUNDLE_PARITY take the .bpte itself; what is not a BundledProgram is refused by
// name.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include "etproof/core/error.h"
#include "etproof/gtest.h"
#include "etproof/render/parity.h"
#include "etproof/replay/replay.h"
#include "etproof/runtime/bpte.h"
#include "etproof/runtime/bundle.h"
#include "test_support.h"

namespace etproof {
namespace {

namespace fs = std::filesystem;
using etproof::testing::run_etproof;
using etproof::testing::scratch_dir;
using etproof::testing::test_bundles;

fs::path bpte(const std::string& name) { return test_bundles() / "bpte" / name; }

// Each test materializes into a cache of its own (ETPROOF_BPTE_CACHE, inherited by workers).
class Bpte : public ::testing::Test {
 protected:
  void SetUp() override {
    scratch_ = scratch_dir();
    cache_ = scratch_ / "bpte-cache";
    ::setenv("ETPROOF_BPTE_CACHE", cache_.c_str(), 1);
  }
  void TearDown() override { ::unsetenv("ETPROOF_BPTE_CACHE"); }
  fs::path scratch_, cache_;
};

TEST_F(Bpte, ExecuTorchsOwnBundledProgramAgreesInProcessAndInAWorker) {
  for (const std::string name : {"tiny-xnnpack.bpte", "tiny-portable.bpte"}) {
    ETPROOF_REQUIRE_BUNDLE(bpte(name));
    for (bool isolated : {false, true}) {
      ReplayOptions o;
      o.isolation.enabled = isolated;
      const ParityReport r = replay(bpte(name), o);
      EXPECT_TRUE(r.passed) << name << (isolated ? " (worker)" : "") << ": " << to_text(r);
      EXPECT_EQ(r.backend, name == "tiny-xnnpack.bpte" ? "xnnpack" : "portable");
      EXPECT_EQ(r.recipe, "fp32");
      ASSERT_EQ(r.cases.size(), 3u) << to_text(r);
      for (const CaseReport& c : r.cases) EXPECT_EQ(c.status, Status::kAgreed) << name << " " << c.case_id;
      EXPECT_NE(to_text(r).find("from: " + name + " (ExecuTorch BundledProgram; recipe fp32: assumed, none given"),
                std::string::npos)
          << to_text(r);
    }
  }
  // The bundle it describes: its program byte for byte, named inputs and outputs, in the cache.
  const Bundle b = open_bundle(bpte("tiny-xnnpack.bpte"));
  EXPECT_EQ(b.dir.parent_path().parent_path(), cache_);
  EXPECT_EQ(b.manifest.delegates, (std::vector<std::string>{"XnnpackBackend"}));
  ASSERT_EQ(b.manifest.inputs.size(), 1u);
  EXPECT_EQ(b.manifest.inputs[0].name, "input0");
  EXPECT_EQ(b.manifest.inputs[0].shape, (std::vector<int64_t>{1, 3, 16, 16}));
}

TEST_F(Bpte, AChangedExpectedOutputDriftsThatCaseAlone) {
  ETPROOF_REQUIRE_BUNDLE(bpte("drifted/tiny-xnnpack.bpte"));
  const ParityReport r = replay(bpte("drifted/tiny-xnnpack.bpte"), ReplayOptions{});
  EXPECT_FALSE(r.passed) << to_text(r);
  ASSERT_EQ(r.cases.size(), 3u);
  EXPECT_EQ(r.cases[0].status, Status::kAgreed);
  EXPECT_EQ(r.cases[1].status, Status::kDrifted) << to_text(r);
  EXPECT_EQ(r.cases[2].status, Status::kAgreed);
  EXPECT_BUNDLE_PARITY(bpte("tiny-xnnpack.bpte").string());
  EXPECT_NONFATAL_FAILURE(EXPECT_BUNDLE_PARITY(bpte("drifted/tiny-xnnpack.bpte").string()), "case1");
}

TEST_F(Bpte, TheMatrixTakesTheBpteFilesOfADirectoryAsColumns) {
  ETPROOF_REQUIRE_BUNDLE(bpte("tiny-xnnpack.bpte"));
  const auto m = run_etproof("matrix " + etproof::testing::quote((test_bundles() / "bpte").string()) + " --no-ledger",
                             "ETPROOF_BPTE_CACHE=" + etproof::testing::quote(cache_.string()));
  EXPECT_EQ(m.rc, 0) << m.out << m.err;
  EXPECT_NE(m.out.find("6 cells measured: 6 agreed, 0 drifted"), std::string::npos) << m.out;
  const auto d = run_etproof("matrix " + etproof::testing::quote((test_bundles() / "bpte" / "drifted").string()) +
                                 " --no-ledger",
                             "ETPROOF_BPTE_CACHE=" + etproof::testing::quote(cache_.string()));
  EXPECT_EQ(d.rc, 1) << d.out << d.err;
  EXPECT_NE(d.out.find("1 drifted"), std::string::npos) << d.out;
}

TEST_F(Bpte, WhatIsNotABundledProgramIsRefusedByName) {
  ETPROOF_REQUIRE_BUNDLE(bpte("tiny-xnnpack.bpte"));
  const std::string whole = etproof::testing::slurp(bpte("tiny-xnnpack.bpte"));
  const auto write = [&](const std::string& file, const std::string& bytes) {
    std::ofstream(scratch_ / file, std::ios::binary) << bytes;
    return scratch_ / file;
  };
  const auto refused = [](const fs::path& p, ErrorKind kind, const std::string& says) {
    try {
      open_bundle(p);
      ADD_FAILURE() << p << " opened";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), kind) << e.what();
      EXPECT_NE(e.cause().find(p.string()), std::string::npos) << e.what();
      EXPECT_NE(e.cause().find(says), std::string::npos) << e.what();
    }
  };
  refused(write("text.bpte", std::string(64, 'x')), ErrorKind::kManifestInvalid, "file identifier is not BP08");
  refused(write("half.bpte", whole.substr(0, whole.size() / 2)), ErrorKind::kManifestInvalid, "fails verification");
  refused(write("empty.bpte", ""), ErrorKind::kManifestInvalid, "file identifier is not BP08");
  try {
    materialize_bpte(bpte("tiny-xnnpack.bpte"), BpteOptions{.recipe = "no-such-recipe", .cache_dir = cache_});
    ADD_FAILURE() << "an unknown recipe was taken";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument) << e.what();
    EXPECT_NE((e.cause() + e.remedy()).find("fp32"), std::string::npos) << e.what();  // the recipes it has
  }
  try {  // a quantized recipe's bound needs the quantization record no .bpte carries
    materialize_bpte(bpte("tiny-xnnpack.bpte"), BpteOptions{.recipe = "int8-static-per-channel", .cache_dir = cache_});
    ADD_FAILURE() << "a quantized recipe was taken";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument) << e.what();
    EXPECT_NE(e.remedy().find("--atol"), std::string::npos) << e.what();
  }
  // Nothing refused was left in the cache: no bundle, no staging directory.
  std::vector<fs::path> left;
  if (fs::exists(cache_))
    for (const auto& e : fs::recursive_directory_iterator(cache_)) left.push_back(e.path());
  for (const fs::path& p : left) EXPECT_TRUE(fs::is_directory(p) && fs::is_empty(p)) << p;
}

}  // namespace
}  // namespace etproof
