// The matrix's HTML page (etproof/matrix.h to_html, `etproof matrix --html FILE`) over real
// exported bundles: one cell per (case, column) with its status word, every not-run column with its
// reason, hostile manifest and report text shown as text, and an unwritable path an io error that
// writes nothing. (That the page renders without console errors in a browser: the CTest
// matrix_html.renders_in_chromium, tests/html/check_matrix_html.py.)
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "etproof/replay/attribute.h"
#include "etproof/render/attribute.h"
#include "etproof/core/error.h"
#include "etproof/replay/matrix.h"
#include "etproof/render/matrix.h"
#include "test_support.h"

namespace etproof {
namespace {

namespace fs = std::filesystem;
using etproof::testing::scratch_dir;
using etproof::testing::slurp;
using etproof::testing::test_bundles;

// A string the page shows as it is: one with no character HTML escapes (the hostile ones are
// spelled out, escaped, where they are checked).
std::string plain(const std::string& s) {
  EXPECT_EQ(s.find_first_of("&<>\"'"), std::string::npos) << s;
  return s;
}

size_t count_of(const std::string& hay, const std::string& needle) {
  size_t n = 0;
  for (size_t at = hay.find(needle); at != std::string::npos; at = hay.find(needle, at + needle.size())) ++n;
  return n;
}

std::string column_label(const Matrix& m, size_t col) {
  // label_in_model is private to the library; with one directory it is backend/recipe.
  return m.columns[col].backend + "/" + m.columns[col].recipe;
}

// SCRATCH/bundles, holding a copy of one tiny bundle and an export report (SCRATCH: this test's
// scratch directory, where the tests put their other files).
fs::path dir_with_report(const std::string& report) {
  const fs::path dir = scratch_dir() / "bundles";
  fs::create_directories(dir);
  fs::copy(test_bundles() / "tiny-portable-fp32", dir / "tiny-portable-fp32", fs::copy_options::recursive);
  std::ofstream(dir / "export-report.json") << report;
  return dir;
}

TEST(MatrixHtml, OneCellPerCaseAndColumnWithItsStatusWord) {
  ETPROOF_REQUIRE_BUNDLE(test_bundles() / "tiny-portable-fp32");
  ETPROOF_SKIP_IF_OPENVINO_OFF_UNDER_ASAN();
  const Matrix m = build_matrix(test_bundles());
  ASSERT_FALSE(m.cells.empty());
  const std::string html = to_html(m);
  EXPECT_TRUE(html.starts_with("<!DOCTYPE html>")) << html.substr(0, 200);
  EXPECT_EQ(count_of(html, "<td class=\"cell "), m.cells.size());
  for (const Cell& c : m.cells) {
    const std::string word(to_string(c.status));
    const std::string attrs = "data-case=\"" + plain(c.case_id) + "\" data-column=\"" +
                              plain(column_label(m, c.column)) + "\" data-bundle=\"" +
                              plain(m.columns[c.column].bundle) + "\" data-dir=\"" +
                              plain(m.columns[c.column].dir) + "\" data-status=\"" + word + "\">";
    EXPECT_EQ(count_of(html, attrs), 1u) << attrs;
    // The word is shown, not only carried in an attribute; the numbers open from it.
    const size_t at = html.find(attrs);
    ASSERT_NE(at, std::string::npos);
    const std::string cell = html.substr(at, html.find("</td>", at) - at);
    EXPECT_NE(cell.find("<summary><span class=\"word\">" + word + "</span>"), std::string::npos) << cell;
    for (const char* number : {"max abs error", "cosine", "SQNR", "headroom", "range error", "atol"})
      EXPECT_NE(cell.find(std::string("<dt>") + number + "</dt>"), std::string::npos) << number << "\n" << cell;
  }
  // The bound of every column and what it was judged against; the verdict and its exit status.
  for (const Column& c : m.columns) EXPECT_NE(html.find(plain(c.bundle)), std::string::npos) << c.bundle;
  EXPECT_NE(html.find("data-exit-code=\"" + std::to_string(m.exit_code()) + "\""), std::string::npos);
  EXPECT_NE(html.find("exit status " + std::to_string(m.exit_code())), std::string::npos);
  EXPECT_NE(html.find("<th>judged against</th>"), std::string::npos);
  // Self-contained: no script, no network asset.
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("http://"), std::string::npos);
  EXPECT_EQ(html.find("https://"), std::string::npos);
}

TEST(MatrixHtml, EveryNotRunColumnIsListedWithItsReason) {
  ETPROOF_REQUIRE_BUNDLE(test_bundles() / "tiny-portable-fp32");
  const fs::path dir = dir_with_report(R"({"results": [
    {"backend": "portable", "recipe": "fp32", "status": "exported", "model": "tiny"},
    {"backend": "coreml", "recipe": "fp32", "status": "export-refused", "model": "tiny",
     "reason": "coremltools is not installed (pip install coremltools); macOS only"},
    {"backend": "vulkan", "recipe": "fp32", "status": "export-failed", "stage": "lower", "model": "gone",
     "reason": "RuntimeError: no partitioner tagged any node"}
  ]})");
  const Matrix m = build_matrix(dir);
  ASSERT_EQ(m.not_run.size(), 2u) << to_text(m);
  const std::string html = to_html(m);
  EXPECT_EQ(count_of(html, "<tr class=\"not-run-row\""), m.not_run.size()) << html;
  for (const NotRun& n : m.not_run) {
    EXPECT_NE(html.find("<tr class=\"not-run-row\" data-status=\"" + std::string(to_string(n.status)) + "\">"),
              std::string::npos)
        << to_string(n.status);
    EXPECT_NE(html.find(plain(n.reason)), std::string::npos) << n.reason;
  }
  // A model with no column of its own ("gone") is still listed, by name.
  EXPECT_NE(html.find("<td>gone</td>"), std::string::npos) << html;
  // export-failed fails the run: the page says FAIL and exit status 1.
  EXPECT_EQ(m.exit_code(), 1);
  EXPECT_NE(html.find("data-exit-code=\"1\""), std::string::npos);
}

TEST(MatrixHtml, BundlesLeftOutByTheMethodSelectionAreListedWithTheReason) {
  ETPROOF_REQUIRE_BUNDLE(test_bundles() / "tiny-portable-fp32");
  const fs::path dir = dir_with_report(R"({"results": []})");
  const Matrix m = build_matrix(dir, {}, 1, std::nullopt, {"decode"});
  ASSERT_EQ(m.left_out.size(), 1u) << to_text(m);
  const std::string html = to_html(m);
  EXPECT_EQ(count_of(html, "<tr class=\"left-out-row\">"), m.left_out.size()) << html;
  EXPECT_NE(html.find("<h2>Left out by --method decode</h2>"), std::string::npos) << html;
  EXPECT_NE(html.find("<tr class=\"left-out-row\"><td>" + plain(m.left_out[0].bundle)), std::string::npos);
  // The reason quotes the method names: shown escaped.
  EXPECT_NE(html.find("has no method &apos;decode&apos;"), std::string::npos) << html;
}

TEST(MatrixHtml, HostileManifestAndReportTextIsShownAsText) {
  ETPROOF_REQUIRE_BUNDLE(test_bundles() / "tiny-portable-fp32");
  const std::string hostile = "<script>alert('x')</script>";
  const fs::path dir = dir_with_report(R"({"results": [
    {"backend": "<script>alert('b')</script>", "recipe": "fp32", "status": "export-refused",
     "model": "<img src=x onerror=alert(1)>", "reason": "<script>alert('r')</script> & \"quoted\""}
  ]})");
  // The manifest's model, as a hostile exporter could write it (the manifest stays valid).
  {
    const fs::path manifest = dir / "tiny-portable-fp32" / "tiny-portable-fp32.etproof.json";
    nlohmann::json doc = nlohmann::json::parse(slurp(manifest));
    doc["model"] = hostile;
    std::ofstream(manifest) << doc.dump(2) << "\n";
  }
  const Matrix m = build_matrix(dir);
  ASSERT_EQ(m.models(), std::vector<std::string>{hostile}) << to_text(m);
  const std::string html = to_html(m);
  EXPECT_EQ(html.find("<script"), std::string::npos) << html;
  EXPECT_EQ(html.find("<img"), std::string::npos) << html;
  EXPECT_NE(html.find("&lt;script&gt;alert(&apos;x&apos;)&lt;/script&gt;"), std::string::npos) << html;
  EXPECT_NE(html.find("&lt;script&gt;alert(&apos;r&apos;)&lt;/script&gt; &amp; &quot;quoted&quot;"),
            std::string::npos)
      << html;
  EXPECT_NE(html.find("&lt;img src=x onerror=alert(1)&gt;"), std::string::npos) << html;
}

TEST(MatrixHtml, CliWritesThePageBesideItsTextOutput) {
  ETPROOF_REQUIRE_BUNDLE(test_bundles() / "tiny-portable-fp32");
  const fs::path dir = dir_with_report(R"({"results": []})");
  const fs::path page = dir.parent_path() / "out" / "matrix.html";  // its directory is made
  const auto r = etproof::testing::run_etproof("matrix --json " + etproof::testing::quote(dir.string()) +
                                               " --html " + etproof::testing::quote(page.string()));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(nlohmann::json::accept(r.out)) << r.out;  // stdout is still the JSON
  const std::string html = slurp(page);
  EXPECT_TRUE(html.starts_with("<!DOCTYPE html>")) << html.substr(0, 200);
  EXPECT_NE(html.find("data-status=\"agreed\""), std::string::npos);
  // Only the page: no temporary file left beside it.
  size_t files = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(page.parent_path())) ++files;
  EXPECT_EQ(files, 1u);
}

TEST(MatrixHtml, UnwritablePathIsAnIoErrorNamingItAndWritesNothing) {
  ETPROOF_REQUIRE_BUNDLE(test_bundles() / "tiny-portable-fp32");
  const fs::path dir = dir_with_report(R"({"results": []})");
  const fs::path out = dir.parent_path() / "out";
  fs::create_directories(out);
  std::ofstream(out / "a-file") << "not a directory\n";
  fs::create_directories(out / "a-directory" / "kept");
  // Under a regular file (no directory can be made there), and onto a non-empty directory
  // (the rename fails): root writes anywhere, so permissions would prove nothing here.
  for (const fs::path& target : {out / "a-file" / "matrix.html", out / "a-directory"}) {
    const auto r = etproof::testing::run_etproof("matrix " + etproof::testing::quote(dir.string()) + " --html " +
                                                 etproof::testing::quote(target.string()));
    EXPECT_EQ(r.rc, 2) << r.out << r.err;
    EXPECT_NE(r.err.find("error [io]: cannot write the HTML page " + target.string()), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("remedy: pass --html a path in a writable directory"), std::string::npos) << r.err;
    // Nothing written: the directory holds what it held (no page, no temporary file).
    std::set<std::string> now;
    for (const auto& e : fs::recursive_directory_iterator(out)) now.insert(fs::relative(e.path(), out).string());
    EXPECT_EQ(now, (std::set<std::string>{"a-file", "a-directory", "a-directory/kept"})) << target;
    EXPECT_EQ(slurp(out / "a-file"), "not a directory\n");
  }
  // The library call says the same.
  try {
    write_html(build_matrix(dir), out / "a-file" / "matrix.html");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kIo);
    EXPECT_NE(e.cause().find((out / "a-file" / "matrix.html").string()), std::string::npos) << e.cause();
  }
}

// An --html path that cannot be written is found before the run: exit 2, an io error naming it,
// and no evidence recorded for a run whose page could not be kept.
TEST(MatrixHtml, CliRefusesAnUnwritablePageBeforeTheRun) {
  ETPROOF_REQUIRE_BUNDLE(test_bundles() / "tiny-portable-fp32");
  const fs::path dir = dir_with_report(R"({"results": []})");
  std::ofstream(dir.parent_path() / "a-file") << "x";
  const fs::path page = dir.parent_path() / "a-file" / "matrix.html";
  const fs::path ledger = dir.parent_path() / "ledger.jsonl";
  const auto r = etproof::testing::run_etproof("matrix " + etproof::testing::quote(dir.string()) + " --html " +
                                               etproof::testing::quote(page.string()) + " --ledger " +
                                               etproof::testing::quote(ledger.string()));
  EXPECT_EQ(r.rc, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("error [io]"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(page.string()), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("agreed"), std::string::npos) << "the matrix ran: " << r.out;
  EXPECT_FALSE(fs::exists(ledger));
}

// Which layer drifted: a matrix over the GELU MLP's bundles (each with its tapped twin) gets one
// figure for the model, a line per column carrying attribute()'s own summary, and the plot as an
// SVG data: URI; the page shows both. A matrix whose bundles have no twin gets none.
TEST(MatrixHtml, ColumnsWithTappedTwinsShowWhichLayerDriftedAndThePlot) {
  const fs::path dir = test_bundles().empty() ? fs::path() : test_bundles() / "attribution";
  if (dir.empty() || !fs::is_directory(dir / "gelu_mlp-xnnpack-fp32" / "gelu_mlp-xnnpack-fp32.taps"))
    GTEST_SKIP() << "no tapped twins (python -m etproof test-bundles)";
  Matrix m = build_matrix(dir);
  attach_attributions(m);
  ASSERT_EQ(m.attributions.size(), 1u);
  const AttributionFigure& f = m.attributions.front();
  EXPECT_EQ(f.model, "gelu_mlp");
  ASSERT_EQ(f.lines.size(), 2u);
  for (const auto& [col, line] : f.lines) {
    const Attribution a = attribute(m.columns[col].path);
    EXPECT_EQ(line, a.summary) << m.columns[col].bundle;
  }
  const std::string prefix = "data:image/svg+xml;base64,";
  ASSERT_EQ(f.image.rfind(prefix, 0), 0u) << f.why_not;
  const std::string b64 = f.image.substr(prefix.size());
  EXPECT_EQ(b64.size() % 4, 0u);
  EXPECT_EQ(b64.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/="), std::string::npos);
  const std::string page = to_html(m);
  EXPECT_EQ(count_of(page, "<h3>Which layer drifted</h3>"), 1u);
  EXPECT_EQ(count_of(page, "<img class=\"attribution\""), 1u);
  EXPECT_NE(page.find("act: GELU"), std::string::npos);

  Matrix without = build_matrix(test_bundles());
  attach_attributions(without);
  EXPECT_TRUE(without.attributions.empty());
  EXPECT_EQ(to_html(without).find("Which layer drifted"), std::string::npos);
}

}  // namespace
}  // namespace etproof
