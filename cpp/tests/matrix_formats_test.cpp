// `matrix --format NAME` on real bundles: every format of the matrix's table (etproof/render/matrix.h
// matrix_renderers) is printed by --format, JUnit and HTML as --junit FILE and --html FILE write them,
// and the command's --format choices are the table's.
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "etproof/render/matrix.h"
#include "test_support.h"

namespace etproof {
namespace {

namespace fs = std::filesystem;
using etproof::testing::quote;
using etproof::testing::scratch_dir;
using etproof::testing::slurp;
using etproof::testing::test_bundles;
using Result = etproof::testing::CliResult;

Result cli(const std::string& args) { return etproof::testing::run_etproof(args); }

// The verdict models: agreed, drifted and not-run columns in one directory.
fs::path verdicts() { return test_bundles() / "verdicts"; }

// --format junit and --format html print what --junit FILE and --html FILE write, with the same exit
// status as the text report; the files are written beside it, as before.
TEST(MatrixFormats, JunitAndHtmlPrintWhatTheirFilesHold) {
  ETPROOF_REQUIRE_BUNDLE(verdicts());
  const fs::path dir = scratch_dir() / "matrix-formats";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string run = "matrix --no-ledger --in-process " + quote(verdicts().string());
  const Result junit = cli(run + " --format junit --junit " + quote((dir / "m.xml").string()));
  ASSERT_TRUE(junit.rc == 0 || junit.rc == 1) << junit.err;
  EXPECT_EQ(junit.out.rfind("<?xml ", 0), 0u) << junit.out;
  EXPECT_EQ(junit.out, slurp(dir / "m.xml"));
  const Result html = cli(run + " --format html --html " + quote((dir / "m.html").string()));
  EXPECT_EQ(html.rc, junit.rc) << html.err;
  EXPECT_EQ(html.out.rfind("<!DOCTYPE html>", 0), 0u) << html.out;
  EXPECT_EQ(html.out, slurp(dir / "m.html"));
}

// The help of --format lists every row of the table (its name and help, the first the default); a
// name not in it is a usage error.
TEST(MatrixFormats, FormatChoicesAreTheTables) {
  const Result help = cli("matrix --help");
  ASSERT_EQ(help.rc, 0) << help.err;
  const Renderers<Matrix> table = matrix_renderers();
  for (const Renderer<Matrix>& r : table) {
    const std::string choice =
        std::string(r.name) + (&r == &table.front() ? " (default): " : ": ") + std::string(r.help);
    EXPECT_NE(help.out.find(choice), std::string::npos) << choice << "\n" << help.out;
  }
  EXPECT_EQ(cli("matrix --format xml").rc, 2);
  EXPECT_EQ(cli("inspect x --format junit").rc, 2);  // inspect has no JUnit
}

}  // namespace
}  // namespace etproof
