// Every program that crashed etproof under fuzz_bundle (fuzz/crashes/bundle/, fuzz/README.md) is
// replayed here in every build, the normal one included: byte 0 picks the base test bundle (as
// fuzz/bundle_fuzz.cpp's kBases), the rest is the .pte, and the manifest's artifact size and
// SHA-256 are fixed up to match (as the harness does). Each must end in a typed outcome, never a
// crash; the crash classes fixed in etproof's own code are asserted by name.
#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "etproof/replay/replay.h"
#include "etproof/render/parity.h"
#include "etproof/core/status.h"
#include "test_support.h"

namespace etproof {
namespace {
namespace fs = std::filesystem;

// fuzz/bundle_fuzz.cpp's kBases, in its order.
const char* const kBases[] = {
    "tiny-portable-fp32", "tiny-xnnpack-fp32", "tiny-xnnpack-int8-dynamic-per-channel",
    "methods/encdec-xnnpack-fp32", "shapes/dynbatch-portable-fp32", "shapes/tokens-portable-fp32"};

fs::path crashes_dir() { return fs::path(ETPROOF_SOURCE_DIR) / "fuzz" / "crashes" / "bundle"; }

// A copy of the base bundle the input names, with the input's program and a manifest that
// records its size and hash.
fs::path bundle_from(const fs::path& input) {
  const std::string bytes = testing::slurp(input);
  EXPECT_FALSE(bytes.empty()) << input;
  const fs::path base = testing::test_bundles() / kBases[static_cast<uint8_t>(bytes.at(0)) % std::size(kBases)];
  const fs::path dir = testing::scratch_dir() / input.filename() / base.filename();
  fs::create_directories(dir.parent_path());
  fs::copy(base, dir, fs::copy_options::recursive);
  const std::string name = base.filename().string();
  const fs::path pte = dir / (name + ".pte");
  std::ofstream(pte, std::ios::binary | std::ios::trunc) << bytes.substr(1);
  const fs::path manifest = dir / (name + ".etproof.json");
  nlohmann::json doc = nlohmann::json::parse(testing::slurp(manifest));
  doc["artifact"]["bytes"] = bytes.size() - 1;
  doc["artifact"]["sha256"] = testing::sha256_file(pte);
  std::ofstream(manifest, std::ios::trunc) << doc.dump(2) << "\n";
  return dir;
}

std::vector<fs::path> inputs() {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(crashes_dir(), ec))
    if (e.is_regular_file() && e.path().extension() != ".txt") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

TEST(FuzzCrashes, EveryFiledProgramEndsInATypedOutcome) {
  ETPROOF_REQUIRE_BUNDLE(testing::test_bundles() / kBases[0]);
  const auto files = inputs();
  ASSERT_FALSE(files.empty()) << "no inputs in " << crashes_dir();
  for (const fs::path& f : files) {
    SCOPED_TRACE(f.filename().string());
    const ParityReport r = replay(bundle_from(f));  // never throws for what a bundle does wrong
    EXPECT_TRUE(r.refused || !r.cases.empty());
  }
}

// The delegate entry without an id: ExecuTorch 1.5.1's MethodMeta::get_backend_name returns a
// pointer just past null (0x4) for it; etproof read it as a string (SIGSEGV in strlen).
TEST(FuzzCrashes, ADelegateWithoutAnIdIsRefusedByName) {
  ETPROOF_REQUIRE_BUNDLE(testing::test_bundles() / kBases[0]);
  const ParityReport r = replay(bundle_from(crashes_dir() / "delegate-without-id"));
  ASSERT_TRUE(r.refused);
  EXPECT_EQ(*r.refused, Status::kLoadFailed);
  ASSERT_TRUE(r.error);
  EXPECT_EQ(r.error->kind(), ErrorKind::kLoadFailed);
  EXPECT_NE(r.error->cause().find("has no readable id"), std::string::npos) << r.error->cause();
}

// A planned buffer of 69 TB (0x3f00000000d0 bytes): Module::load_method allocated it as the
// program said (std::bad_alloc, reported as `internal`; under ASan an abort).
TEST(FuzzCrashes, PlannedMemoryBeyondThisMachinesRamIsRefusedByName) {
  ETPROOF_REQUIRE_BUNDLE(testing::test_bundles() / kBases[0]);
  const ParityReport r = replay(bundle_from(crashes_dir() / "planned-memory-69tb"));
  ASSERT_TRUE(r.refused);
  EXPECT_EQ(*r.refused, Status::kLoadFailed);
  ASSERT_TRUE(r.error);
  EXPECT_NE(r.error->cause().find("bytes of memory (this machine's RAM)"), std::string::npos) << r.error->cause();
}

// A method whose meta cannot be read, in a program whose method-name table cannot be read either:
// listing the program's methods for the message went through Module::method_names(), which
// aborts the process in ExecuTorch 1.5.1 (a .get() on a failed Result).
TEST(FuzzCrashes, AnUnreadableMethodTableIsRefusedNotAborted) {
  ETPROOF_REQUIRE_BUNDLE(testing::test_bundles() / kBases[0]);
  const ParityReport r = replay(bundle_from(crashes_dir() / "method-names-abort"));
  ASSERT_TRUE(r.refused);
  ASSERT_TRUE(r.error);
  EXPECT_TRUE(r.error->kind() == ErrorKind::kLoadFailed || r.error->kind() == ErrorKind::kArtifactMismatch)
      << to_string(r.error->kind()) << ": " << r.error->cause();
}

}  // namespace
}  // namespace etproof
