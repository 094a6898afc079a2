// Untrusted documents and filesystems (issue 11): every JSON document the runtime half reads is
// parsed with a depth limit and any exception of the JSON library becomes a typed error; one bad
// bundle in a matrix directory is one bundle-invalid line; filesystem errors are io errors and a
// failed allocation is out-of-memory, never "internal". Each case asserts the error kind and that
// nothing was written; the cases beside them show what must still be read. Here (integration):
// the cases on exported bundles; those with none are unit/untrusted_input_test.cpp's.
#include <pthread.h>

#include <chrono>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "etproof/core/backend_table.h"
#include "etproof/runtime/bundle.h"
#include "etproof/evidence/coverage.h"
#include "etproof/core/error.h"
#include "etproof/replay/inspect.h"
#include "etproof/evidence/ledger.h"
#include "etproof/core/manifest.h"
#include "etproof/replay/matrix.h"
#include "etproof/render/matrix.h"
#include "etproof/replay/replay.h"
#include "etproof/render/parity.h"
#include "etproof/runtime/run.h"
#include "etproof/core/xfail.h"
#include "test_support.h"
#include "untrusted_support.h"

#if defined(__SANITIZE_ADDRESS__)
#define ETPROOF_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ETPROOF_UNDER_ASAN 1
#endif
#endif

namespace etproof {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::quote;
using testing::scratch_dir;
using testing::slurp;
using testing::test_bundles;

using testing::kDeep;
using testing::nested_arrays;
using testing::on_small_stack;
using testing::snapshot;

// The one *.etproof.json in a bundle directory.
fs::path manifest_of(const fs::path& bundle) {
  for (const auto& e : fs::directory_iterator(bundle))
    if (e.path().filename().string().ends_with(".etproof.json")) return e.path();
  return {};
}

// Adds `"x": VALUE` (raw JSON text) to the manifest's top-level object: an unknown field, which a
// reader ignores, so only the value itself can be what is refused.
void add_raw_field(const fs::path& manifest, const std::string& value) {
  std::string text = slurp(manifest);
  const size_t close = text.rfind('}');
  ASSERT_NE(close, std::string::npos);
  text.insert(close, ", \"x\": " + value);
  std::ofstream(manifest, std::ios::binary | std::ios::trunc) << text;
}

// A copy of the real bundle tiny-portable-fp32 at dir/name, its manifest given `"x": VALUE`.
fs::path bundle_with_field(const fs::path& dir, const std::string& name, const std::string& value) {
  const fs::path to = dir / name;
  fs::copy(test_bundles() / "tiny-portable-fp32", to, fs::copy_options::recursive);
  add_raw_field(manifest_of(to), value);
  return to;
}

// Expects `fn` to throw Error{kind} with every needle in its cause and a remedy; returns the cause.
std::string expect_error(ErrorKind kind, const std::function<void()>& fn, const std::vector<std::string>& needles) {
  try {
    fn();
    ADD_FAILURE() << "no error; expected " << to_string(kind);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    for (const auto& n : needles) EXPECT_NE(e.cause().find(n), std::string::npos) << n << " not in: " << e.cause();
    EXPECT_FALSE(e.remedy().empty());
    return e.cause();
  }
  return "";
}

const std::string kDeepCause = "nested " + std::to_string(kDeep + 1) + " levels deep (at most 64 are read)";

// ---- the deep manifest -------------------------------------------------------------------------

// 100,000 nested arrays in an unknown field: refused while parsing, naming the depth (the top-level
// object is the first level) and the limit, by read_manifest, open_bundle, inspect and replay.
TEST(DeepJson, ManifestIsRefusedByEveryLibraryReader) {
  ETPROOF_REQUIRE_BUNDLE(test_bundles() / "tiny-portable-fp32");
  const fs::path dir = scratch_dir();
  const fs::path bundle = bundle_with_field(dir, "deep-nested", nested_arrays(kDeep));
  const auto before = snapshot(dir);
  on_small_stack([&] {
    expect_error(ErrorKind::kManifestInvalid, [&] { (void)read_manifest(manifest_of(bundle)); },
                 {manifest_of(bundle).string(), kDeepCause});
    expect_error(ErrorKind::kManifestInvalid, [&] { (void)open_bundle(bundle); }, {kDeepCause});
    expect_error(ErrorKind::kManifestInvalid, [&] { (void)inspect_bundle(bundle); }, {kDeepCause});
    // parity's replay: refused as the bundle, the Error kept.
    const ParityReport r = replay(bundle);
    ASSERT_TRUE(r.refused.has_value());
    EXPECT_EQ(*r.refused, Status::kBundleInvalid);
    ASSERT_NE(r.first_error(), nullptr);
    EXPECT_EQ(r.first_error()->kind(), ErrorKind::kManifestInvalid);
    EXPECT_NE(r.first_error()->cause().find(kDeepCause), std::string::npos) << r.first_error()->cause();
    EXPECT_FALSE(r.passed);
  });
  EXPECT_EQ(snapshot(dir), before);
}

// ---- numbers out of range, and values of another type -----------------------------------------

// DIR/xfail.json, 100,000 deep or with 1e400: xfail-invalid (the matrix stops before running
// anything, as for any malformed xfail file), naming the file.
TEST(JsonNumbers, DeepOrOutOfRangeXfailFileIsXfailInvalid) {
  ETPROOF_REQUIRE_BUNDLE(test_bundles() / "tiny-portable-fp32");
  const fs::path dir = scratch_dir();
  fs::copy(test_bundles() / "tiny-portable-fp32", dir / "tiny-portable-fp32", fs::copy_options::recursive);
  const std::pair<std::string, std::string> cases[] = {
      {R"({"schema_version": 1, "records": )" + nested_arrays(kDeep) + "}", kDeepCause},
      {R"({"schema_version": 1e400, "records": []})", "number overflow parsing '1e400'"}};
  for (const auto& [text, needle] : cases) {
    std::ofstream(dir / "xfail.json", std::ios::binary | std::ios::trunc) << text;
    const auto before = snapshot(dir);
    on_small_stack([&] {
      expect_error(ErrorKind::kXfailInvalid, [&] { (void)read_xfail(dir / "xfail.json"); },
                   {(dir / "xfail.json").string(), needle});
      expect_error(ErrorKind::kXfailInvalid, [&] { (void)build_matrix(dir); }, {needle});
    });
    EXPECT_EQ(snapshot(dir), before);
  }
}

// ---- a matrix over a directory with bad bundles -------------------------------------------------

// The good bundle is judged; the deep one and the 1e400 one are one bundle-invalid line each, with
// the reason; the run fails for them and goes on — with and without a --method selection (which
// reads each manifest first), on one thread and on two.
TEST(MatrixBadBundles, EachBadManifestIsOneBundleInvalidLine) {
  ETPROOF_REQUIRE_BUNDLE(test_bundles() / "tiny-portable-fp32");
  const fs::path dir = scratch_dir();
  fs::copy(test_bundles() / "tiny-portable-fp32", dir / "tiny-portable-fp32", fs::copy_options::recursive);
  bundle_with_field(dir, "deep-nested", nested_arrays(kDeep));
  bundle_with_field(dir, "number-overflow", "1e400");
  const auto before = snapshot(dir);
  for (const size_t jobs : {size_t(1), size_t(2)})
    for (const std::vector<std::string>& methods : {std::vector<std::string>{}, std::vector<std::string>{"forward"}}) {
      SCOPED_TRACE("jobs " + std::to_string(jobs) + (methods.empty() ? "" : ", --method forward"));
      const Matrix m = build_matrix(dir, {}, jobs, std::nullopt, methods);
      ASSERT_EQ(m.columns.size(), 1u);
      EXPECT_EQ(m.columns[0].bundle, "tiny-portable-fp32");
      EXPECT_GT(m.measured, 0u);
      for (const Cell& c : m.cells) EXPECT_EQ(c.status, Status::kAgreed) << c.case_id << ": " << c.detail;
      std::map<std::string, std::string> bad;
      for (const NotRun& n : m.not_run) {
        EXPECT_EQ(n.status, Status::kBundleInvalid) << n.reason;
        bad[n.backend] = n.reason;  // a bundle refused before its manifest was read: its folder
      }
      ASSERT_EQ(bad.size(), 2u);
      EXPECT_NE(bad["deep-nested"].find("[manifest-invalid]"), std::string::npos) << bad["deep-nested"];
      EXPECT_NE(bad["deep-nested"].find(kDeepCause), std::string::npos) << bad["deep-nested"];
      EXPECT_NE(bad["number-overflow"].find("number overflow parsing '1e400'"), std::string::npos)
          << bad["number-overflow"];
      EXPECT_EQ(m.exit_code(), 1);
    }
  EXPECT_EQ(snapshot(dir), before);
}

// DIR/export-report.json too deep, out of range, or with a field of another type: one
// bundle-invalid line saying why (none of its entries), and the bundles are judged.
TEST(MatrixBadBundles, UnreadableExportReportIsOneLine) {
  ETPROOF_REQUIRE_BUNDLE(test_bundles() / "tiny-portable-fp32");
  const fs::path dir = scratch_dir();
  fs::copy(test_bundles() / "tiny-portable-fp32", dir / "tiny-portable-fp32", fs::copy_options::recursive);
  const std::pair<std::string, std::string> cases[] = {
      {R"({"results": )" + nested_arrays(kDeep) + "}", kDeepCause},
      {R"({"results": [{"backend": "coreml", "recipe": "fp32", "status": "export-refused", "x": 1e400}]})",
       "number overflow parsing '1e400'"},
      {R"({"results": [{"backend": "coreml", "recipe": "fp32", "status": "export-refused", "reason": "r"},
                       {"backend": 7, "recipe": "fp32", "status": "export-refused"}]})",
       "type must be string, but is number"}};
  for (const auto& [text, needle] : cases) {
    std::ofstream(dir / "export-report.json", std::ios::binary | std::ios::trunc) << text;
    const Matrix m = build_matrix(dir);
    EXPECT_GT(m.measured, 0u);
    ASSERT_EQ(m.not_run.size(), 1u) << "the entry read before the bad one is not shown either";
    EXPECT_EQ(m.not_run[0].status, Status::kBundleInvalid);
    EXPECT_NE(m.not_run[0].reason.find("export-report.json is unreadable"), std::string::npos) << m.not_run[0].reason;
    EXPECT_NE(m.not_run[0].reason.find(needle), std::string::npos) << m.not_run[0].reason;
  }
}

#ifdef ETPROOF_CLI
using testing::run_etproof;

// A CLI result's error line names the kind, and never "internal".
void expect_cli_error(const testing::CliResult& r, const std::string& kind, const std::vector<std::string>& needles) {
  EXPECT_EQ(r.rc, 2) << r.err;
  EXPECT_NE(r.err.find("error [" + kind + "]: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("remedy: "), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("internal"), std::string::npos) << r.err;
  for (const auto& n : needles) EXPECT_NE(r.err.find(n), std::string::npos) << n << " not in: " << r.err;
}

// The binary, its main thread on a 1 MiB stack (ulimit -s; the shell applies it before exec):
// inspect and parity refuse the deep manifest and the 1e400 one as manifest-invalid, exit 2.
TEST(DeepJson, CliInspectAndParityRefuseIt) {
  ETPROOF_REQUIRE_BUNDLE(test_bundles() / "tiny-portable-fp32");
  const fs::path dir = scratch_dir();
  const fs::path deep = bundle_with_field(dir, "deep-nested", nested_arrays(kDeep));
  const fs::path big = bundle_with_field(dir, "number-overflow", "1e400");
  const auto before = snapshot(dir);
  const std::vector<std::pair<fs::path, std::string>> cases = {
      {deep, kDeepCause}, {big, "number overflow parsing '1e400'"}};
  for (const auto& [bundle, needle] : cases) {
    for (const std::string cmd : {"inspect", "inspect --json", "parity --no-ledger", "parity --json --no-ledger"}) {
      SCOPED_TRACE(cmd + " " + bundle.filename().string());
      expect_cli_error(run_etproof(cmd + " " + quote(bundle.string()), "ulimit -s 1024;"), "manifest-invalid",
                       {needle});
    }
  }
  EXPECT_EQ(snapshot(dir), before);
}

// `etproof matrix` over the directory: exit 1 (bundle-invalid fails the run), the good bundle's
// cases agreed, each bad one listed with its reason; in text and in --json.
TEST(MatrixBadBundles, CliMatrixFinishesAndListsThem) {
  ETPROOF_REQUIRE_BUNDLE(test_bundles() / "tiny-portable-fp32");
  const fs::path dir = scratch_dir();
  fs::copy(test_bundles() / "tiny-portable-fp32", dir / "tiny-portable-fp32", fs::copy_options::recursive);
  bundle_with_field(dir, "deep-nested", nested_arrays(kDeep));
  bundle_with_field(dir, "number-overflow", "1e400");
  const auto before = snapshot(dir);
  const auto text = run_etproof("matrix " + quote(dir.string()) + " --no-ledger --jobs 2", "ulimit -s 1024;");
  EXPECT_EQ(text.rc, 1) << text.err;
  EXPECT_EQ(text.err.find("error ["), std::string::npos) << text.err;
  EXPECT_NE(text.out.find("deep-nested/?: bundle-invalid"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find(kDeepCause), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("number-overflow/?: bundle-invalid"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("1e400"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("agreed, 0 drifted"), std::string::npos) << text.out;
  const auto js = run_etproof("matrix " + quote(dir.string()) + " --json --no-ledger");
  EXPECT_EQ(js.rc, 1) << js.err;
  const json doc = json::parse(js.out);
  size_t agreed = 0;
  for (const auto& c : doc.at("cells")) agreed += c.at("status") == "agreed";
  EXPECT_GT(agreed, 0u) << js.out;
  EXPECT_EQ(doc.at("not_run").size(), 2u) << js.out;
  EXPECT_EQ(snapshot(dir), before);
}

// A bundle folder whose name is not UTF-8 (Linux allows any bytes), its manifest unreadable: the
// matrix's JSON and its ledger records carry the name with U+FFFD for the bad byte — nlohmann's
// type_error.316 once ended the command as "internal" after the run — and the ledger reads back.
TEST(MatrixBadBundles, CliJsonAndLedgerCarryANonUtf8FolderName) {
  ETPROOF_REQUIRE_BUNDLE(test_bundles() / "tiny-portable-fp32");
  const fs::path dir = scratch_dir() / "bundles";
  fs::create_directories(dir);
  fs::copy(test_bundles() / "tiny-portable-fp32", dir / "tiny-portable-fp32", fs::copy_options::recursive);
  bundle_with_field(dir, "bad\xff", "1e400");
  const fs::path ledger = dir.parent_path() / "ledger.jsonl";
  const auto r = run_etproof("matrix " + quote(dir.string()) + " --json --ledger " + quote(ledger.string()));
  EXPECT_EQ(r.rc, 1) << r.err;
  EXPECT_EQ(r.err.find("error ["), std::string::npos) << r.err;
  const json doc = json::parse(r.out);
  ASSERT_EQ(doc.at("not_run").size(), 1u) << r.out;
  EXPECT_EQ(doc["not_run"][0].at("backend"), "bad\xEF\xBF\xBD") << r.out;  // U+FFFD
  EXPECT_EQ(doc["not_run"][0].at("status"), "bundle-invalid") << r.out;
  const auto records = read_ledger(ledger);  // every id still matches its line
  bool named = false;
  for (const json& rec : records)  // a bundle refused unread is recorded by its folder, as in the matrix
    named = named || (rec.at("backend") == "bad\xEF\xBF\xBD" && rec.at("status") == "bundle-invalid");
  EXPECT_TRUE(named) << "no record names the folder";
}

// ---- filesystem errors, and running out of memory -----------------------------------------------

// `run --out DIR` where DIR cannot be created (a path under a regular file): io, naming it, with
// a remedy; the file is untouched and nothing else is written. The library says the same.
TEST(FilesystemErrors, RunOutUnderARegularFileIsIo) {
  ETPROOF_REQUIRE_BUNDLE(test_bundles() / "tiny-portable-fp32");
  const fs::path bundle = test_bundles() / "tiny-portable-fp32";
  const fs::path dir = scratch_dir();
  std::ofstream(dir / "a-file") << "not a directory\n";
  const auto before = snapshot(dir);
  const fs::path input = bundle / "tiny-portable-fp32.goldens" / "case0.in.x.npy";
  for (const fs::path out : {dir / "a-file" / "out", dir / "a-file"}) {
    expect_cli_error(run_etproof("run " + quote(bundle.string()) + " --input x=" + quote(input.string()) +
                                 " --out " + quote(out.string())),
                     "io", {out.string()});
    expect_error(ErrorKind::kIo, [&] { (void)run_bundle(bundle, {{"x", input}}, out); }, {out.string()});
  }
  EXPECT_EQ(snapshot(dir), before);
}

// Paths the system cannot examine (a symlink loop, a name too long) given to the commands that
// check directories: io with the path, never "internal"; in a matrix directory, a looping entry is
// no bundle and the real one beside it is judged.
TEST(FilesystemErrors, PathsThatCannotBeExaminedAreIo) {
  ETPROOF_REQUIRE_BUNDLE(test_bundles() / "tiny-portable-fp32");
  const fs::path dir = scratch_dir();
  fs::create_symlink("loop", dir / "loop");
  std::ofstream(dir / "photo.png") << "an image file; the bundle directory is what cannot be examined";
  const std::string loop = quote((dir / "loop").string());
  const std::string long_name = quote((dir / std::string(300, 'a')).string());
  for (const std::string& args :
       {"matrix " + loop + " --no-ledger", "matrix " + long_name + " --no-ledger", "measure-tolerances " + loop,
        "classify " + loop, "classify " + quote((dir / "photo.png").string()) + " --bundles " + loop}) {
    SCOPED_TRACE(args);
    expect_cli_error(run_etproof(args), "io", {(dir / "").string()});
  }
  expect_error(ErrorKind::kIo, [&] { (void)build_matrix(dir / "loop"); }, {(dir / "loop").string()});
  const fs::path mdir = dir / "bundles";
  fs::create_directories(mdir);
  fs::copy(test_bundles() / "tiny-portable-fp32", mdir / "tiny-portable-fp32", fs::copy_options::recursive);
  fs::create_symlink("loop", mdir / "loop");
  fs::create_symlink("loop.etproof.json", mdir / "tiny-portable-fp32" / "loop.etproof.json");
  const Matrix m = build_matrix(mdir);
  ASSERT_EQ(m.columns.size(), 1u);
  EXPECT_GT(m.measured, 0u);
  EXPECT_TRUE(m.not_run.empty());
  const auto r = run_etproof("matrix " + quote(mdir.string()) + " --no-ledger");
  EXPECT_EQ(r.rc, 0) << r.out << r.err;
}

// An allocation that fails (std::bad_alloc: here a 4 GiB .npy input, a sparse file, under a 2 GB
// address-space limit) is out-of-memory with its remedy, exit 2; the same limit runs a real input.
TEST(OutOfMemory, CliReportsBadAllocAsOutOfMemory) {
#ifdef ETPROOF_UNDER_ASAN
  GTEST_SKIP() << "AddressSanitizer reserves terabytes of address space, so ulimit -v cannot be used";
#endif
  ETPROOF_REQUIRE_BUNDLE(test_bundles() / "tiny-portable-fp32");
  const fs::path bundle = test_bundles() / "tiny-portable-fp32";
  const fs::path dir = scratch_dir();
  const fs::path huge = dir / "huge.npy";
  {
    std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (1073741824,), }";
    header += std::string(64 - (10 + header.size() + 1) % 64, ' ') + "\n";
    std::ofstream f(huge, std::ios::binary);
    f << "\x93NUMPY" << char(1) << char(0) << char(header.size() & 0xff) << char(header.size() >> 8) << header;
  }
  fs::resize_file(huge, fs::file_size(huge) + (uint64_t(4) << 30));  // sparse: no disk used
  const std::string limit = "ulimit -v 2000000;";
  expect_cli_error(run_etproof("run " + quote(bundle.string()) + " --input x=" + quote(huge.string()), limit),
                   "out-of-memory", {"std::bad_alloc", "etproof run"});
  const fs::path input = bundle / "tiny-portable-fp32.goldens" / "case0.in.x.npy";
  const auto ok = run_etproof("run " + quote(bundle.string()) + " --input x=" + quote(input.string()), limit);
  EXPECT_EQ(ok.rc, 0) << ok.err;
}
#endif  // ETPROOF_CLI

}  // namespace
}  // namespace etproof
