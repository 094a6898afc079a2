// `measure-tolerances` on the real demo and test bundles, and the matrix over several models and
// directories (rows (model, case), grouped text, JUnit).
#include "etproof/replay/tolerances.h"
#include "etproof/render/tolerances.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <sys/wait.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "etproof/runtime/bundle.h"
#include "etproof/core/error.h"
#include "etproof/render/junit.h"
#include "etproof/replay/matrix.h"
#include "etproof/render/matrix.h"
#include "test_support.h"

namespace etproof {
namespace {

namespace fs = std::filesystem;
using etproof::testing::demo_bundles;
using etproof::testing::scratch_dir;
using etproof::testing::test_bundles;

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

// Parses the file with Python's XML parser (the tests' Python, from CMake); true when well-formed.
bool well_formed_xml(const fs::path& file) {
  const std::string cmd = std::string("'") + ETPROOF_PYTHON_FOR_TESTS +
                          "' -c 'import sys, xml.etree.ElementTree as E; E.parse(sys.argv[1])' '" +
                          file.string() + "' 2>&1";
  return std::system(cmd.c_str()) == 0;
}

fs::path write(const fs::path& file, const std::string& text) {
  std::ofstream(file) << text;
  return file;
}

const GroupObservation* group(const ToleranceReport& r, const std::string& recipe,
                              const std::string& precision) {
  for (const auto& g : r.groups)
    if (g.recipe == recipe && g.precision == precision) return &g;
  return nullptr;
}

// ---- measure-tolerances ----------------------------------------------------------------------

TEST(MeasureTolerances, TheTableCoversTheDemoAndTestBundlesByTheMargin) {
  ETPROOF_REQUIRE_BUNDLE(demo_bundles() / "efficientnet_lite0-xnnpack-fp32");
  ETPROOF_REQUIRE_BUNDLE(test_bundles() / "tiny-xnnpack-fp32");
  const ToleranceReport r = measure_tolerances({demo_bundles(), test_bundles()});
  EXPECT_EQ(r.exit_code(), 0) << to_text(r);
  EXPECT_EQ(r.margin, kDefaultMargin);
  const GroupObservation* f32 = group(r, "fp32", "float32");
  ASSERT_NE(f32, nullptr) << to_text(r);
  EXPECT_TRUE(f32->covered) << to_text(r);
  EXPECT_EQ(f32->models, 2u);  // efficientnet_lite0 and tiny
  EXPECT_GE(f32->bundles, 4u);
  ASSERT_TRUE(f32->bound);
  // The figures are in the table's own terms, and the table sits above them by the margin.
  EXPECT_LE(kDefaultMargin * f32->worst_ratio, 1);
  EXPECT_LE(f32->suggest_atol_range, f32->bound->atol_range * 1.0000001) << to_text(r);
  EXPECT_GT(f32->worst_range_error, 0);
  EXPECT_LT(f32->worst_range_error, 1e-4);
  // The demo's xfail cells (static int8 on 4 photos) are reported apart and not in the figures.
  const GroupObservation* st = group(r, "int8-static-per-channel", "float32");
  if (st) {
    EXPECT_EQ(st->xfail_outputs, 4u) << to_text(r);
    EXPECT_EQ(st->failed_outputs, 0u) << to_text(r);
    EXPECT_TRUE(st->bound && st->bound->target);
  }
  size_t xfail = 0;
  for (const auto& o : r.outputs) xfail += o.xfail;
  if (st) EXPECT_EQ(xfail, 4u);
  // Columns this binary cannot run are listed, not left out.
  if (fs::exists(demo_bundles() / "efficientnet_lite0-vulkan-fp32")) {
    bool listed = false;
    for (const auto& s : r.skipped) listed = listed || s.bundle == "efficientnet_lite0-vulkan-fp32";
    EXPECT_TRUE(listed) << to_text(r);
  }
  const std::string text = to_text(r);
  EXPECT_NE(text.find("PASS: the table covers every observation by the margin"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("excluded"), std::string::npos) << text;
}

TEST(MeasureTolerances, JsonMarkdownAndJUnitCarryEveryField) {
  ETPROOF_REQUIRE_BUNDLE(test_bundles() / "tiny-xnnpack-int8-dynamic-per-channel");
  const ToleranceReport r = measure_tolerances({test_bundles()});
  const auto j = to_json(r);
  for (const char* key : {"dirs", "margin", "groups", "outputs", "skipped", "exit_code"})
    EXPECT_TRUE(j.contains(key)) << key;
  ASSERT_FALSE(j.at("groups").empty());
  for (const auto& g : j.at("groups")) {
    for (const char* key : {"recipe", "precision", "against", "widened", "covered", "outputs",
                            "cases", "models",
                            "xfail_outputs", "worst", "bound", "suggested"})
      EXPECT_TRUE(g.contains(key)) << key;
    for (const char* key : {"range_error", "qstep_error", "one_minus_cosine", "sqnr_db", "ratio"})
      EXPECT_TRUE(g.at("worst").contains(key)) << key;
  }
  ASSERT_FALSE(j.at("outputs").empty());
  for (const auto& o : j.at("outputs")) {
    for (const char* key : {"output", "backend", "recipe", "passed", "worst_index", "worst_actual",
                            "worst_reference", "fraction_over", "cosine", "sqnr_db", "bound",
                            "resolved", "headroom", "range_error", "xfail"})
      EXPECT_TRUE(o.contains(key)) << key;
    EXPECT_TRUE(o.at("bound").contains("rule"));
    EXPECT_TRUE(o.at("resolved").contains("atol"));
  }
  const std::string md = to_markdown(r);
  EXPECT_NE(md.find("| recipe | precision | against | covered |"), std::string::npos) << md;
  const fs::path xml = write(scratch_dir() / "tol.xml", to_junit(r));
  EXPECT_TRUE(well_formed_xml(xml));
  const std::string junit = to_junit(r);
  EXPECT_EQ(count(junit, "<testsuite "), r.groups.size()) << junit;
  // One testcase per output plus one coverage testcase per (recipe, precision).
  EXPECT_EQ(count(junit, "<testcase "), r.outputs.size() + r.groups.size()) << junit;
}

// In the gate's terms (against float64 truth, widened by the golden's own error) the float32 row
// covers the verdict models' offset-cancelling Linear, whose golden is itself far from the truth;
// measured against the golden alone (--own-reference, the old terms) the same outputs are not
// covered: the golden's rounding error is charged to the kernel.
TEST(MeasureTolerances, AgainstTruthTheRowCoversWhatTheKernelAddsToTheGolden) {
  const fs::path verdicts = test_bundles() / "verdicts";
  ETPROOF_REQUIRE_BUNDLE(verdicts / "offset_linear-portable-fp32");
  const ToleranceReport judged = measure_tolerances({verdicts});
  const GroupObservation* truth = nullptr;
  for (const auto& g : judged.groups)
    if (g.recipe == "fp32" && g.precision == "float32" && g.against == "float64") truth = &g;
  ASSERT_NE(truth, nullptr) << to_text(judged);
  EXPECT_TRUE(truth->widened);
  EXPECT_TRUE(truth->covered) << to_text(judged);
  // The suggestion discounts the widening: less than M × the raw error against truth.
  EXPECT_LT(truth->suggest_atol_range, judged.margin * truth->worst_range_error) << to_text(judged);
  EXPECT_NE(to_text(judged).find("against float64 truth (widened)"), std::string::npos);

  ToleranceOptions own;
  own.own_reference = true;
  const ToleranceReport old_terms = measure_tolerances({verdicts}, own);
  EXPECT_TRUE(old_terms.own_reference);
  const GroupObservation* golden = nullptr;
  for (const auto& g : old_terms.groups) {
    EXPECT_NE(g.against, "float64") << to_text(old_terms);
    EXPECT_FALSE(g.widened);
    if (g.recipe == "fp32" && g.precision == "float32" && g.against == "golden") golden = &g;
  }
  ASSERT_NE(golden, nullptr) << to_text(old_terms);
  EXPECT_FALSE(golden->covered) << to_text(old_terms);
  EXPECT_NE(golden->worst_range_at.find("offset_linear"), std::string::npos) << golden->worst_range_at;
}

TEST(MeasureTolerances, AnImpossibleMarginIsNotCoveredAndFails) {
  ETPROOF_REQUIRE_BUNDLE(test_bundles() / "tiny-xnnpack-int8-dynamic-per-channel");
  ToleranceOptions opt;
  opt.margin = 1e9;  // the int8-dynamic column matches its emulation to ~1e-7 of the range
  const ToleranceReport r = measure_tolerances({test_bundles()}, opt);
  EXPECT_EQ(r.exit_code(), 1) << to_text(r);
  const GroupObservation* q = group(r, "int8-dynamic-per-channel", "float32");
  ASSERT_NE(q, nullptr);
  EXPECT_FALSE(q->covered);
  EXPECT_FALSE(q->not_covered.empty());
  EXPECT_NE(to_text(r).find("NOT COVERED"), std::string::npos);
  EXPECT_NE(to_junit(r).find("<failure"), std::string::npos);
  opt.margin = 0.5;  // a margin below 1 is not a margin
  EXPECT_THROW(measure_tolerances({test_bundles()}, opt), Error);
}

TEST(MeasureTolerances, ACallerBoundIsUsedAndReportedAsSuch) {
  ETPROOF_REQUIRE_BUNDLE(test_bundles() / "tiny-xnnpack-fp32");
  ToleranceOptions opt;
  opt.caller.atol = 1e-12;
  opt.caller.rtol = 0;
  const ToleranceReport r = measure_tolerances({test_bundles()}, opt);
  EXPECT_EQ(r.caller_bound, "--atol 1e-12 --rtol 0");
  for (const auto& o : r.outputs) {
    EXPECT_TRUE(o.bound.caller_supplied);
    EXPECT_FALSE(o.bound.scale_relative());
    EXPECT_DOUBLE_EQ(o.report.atol, 1e-12);
  }
  EXPECT_EQ(r.exit_code(), 1) << to_text(r);  // float32 rounding exceeds 1e-12
  EXPECT_NE(to_text(r).find("caller-supplied"), std::string::npos);
  EXPECT_THROW(measure_tolerances({scratch_dir() / "absent"}), Error);
}

// ---- the matrix over several models and directories -----------------------------------------------

// A directory holding links to bundles of two models.
fs::path two_model_dir() {
  const fs::path dir = scratch_dir() / "bundles";
  fs::create_directories(dir);
  for (const fs::path& b : {demo_bundles() / "efficientnet_lite0-xnnpack-fp32",
                            test_bundles() / "tiny-xnnpack-fp32",
                            test_bundles() / "tiny-portable-fp32"})
    fs::create_directory_symlink(fs::absolute(b), dir / b.filename());
  return dir;
}

TEST(MatrixModels, TwoModelsInOneDirectoryAreGroupedPerModel) {
  ETPROOF_REQUIRE_BUNDLE(demo_bundles() / "efficientnet_lite0-xnnpack-fp32");
  ETPROOF_REQUIRE_BUNDLE(test_bundles() / "tiny-xnnpack-fp32");
  const Matrix m = build_matrix(two_model_dir());
  EXPECT_EQ(m.models(), (std::vector<std::string>{"efficientnet_lite0", "tiny"}));
  EXPECT_EQ(m.exit_code(), 0) << to_text(m);
  EXPECT_EQ(m.measured, 6u + 3u + 3u) << to_text(m);
  // Every cell belongs to a column of its own model: rows are (model, case).
  for (const Cell& c : m.cells) {
    const std::string& model = m.columns[c.column].model;
    EXPECT_TRUE(model == "tiny" ? c.case_id.rfind("case", 0) == 0 : c.case_id.rfind("case", 0) != 0)
        << model << " " << c.case_id;
  }
  const std::string text = to_text(m);
  EXPECT_NE(text.find("2 model(s), 3 column(s)"), std::string::npos) << text;
  EXPECT_NE(text.find("\nefficientnet_lite0  (6 case(s): "), std::string::npos) << text;
  EXPECT_NE(text.find("\ntiny  (3 case(s): case0, case1, case2)"), std::string::npos) << text;
  EXPECT_NE(text.find("bounds (per recipe / precision"), std::string::npos) << text;
  // One line per column, not a 9-case × 3-column grid of mostly empty cells.
  EXPECT_EQ(text.find("case  "), std::string::npos) << text;
  const std::string md = to_markdown(m);
  EXPECT_NE(md.find("### efficientnet_lite0"), std::string::npos) << md;
  EXPECT_NE(md.find("### tiny"), std::string::npos) << md;
  const auto j = to_json(m);
  EXPECT_EQ(j.at("models").size(), 2u);
  for (const auto& c : j.at("columns")) {
    EXPECT_TRUE(c.contains("model"));
    EXPECT_TRUE(c.contains("dir"));
  }
  for (const auto& c : j.at("cells")) {
    EXPECT_TRUE(c.contains("model"));
    EXPECT_TRUE(c.contains("range_error"));
    EXPECT_TRUE(c.contains("atol"));
  }
}

TEST(MatrixModels, TwoDirectoriesKeepTheirOwnXfailRecordsAndWriteJUnit) {
  ETPROOF_REQUIRE_BUNDLE(demo_bundles() / "efficientnet_lite0-xnnpack-fp32");
  ETPROOF_REQUIRE_BUNDLE(test_bundles() / "tiny-xnnpack-fp32");
  const Matrix one = build_matrix(demo_bundles());
  const Matrix two = build_matrix(std::vector<fs::path>{test_bundles(), demo_bundles()});
  EXPECT_EQ(two.dirs.size(), 2u);
  EXPECT_EQ(two.exit_code(), one.exit_code()) << to_text(two);
  EXPECT_EQ(two.columns.size(), one.columns.size() + find_bundles(test_bundles()).size());
  EXPECT_EQ(two.xfail.size(), one.xfail.size());
  size_t xfail_one = 0, xfail_two = 0;
  for (const Cell& c : one.cells) xfail_one += c.status == CellStatus::kXfail;
  for (const Cell& c : two.cells) xfail_two += c.status == CellStatus::kXfail;
  EXPECT_EQ(xfail_two, xfail_one);
  for (const Column& c : two.columns)
    EXPECT_EQ(c.dir, c.model == "tiny" ? test_bundles().string() : demo_bundles().string());
  const std::string junit = to_junit(two);
  const fs::path xml = write(scratch_dir() / "matrix.xml", junit);
  EXPECT_TRUE(well_formed_xml(xml)) << junit;
  // One testsuite per column (+ "not run" when something was not run), one testcase per cell.
  EXPECT_EQ(count(junit, "<testsuite "), two.columns.size() + (two.not_run.empty() ? 0 : 1));
  size_t failing = 0;
  for (const Cell& c : two.cells) failing += fails_run(c.status);
  for (const NotRun& n : two.not_run) failing += fails_run(n.status);
  EXPECT_EQ(count(junit, "<failure "), failing) << junit;
  EXPECT_EQ(count(junit, "xfail: expected failure"), xfail_two) << junit;
  // The same directory given once is the single-directory matrix.
  EXPECT_EQ(to_text(build_matrix(std::vector<fs::path>{test_bundles()})),
            to_text(build_matrix(test_bundles())));
}

// ---- the command line ----------------------------------------------------------------------------

struct CliRun {
  int rc = -1;
  std::string out;
};

CliRun cli(const std::string& args) {
  const std::string cmd = std::string("'") + ETPROOF_CLI + "' " + args + " 2>/dev/null";
  CliRun r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int status = pclose(p);
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

TEST(MeasureTolerancesCli, JsonAndJUnitAndTheExitCode) {
  ETPROOF_REQUIRE_BUNDLE(test_bundles() / "tiny-xnnpack-fp32");
  const fs::path xml = scratch_dir() / "tol.xml";
  const CliRun r = cli("measure-tolerances '" + test_bundles().string() + "' --json --junit '" +
                    xml.string() + "'");
  EXPECT_EQ(r.rc, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("exit_code"), 0);
  EXPECT_EQ(j.at("margin").get<double>(), kDefaultMargin);
  EXPECT_TRUE(well_formed_xml(xml));
  // --margin too large for any table: exit 1.
  EXPECT_EQ(cli("measure-tolerances '" + test_bundles().string() + "' --margin 1e9").rc, 1);
  // A caller bound is accepted and reported.
  const CliRun c = cli("measure-tolerances '" + test_bundles().string() + "' --atol 1 --rtol 0 "
                    "--min-cosine -1 --min-sqnr -1e9");
  EXPECT_NE(c.out.find("caller-supplied (--atol 1 --rtol 0"), std::string::npos) << c.out;
  EXPECT_EQ(cli("measure-tolerances '" + (scratch_dir() / "absent").string() + "'").rc, 2);
}

TEST(MatrixCli, SeveralDirectoriesAndJUnit) {
  ETPROOF_REQUIRE_BUNDLE(test_bundles() / "tiny-xnnpack-fp32");
  ETPROOF_REQUIRE_BUNDLE(demo_bundles() / "efficientnet_lite0-xnnpack-fp32");
  const fs::path xml = scratch_dir() / "m.xml";
  const CliRun r = cli("matrix '" + test_bundles().string() + "' '" + two_model_dir().string() +
                    "' --junit '" + xml.string() + "' --json");
  EXPECT_EQ(r.rc, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("dirs").size(), 2u);
  EXPECT_EQ(j.at("models").size(), 2u);
  EXPECT_TRUE(well_formed_xml(xml));
}

}  // namespace
}  // namespace etproof
