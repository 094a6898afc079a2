// Manifest reader (integration): what the Python writer really wrote re-serializes byte for byte,
// and the references of an exported bundle are read and checked. The shared fixture and the
// invalid documents are unit/manifest_test.cpp's.
#include <openssl/evp.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "etproof/runtime/bundle.h"
#include "etproof/core/error.h"
#include "etproof/core/manifest.h"
#include "test_support.h"

namespace etproof {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;

using etproof::testing::slurp;

// What the Python writer really wrote (test and demo bundles) is canonical by the C++ reader's rule.
TEST(Manifest, ExportedManifestsReserializeByteIdentical) {
  ETPROOF_REQUIRE_BUNDLE(testing::test_bundles());
  size_t checked = 0;
  for (const auto& root : {testing::test_bundles(), testing::demo_bundles()}) {
    if (root.empty() || !fs::is_directory(root)) continue;
    for (const auto& dir : fs::directory_iterator(root)) {
      const fs::path p = dir.path() / (dir.path().filename().string() + ".etproof.json");
      if (!fs::is_regular_file(p)) continue;
      const Manifest m = read_manifest(p);
      EXPECT_EQ(to_canonical_json(m.raw), slurp(p)) << p;
      ++checked;
    }
  }
  EXPECT_GE(checked, 3u);
}


// ---- references read from a real exported bundle (build/test-bundles) --------------------------

std::string sha256_hex(const std::string& bytes) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(bytes.data(), bytes.size(), md, &len, EVP_sha256(), nullptr);
  static const char* hex = "0123456789abcdef";
  std::string s;
  for (unsigned i = 0; i < len; ++i) s += std::string{hex[md[i] >> 4], hex[md[i] & 15]};
  return s;
}

fs::path int8_test_bundle() {
  const auto root = testing::test_bundles();
  return (root.empty() ? fs::path("$ETPROOF_TEST_BUNDLES-unset") : root) / "tiny-xnnpack-int8-dynamic-per-channel";
}

TEST(Manifest, ReadsReferencesOfAnExportedBundle) {
  ETPROOF_REQUIRE_BUNDLE(int8_test_bundle());
  const Bundle b = open_bundle(int8_test_bundle(), {.verify_artifact = false});
  if (b.manifest.references.empty()) GTEST_SKIP() << "test bundles predate references: re-export them";
  ASSERT_TRUE(b.manifest.references.at("float64").captured);
  ASSERT_TRUE(b.manifest.references.at("int8-dynamic-per-channel").captured);
  for (const auto& c : b.manifest.goldens) {
    const auto golden = read_golden_outputs(b, c).at("y").to_double();
    const auto truth = read_golden_reference(b, c, "float64");
    ASSERT_EQ(truth.size(), 1u);
    EXPECT_EQ(truth.at("y").dtype, DType::kFloat64);
    EXPECT_EQ(truth.at("y").shape, (std::vector<int64_t>{1, 4}));
    const auto emu = read_golden_reference(b, c, "int8-dynamic-per-channel");
    EXPECT_EQ(emu.at("y").dtype, DType::kFloat32);
    // The truth is the golden up to float32 rounding; the emulation is int8 arithmetic.
    const auto t = truth.at("y").to_double(), e = emu.at("y").to_double();
    double d_truth = 0, d_emu = 0, peak = 0;
    for (size_t i = 0; i < golden.size(); ++i) {
      d_truth = std::max(d_truth, std::abs(golden[i] - t[i]));
      d_emu = std::max(d_emu, std::abs(golden[i] - e[i]));
      peak = std::max(peak, std::abs(t[i]));
    }
    EXPECT_LE(d_truth, 16 * 1.1920929e-7 * peak) << c.id;
    EXPECT_GT(d_emu, 100 * d_truth) << c.id;
    EXPECT_TRUE(read_golden_reference(b, c, "bfloat16").empty()) << "not a reference of this bundle";
  }
  // The export half ran the program on every golden case against the emulation: it matched.
  const auto& x = b.manifest.references.at("int8-dynamic-per-channel").program_at_export;
  ASSERT_TRUE(x) << "test bundles predate program_at_export: re-export them";
  EXPECT_TRUE(x->matched);
  EXPECT_EQ(x->cases, b.manifest.goldens.size());
  ASSERT_TRUE(x->max_range_error);
  EXPECT_LT(*x->max_range_error, 1e-5);
  EXPECT_FALSE(x->max_steps) << "int8 dynamic: float outputs, no scale";
  EXPECT_FALSE(x->machine.empty());
}

TEST(Manifest, ReferenceFileDisagreeingWithTheManifestIsRefused) {
  ETPROOF_REQUIRE_BUNDLE(int8_test_bundle());
  const fs::path dir = testing::scratch_dir() / "tiny-xnnpack-int8-dynamic-per-channel";
  fs::copy(int8_test_bundle(), dir, fs::copy_options::recursive);
  const Bundle b = open_bundle(dir, {.verify_artifact = false});
  if (b.manifest.references.empty()) GTEST_SKIP() << "test bundles predate references: re-export them";
  const GoldenCase& c = b.manifest.goldens.at(0);
  const fs::path file = b.goldens_dir / c.references.at("float64").at("y").file;

  // Same size, other bytes: the hash catches it before the file is parsed.
  HostTensor t = read_npy(file);
  t.data[t.data.size() - 1] ^= 0x01;
  write_npy(file, t);
  auto expect_mismatch = [&](ErrorKind kind, const std::vector<std::string>& needles) {
    try {
      read_golden_reference(b, c, "float64");
      ADD_FAILURE() << "read a reference that disagrees with its manifest";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), kind) << e.what();
      for (const auto& n : needles) EXPECT_NE(e.cause().find(n), std::string::npos) << n << " in " << e.cause();
      EXPECT_NE(e.remedy().find("re-export"), std::string::npos) << e.remedy();
    }
  };
  expect_mismatch(ErrorKind::kArtifactMismatch, {file.filename().string(), "SHA-256"});
  // Another shape, its size and SHA-256 put into the (in-memory) manifest: the hash passes and
  // the spec check catches it.
  HostTensor wrong;
  wrong.dtype = DType::kFloat64;
  wrong.shape = {1, 5};
  wrong.data.assign(wrong.numel() * 8, 0);
  write_npy(file, wrong);
  Bundle edited = b;
  FileRef& ref = edited.manifest.goldens.at(0).references.at("float64").at("y");
  const std::string bytes = testing::slurp(file);
  ref.bytes = bytes.size();
  ref.sha256 = sha256_hex(bytes);
  try {
    read_golden_reference(edited, edited.manifest.goldens.at(0), "float64");
    ADD_FAILURE() << "read a reference of the wrong shape";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kShapeMismatch) << e.what();
    EXPECT_NE(e.cause().find("[1, 5]"), std::string::npos) << e.cause();
  }
  fs::remove(file);
  expect_mismatch(ErrorKind::kArtifactMismatch, {file.filename().string(), "missing"});
}

}  // namespace
}  // namespace etproof
