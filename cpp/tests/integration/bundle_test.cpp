// Bundle binding against real exported programs and the real ExecuTorch runtime (XNNPACK linked).
// Every mutation happens on a copy in a scratch directory; the exported bundles are never touched.
#include <openssl/evp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <optional>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "etproof/runtime/bundle.h"
#include "etproof/core/error.h"
#include "etproof/runtime/kernels.h"
#include "etproof/runtime/registry.h"
#include "etproof/replay/replay.h"
#include "etproof/render/parity.h"
#include "etproof/core/status.h"
#include "test_support.h"

namespace etproof {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;

const char* const kPortable = "tiny-portable-fp32";
const char* const kXnnpack = "tiny-xnnpack-fp32";
const char* const kXnnpackInt8 = "tiny-xnnpack-int8-dynamic-per-channel";

fs::path exported(const std::string& name) {
  const auto root = testing::test_bundles();
  // Unset variable: a path that does not exist but still names the bundle in the skip message.
  return (root.empty() ? fs::path("$ETPROOF_TEST_BUNDLES-unset") : root) / name;
}

std::vector<uint8_t> slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void spit(const fs::path& p, const std::vector<uint8_t>& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
}

std::string sha256_hex(const std::vector<uint8_t>& bytes) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(bytes.data(), bytes.size(), md, &len, EVP_sha256(), nullptr);
  std::string s;
  static const char* hex = "0123456789abcdef";
  for (unsigned i = 0; i < len; ++i) {
    s += hex[md[i] >> 4];
    s += hex[md[i] & 15];
  }
  return s;
}

// A copy of an exported bundle in this test's scratch directory.
fs::path copy_bundle(const std::string& name) {
  const fs::path dst = testing::scratch_dir() / fs::path(name).filename();
  fs::copy(exported(name), dst, fs::copy_options::recursive);
  return dst;
}

fs::path manifest_of(const fs::path& dir) { return dir / (dir.filename().string() + ".etproof.json"); }
fs::path pte_of(const fs::path& dir) { return dir / (dir.filename().string() + ".pte"); }

json load_json(const fs::path& p) {
  std::ifstream in(p);
  return json::parse(in);
}

void save_json(const fs::path& p, const json& doc) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << to_canonical_json(doc);
}

// Replaces the bundle's .pte with `bytes` and makes the manifest's size and hash agree with it,
// so that only ExecuTorch's loader stands between the bytes and a crash.
void replace_pte_and_rehash(const fs::path& dir, const std::vector<uint8_t>& bytes) {
  spit(pte_of(dir), bytes);
  json doc = load_json(manifest_of(dir));
  doc["artifact"]["bytes"] = bytes.size();
  doc["artifact"]["sha256"] = sha256_hex(bytes);
  save_json(manifest_of(dir), doc);
}

template <typename F>
Error expect_error(ErrorKind kind, F&& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << "got " << to_string(e.kind()) << ": " << e.what();
    EXPECT_FALSE(e.remedy().empty()) << e.what();
    return e;
  }
  ADD_FAILURE() << "expected an etproof::Error of kind " << to_string(kind);
  return Error(ErrorKind::kInvalidArgument, "<none thrown>", "");
}

bool contains(const std::string& hay, const std::string& needle) { return hay.find(needle) != std::string::npos; }

HostTensor float_tensor(std::vector<int64_t> shape, float fill) {
  HostTensor t;
  t.dtype = DType::kFloat32;
  t.shape = std::move(shape);
  t.data.resize(t.numel() * 4);
  for (size_t i = 0; i < t.numel(); ++i) std::memcpy(t.data.data() + 4 * i, &fill, 4);
  return t;
}

// ---- opening and checking ---------------------------------------------------------------------

TEST(Bundle, OpensByDirectoryAndByManifestPath) {
  ETPROOF_REQUIRE_BUNDLE(exported(kXnnpack));
  const Bundle a = open_bundle(exported(kXnnpack));
  const Bundle b = open_bundle(manifest_of(exported(kXnnpack)));
  const Bundle c = open_bundle(exported(kXnnpack).string() + "/");
  EXPECT_EQ(a.manifest.name, kXnnpack);
  EXPECT_EQ(a.dir, b.dir);
  EXPECT_EQ(a.dir, c.dir);
  EXPECT_EQ(a.manifest_path, b.manifest_path);
  EXPECT_EQ(a.artifact_path.filename(), std::string(kXnnpack) + ".pte");
  EXPECT_EQ(a.goldens_dir.filename(), std::string(kXnnpack) + ".goldens");
  EXPECT_TRUE(fs::is_directory(a.goldens_dir));
  EXPECT_EQ(a.manifest.delegates, std::vector<std::string>{"XnnpackBackend"});
  EXPECT_EQ(a.manifest.inputs.at(0).shape, (std::vector<int64_t>{1, 3, 16, 16}));
}

TEST(Bundle, FindsExportedBundlesSortedByName) {
  ETPROOF_REQUIRE_BUNDLE(exported(kPortable));
  const auto found = find_bundles(testing::test_bundles());
  std::vector<std::string> names;
  for (const auto& p : found) names.push_back(p.filename().string());
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  for (const char* n : {kPortable, kXnnpack, kXnnpackInt8})
    EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
}

// A killed export leaves its staging folder (OUT/.NAME.tmp-PID-XXXX, a complete bundle inside,
// named like the bundle): it is never a column of the directory (issue 11).
TEST(Bundle, FindBundlesSkipsAnExportsStagingFolder) {
  ETPROOF_REQUIRE_BUNDLE(exported(kPortable));
  const fs::path dir = copy_bundle(kPortable);
  const fs::path staging = dir.parent_path() / (std::string(".") + kPortable + ".tmp-4194999-abcd1234");
  fs::copy(dir, staging, fs::copy_options::recursive);
  const auto found = find_bundles(dir.parent_path());
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found.front().filename(), kPortable);
}

TEST(Bundle, FlippedArtifactByteIsArtifactMismatch) {
  ETPROOF_REQUIRE_BUNDLE(exported(kXnnpack));
  const fs::path dir = copy_bundle(kXnnpack);
  auto bytes = slurp(pte_of(dir));
  bytes[bytes.size() / 2] ^= 0x01;
  spit(pte_of(dir), bytes);
  const Error e = expect_error(ErrorKind::kArtifactMismatch, [&] { open_bundle(dir); });
  EXPECT_TRUE(contains(e.cause(), std::string(kXnnpack) + ".pte")) << e.cause();
  EXPECT_TRUE(contains(e.cause(), "SHA-256")) << e.cause();
  EXPECT_TRUE(contains(e.remedy(), "re-export")) << e.remedy();
}

TEST(Bundle, TruncatedOrMissingArtifactIsArtifactMismatch) {
  ETPROOF_REQUIRE_BUNDLE(exported(kPortable));
  const fs::path dir = copy_bundle(kPortable);
  auto bytes = slurp(pte_of(dir));
  const size_t full = bytes.size();
  bytes.resize(full - 100);
  spit(pte_of(dir), bytes);
  Error e = expect_error(ErrorKind::kArtifactMismatch, [&] { open_bundle(dir); });
  EXPECT_TRUE(contains(e.cause(), std::to_string(full - 100) + " bytes, the manifest says " + std::to_string(full)))
      << e.cause();
  fs::remove(pte_of(dir));
  e = expect_error(ErrorKind::kArtifactMismatch, [&] { open_bundle(dir); });
  EXPECT_TRUE(contains(e.cause(), "missing")) << e.cause();
}

TEST(Bundle, ManifestProblemsAreManifestInvalid) {
  ETPROOF_REQUIRE_BUNDLE(exported(kPortable));
  const fs::path dir = copy_bundle(kPortable);
  // A manifest whose name is not its file's stem.
  fs::rename(manifest_of(dir), dir / "other.etproof.json");
  Error e = expect_error(ErrorKind::kManifestInvalid, [&] { open_bundle(dir); });
  EXPECT_TRUE(contains(e.cause(), "does not match the manifest's file name")) << e.cause();
  // No manifest at all.
  fs::remove(dir / "other.etproof.json");
  e = expect_error(ErrorKind::kManifestInvalid, [&] { open_bundle(dir); });
  EXPECT_TRUE(contains(e.cause(), "no manifest")) << e.cause();
  expect_error(ErrorKind::kIo, [&] { open_bundle(dir / "no-such-bundle"); });
}

TEST(Bundle, ManifestEscapingTheBundleIsRefused) {
  ETPROOF_REQUIRE_BUNDLE(exported(kPortable));
  const fs::path dir = copy_bundle(kPortable);
  json doc = load_json(manifest_of(dir));
  doc["artifact"]["file"] = "../" + std::string(kPortable) + "/" + kPortable + ".pte";
  save_json(manifest_of(dir), doc);
  const Error e = expect_error(ErrorKind::kManifestInvalid, [&] { open_bundle(dir); });
  EXPECT_TRUE(contains(e.cause(), "artifact.file")) << e.cause();
}

// ---- goldens ----------------------------------------------------------------------------------

TEST(Bundle, ReadsGoldensCheckedAgainstTheManifest) {
  ETPROOF_REQUIRE_BUNDLE(exported(kPortable));
  const Bundle b = open_bundle(exported(kPortable));
  ASSERT_EQ(b.manifest.goldens.size(), 3u);
  for (const auto& c : b.manifest.goldens) {
    const auto in = read_golden_inputs(b, c);
    const auto out = read_golden_outputs(b, c);
    ASSERT_EQ(in.count("x"), 1u);
    ASSERT_EQ(out.count("y"), 1u);
    EXPECT_EQ(in.at("x").dtype, DType::kFloat32);
    EXPECT_EQ(in.at("x").shape, (std::vector<int64_t>{1, 3, 16, 16}));
    EXPECT_EQ(out.at("y").shape, (std::vector<int64_t>{1, 4}));
  }
}

TEST(Bundle, GoldenDisagreeingWithManifestIsRefused) {
  ETPROOF_REQUIRE_BUNDLE(exported(kPortable));
  const fs::path dir = copy_bundle(kPortable);
  const Bundle b = open_bundle(dir);
  const GoldenCase& c = b.manifest.goldens.at(0);
  const fs::path file = b.goldens_dir / c.inputs.at("x");

  HostTensor wrong_dtype;
  wrong_dtype.dtype = DType::kInt8;
  wrong_dtype.shape = {1, 3, 16, 16};
  wrong_dtype.data.assign(wrong_dtype.numel(), 1);
  write_npy(file, wrong_dtype);
  // The manifest hashes every golden file (goldens[i].files): an edited one is refused by name first.
  ASSERT_FALSE(c.files.empty()) << "the export writes goldens[i].files";
  Error e = expect_error(ErrorKind::kArtifactMismatch, [&] { read_golden_inputs(b, c); });
  EXPECT_TRUE(contains(e.cause(), file.string() + ": ")) << e.cause();
  EXPECT_TRUE(contains(e.remedy(), "--allow-edited-goldens")) << e.remedy();
  // Read anyway (--allow-edited-goldens), the file is still checked against its spec.
  constexpr GoldenCheck kAnyway = GoldenCheck::kAllowEdited;
  e = expect_error(ErrorKind::kDtypeMismatch, [&] { read_golden_inputs(b, c, kAnyway); });
  EXPECT_TRUE(contains(e.cause(), "'x'") && contains(e.cause(), "int8")) << e.cause();

  write_npy(file, float_tensor({1, 3, 8, 8}, 0.5f));
  e = expect_error(ErrorKind::kShapeMismatch, [&] { read_golden_inputs(b, c, kAnyway); });
  EXPECT_TRUE(contains(e.cause(), "[1, 3, 8, 8]") && contains(e.cause(), "[1, 3, 16, 16]")) << e.cause();

  fs::remove(file);
  e = expect_error(ErrorKind::kArtifactMismatch, [&] { read_golden_inputs(b, c); });
  EXPECT_TRUE(contains(e.cause(), file.string() + ": missing")) << e.cause();
  expect_error(ErrorKind::kIo, [&] { read_golden_inputs(b, c, kAnyway); });
}

// ---- every file of a bundle is its own and as exported (issue 11 §2) -------------------------

// A golden file, the goldens folder, the .pte and the manifest, each replaced by a symbolic link to
// an identical copy outside the bundle: the bytes match, the link is still refused by name.
TEST(Bundle, SymlinksInsideABundleAreRefusedByName) {
  ETPROOF_REQUIRE_BUNDLE(exported(kPortable));
  const fs::path elsewhere = etproof::testing::tests_tmp_root() / "symlink-targets";
  fs::remove_all(elsewhere);
  fs::create_directories(elsewhere);
  const auto link_out = [&](const fs::path& inside) {
    const fs::path outside = elsewhere / inside.filename();
    fs::rename(inside, outside);
    fs::create_symlink(outside, inside);
  };
  {  // one golden file
    const fs::path dir = copy_bundle(kPortable);
    const Bundle b = open_bundle(dir);
    const GoldenCase& c = b.manifest.goldens.at(0);
    const fs::path file = b.goldens_dir / c.outputs.at("y");
    link_out(file);
    const Error e = expect_error(ErrorKind::kArtifactMismatch, [&] { read_golden_outputs(b, c); });
    EXPECT_TRUE(contains(e.cause(), file.string() + ": a symbolic link")) << e.cause();
    const ParityReport r = replay(dir);
    EXPECT_FALSE(r.passed);
    EXPECT_EQ(r.cases.at(0).status, Status::kBundleInvalid) << r.cases.at(0).detail;
    EXPECT_TRUE(contains(r.cases.at(0).detail, "a symbolic link")) << r.cases.at(0).detail;
  }
  {  // the goldens folder
    const fs::path dir = copy_bundle(kPortable);
    const Bundle b = open_bundle(dir);
    link_out(b.goldens_dir);
    const Error e = expect_error(ErrorKind::kArtifactMismatch,
                                 [&] { read_golden_inputs(b, b.manifest.goldens.at(0)); });
    EXPECT_TRUE(contains(e.cause(), b.goldens_dir.string() + ": a symbolic link")) << e.cause();
  }
  {  // the program
    const fs::path dir = copy_bundle(kPortable);
    link_out(pte_of(dir));
    const Error e = expect_error(ErrorKind::kArtifactMismatch, [&] { (void)open_bundle(dir); });
    EXPECT_TRUE(contains(e.cause(), pte_of(dir).string() + ": a symbolic link")) << e.cause();
  }
  {  // the manifest
    const fs::path dir = copy_bundle(kPortable);
    link_out(manifest_of(dir));
    const Error e = expect_error(ErrorKind::kManifestInvalid, [&] { (void)open_bundle(dir); });
    EXPECT_TRUE(contains(e.cause(), "a symbolic link")) << e.cause();
  }
}

// An edited golden output (one element nudged by far less than the bound: the numbers would agree)
// is never used silently: bundle-invalid naming the file; with allow_edited_goldens the numbers are
// shown and the case is drifted whatever they are. An untouched case of the same bundle agrees.
TEST(Bundle, AnEditedGoldenIsRefusedOrShownAsDriftNeverAgreed) {
  ETPROOF_REQUIRE_BUNDLE(exported(kPortable));
  const fs::path dir = copy_bundle(kPortable);
  const Bundle b = open_bundle(dir);
  ASSERT_GE(b.manifest.goldens.size(), 2u);
  const fs::path file = b.goldens_dir / b.manifest.goldens.at(0).outputs.at("y");
  HostTensor y = read_npy(file);
  ASSERT_EQ(y.dtype, DType::kFloat32);
  auto* v = reinterpret_cast<float*>(y.data.data());
  v[0] = std::nextafter(v[0], 1e30f);  // one ulp
  write_npy(file, y);

  const ParityReport refused = replay(dir);
  EXPECT_FALSE(refused.passed);
  EXPECT_EQ(refused.cases.at(0).status, Status::kBundleInvalid);
  EXPECT_TRUE(contains(refused.cases.at(0).detail, file.string() + ": SHA-256")) << refused.cases.at(0).detail;
  ASSERT_TRUE(refused.cases.at(0).error);
  EXPECT_EQ(refused.cases.at(0).error->kind(), ErrorKind::kArtifactMismatch);
  EXPECT_EQ(refused.cases.at(1).status, Status::kAgreed) << refused.cases.at(1).detail;

  ReplayOptions o;
  o.allow_edited_goldens = true;
  const ParityReport shown = replay(dir, o);
  EXPECT_FALSE(shown.passed);
  EXPECT_EQ(shown.cases.at(0).status, Status::kDrifted);
  EXPECT_FALSE(shown.cases.at(0).outputs.empty()) << "the numbers are measured and shown";
  EXPECT_TRUE(shown.cases.at(0).outputs.at(0).passed) << "within the bound: drifted only for the edit";
  EXPECT_TRUE(contains(shown.cases.at(0).detail, "golden edited since export")) << shown.cases.at(0).detail;
  EXPECT_EQ(shown.cases.at(1).status, Status::kAgreed) << shown.cases.at(1).detail;
  // The numbers are against the edited golden itself, as the remedy promises; the untouched case
  // keeps its plan (float64 truth on this fp32 column).
  EXPECT_EQ(shown.cases.at(0).outputs.at(0).against, "golden");
  EXPECT_TRUE(shown.cases.at(0).golden_edited);
  EXPECT_FALSE(shown.cases.at(1).golden_edited);
  EXPECT_EQ(shown.cases.at(1).outputs.at(0).against, "float64");

  // An edit the bound sees: every value of case 0's golden +1 — the program is 1 from it, a FAIL
  // against the edited golden (against truth it would still read pass).
  for (size_t i = 0; i < y.numel(); ++i) v[i] += 1.0f;
  write_npy(file, y);
  const ParityReport moved = replay(dir, o);
  ASSERT_FALSE(moved.cases.at(0).outputs.empty());
  const TensorReport& out0 = moved.cases.at(0).outputs.at(0);
  EXPECT_EQ(out0.against, "golden");
  EXPECT_FALSE(out0.passed) << "measured against the edited golden";
  EXPECT_NEAR(out0.max_abs_error, 1.0, 1e-3);
  EXPECT_EQ(moved.cases.at(0).status, Status::kDrifted);

  // Through the CLI: exit 2 (bundle-invalid) without the flag; with it exit 1 (drift), no evidence.
  const auto plain = testing::run_etproof("parity --no-ledger " + testing::quote(dir.string()));
  EXPECT_EQ(plain.rc, 2) << plain.out << plain.err;
  const auto flagged = testing::run_etproof("parity --allow-edited-goldens " + testing::quote(dir.string()));
  EXPECT_EQ(flagged.rc, 1) << flagged.out << flagged.err;
  EXPECT_TRUE(contains(flagged.out, "golden edited since export")) << flagged.out;
  EXPECT_TRUE(contains(flagged.err, "nothing recorded (--allow-edited-goldens")) << flagged.err;
}

// A golden that certifies nothing (all-NaN reference output, or every floating input non-finite),
// hashed as if exported so: golden-invalid at replay, never agreed — while a golden with one NaN
// among finite values is not refused as certifying nothing, but its float64 truth is finite
// there: the references disagree (issue 30), and the case is inconclusive, never agreed (its
// widening was once infinite, and the case passed).
TEST(Bundle, AGoldenThatCertifiesNothingIsGoldenInvalidAtReplay) {
  ETPROOF_REQUIRE_BUNDLE(exported(kPortable));
  const auto with_golden = [](const char* part, const std::function<void(float*, size_t)>& edit) {
    const fs::path dir = copy_bundle(kPortable);
    const Bundle b = open_bundle(dir);
    const GoldenCase& c = b.manifest.goldens.at(0);
    const fs::path file = b.goldens_dir / (std::string(part) == "in" ? c.inputs.at("x") : c.outputs.at("y"));
    HostTensor t = read_npy(file);
    edit(reinterpret_cast<float*>(t.data.data()), t.numel());
    write_npy(file, t);
    testing::rehash_references(dir);
    return replay(dir);
  };
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  for (const char* part : {"in", "out"}) {
    SCOPED_TRACE(part);
    const ParityReport r = with_golden(part, [&](float* v, size_t n) {
      for (size_t i = 0; i < n; ++i) v[i] = i % 2 ? nan : inf;
    });
    EXPECT_FALSE(r.passed);
    const CaseReport& c = r.cases.at(0);
    EXPECT_EQ(c.status, Status::kBundleInvalid) << c.detail;
    ASSERT_TRUE(c.error);
    EXPECT_EQ(c.error->kind(), ErrorKind::kGoldenInvalid) << c.detail;
    EXPECT_TRUE(contains(c.detail, "certifies nothing") || contains(c.detail, "would agree with it")) << c.detail;
  }
  const ParityReport one_nan = with_golden("out", [&](float* v, size_t) { v[0] = nan; });
  EXPECT_EQ(one_nan.cases.at(0).status, Status::kInconclusive) << one_nan.cases.at(0).detail;
  EXPECT_TRUE(contains(one_nan.cases.at(0).detail, "non-finite")) << one_nan.cases.at(0).detail;
  EXPECT_FALSE(one_nan.cases.at(0).error) << one_nan.cases.at(0).detail;
}

// ---- loading ----------------------------------------------------------------------------------

TEST(Bundle, ReadsDelegatesFromTheProgram) {
  ETPROOF_REQUIRE_BUNDLE(exported(kXnnpack));
  ETPROOF_REQUIRE_BUNDLE(exported(kPortable));
  const LoadedModel x = LoadedModel::load(open_bundle(exported(kXnnpack)));
  EXPECT_EQ(x.program_delegates(), std::vector<std::string>{"XnnpackBackend"});
  const LoadedModel p = LoadedModel::load(open_bundle(exported(kPortable)));
  EXPECT_TRUE(p.program_delegates().empty());
}

// ---- operators without a kernel in this binary ----------------------------------------------------

// torch.bucketize exported for XNNPACK fp32 without the export half's run check: XNNPACK leaves it
// and no kernel library of ExecuTorch 1.5.1 registers aten::bucketize.Tensor_out
// (python/etproof/fixtures/testbundles.py, KERNEL_MISSING_DIR).
const char* const kKernelMissingDir = "kernel-missing";
const char* const kBucketize = "bucketize-xnnpack-fp32";
const char* const kBucketizeOp = "aten::bucketize.Tensor_out";

TEST(Bundle, RecordedOperatorsHaveKernelsHereAndLoad) {
  ETPROOF_REQUIRE_BUNDLE(exported(kPortable));
  ETPROOF_REQUIRE_BUNDLE(exported(kXnnpack));
  const Bundle p = open_bundle(exported(kPortable));
  ASSERT_TRUE(p.manifest.operators.has_value());
  EXPECT_TRUE(std::count(p.manifest.operators->begin(), p.manifest.operators->end(), "aten::convolution.out"))
      << p.manifest.raw["operators"].dump();
  EXPECT_EQ(missing_kernels(*p.manifest.operators), std::vector<std::string>{});
  LoadedModel::load(p);
  const Bundle x = open_bundle(exported(kXnnpack));
  ASSERT_TRUE(x.manifest.operators.has_value());
  EXPECT_TRUE(x.manifest.operators->empty());  // every operator delegated
  LoadedModel::load(x);
}

TEST(Bundle, OperatorWithoutAKernelIsRefusedByNameBeforeLoading) {
  const fs::path dir = exported(kKernelMissingDir) / kBucketize;
  ETPROOF_REQUIRE_BUNDLE(dir);
  const Bundle b = open_bundle(dir);
  ASSERT_TRUE(b.manifest.operators.has_value());
  EXPECT_EQ(missing_kernels(*b.manifest.operators), std::vector<std::string>{kBucketizeOp});
  const Error e = expect_error(ErrorKind::kKernelMissing, [&] { LoadedModel::load(b); });
  EXPECT_TRUE(contains(e.cause(), std::string("bundle 'bucketize-xnnpack-fp32': its program calls an operator this "
                                              "binary has no kernel for: ") + kBucketizeOp +
                                      " (the operators its manifest records, checked against this binary's "
                                      "kernel registry before loading 'forward')"))
      << e.cause();
  EXPECT_FALSE(e.et_error().has_value()) << "refused before ExecuTorch was asked";
  EXPECT_TRUE(contains(e.remedy(), std::string(kBucketizeOp) + ": ExecuTorch's portable_kernels / optimized_kernels "
                                   "(executorch::kernels_optimized is linked here and registers no kernel under "
                                   "this name"))
      << e.remedy();
  EXPECT_TRUE(contains(e.remedy(), "decompose it into operators this binary has")) << e.remedy();
  EXPECT_EQ(status_of(e), Status::kLoadFailed);  // in a matrix: a column that cannot be judged
}

// A bundle exported before `operators` existed: ExecuTorch's own "Missing operator" line names it.
TEST(Bundle, WithoutRecordedOperatorsExecuTorchsLogNamesTheMissingOne) {
  ETPROOF_REQUIRE_BUNDLE(exported(kKernelMissingDir) / kBucketize);
  const fs::path dir = testing::scratch_dir() / kBucketize;
  fs::copy(exported(kKernelMissingDir) / kBucketize, dir, fs::copy_options::recursive);
  json doc = load_json(manifest_of(dir));
  doc.erase("operators");
  save_json(manifest_of(dir), doc);
  const Bundle b = open_bundle(dir);
  ASSERT_FALSE(b.manifest.operators.has_value());
  const Error e = expect_error(ErrorKind::kKernelMissing, [&] { LoadedModel::load(b); });
  EXPECT_TRUE(contains(e.cause(), std::string("no kernel for: ") + kBucketizeOp +
                                      " (named by ExecuTorch while loading 'forward': ")) << e.cause();
  EXPECT_EQ(e.et_error().value_or(0), 0x14u) << "OperatorMissing, kept";
  EXPECT_TRUE(contains(e.remedy(), "portable_kernels / optimized_kernels")) << e.remedy();
}

TEST(Bundle, ManifestDelegatesThatLieAreRefused) {
  ETPROOF_REQUIRE_BUNDLE(exported(kXnnpack));
  const fs::path dir = copy_bundle(kXnnpack);
  json doc = load_json(manifest_of(dir));
  doc["delegates"] = json::array();  // claims nothing was delegated; the program says otherwise
  save_json(manifest_of(dir), doc);
  const Error e = expect_error(ErrorKind::kArtifactMismatch, [&] { LoadedModel::load(open_bundle(dir)); });
  EXPECT_TRUE(contains(e.cause(), "the program contains [XnnpackBackend]")) << e.cause();
}

// An XNNPACK bundle relabelled "portable" would pass as a claim about portable kernels.
TEST(Bundle, BackendThatCannotOwnTheRecordedDelegatesIsRefused) {
  ETPROOF_REQUIRE_BUNDLE(exported(kXnnpack));
  const fs::path dir = copy_bundle(kXnnpack);
  json doc = load_json(manifest_of(dir));
  doc["backend"] = "portable";
  save_json(manifest_of(dir), doc);
  const Error e = expect_error(ErrorKind::kManifestInvalid, [&] { open_bundle(dir); });
  EXPECT_TRUE(contains(e.cause(), "'portable' cannot own delegate XnnpackBackend")) << e.cause();
}

// Labels that pick the bound must be ones the backend table knows, and agree with the manifest's
// quantization record: relabelling an fp32 program as int8 (or its float32 precision as bfloat16)
// would otherwise loosen its bound.
TEST(Bundle, EditedBackendOrRecipeLabelsAreRefused) {
  ETPROOF_REQUIRE_BUNDLE(exported(kXnnpack));
  const std::vector<std::pair<std::string, std::function<void(json&)>>> edits = {
      {"'nonesuch' is not a backend etproof knows", [](json& d) { d["backend"] = "nonesuch"; }},
      {"'bogus' is not a recipe of backend 'xnnpack'", [](json& d) { d["recipe"] = "bogus"; }},
      {"is quantized but the manifest records no quantization",
       [](json& d) { d["recipe"] = "int8-dynamic-per-channel"; }},
      // bfloat16 would pick OpenVINO's precision term, thousands of times looser than float32's
      {"precision: 'bfloat16' is not a precision backend 'xnnpack' computes recipe 'fp32' in",
       [](json& d) { d["precision"] = "bfloat16"; }},
  };
  for (const auto& [expected, edit] : edits) {
    SCOPED_TRACE(expected);
    const fs::path dir = copy_bundle(kXnnpack);
    json doc = load_json(manifest_of(dir));
    edit(doc);
    save_json(manifest_of(dir), doc);
    const Error e = expect_error(ErrorKind::kManifestInvalid, [&] { open_bundle(dir); });
    EXPECT_TRUE(contains(e.cause(), expected)) << e.cause();
    EXPECT_TRUE(contains(e.remedy(), "manifest")) << e.remedy();
  }
}

TEST(Bundle, ThePteItselfNamesItsBundle) {
  ETPROOF_REQUIRE_BUNDLE(exported(kXnnpack));
  const Bundle b = open_bundle(pte_of(exported(kXnnpack)));
  EXPECT_EQ(b.manifest.name, kXnnpack);
  EXPECT_EQ(fs::canonical(b.dir), fs::canonical(exported(kXnnpack)));
}

TEST(Bundle, TruncatedProgramWithMatchingHashIsRefusedWithoutCrashing) {
  for (const char* name : {kPortable, kXnnpack, kXnnpackInt8}) {
    ETPROOF_REQUIRE_BUNDLE(exported(name));
    const auto original = slurp(pte_of(exported(name)));
    const size_t n = original.size();
    for (size_t keep : {n - 1, n - 16, n * 3 / 4, n / 2, n / 4, size_t(64), size_t(16), size_t(8), size_t(1)}) {
      SCOPED_TRACE(std::string(name) + " truncated to " + std::to_string(keep) + " of " + std::to_string(n) + " bytes");
      const fs::path dir = copy_bundle(name);
      replace_pte_and_rehash(dir, std::vector<uint8_t>(original.begin(), original.begin() + long(keep)));
      const Bundle b = open_bundle(dir);  // the hash now agrees: only the loader can refuse
      const Error e = expect_error(ErrorKind::kLoadFailed, [&] { LoadedModel::load(b); });
      EXPECT_TRUE(e.et_error().has_value()) << "ExecuTorch's code is kept: " << e.what();
      EXPECT_TRUE(contains(e.cause(), "Error::")) << e.cause();
      // The same bytes verified at load instead of at open: refused the same way.
      const Bundle unverified = open_bundle(dir, OpenOptions{.verify_artifact = false});
      EXPECT_EQ(expect_error(ErrorKind::kLoadFailed, [&] { LoadedModel::load(unverified); }).cause(), e.cause());
    }
  }
}

// A delegate that refuses the artifact compiled for it answers DelegateInvalidCompatibility (0x30):
// XNNPACK's, for a serialization identifier it does not read (its flatbuffer's "XN01" made "XN99",
// as a newer or older XNNPACK delegate's would be). The code does not say whether the target or the
// backend's version differs, so the remedy names both and never blames only ExecuTorch's version.
TEST(Bundle, ADelegateRefusingItsArtifactIs0x30NamingTargetOrBackendVersion) {
  ETPROOF_REQUIRE_BUNDLE(exported(kXnnpack));
  auto bytes = slurp(pte_of(exported(kXnnpack)));
  const std::string id = "XN01";
  const auto at = std::search(bytes.begin(), bytes.end(), id.begin(), id.end());
  ASSERT_NE(at, bytes.end()) << "no XNNPACK flatbuffer identifier XN01 in the program";
  at[2] = '9';
  at[3] = '9';
  const fs::path dir = copy_bundle(kXnnpack);
  replace_pte_and_rehash(dir, bytes);
  const Error e = expect_error(ErrorKind::kLoadFailed, [&] { LoadedModel::load(open_bundle(dir)); });
  EXPECT_EQ(e.et_error(), std::optional<uint32_t>(0x30)) << e.what();
  EXPECT_TRUE(contains(e.cause(), "DelegateInvalidCompatibility")) << e.cause();
  EXPECT_TRUE(contains(e.cause(), "'XN99'")) << e.cause();  // XNNPACK's own words, kept
  EXPECT_TRUE(contains(e.remedy(), "compiled for another target")) << e.remedy();
  EXPECT_TRUE(contains(e.remedy(), "another version of the backend")) << e.remedy();
  EXPECT_FALSE(contains(e.remedy(), "with the ExecuTorch version this binary links")) << e.remedy();
}

TEST(Bundle, CorruptedProgramWithMatchingHashNeverCrashes) {
  ETPROOF_REQUIRE_BUNDLE(exported(kXnnpack));
  const auto original = slurp(pte_of(exported(kXnnpack)));
  // The program's magic ("ET12" at bytes 4..7) damaged: refused by ExecuTorch's loader.
  {
    const fs::path dir = copy_bundle(kXnnpack);
    auto bytes = original;
    bytes[5] ^= 0xff;
    replace_pte_and_rehash(dir, bytes);
    const Error e = expect_error(ErrorKind::kLoadFailed, [&] { LoadedModel::load(open_bundle(dir)); });
    EXPECT_TRUE(e.et_error().has_value()) << e.what();
  }
  // Bytes flipped throughout the file: each either loads (corrupted weights are still a valid
  // program) or is refused with an etproof::Error; the process never crashes.
  size_t refused = 0, loaded = 0;
  for (size_t off = 0; off < original.size(); off += 97) {
    const fs::path dir = copy_bundle(kXnnpack);
    auto bytes = original;
    bytes[off] ^= 0x5a;
    replace_pte_and_rehash(dir, bytes);
    try {
      LoadedModel m = LoadedModel::load(open_bundle(dir));
      m.run({{"x", float_tensor({1, 3, 16, 16}, 0.25f)}});
      ++loaded;
    } catch (const Error& e) {
      ++refused;
    }
  }
  EXPECT_GT(refused, 0u);
  EXPECT_EQ(refused + loaded, (original.size() + 96) / 97);
}

// ---- reading the program once ------------------------------------------------------------------

TEST(Bundle, VerifiedBundleHoldsTheBytesItHashed) {
  ETPROOF_REQUIRE_BUNDLE(exported(kXnnpack));
  const Bundle b = open_bundle(exported(kXnnpack));
  EXPECT_TRUE(b.artifact_verified);
  ASSERT_NE(b.program, nullptr);
  EXPECT_EQ(b.program->size(), b.manifest.artifact.bytes);
  EXPECT_EQ(sha256_hex(*b.program), b.manifest.artifact.sha256);
  EXPECT_TRUE(*b.program == slurp(pte_of(exported(kXnnpack))));
  const Bundle copy = b;
  EXPECT_EQ(copy.program.get(), b.program.get()) << "copies of a Bundle share its bytes";
}

// The loader runs the bytes that were hashed: the .pte is not read again, so replacing or removing
// it after open_bundle changes nothing.
TEST(Bundle, LoadRunsTheVerifiedBytesWithoutReadingTheFileAgain) {
  ETPROOF_REQUIRE_BUNDLE(exported(kXnnpack));
  ETPROOF_REQUIRE_BUNDLE(exported(kPortable));
  const fs::path dir = copy_bundle(kXnnpack);
  const Bundle b = open_bundle(dir);
  spit(pte_of(dir), slurp(pte_of(exported(kPortable))));  // another valid program, unhashed
  LoadedModel m = LoadedModel::load(b);
  EXPECT_EQ(m.program_delegates(), std::vector<std::string>{"XnnpackBackend"}) << "the verified program ran";
  fs::remove(pte_of(dir));
  LoadedModel again = LoadedModel::load(b);
  const GoldenCase& c = b.manifest.goldens.at(0);
  EXPECT_EQ(again.run(read_golden_inputs(b, c)).at("y").data, m.run(read_golden_inputs(b, c)).at("y").data);
}

// A model keeps its program alive after its Bundle is gone, and nothing else keeps it after the
// model is gone: a caller that opens bundles one at a time holds one program at a time.
TEST(Bundle, ProgramBytesLiveAsLongAsTheModelAndNoLonger) {
  ETPROOF_REQUIRE_BUNDLE(exported(kXnnpack));
  std::optional<Bundle> b(open_bundle(exported(kXnnpack)));
  const std::weak_ptr<const std::vector<uint8_t>> bytes = b->program;
  const auto inputs = read_golden_inputs(*b, b->manifest.goldens.at(0));
  std::optional<LoadedModel> m(LoadedModel::load(*b));
  b.reset();
  EXPECT_FALSE(bytes.expired()) << "the model holds its program";
  EXPECT_EQ(m->run(inputs).at("y").shape, (std::vector<int64_t>{1, 4}));
  m.reset();
  EXPECT_TRUE(bytes.expired()) << "the program outlived its bundle and its model";
}

// A caller keeping many verified Bundles drops their bytes; load then reads the file again (once,
// unhashed), and still refuses a file that is no longer the manifest's size.
TEST(Bundle, VerifiedBundleWithoutItsBytesReadsTheFileAtLoad) {
  ETPROOF_REQUIRE_BUNDLE(exported(kXnnpack));
  const fs::path dir = copy_bundle(kXnnpack);
  Bundle b = open_bundle(dir);
  b.program.reset();
  LoadedModel m = LoadedModel::load(b);
  EXPECT_EQ(m.program_delegates(), std::vector<std::string>{"XnnpackBackend"});
  EXPECT_EQ(m.run(read_golden_inputs(b, b.manifest.goldens.at(0))).at("y").shape, (std::vector<int64_t>{1, 4}));
  auto bytes = slurp(pte_of(dir));
  bytes.resize(bytes.size() - 1);
  spit(pte_of(dir), bytes);
  const Error e = expect_error(ErrorKind::kArtifactMismatch, [&] { LoadedModel::load(b); });
  EXPECT_TRUE(contains(e.cause(), "is not the " + std::to_string(b.manifest.artifact.bytes) + " bytes")) << e.cause();
}

TEST(Bundle, OpeningWithoutVerifyingReadsOnlyTheManifest) {
  ETPROOF_REQUIRE_BUNDLE(exported(kXnnpack));
  const fs::path dir = copy_bundle(kXnnpack);
  fs::remove(pte_of(dir));
  Bundle b = open_bundle(dir, OpenOptions{.verify_artifact = false});
  EXPECT_FALSE(b.artifact_verified);
  EXPECT_EQ(b.program, nullptr);
  EXPECT_EQ(b.manifest.delegates, std::vector<std::string>{"XnnpackBackend"});
  EXPECT_EQ(b.artifact_path.filename(), pte_of(dir).filename());
  Error e = expect_error(ErrorKind::kArtifactMismatch, [&] { verify_artifact(b); });
  EXPECT_TRUE(contains(e.cause(), "missing (the manifest names it as the artifact)")) << e.cause();
  EXPECT_FALSE(b.artifact_verified);
  e = expect_error(ErrorKind::kArtifactMismatch, [&] { LoadedModel::load(b); });
  EXPECT_TRUE(contains(e.cause(), "missing")) << e.cause();
  // The manifest itself is still checked.
  json doc = load_json(manifest_of(dir));
  doc["recipe"] = "no-such-recipe";
  save_json(manifest_of(dir), doc);
  expect_error(ErrorKind::kManifestInvalid, [&] { open_bundle(dir, OpenOptions{.verify_artifact = false}); });
}

// Verified later (verify_artifact, or by LoadedModel::load), a bundle is refused exactly as
// open_bundle would have refused it, and otherwise loads and runs.
TEST(Bundle, UnverifiedBundleIsVerifiedBeforeItLoads) {
  ETPROOF_REQUIRE_BUNDLE(exported(kXnnpack));
  const fs::path dir = copy_bundle(kXnnpack);
  auto bytes = slurp(pte_of(dir));
  bytes[bytes.size() / 2] ^= 0x01;
  spit(pte_of(dir), bytes);
  const Error at_open = expect_error(ErrorKind::kArtifactMismatch, [&] { open_bundle(dir); });
  Bundle b = open_bundle(dir, OpenOptions{.verify_artifact = false});
  EXPECT_EQ(expect_error(ErrorKind::kArtifactMismatch, [&] { LoadedModel::load(b); }).cause(), at_open.cause());
  EXPECT_EQ(expect_error(ErrorKind::kArtifactMismatch, [&] { verify_artifact(b); }).cause(), at_open.cause());

  Bundle good = open_bundle(exported(kXnnpack), OpenOptions{.verify_artifact = false});
  LoadedModel direct = LoadedModel::load(good);
  EXPECT_EQ(good.program, nullptr) << "load verified a copy; the caller's Bundle is unchanged";
  verify_artifact(good);
  EXPECT_TRUE(good.artifact_verified);
  ASSERT_NE(good.program, nullptr);
  EXPECT_EQ(sha256_hex(*good.program), good.manifest.artifact.sha256);
  LoadedModel verified = LoadedModel::load(good);
  const auto inputs = read_golden_inputs(good, good.manifest.goldens.at(0));
  EXPECT_EQ(direct.run(inputs).at("y").data, verified.run(inputs).at("y").data);
}

// A bundle whose delegate this binary cannot run is refused from its manifest alone: the artifact
// is never read (here it does not even exist).
TEST(Bundle, UnrunnableDelegateIsRefusedBeforeTheArtifactIsRead) {
  ETPROOF_REQUIRE_BUNDLE(exported(kXnnpack));
  const fs::path dir = copy_bundle(kXnnpack);
  json doc = load_json(manifest_of(dir));
  doc["backend"] = "coreml";  // a Core ML program, as far as the manifest says
  doc["delegates"] = json::array({"CoreMLBackend"});
  save_json(manifest_of(dir), doc);
  fs::remove(pte_of(dir));
  const Bundle b = open_bundle(dir, OpenOptions{.verify_artifact = false});
  const DelegateAvailability avail = delegate_availability(b.manifest.delegates);
  EXPECT_FALSE(avail.ok());
  EXPECT_EQ(avail.not_linked, std::vector<std::string>{"CoreMLBackend"});
  EXPECT_TRUE(avail.unavailable.empty());
  EXPECT_NE(std::find(avail.registered.begin(), avail.registered.end(), "XnnpackBackend"), avail.registered.end());
}

// A bundle with a data file: every file hashed at open, no bytes kept (ExecuTorch loads by path),
// a changed data file refused by name.
TEST(Bundle, DataFilesAreHashedAndKeepNoBytes) {
  ETPROOF_REQUIRE_BUNDLE(exported(kXnnpack));
  const fs::path dir = copy_bundle(kXnnpack);
  const std::vector<uint8_t> data(3000, 0x2a);
  spit(dir / "weights.ptd", data);
  json doc = load_json(manifest_of(dir));
  doc["data_files"] = json::array({{{"file", "weights.ptd"}, {"bytes", data.size()}, {"sha256", sha256_hex(data)}}});
  save_json(manifest_of(dir), doc);
  const Bundle b = open_bundle(dir);
  EXPECT_TRUE(b.artifact_verified);
  EXPECT_EQ(b.program, nullptr);
  auto changed = data;
  changed[1234] ^= 1;
  spit(dir / "weights.ptd", changed);
  const Error e = expect_error(ErrorKind::kArtifactMismatch, [&] { open_bundle(dir); });
  EXPECT_TRUE(contains(e.cause(), "weights.ptd: SHA-256")) << e.cause();
  EXPECT_FALSE(contains(e.cause(), ".pte")) << "the program itself matched: " << e.cause();
}

// Inputs reach ExecuTorch as views of the caller's bytes; it only reads them.
TEST(Bundle, RunLeavesItsInputsUnchanged) {
  for (const char* name : {kPortable, kXnnpack, kXnnpackInt8}) {
    ETPROOF_REQUIRE_BUNDLE(exported(name));
    SCOPED_TRACE(name);
    const Bundle b = open_bundle(exported(name));
    LoadedModel m = LoadedModel::load(b);
    const auto first = read_golden_inputs(b, b.manifest.goldens.at(0));
    const auto first_copy = first;
    const auto y1 = m.run(first).at("y");
    EXPECT_EQ(first.at("x").data, first_copy.at("x").data);
    // Another input, then the first again: the output follows the input given, not a stale view.
    const auto other = m.run({{"x", float_tensor({1, 3, 16, 16}, 0.75f)}}).at("y");
    EXPECT_NE(other.data, y1.data);
    EXPECT_EQ(m.run(first).at("y").data, y1.data);
  }
}

// ---- running ----------------------------------------------------------------------------------

TEST(Bundle, WrongInputShapeIsRefusedBeforeRunning) {
  ETPROOF_REQUIRE_BUNDLE(exported(kXnnpack));
  LoadedModel m = LoadedModel::load(open_bundle(exported(kXnnpack)));
  Error e = expect_error(ErrorKind::kShapeMismatch, [&] { m.run({{"x", float_tensor({1, 3, 8, 8}, 0.5f)}}); });
  EXPECT_TRUE(contains(e.cause(), "input 'x'")) << e.cause();
  EXPECT_TRUE(contains(e.cause(), "[1, 3, 8, 8] given, the manifest says [1, 3, 16, 16]")) << e.cause();
  EXPECT_FALSE(e.et_error().has_value()) << "refused by etproof, not by ExecuTorch";
  e = expect_error(ErrorKind::kShapeMismatch, [&] { m.run({{"x", float_tensor({3, 16, 16}, 0.5f)}}); });
  EXPECT_TRUE(contains(e.cause(), "input 'x'")) << e.cause();
  // The model is still usable after a refusal.
  EXPECT_EQ(m.run({{"x", float_tensor({1, 3, 16, 16}, 0.5f)}}).at("y").shape, (std::vector<int64_t>{1, 4}));
}

TEST(Bundle, WrongInputDtypeIsRefusedBeforeRunning) {
  ETPROOF_REQUIRE_BUNDLE(exported(kPortable));
  LoadedModel m = LoadedModel::load(open_bundle(exported(kPortable)));
  HostTensor t;
  t.dtype = DType::kFloat64;
  t.shape = {1, 3, 16, 16};
  t.data.resize(t.numel() * 8);
  const Error e = expect_error(ErrorKind::kDtypeMismatch, [&] { m.run({{"x", t}}); });
  EXPECT_TRUE(contains(e.cause(), "input 'x': dtype float64 given, the manifest says float32")) << e.cause();
  EXPECT_FALSE(e.et_error().has_value());
}

TEST(Bundle, MissingOrUnknownInputsAreRefused) {
  ETPROOF_REQUIRE_BUNDLE(exported(kPortable));
  LoadedModel m = LoadedModel::load(open_bundle(exported(kPortable)));
  Error e = expect_error(ErrorKind::kInvalidArgument, [&] { m.run({}); });
  EXPECT_TRUE(contains(e.cause(), "input 'x' not given")) << e.cause();
  e = expect_error(ErrorKind::kInvalidArgument,
                   [&] { m.run({{"x", float_tensor({1, 3, 16, 16}, 0)}, {"z", float_tensor({1}, 0)}}); });
  EXPECT_TRUE(contains(e.cause(), "unknown input 'z'")) << e.cause();
  HostTensor short_data = float_tensor({1, 3, 16, 16}, 0);
  short_data.data.resize(10);
  e = expect_error(ErrorKind::kInvalidArgument, [&] { m.run({{"x", short_data}}); });
  EXPECT_TRUE(contains(e.cause(), "holds 10 bytes")) << e.cause();
}

// Loose agreement only: the real gate (derived bounds) is gate.cpp's job.
TEST(Bundle, TinyBundlesRunCloseToTheirGoldens) {
  for (const char* name : {kPortable, kXnnpack, kXnnpackInt8}) {
    ETPROOF_REQUIRE_BUNDLE(exported(name));
    SCOPED_TRACE(name);
    const Bundle b = open_bundle(exported(name));
    LoadedModel model = LoadedModel::load(b);
    const bool quantized = b.manifest.recipe != "fp32";
    ASSERT_FALSE(b.manifest.goldens.empty());
    for (const auto& c : b.manifest.goldens) {
      const auto out = model.run(read_golden_inputs(b, c));
      const auto ref = read_golden_outputs(b, c).at("y").to_double();
      const HostTensor& y = out.at("y");
      EXPECT_EQ(y.dtype, DType::kFloat32);
      ASSERT_EQ(y.shape, (std::vector<int64_t>{1, 4}));
      const auto got = y.to_double();
      double max_ref = 0, max_err = 0, dot = 0, ng = 0, nr = 0;
      for (size_t i = 0; i < ref.size(); ++i) {
        max_ref = std::max(max_ref, std::abs(ref[i]));
        max_err = std::max(max_err, std::abs(got[i] - ref[i]));
        dot += got[i] * ref[i];
        ng += got[i] * got[i];
        nr += ref[i] * ref[i];
      }
      const double tol = quantized ? 0.1 * max_ref + 1e-2 : 1e-4 * max_ref + 1e-5;
      EXPECT_LE(max_err, tol) << "case " << c.id;
      EXPECT_GT(dot / std::sqrt(ng * nr), quantized ? 0.98 : 0.99999) << "case " << c.id;
    }
  }
}

TEST(Bundle, LoadedModelIsMovable) {
  ETPROOF_REQUIRE_BUNDLE(exported(kXnnpack));
  LoadedModel a = LoadedModel::load(open_bundle(exported(kXnnpack)));
  LoadedModel b = std::move(a);
  EXPECT_EQ(b.program_delegates(), std::vector<std::string>{"XnnpackBackend"});
  const auto first = b.run({{"x", float_tensor({1, 3, 16, 16}, 0.5f)}}).at("y");
  const auto second = b.run({{"x", float_tensor({1, 3, 16, 16}, 0.5f)}}).at("y");
  EXPECT_EQ(first.data, second.data) << "the same input twice gives the same bytes";
}

// ---- shapes and inputs beyond one fixed float tensor (python/etproof/fixtures/shapes.py) ---------

// build/test-bundles/shapes/ (python/etproof/fixtures/testbundles.py SHAPE_BUNDLES).
const char* const kDynBatch = "shapes/dynbatch-xnnpack-fp32";  // x float32 [-1, 6], Dim batch 1..8

// Every golden case of `name` replays and passes its bound; returns the report.
ParityReport expect_all_cases_pass(const std::string& name) {
  const Bundle b = open_bundle(exported(name));
  const ParityReport r = run_parity(b);
  EXPECT_TRUE(r.passed) << name;
  EXPECT_EQ(r.cases.size(), b.manifest.goldens.size()) << name;
  return r;
}

TEST(Shapes, DynamicBatchIsRecordedWithItsRangeAndJudgedAtEveryGoldenSize) {
  for (const char* name : {"shapes/dynbatch-portable-fp32", kDynBatch, "shapes/dynbatch-xnnpack-int8-dynamic-per-channel"}) {
    ETPROOF_REQUIRE_BUNDLE(exported(name));
    const Bundle b = open_bundle(exported(name));
    const TensorSpec& x = b.manifest.inputs.at(0);
    EXPECT_EQ(x.shape, (std::vector<int64_t>{-1, 6})) << name;
    ASSERT_EQ(x.dynamic_dims.size(), 1u) << name;
    EXPECT_EQ(x.dynamic_dims[0].axis, 0);
    EXPECT_EQ(x.dynamic_dims[0].name, "batch");
    EXPECT_EQ(x.dynamic_dims[0].min, 1);
    EXPECT_EQ(x.dynamic_dims[0].max, 8);
    EXPECT_EQ(b.manifest.outputs.at(0).shape, (std::vector<int64_t>{-1, 3})) << name;
    // y's axis 0 is x's: the same torch.export symbol, recorded under the input's Dim.
    ASSERT_EQ(b.manifest.outputs.at(0).dynamic_dims.size(), 1u) << name;
    EXPECT_EQ(b.manifest.outputs.at(0).dynamic_dims[0].axis, 0);
    EXPECT_EQ(b.manifest.outputs.at(0).dynamic_dims[0].name, "batch");
    // The goldens sit at the minimum, one size between and the maximum, and each is replayed.
    std::set<int64_t> sizes;
    for (const auto& c : b.manifest.goldens) sizes.insert(read_golden_inputs(b, c).at("x").shape.at(0));
    EXPECT_EQ(sizes, (std::set<int64_t>{1, 3, 8})) << name;
    expect_all_cases_pass(name);
  }
}

// A program that ran and returned an output of another shape than the inputs imply is a drift (of
// shape) naming the delegate — never bundle-invalid with a re-export remedy: the bundle is fine.
// OpenVINO's delegate (OpenvinoBackend; 2026.4.1 under executorch 1.5.1) returns the dynamic batch at its upper
// bound, [8, 3] for batch 1 and 3; the manifest records y's axis 0 as the input's Dim 'batch'
// (outputs[0].dynamic_dims), so LoadedModel::run refuses it as output-shape-mismatch. Where a release
// fixes that, every case must agree instead.
TEST(Shapes, AnOutputOfAnotherShapeThanTheInputsImplyIsADriftOfShapeNamingTheDelegate) {
  const std::string name = "shapes/dynbatch-openvino-fp32";
  ETPROOF_REQUIRE_BUNDLE(exported(name));
  const Bundle b = open_bundle(exported(name));
  ASSERT_EQ(b.manifest.outputs.at(0).dynamic_dims.size(), 1u);
  EXPECT_EQ(b.manifest.outputs.at(0).dynamic_dims[0].name, "batch");
  const ParityReport r = replay(exported(name));
  if (r.refused && (*r.refused == Status::kNotLinked || *r.refused == Status::kUnavailable))
    GTEST_SKIP() << name << ": " << to_string(*r.refused) << " here";
  ASSERT_EQ(r.cases.size(), b.manifest.goldens.size()) << to_text(r);
  LoadedModel m = LoadedModel::load(b);
  size_t shape_drifts = 0;
  for (size_t i = 0; i < r.cases.size(); ++i) {
    const CaseReport& c = r.cases[i];
    const int64_t batch = read_golden_inputs(b, b.manifest.goldens[i]).at("x").shape.at(0);
    try {
      EXPECT_EQ(m.run(read_golden_inputs(b, b.manifest.goldens[i])).at("y").shape, (std::vector<int64_t>{batch, 3}));
      EXPECT_EQ(c.status, Status::kAgreed) << c.case_id << ": " << c.detail;
    } catch (const Error& e) {
      ASSERT_EQ(e.kind(), ErrorKind::kOutputShapeMismatch) << e.what();
      ++shape_drifts;
      EXPECT_EQ(c.status, Status::kDrifted) << c.case_id << ": " << c.detail;
      const std::vector<std::string> parts{"output 'y': shape [",
                                           "the inputs' dimension 'batch', given " + std::to_string(batch),
                                           "delegate OpenvinoBackend"};
      for (const std::string& part : parts) {
        EXPECT_TRUE(contains(c.detail, part)) << c.detail;
        EXPECT_TRUE(contains(e.cause(), part)) << e.cause();
      }
      EXPECT_FALSE(contains(e.remedy(), "re-export the bundle")) << e.remedy();
    }
  }
  const std::string text = to_text(r);
  EXPECT_FALSE(contains(text, "re-export")) << text;
  EXPECT_FALSE(contains(text, "bundle-invalid")) << text;
  if (shape_drifts) EXPECT_TRUE(contains(text, "why: bundle '" + b.manifest.name + "' output 'y': shape ")) << text;
}

TEST(Shapes, ASizeOutsideTheDynamicRangeIsRefusedByNameBeforeRunning) {
  ETPROOF_REQUIRE_BUNDLE(exported(kDynBatch));
  LoadedModel m = LoadedModel::load(open_bundle(exported(kDynBatch)));
  for (int64_t batch : {1, 8})  // the range's ends run
    EXPECT_EQ(m.run({{"x", float_tensor({batch, 6}, 0.5f)}}).at("y").shape, (std::vector<int64_t>{batch, 3}));
  for (int64_t batch : {0, 9}) {
    const Error e = expect_error(ErrorKind::kShapeMismatch, [&] { (void)m.run({{"x", float_tensor({batch, 6}, 0.5f)}}); });
    EXPECT_TRUE(contains(e.cause(), "dimension 0 ('batch') is " + std::to_string(batch))) << e.cause();
    EXPECT_TRUE(contains(e.cause(), "outside the range 1..8")) << e.cause();
  }
  // A static dimension of a dynamic input is still fixed.
  expect_error(ErrorKind::kShapeMismatch, [&] { (void)m.run({{"x", float_tensor({2, 5}, 0.5f)}}); });
}

TEST(Shapes, WithoutARecordedRangeTheProgramsUpperBoundStillRefuses) {
  // A manifest from before dynamic_dims (or written by hand) has -1 and no range: the program's
  // own upper bound (the size ExecuTorch planned memory for) is what refuses.
  ETPROOF_REQUIRE_BUNDLE(exported(kDynBatch));
  const fs::path dir = copy_bundle(kDynBatch);
  json doc = load_json(manifest_of(dir));
  doc["inputs"][0].erase("dynamic_dims");
  doc["outputs"][0].erase("dynamic_dims");  // named after the input's Dim, absent before the field too
  save_json(manifest_of(dir), doc);
  LoadedModel m = LoadedModel::load(open_bundle(dir));
  EXPECT_EQ(m.run({{"x", float_tensor({8, 6}, 0.5f)}}).at("y").shape, (std::vector<int64_t>{8, 3}));
  const Error e = expect_error(ErrorKind::kShapeMismatch, [&] { (void)m.run({{"x", float_tensor({9, 6}, 0.5f)}}); });
  EXPECT_TRUE(contains(e.cause(), "above the program's upper bound 8")) << e.cause();
}

TEST(Shapes, ADynamicDimsEntryOnAStaticAxisIsManifestInvalid) {
  ETPROOF_REQUIRE_BUNDLE(exported(kDynBatch));
  const fs::path dir = copy_bundle(kDynBatch);
  json doc = load_json(manifest_of(dir));
  doc["inputs"][0]["dynamic_dims"][0]["axis"] = 1;
  save_json(manifest_of(dir), doc);
  const Error e = expect_error(ErrorKind::kManifestInvalid, [&] { (void)open_bundle(dir); });
  EXPECT_TRUE(contains(e.cause(), "inputs[0].dynamic_dims[0].axis")) << e.cause();
}

TEST(Shapes, IntegerBoolAndScalarShapedInputsRunAndAgree) {
  for (const char* name : {"shapes/tokens-portable-fp32", "shapes/tokens-xnnpack-fp32"}) {
    ETPROOF_REQUIRE_BUNDLE(exported(name));
    const Bundle b = open_bundle(exported(name));
    ASSERT_EQ(b.manifest.inputs.size(), 3u);
    EXPECT_EQ(b.manifest.inputs[0].dtype, DType::kInt64) << "token ids";
    EXPECT_EQ(b.manifest.inputs[1].dtype, DType::kBool) << "mask";
    EXPECT_EQ(b.manifest.inputs[2].dtype, DType::kFloat32);
    EXPECT_TRUE(b.manifest.inputs[2].shape.empty()) << "scalar-shaped";
    EXPECT_EQ(b.manifest.outputs.at(1).dtype, DType::kInt64) << "an integer output, compared exactly";
    expect_all_cases_pass(name);
  }
}

TEST(Shapes, AProgramWithoutInputsRunsAndAgrees) {
  ETPROOF_REQUIRE_BUNDLE(exported("shapes/noinputs-portable-fp32"));
  const Bundle b = open_bundle(exported("shapes/noinputs-portable-fp32"));
  EXPECT_TRUE(b.manifest.inputs.empty());
  LoadedModel m = LoadedModel::load(b);
  EXPECT_EQ(m.run({}).at("y").shape, (std::vector<int64_t>{2, 3}));
  expect_all_cases_pass("shapes/noinputs-portable-fp32");
}

// ---- weights outside the program: NAME.ptd (python/etproof/fixtures/external.py) ----------------

// build/test-bundles/ptd/ (python/etproof/fixtures/testbundles.py PTD_BUNDLES): external_weights, so the
// conv and linear weights sit in NAME.ptd, read through ExecuTorch's named-data map.
const char* const kPtdPortable = "ptd/extweights-portable-fp32";
const char* const kPtdXnnpack = "ptd/extweights-xnnpack-fp32";

std::string ptd_name(const fs::path& dir) { return dir.filename().string() + ".ptd"; }

TEST(Ptd, BundleListsItsDataFileAndPassesEveryGolden) {
  for (const char* name : {kPtdPortable, kPtdXnnpack}) {
    ETPROOF_REQUIRE_BUNDLE(exported(name));
    SCOPED_TRACE(name);
    const fs::path dir = exported(name);
    const Bundle b = open_bundle(dir);
    ASSERT_EQ(b.manifest.data_files.size(), 1u);
    const FileRef& df = b.manifest.data_files[0];
    EXPECT_EQ(df.file, ptd_name(dir));
    const auto bytes = slurp(dir / df.file);
    EXPECT_EQ(df.bytes, bytes.size());
    EXPECT_EQ(df.sha256, sha256_hex(bytes));
    // The weights moved: the program is smaller than its data (a 288x10 linear and a 3x3 conv).
    EXPECT_LT(b.manifest.artifact.bytes, df.bytes);
    EXPECT_TRUE(b.artifact_verified);
    const ParityReport r = expect_all_cases_pass(name);
    EXPECT_EQ(r.cases.size(), 2u);
  }
}

TEST(Ptd, AChangedOrTruncatedDataFileIsArtifactMismatchNamingIt) {
  for (const char* name : {kPtdPortable, kPtdXnnpack}) {
    ETPROOF_REQUIRE_BUNDLE(exported(name));
    SCOPED_TRACE(name);
    const fs::path dir = copy_bundle(name);
    const fs::path ptd = dir / ptd_name(dir);
    const auto good = slurp(ptd);
    auto flipped = good;
    flipped[flipped.size() / 2] ^= 0x40;
    spit(ptd, flipped);
    Error e = expect_error(ErrorKind::kArtifactMismatch, [&] { (void)open_bundle(dir); });
    EXPECT_TRUE(contains(e.cause(), ptd_name(dir) + ": SHA-256")) << e.cause();
    EXPECT_FALSE(contains(e.cause(), ".pte")) << "the program itself matched: " << e.cause();
    spit(ptd, std::vector<uint8_t>(good.begin(), good.begin() + good.size() / 2));
    e = expect_error(ErrorKind::kArtifactMismatch, [&] { (void)open_bundle(dir); });
    EXPECT_TRUE(contains(e.cause(), ptd_name(dir) + ": " + std::to_string(good.size() / 2) + " bytes, the manifest says " +
                                        std::to_string(good.size())))
        << e.cause();
  }
}

TEST(Ptd, AMissingDataFileIsRefusedByName) {
  ETPROOF_REQUIRE_BUNDLE(exported(kPtdXnnpack));
  const fs::path dir = copy_bundle(kPtdXnnpack);
  fs::remove(dir / ptd_name(dir));
  const Error e = expect_error(ErrorKind::kArtifactMismatch, [&] { (void)open_bundle(dir); });
  EXPECT_TRUE(contains(e.cause(), ptd_name(dir) + ": missing (the manifest names it as the data file)")) << e.cause();
}

// Bytes that match the manifest but are not the program's weights (truncated and rehashed, the
// other backend's .ptd, or none listed at all) reach ExecuTorch's own loader: a typed error,
// never a crash.
TEST(Ptd, DataExecuTorchCannotUseIsATypedErrorNotACrash) {
  ETPROOF_REQUIRE_BUNDLE(exported(kPtdPortable));
  ETPROOF_REQUIRE_BUNDLE(exported(kPtdXnnpack));
  const auto load_and_run = [](const fs::path& dir) {
    const Bundle b = open_bundle(dir);
    LoadedModel m = LoadedModel::load(b);
    (void)m.run(read_golden_inputs(b, b.manifest.goldens.at(0)));
  };
  const auto rehash_ptd = [](const fs::path& dir, const std::vector<uint8_t>& bytes) {
    spit(dir / ptd_name(dir), bytes);
    json doc = load_json(manifest_of(dir));
    doc["data_files"][0]["bytes"] = bytes.size();
    doc["data_files"][0]["sha256"] = sha256_hex(bytes);
    save_json(manifest_of(dir), doc);
  };
  for (const char* name : {kPtdPortable, kPtdXnnpack}) {
    SCOPED_TRACE(name);
    const fs::path dir = copy_bundle(name);
    const auto good = slurp(dir / ptd_name(dir));
    for (size_t keep : {size_t(0), size_t(16), good.size() / 2, good.size() - 1}) {
      SCOPED_TRACE(keep);
      rehash_ptd(dir, std::vector<uint8_t>(good.begin(), good.begin() + long(keep)));
      const Error e = expect_error(ErrorKind::kLoadFailed, [&] { load_and_run(dir); });
      EXPECT_TRUE(e.et_error().has_value()) << "refused by ExecuTorch's loader: " << e.what();
      EXPECT_TRUE(contains(e.cause(), "with its data file " + (dir / ptd_name(dir)).string())) << e.cause();
    }
    fs::remove_all(dir);
  }
  // The other backend's weights: a well-formed .ptd without this program's keys.
  const fs::path dir = copy_bundle(kPtdPortable);
  const fs::path other = exported(kPtdXnnpack);
  rehash_ptd(dir, slurp(other / ptd_name(other)));
  const Error e = expect_error(ErrorKind::kLoadFailed, [&] { load_and_run(dir); });
  EXPECT_TRUE(e.et_error().has_value()) << e.what();
  EXPECT_TRUE(contains(e.cause(), "with its data file " + (dir / ptd_name(dir)).string())) << e.cause();
  // No data file listed: the program's weights are nowhere.
  fs::remove(dir / ptd_name(dir));
  json doc = load_json(manifest_of(dir));
  doc.erase("data_files");
  save_json(manifest_of(dir), doc);
  const Error none = expect_error(ErrorKind::kLoadFailed, [&] { load_and_run(dir); });
  EXPECT_TRUE(none.et_error().has_value()) << none.what();
}

}  // namespace
}  // namespace etproof
