// targets_test.cpp (integration) — artifacts bound to a target (etproof/targets.h; issue 31 §B):
// an OpenVINO bundle records the runtime requirements its CPU blob was compiled for, this
// machine's OpenVINO states its own, and a bundle compiled for another ISA class is refused by
// name before loading (status not-runnable-here, which fails no run), as is a real blob of another
// class that OpenVINO itself refuses while loading. On build/test-bundles/tiny-openvino-fp32; each
// test skips by name without it or without OpenVINO's runtime. The blob header's parsing and the
// spellings are unit/targets_test.cpp's.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "etproof/runtime/bundle.h"
#include "etproof/replay/replay.h"
#include "etproof/render/parity.h"
#include "etproof/core/status.h"
#include "etproof/runtime/openvino.h"
#include "etproof/runtime/targets.h"
#include "test_support.h"

namespace fs = std::filesystem;
using namespace etproof;
using nlohmann::json;

namespace {

constexpr const char* kName = "tiny-openvino-fp32";
// What a CPU of another ISA class states (the blob header of an AMD EPYC with AVX-512 and bf16,
// issue 31); on such a machine itself, an AVX2-only CPU's (OpenVINO's class name) instead.
constexpr const char* kAvx512Bf16 = "meta=1.0;ov=2026.4.1;isa=Intel AVX-512 with Intel DL Boost and bfloat16 support";
constexpr const char* kAvx2 = "meta=1.0;ov=2026.4.1;isa=Intel AVX2";
std::string other_machine() {
  std::string why;
  const std::optional<std::string> here = openvino_cpu_requirements(why);
  return here && *here == kAvx512Bf16 ? kAvx2 : kAvx512Bf16;
}

fs::path openvino_bundle() {
  const fs::path root = etproof::testing::test_bundles();
  return root.empty() ? fs::path() : root / kName;
}

#define SKIP_WITHOUT_OPENVINO_BUNDLE(b)                                                               \
  if ((b).empty() || !fs::is_directory(b))                                                           \
  GTEST_SKIP() << "no " << kName << " (python -m etproof test-bundles --out build/test-bundles)";   \
  if (!open_bundle(b, OpenOptions{.verify_artifact = false}).manifest.target)                        \
  GTEST_SKIP() << (b) << " records no target: exported before the field (re-export the test bundles)"

#define SKIP_WITHOUT_OPENVINO_RUNTIME()                                                              \
  if (std::string why; !openvino_cpu_requirements(why))                                              \
  GTEST_SKIP() << "this machine's OpenVINO cannot be asked for its requirements: " << why

json read_json(const fs::path& p) { return json::parse(etproof::testing::slurp(p)); }
void write_json(const fs::path& p, const json& j) { std::ofstream(p) << j.dump(2); }

// A copy of the OpenVINO bundle in this test's scratch directory.
fs::path copy_bundle() {
  const fs::path b = etproof::testing::scratch_dir() / kName;
  fs::copy(openvino_bundle(), b, fs::copy_options::recursive);
  return b;
}

fs::path manifest_of(const fs::path& b) { return b / (std::string(kName) + ".etproof.json"); }

}  // namespace

TEST(Targets, AnOpenvinoBundleRecordsWhatItsBlobWasCompiledFor) {
  const fs::path b = openvino_bundle();
  SKIP_WITHOUT_OPENVINO_BUNDLE(b);
  const Manifest m = open_bundle(b).manifest;
  ASSERT_TRUE(m.target);
  EXPECT_EQ(m.target->kind, kOpenvinoCpuTarget);
  const std::string program = etproof::testing::slurp(b / m.artifact.file);
  EXPECT_EQ(openvino_requirements_in(program), m.target->requirements);
  EXPECT_NE(m.target->requirements.find("ov=" + m.target->openvino), std::string::npos) << m.target->requirements;
  EXPECT_NE(m.target->requirements.find("isa=" + m.target->isa), std::string::npos) << m.target->requirements;
  EXPECT_FALSE(m.target->isa.empty());
}

TEST(Targets, ThisMachineStatesTheRequirementsOfTheBundlesExportedHere) {
  const fs::path b = openvino_bundle();
  SKIP_WITHOUT_OPENVINO_BUNDLE(b);
  SKIP_WITHOUT_OPENVINO_RUNTIME();
  const Manifest m = open_bundle(b).manifest;
  const TargetCheck c = check_target(*m.target);
  ASSERT_TRUE(c.checked) << c.why;
  EXPECT_TRUE(c.matches) << c.why;
  EXPECT_EQ(c.here, m.target->requirements);
  const ParityReport r = replay(b);
  ASSERT_FALSE(r.cases.empty()) << to_text(r);
  EXPECT_NE(r.cases.front().status, Status::kNotRunnableHere) << to_text(r);
}

TEST(Targets, ABundleCompiledForAnotherIsaClassIsRefusedBeforeLoadNamingBothSides) {
  const fs::path src = openvino_bundle();
  SKIP_WITHOUT_OPENVINO_BUNDLE(src);
  SKIP_WITHOUT_OPENVINO_RUNTIME();
  const fs::path b = copy_bundle();
  json doc = read_json(manifest_of(b));
  const std::string other = other_machine();
  doc["target"]["requirements"] = other;
  doc["target"]["isa"] = other.substr(other.find("isa=") + 4);
  write_json(manifest_of(b), doc);
  try {
    (void)LoadedModel::load(open_bundle(b));
    FAIL() << "loaded a bundle whose target is another ISA class";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kTargetMismatch) << e.what();
    EXPECT_NE(e.cause().find(other), std::string::npos) << e.cause();
    std::string why;
    EXPECT_NE(e.cause().find(*openvino_cpu_requirements(why)), std::string::npos) << e.cause();
    EXPECT_NE(e.remedy().find("ISA class"), std::string::npos) << e.remedy();
    EXPECT_EQ(e.remedy().find("ExecuTorch version"), std::string::npos) << e.remedy();
  }
  const ParityReport r = replay(b);
  ASSERT_TRUE(r.refused) << to_text(r);
  EXPECT_EQ(*r.refused, Status::kNotRunnableHere) << to_text(r);
  EXPECT_FALSE(fails_run(*r.refused));
  EXPECT_NE(to_text(r).find("not-runnable-here"), std::string::npos) << to_text(r);
}

namespace {

// A copy of the bundle whose program's own blob header says another ISA class (as a bundle
// exported on another CPU reads), the artifact rehashed; `keep_target`: the manifest's target left
// as it was (it then no longer describes the program), else removed (a bundle exported before the
// field). Returns the bundle and the program's new requirements.
std::pair<fs::path, std::string> blob_of_another_isa(bool keep_target) {
  const fs::path b = copy_bundle();
  json doc = read_json(manifest_of(b));
  const fs::path pte = b / doc["artifact"]["file"].get<std::string>();
  std::string program = etproof::testing::slurp(pte);
  const std::string mine = doc["target"]["requirements"].get<std::string>();
  const size_t at = program.find(mine);
  EXPECT_NE(at, std::string::npos);
  std::string other = mine;
  other.back() = other.back() == '9' ? '8' : '9';  // "…isa=Intel AVX2" -> "…isa=Intel AVX9"
  program.replace(at, mine.size(), other);
  std::ofstream(pte, std::ios::binary) << program;
  doc["artifact"]["sha256"] = etproof::testing::sha256_file(pte);
  if (!keep_target) doc.erase("target");
  write_json(manifest_of(b), doc);
  return {b, other};
}

}  // namespace

TEST(Targets, ARealBlobOfAnotherIsaClassIsRefusedBeforeLoadFromItsHeader) {
  // No target in the manifest: the program's own blob header says what it was compiled for.
  const fs::path src = openvino_bundle();
  SKIP_WITHOUT_OPENVINO_BUNDLE(src);
  SKIP_WITHOUT_OPENVINO_RUNTIME();
  const auto [b, other] = blob_of_another_isa(/*keep_target=*/false);
  const ParityReport r = replay(b);
  ASSERT_TRUE(r.refused) << to_text(r);
  EXPECT_EQ(*r.refused, Status::kNotRunnableHere) << to_text(r);
  ASSERT_TRUE(r.error);
  EXPECT_EQ(r.error->kind(), ErrorKind::kTargetMismatch);
  EXPECT_NE(r.error->cause().find(other), std::string::npos) << r.error->cause();
  EXPECT_NE(r.error->cause().find("read from its program"), std::string::npos) << r.error->cause();
  EXPECT_EQ(r.error->remedy().find("ExecuTorch version"), std::string::npos) << r.error->remedy();
}

TEST(Targets, AnImportFailureOfABlobForAnotherIsaClassIsATargetMismatchNotAVersionProblem) {
  // The manifest's target says this machine, the blob another ISA class: the check before loading
  // passes, OpenVINO fails to import the blob, and the failure is reported as what it is (the
  // remedy used to blame the ExecuTorch version, issue 31).
  const fs::path src = openvino_bundle();
  SKIP_WITHOUT_OPENVINO_BUNDLE(src);
  SKIP_WITHOUT_OPENVINO_RUNTIME();
  const auto [b, other] = blob_of_another_isa(/*keep_target=*/true);
  const ParityReport r = replay(b);
  ASSERT_TRUE(r.refused) << to_text(r);
  EXPECT_EQ(*r.refused, Status::kNotRunnableHere) << to_text(r);
  ASSERT_TRUE(r.error);
  EXPECT_EQ(r.error->kind(), ErrorKind::kTargetMismatch) << r.error->cause();
  EXPECT_NE(r.error->cause().find("could not import its compiled blob"), std::string::npos) << r.error->cause();
  EXPECT_NE(r.error->cause().find("the program's blob was compiled for '" + other + "'"), std::string::npos)
      << r.error->cause();
  EXPECT_EQ(r.error->remedy().find("ExecuTorch version"), std::string::npos) << r.error->remedy();
}
