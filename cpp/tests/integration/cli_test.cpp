// The built `etproof` binary, run as a user runs it (integration): exit codes, stdout/stderr, --json
// parses, on the exported test and demo bundles. Those that need none are unit/cli_test.cpp.
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "etproof/runtime/bundle.h"
#include "etproof/core/npy.h"
#include "test_support.h"

namespace etproof {
namespace {

namespace fs = std::filesystem;
using etproof::testing::unwrapped;
using etproof::testing::demo_bundles;
using etproof::testing::demo_photos;
using etproof::testing::scratch_dir;
using etproof::testing::test_bundles;

using Result = etproof::testing::CliResult;
using etproof::testing::parse;
using etproof::testing::quote;
using etproof::testing::slurp;

// Runs `etproof ARGS` (each already quoted as needed) with optional environment assignments.
Result etproof_cli(const std::string& args, const std::string& env = "") {
  return etproof::testing::run_etproof(args, env);
}

// Every command's --help within 120 columns (code points): CLI11's descriptions wrapped by
// WrappingFormatter, the export half's by argparse (its supported pairs filled by textwrap).
TEST(Cli, EveryHelpFitsInOneHundredTwentyColumns) {
  for (const char* cmd : {"", "backends", "export", "inspect", "gen", "run", "parity", "attribute", "matrix",
                          "coverage", "rejudge", "measure-tolerances", "bench", "classify"}) {
    const Result r = etproof_cli(std::string(cmd) + " --help");
    EXPECT_EQ(r.rc, 0) << cmd << ": " << r.err;
    std::istringstream lines(r.out);
    for (std::string line; std::getline(lines, line);) {
      size_t columns = 0;
      for (char ch : line) columns += (static_cast<unsigned char>(ch) & 0xC0) != 0x80;
      EXPECT_LE(columns, 120u) << "etproof " << cmd << " --help: " << line;
    }
  }
}

// ExecuTorch's Info lines (XNNPACK's CPU probing on every load) are kept out of reports unless
// ETPROOF_LOG=info asks for them (etproof/runtime_log.h).
// Both halves, through the real export half (its probe is cached by the Python side): needs the
// export half installed, so an integration test.
TEST(Cli, BackendsJsonCarriesBothHalves) {
  if (access(ETPROOF_PYTHON_FOR_TESTS, X_OK) != 0)
    GTEST_SKIP() << "no export-half Python at " << ETPROOF_PYTHON_FOR_TESTS << " (run ./setup.sh)";
  const Result r = etproof_cli("backends --json");
  ASSERT_EQ(r.rc, 0) << r.err;
  const auto j = parse(r);
  ASSERT_TRUE(j.at("export").is_array()) << j.at("export_error");
  EXPECT_EQ(j.at("export").size(), j.at("runtime_by_backend").size());
  for (const auto& e : j.at("export")) {
    for (const char* k : {"backend", "status", "reason", "needs"}) EXPECT_TRUE(e.contains(k)) << e.dump();
    const std::string st = e.at("status");
    EXPECT_TRUE(st == "available" || st == "refused" || st == "removed-upstream") << st;
  }
}

// The XNNPACK probe replays the tiny test bundle: with it exported, the probe agrees.
TEST(Cli, BackendsProbeAgreesOnTheTinyXnnpackBundle) {
  ETPROOF_REQUIRE_BUNDLE(test_bundles() / "tiny-xnnpack-fp32");
  const Result r = etproof_cli("backends --json --runtime-only");
  ASSERT_EQ(r.rc, 0) << r.err;
  bool seen = false;
  const nlohmann::json j = parse(r);
  for (const auto& b : j.at("runtime"))
    if (b.at("id") == "XnnpackBackend") {
      seen = true;
      EXPECT_EQ(b.at("probe").at("status"), "agreed") << b.dump();
    }
  EXPECT_TRUE(seen) << r.out;
}

TEST(Cli, ExecutorchInfoLogIsFilteredUnlessAsked) {
  const auto bundle = test_bundles() / "tiny-xnnpack-fp32";
  ETPROOF_REQUIRE_BUNDLE(bundle);
  const Result quiet = etproof_cli("parity " + quote(bundle.string()));
  ASSERT_EQ(quiet.rc, 0) << quiet.err;
  EXPECT_EQ(quiet.err.find("executorch:"), std::string::npos) << quiet.err;
  const Result loud = etproof_cli("parity " + quote(bundle.string()), "ETPROOF_LOG=info");
  ASSERT_EQ(loud.rc, 0) << loud.err;
  EXPECT_NE(loud.err.find("I executorch:"), std::string::npos) << loud.err;
}

// --format NAME is every report command's one format option; --json and --markdown remain its
// aliases (the same bytes). Two different formats, or one the command does not render, are usage
// errors (exit 2).
TEST(Cli, FormatOptionAndItsAliasesPrintTheSameReport) {
  const fs::path b = test_bundles() / "tiny-portable-fp32";
  ETPROOF_REQUIRE_BUNDLE(b);
  const std::string bundle = quote(b.string());
  const Result json = etproof_cli("inspect " + bundle + " --json");
  ASSERT_EQ(json.rc, 0) << json.err;
  EXPECT_EQ(etproof_cli("inspect " + bundle + " --format json").out, json.out);
  EXPECT_EQ(etproof_cli("inspect " + bundle + " --format text").out, etproof_cli("inspect " + bundle).out);
  const Result parity = etproof_cli("parity " + bundle + " --no-ledger --json");
  EXPECT_EQ(etproof_cli("parity " + bundle + " --no-ledger --format json").out, parity.out);
  const std::string dir = quote(b.parent_path().string());
  EXPECT_EQ(etproof_cli("inspect " + bundle + " --format markdown").rc, 2);  // inspect renders no Markdown
  EXPECT_EQ(etproof_cli("inspect " + bundle + " --format xml").rc, 2);
  EXPECT_EQ(etproof_cli("matrix " + dir + " --json --markdown").rc, 2);
  EXPECT_EQ(etproof_cli("matrix " + dir + " --format json --markdown").rc, 2);
  EXPECT_EQ(etproof_cli("measure-tolerances " + dir + " --format text --json").rc, 2);
}

TEST(Cli, ParityPassesOnTinyBundles) {
  for (const char* name : {"tiny-portable-fp32", "tiny-xnnpack-fp32"}) {
    const fs::path b = test_bundles() / name;
    ETPROOF_REQUIRE_BUNDLE(b);
    const Result r = etproof_cli("parity " + quote(b.string()) + " --json");
    EXPECT_EQ(r.rc, 0) << r.out << r.err;
    const auto j = parse(r);
    EXPECT_TRUE(j.at("passed").get<bool>());
    EXPECT_FALSE(j.at("bound").at("caller_supplied").get<bool>());
    const Result text = etproof_cli("parity " + quote(b.string()));
    EXPECT_EQ(text.rc, 0);
    EXPECT_NE(text.out.find("cosine"), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("result: PASS"), std::string::npos) << text.out;
  }
}

TEST(Cli, ParityDriftExitsOneWithTheReport) {
  const fs::path b = test_bundles() / "tiny-xnnpack-int8-dynamic-per-channel";
  ETPROOF_REQUIRE_BUNDLE(b);
  const Result r =
      etproof_cli("parity " + quote(b.string()) + " --atol 1e-7 --rtol 0 --min-cosine 0.9999999");
  EXPECT_EQ(r.rc, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("supplied by the caller"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("DRIFT"), std::string::npos) << r.out;
  EXPECT_EQ(r.err.find("error ["), std::string::npos) << r.err;  // drift is a report, not an error
}

// --budget: what the recipe may cost (its int8 emulation against the float32 golden). An SQNR
// budget above the measured cost fails as OVER BUDGET (status over-budget: the program is faithful,
// never "DRIFT"); one far below it changes nothing; a malformed one is a usage error naming the
// accepted keys. The matrix says whose budget it was and calls the column's cells over-budget.
TEST(Cli, BudgetJudgesTheRecipesCost) {
  const fs::path b = test_bundles() / "tiny-xnnpack-int8-dynamic-per-channel";
  ETPROOF_REQUIRE_BUNDLE(b);
  const Result plain = etproof_cli("parity " + quote(b.string()) + " --json --no-ledger");
  const auto costs = parse(plain).at("cases").at(0).value("recipe_cost", nlohmann::json());
  if (costs.is_null()) GTEST_SKIP() << b << " carries no recipe emulation (exported before issue 9)";
  const Result over =
      etproof_cli("parity " + quote(b.string()) + " --no-ledger --budget min_sqnr_db=1000");
  EXPECT_EQ(over.rc, 1) << over.out << over.err;
  EXPECT_NE(over.out.find("OVER BUDGET"), std::string::npos) << over.out;
  if (plain.rc == 0) {  // faithful without a budget: the budget alone fails it, with its own word
    EXPECT_NE(over.out.find("result: OVER BUDGET"), std::string::npos) << over.out;
    EXPECT_EQ(over.out.find("DRIFT"), std::string::npos) << over.out;
    const Result over_json =
        etproof_cli("parity " + quote(b.string()) + " --no-ledger --budget min_sqnr_db=1000 --json");
    const auto oj = parse(over_json);  // kept: a range-for over parse(…).at(…) reads a freed temporary
    for (const auto& c : oj.at("cases")) EXPECT_EQ(c.at("status"), "over-budget") << c;
  }
  EXPECT_NE(over.out.find("budget (what the recipe may cost): SQNR"), std::string::npos)
      << over.out;
  const Result within =
      etproof_cli("parity " + quote(b.string()) + " --no-ledger --budget min_sqnr_db=-1000");
  EXPECT_EQ(within.rc, plain.rc) << within.out;
  EXPECT_EQ(within.out.find("OVER BUDGET"), std::string::npos) << within.out;
  const Result bad = etproof_cli("parity " + quote(b.string()) + " --no-ledger --budget sqnr=20");
  EXPECT_EQ(bad.rc, 2);
  EXPECT_NE(bad.err.find("[invalid-argument]"), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("min_sqnr_db"), std::string::npos) << bad.err;
  const Result matrix = etproof_cli("matrix " + quote(test_bundles().string()) +
                                    " --no-ledger --budget min_sqnr_db=1000 --json");
  EXPECT_EQ(matrix.rc, 1) << matrix.err;
  const auto mj = parse(matrix);
  EXPECT_EQ(mj.at("caller_budget"), "SQNR ≥ 1000 dB");
  if (plain.rc == 0) {
    EXPECT_NE(mj.dump().find("\"over-budget\""), std::string::npos) << "the int8 column's cells are over-budget";
  }
}

TEST(Cli, BadBundleIsATypedErrorWithARemedy) {
  const Result missing = etproof_cli("parity " + quote((scratch_dir() / "nope").string()));
  EXPECT_EQ(missing.rc, 2);
  EXPECT_NE(missing.err.find("error ["), std::string::npos) << missing.err;
  EXPECT_NE(missing.err.find("remedy: "), std::string::npos) << missing.err;

  const fs::path src = test_bundles() / "tiny-portable-fp32";
  ETPROOF_REQUIRE_BUNDLE(src);
  const fs::path dir = scratch_dir() / "tiny-portable-fp32";
  fs::copy(src, dir, fs::copy_options::recursive);
  fs::resize_file(dir / "tiny-portable-fp32.pte", fs::file_size(dir / "tiny-portable-fp32.pte") - 7);
  for (const char* cmd : {"inspect", "parity"}) {
    const Result r = etproof_cli(std::string(cmd) + " " + quote(dir.string()));
    EXPECT_EQ(r.rc, 2) << cmd;
    EXPECT_NE(r.err.find("error [artifact-mismatch]"), std::string::npos) << cmd << ": " << r.err;
    EXPECT_NE(r.err.find("remedy: "), std::string::npos) << r.err;
  }
}

// parity --json prints JSON whatever stops it (exit 2 kept, the error on stderr as well): a missing
// bundle, a usage error, and a case whose golden file is gone — that one with the report so far,
// its cases' statuses and the error naming the case; the text error names the bundle.
TEST(Cli, ParityJsonIsAlwaysJsonAndTheErrorNamesBundleAndCase) {
  const Result missing = etproof_cli("parity " + quote((scratch_dir() / "nope").string()) + " --json");
  EXPECT_EQ(missing.rc, 2);
  const auto mj = parse(missing);
  EXPECT_EQ(mj.at("passed"), false);
  EXPECT_EQ(mj.at("error").at("kind"), "io") << mj;
  EXPECT_NE(missing.err.find("error [io]"), std::string::npos) << missing.err;

  const fs::path src = test_bundles() / "tiny-portable-fp32";
  ETPROOF_REQUIRE_BUNDLE(src);
  const Result usage = etproof_cli("parity " + quote(src.string()) + " --json --no-ledger --budget bogus=1");
  EXPECT_EQ(usage.rc, 2);
  EXPECT_EQ(parse(usage).at("error").at("kind"), "invalid-argument");

  const fs::path dir = scratch_dir() / "tiny-portable-fp32";
  fs::copy(src, dir, fs::copy_options::recursive);
  const fs::path golden = dir / "tiny-portable-fp32.goldens" / "case0.out.y.npy";
  ASSERT_TRUE(fs::exists(golden));
  fs::remove(golden);
  const Result r = etproof_cli("parity " + quote(dir.string()) + " --json --no-ledger");
  EXPECT_EQ(r.rc, 2) << r.out << r.err;
  const auto j = parse(r);
  EXPECT_EQ(j.at("error").at("kind"), "artifact-mismatch") << j;
  EXPECT_EQ(j.at("error").at("case"), "case0") << j;
  ASSERT_FALSE(j.at("cases").empty());
  EXPECT_EQ(j.at("cases").at(0).at("status"), "bundle-invalid");
  const Result text = etproof_cli("parity " + quote(dir.string()) + " --no-ledger");
  EXPECT_EQ(text.rc, 2);
  EXPECT_NE(text.err.find("tiny-portable-fp32"), std::string::npos) << text.err;
  EXPECT_NE(text.err.find("case0"), std::string::npos) << text.err;
}

// A program calling an operator this binary has no kernel for (torch.bucketize, left by XNNPACK):
// refused by the operator's name and kernel library, never a bare ExecuTorch code; in a matrix
// the column is load-failed with the same words.
TEST(Cli, OperatorWithoutAKernelIsNamedWithItsLibrary) {
  const fs::path b = test_bundles() / "kernel-missing" / "bucketize-xnnpack-fp32";
  ETPROOF_REQUIRE_BUNDLE(b);
  const Result r = etproof_cli("parity " + quote(b.string()) + " --no-ledger");
  EXPECT_EQ(r.rc, 2) << r.err;
  EXPECT_NE(r.err.find("error [kernel-missing]: bundle 'bucketize-xnnpack-fp32': its program calls an "
                       "operator this binary has no kernel for: aten::bucketize.Tensor_out"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("remedy: link the kernel library that provides it — aten::bucketize.Tensor_out: "
                       "ExecuTorch's portable_kernels / optimized_kernels"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("executorch error 0x"), std::string::npos) << r.err;  // refused before loading

  const Result m = etproof_cli("matrix " + quote(b.parent_path().string()) + " --no-ledger");
  EXPECT_EQ(m.rc, 1) << m.out << m.err;
  EXPECT_NE(m.out.find("load-failed"), std::string::npos) << m.out;
  EXPECT_NE(m.out.find("aten::bucketize.Tensor_out"), std::string::npos) << m.out;
}

TEST(Cli, InspectReadsTheDelegatesFromTheProgram) {
  const fs::path b = test_bundles() / "tiny-xnnpack-fp32";
  ETPROOF_REQUIRE_BUNDLE(b);
  const Result r = etproof_cli("inspect " + quote(b.string()) + " --json");
  ASSERT_EQ(r.rc, 0) << r.err;
  const auto j = parse(r);
  EXPECT_EQ(j.at("delegates"), nlohmann::json::array({"XnnpackBackend"}));
  EXPECT_EQ(j.at("delegates_from"), "program");
  EXPECT_EQ(j.at("inputs").at(0).at("name"), "x");
  EXPECT_EQ(j.at("outputs").at(0).at("name"), "y");
  EXPECT_TRUE(j.at("delegation").at("by_operator").is_array());
  EXPECT_EQ(j.at("artifact").at("sha256").get<std::string>().size(), 64u);
  const Result text = etproof_cli("inspect " + quote(b.string()));
  EXPECT_EQ(text.rc, 0);
  EXPECT_NE(text.out.find("[read from the program]"), std::string::npos) << text.out;
}

TEST(Cli, RunWritesOutputsThatMatchTheGolden) {
  const fs::path b = test_bundles() / "tiny-portable-fp32";
  ETPROOF_REQUIRE_BUNDLE(b);
  const fs::path goldens = b / "tiny-portable-fp32.goldens";
  const fs::path out = scratch_dir() / "out";
  const Result r = etproof_cli("run " + quote(b.string()) + " --input " +
                               quote("x=" + (goldens / "case0.in.x.npy").string()) + " --out " +
                               quote(out.string()));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("output y float32 [1, 4]"), std::string::npos) << r.out;
  const HostTensor y = read_npy(out / "y.npy");
  const HostTensor ref = read_npy(goldens / "case0.out.y.npy");
  ASSERT_EQ(y.shape, ref.shape);
  for (size_t i = 0; i < y.numel(); ++i)
    EXPECT_NEAR(y.value_as_double(i), ref.value_as_double(i),
                1e-4 * (1 + std::fabs(ref.value_as_double(i))));
  // An input the program does not have is refused before anything runs.
  const Result bad = etproof_cli("run " + quote(b.string()) + " --input " +
                                 quote("z=" + (goldens / "case0.in.x.npy").string()));
  EXPECT_EQ(bad.rc, 2);
  EXPECT_NE(bad.err.find("error ["), std::string::npos) << bad.err;
}

TEST(Cli, MatrixJsonOverTestBundles) {
  ETPROOF_REQUIRE_BUNDLE(test_bundles() / "tiny-portable-fp32");
  ETPROOF_SKIP_IF_OPENVINO_OFF_UNDER_ASAN();
  const Result r = etproof_cli("matrix " + quote(test_bundles().string()) + " --json");
  EXPECT_EQ(r.rc, 0) << r.out << r.err;
  const auto j = parse(r);
  // One column per bundle there, every one measured on its 3 cases.
  EXPECT_EQ(j.at("columns").size(), find_bundles(test_bundles()).size());
  EXPECT_EQ(j.at("measured").get<size_t>(), 3 * j.at("columns").size());
  const Result md = etproof_cli("matrix " + quote(test_bundles().string()) + " --markdown");
  EXPECT_EQ(md.rc, 0);
  EXPECT_NE(md.out.find("| case |"), std::string::npos) << md.out;
  const Result text = etproof_cli("matrix " + quote(test_bundles().string()));
  EXPECT_EQ(text.rc, 0);
  EXPECT_NE(text.out.find(std::to_string(3 * j.at("columns").size()) + " cells measured"),
            std::string::npos)
      << text.out;
}

TEST(Cli, ParityMinSqnrAndTheHintOnDerivedDrift) {
  const fs::path src = test_bundles() / "tiny-xnnpack-int8-dynamic-per-channel";
  ETPROOF_REQUIRE_BUNDLE(src);
  // --min-sqnr alone: the rest of the bound is derived, the report says it was the caller's.
  const Result strict = etproof_cli("parity " + quote(src.string()) + " --min-sqnr 80 --json");
  EXPECT_EQ(strict.rc, 1) << strict.out << strict.err;
  const auto j = parse(strict);
  EXPECT_TRUE(j.at("bound").at("caller_supplied").get<bool>());
  EXPECT_EQ(j.at("bound").at("min_sqnr_db").get<double>(), 80);
  // The derived int8 atol rule is kept (scale-free: a fraction of each output's range).
  EXPECT_TRUE(j.at("bound").at("scale_relative").get<bool>());
  EXPECT_GT(j.at("bound").at("atol_range").get<double>(), 0);
  EXPECT_NE(j.at("cases")[0].at("outputs")[0].at("failure").get<std::string>().find(
                "sqnr below bound"),
            std::string::npos);
  const Result text = etproof_cli("parity " + quote(src.string()) + " --min-sqnr 80");
  EXPECT_EQ(text.rc, 1);
  EXPECT_NE(text.out.find("supplied by the caller"), std::string::npos) << text.out;
  EXPECT_EQ(text.out.find("hint:"), std::string::npos) << text.out;

  // Goldens × 0.5 under the derived bound: DRIFT, and the report ends with the hint.
  const fs::path dir = scratch_dir() / src.filename();
  fs::copy(src, dir, fs::copy_options::recursive);
  etproof::testing::scale_goldens(dir, 0.5);
  const Result drift = etproof_cli("parity " + quote(dir.string()));
  EXPECT_EQ(drift.rc, 1) << drift.out << drift.err;
  EXPECT_NE(drift.out.find("sqnr below bound"), std::string::npos) << drift.out;
  EXPECT_NE(drift.out.find("if this bound does not fit this model, pass "
                           "--atol/--rtol/--min-cosine/--min-sqnr"),
            std::string::npos)
      << drift.out;
  // The hint is the last line.
  const auto last = drift.out.substr(drift.out.rfind('\n', drift.out.size() - 2) + 1);
  EXPECT_EQ(last.rfind("hint: ", 0), 0u) << last;
}

TEST(Cli, MatrixCallerBoundAppliesToEveryColumn) {
  ETPROOF_REQUIRE_BUNDLE(test_bundles() / "tiny-portable-fp32");
  ETPROOF_SKIP_IF_OPENVINO_OFF_UNDER_ASAN();
  const std::string dir = quote(test_bundles().string());
  // A loose caller bound: every column agrees under it, and says whose bound it was.
  const Result loose =
      etproof_cli("matrix " + dir + " --atol 0.01 --rtol 0 --min-cosine 0.99 --min-sqnr 30 --json");
  EXPECT_EQ(loose.rc, 0) << loose.out << loose.err;
  const auto j = parse(loose);
  const std::string n = std::to_string(3 * find_bundles(test_bundles()).size());
  EXPECT_EQ(std::to_string(j.at("measured").get<int>()), n);
  EXPECT_EQ(j.at("caller_bound"), "--atol 0.01 --rtol 0 --min-cosine 0.99 --min-sqnr 30");
  for (const auto& c : j.at("columns")) {
    EXPECT_TRUE(c.at("bound").at("caller_supplied").get<bool>());
    EXPECT_EQ(c.at("bound").at("atol").get<double>(), 0.01);
    EXPECT_EQ(c.at("bound").at("min_sqnr_db").get<double>(), 30);
  }
  // A strict one: every inexact cell drifts (an exactly computed one, SQNR +inf, agrees), exit 1,
  // the text says caller-supplied.
  const Result strict_json = etproof_cli("matrix " + dir + " --min-sqnr 200 --json");
  size_t exact = 0;
  const nlohmann::json strict_doc = parse(strict_json);
  for (const auto& c : strict_doc.at("cells"))
    if (c.at("sqnr_db").is_string() && c.at("sqnr_db").get<std::string>() == "inf") ++exact;
  const std::string drifted = std::to_string(std::stoul(n) - exact);
  const Result strict = etproof_cli("matrix " + dir + " --min-sqnr 200");
  EXPECT_EQ(strict.rc, 1) << strict.out << strict.err;
  EXPECT_NE(strict.out.find("bound: caller-supplied for every column (--min-sqnr 200)"),
            std::string::npos)
      << strict.out;
  EXPECT_NE(strict.out.find(n + " cells measured: " + std::to_string(exact) + " agreed, " +
                            drifted + " drifted"),
            std::string::npos)
      << strict.out;
  EXPECT_NE(strict.out.find("FAIL: " + drifted + " cell(s) drifted"), std::string::npos)
      << strict.out;
  EXPECT_EQ(etproof_cli("matrix " + dir + " --min-sqnr nan").rc, 2);
}

TEST(Cli, MatrixWithABrokenColumnExitsOne) {
  ETPROOF_REQUIRE_BUNDLE(test_bundles() / "tiny-xnnpack-fp32");
  const fs::path dir = scratch_dir();
  for (const char* name : {"tiny-portable-fp32", "tiny-xnnpack-fp32"})
    fs::copy(test_bundles() / name, dir / name, fs::copy_options::recursive);
  fs::remove_all(dir / "tiny-xnnpack-fp32" / "tiny-xnnpack-fp32.goldens");
  const Result r = etproof_cli("matrix " + quote(dir.string()));
  EXPECT_EQ(r.rc, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("xnnpack/fp32: bundle-invalid (fails the run): "), std::string::npos)
      << r.out;
  EXPECT_NE(unwrapped(r.out).find("goldens unreadable"), std::string::npos) << r.out;
  EXPECT_EQ(r.err.find("error ["), std::string::npos) << r.err;  // a verdict, not an error
}

TEST(Cli, MatrixDefaultsToTheDemoBundlesBesideTheBinary) {
  // <directory of etproof>/demo/bundles, resolved through etproof::executable_path (/proc/self/exe) — build/demo/bundles.
  const fs::path expected = fs::path(ETPROOF_CLI).parent_path() / "demo" / "bundles";
  if (!fs::exists(expected)) GTEST_SKIP() << "demo bundles not exported: " << expected;
  const Result r = etproof_cli("matrix --json");
  EXPECT_EQ(r.rc, 0) << r.out << r.err;
  const auto j = parse(r);
  EXPECT_EQ(j.at("columns").size(), find_bundles(expected).size());
  EXPECT_GT(j.at("measured").get<int>(), 0);
}

TEST(Cli, ClassifyChelseaWithEachBackend) {
  const fs::path photo = demo_photos() / "chelsea.png";
  ETPROOF_REQUIRE_BUNDLE(photo);
  ETPROOF_REQUIRE_BUNDLE(demo_bundles() / "efficientnet_lite0-xnnpack-fp32");
  const std::string base = "classify " + quote(photo.string()) + " --bundles " +
                           quote(demo_bundles().string()) + " --top 3";
  const Result best = etproof_cli(base);
  ASSERT_EQ(best.rc, 0) << best.err;
  // The best runnable bundle here is the delegated fp32 one.
  EXPECT_NE(best.out.find("efficientnet_lite0-xnnpack-fp32"), std::string::npos) << best.out;
  for (const char* backend : {"portable", "xnnpack"}) {
    const Result r = etproof_cli(base + " --backend " + backend);
    ASSERT_EQ(r.rc, 0) << r.err;
    EXPECT_NE(r.out.find(std::string("backend ") + backend), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("cat"), std::string::npos) << r.out;
  }
  const Result q = etproof_cli(base + " --backend xnnpack --recipe int8-dynamic-per-channel");
  ASSERT_EQ(q.rc, 0) << q.err;
  EXPECT_NE(q.out.find("recipe int8-dynamic-per-channel"), std::string::npos) << q.out;
  // --format json: the same answer as one JSON object, the top labels ranked
  const Result j = etproof_cli(base + " --backend xnnpack --format json");
  ASSERT_EQ(j.rc, 0) << j.err;
  const nlohmann::json doc = nlohmann::json::parse(j.out);
  EXPECT_EQ(doc.at("bundle"), "efficientnet_lite0-xnnpack-fp32");
  ASSERT_EQ(doc.at("top").size(), 3u) << j.out;
  EXPECT_GE(doc["top"][0]["probability"].get<double>(), doc["top"][1]["probability"].get<double>());
  // A backend with no runnable bundle is a typed error that lists what can run.
  const Result none = etproof_cli(base + " --backend coreml");
  EXPECT_EQ(none.rc, 2);
  EXPECT_NE(none.err.find("error ["), std::string::npos) << none.err;
  EXPECT_NE(none.err.find("xnnpack/fp32"), std::string::npos) << none.err;
}

}  // namespace
}  // namespace etproof
