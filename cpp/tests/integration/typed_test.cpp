// The generated C++ API's parts that need no generated code (integration): ModelHandle's hash
// check on real bundles, and `etproof gen` writing only what changed (codegen.h). etproof::Tensor's
// run-time checks and awkward names are unit/typed_test.cpp's. The generated code itself is built
// and run against the installed package by tests/gen (CTest gen.*).
#include <gtest/gtest.h>

#include <fstream>

#include "etproof/codegen/codegen.h"
#include "etproof/codegen/typed.h"
#include "test_support.h"

namespace etproof {
namespace {

namespace fs = std::filesystem;
using namespace etproof::testing;

TEST(ModelHandle, OpensTheBundleItWasGeneratedFromAndNoOther) {
  const fs::path xnn = test_bundles() / "tiny-xnnpack-fp32";
  const fs::path portable = test_bundles() / "tiny-portable-fp32";
  ETPROOF_REQUIRE_BUNDLE(xnn);
  ETPROOF_REQUIRE_BUNDLE(portable);
  const Bundle b = open_bundle(xnn);
  const std::string sha = b.manifest.artifact.sha256;
  ModelHandle h = ModelHandle::open(xnn, {b.manifest.name, sha});
  EXPECT_EQ(h.delegates(), std::vector<std::string>{"XnnpackBackend"});
  EXPECT_EQ(h.bundle().manifest.name, "tiny-xnnpack-fp32");
  try {
    ModelHandle::open(portable, {b.manifest.name, sha});
    FAIL() << "opened a bundle with another program";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kArtifactMismatch);
    EXPECT_NE(e.cause().find(sha), std::string::npos) << e.cause();
    EXPECT_NE(e.remedy().find("etproof gen"), std::string::npos) << e.remedy();
  }
}

TEST(Codegen, WritesOnlyWhatChangedAndNothingHalf) {
  const fs::path tiny = test_bundles() / "tiny-xnnpack-fp32";
  ETPROOF_REQUIRE_BUNDLE(tiny);
  const fs::path out = scratch_dir() / "codegen-out";
  fs::remove_all(out);
  const GeneratedCode g = write_model_api(tiny, out, {});
  EXPECT_TRUE(g.written);
  ASSERT_TRUE(fs::exists(out / g.header_name));
  ASSERT_TRUE(fs::exists(out / g.source_name));
  EXPECT_EQ(slurp(out / g.header_name), g.header);
  const auto stamp = fs::last_write_time(out / g.header_name);
  fs::last_write_time(out / g.header_name, stamp - std::chrono::hours(1));
  EXPECT_FALSE(write_model_api(tiny, out, {}).written);  // unchanged: not rewritten
  EXPECT_EQ(fs::last_write_time(out / g.header_name), stamp - std::chrono::hours(1));
  // A bundle that does not open writes nothing.
  const fs::path none = scratch_dir() / "codegen-none";
  fs::remove_all(none);
  EXPECT_EQ(kind_of([&] { write_model_api(scratch_dir() / "no-such-bundle", none, {}); }),
            ErrorKind::kIo);
  EXPECT_FALSE(fs::exists(none));
}

}  // namespace
}  // namespace etproof
