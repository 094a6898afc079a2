// `matrix --format NAME` on real bundles (integration): every format of the matrix's table
// (etproof/render/matrix.h matrix_renderers) is printed by --format, JUnit and HTML as --junit FILE
// and --html FILE write them, CSV with one row per cell of --json. The command's --format choices
// being the table's is unit/matrix_formats_test.cpp's.
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

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
using json = nlohmann::json;

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

// RFC 4180 records: fields split at commas, a quoted field's doubled quotes one quote, its commas
// and line breaks kept.
std::vector<std::vector<std::string>> parse_csv(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> row;
  std::string f;
  bool quoted = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    if (quoted) {
      if (ch == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        f += '"';
        ++i;
      } else if (ch == '"') {
        quoted = false;
      } else {
        f += ch;
      }
    } else if (ch == '"') {
      quoted = true;
    } else if (ch == ',') {
      row.push_back(std::move(f));
      f.clear();
    } else if (ch == '\n') {
      row.push_back(std::move(f));
      f.clear();
      rows.push_back(std::move(row));
      row.clear();
    } else {
      f += ch;
    }
  }
  EXPECT_TRUE(f.empty() && row.empty()) << "the CSV does not end with a line break";
  return rows;
}

// A number as --json has it, as CSV writes it: "" for null, the string for nan/inf, else its JSON text.
std::string as_csv(const json& v) { return v.is_null() ? "" : v.is_string() ? v.get<std::string>() : v.dump(); }

// --format csv: a header, then one row per cell of --json in its order, each field what --json says
// of that cell (the column's label from --json's columns). A strict SQNR floor makes cells drift, so
// their details (a comma in each) are quoted fields.
TEST(MatrixFormats, CsvRowsAreTheJsonCells) {
  ETPROOF_REQUIRE_BUNDLE(verdicts());
  const std::string run = "matrix --no-ledger --in-process --min-sqnr 200 " + quote(verdicts().string());
  const Result csv = cli(run + " --format csv");
  ASSERT_TRUE(csv.rc == 0 || csv.rc == 1) << csv.err;
  const Result js = cli(run + " --json");
  EXPECT_EQ(js.rc, csv.rc);
  const json doc = json::parse(js.out);
  const auto rows = parse_csv(csv.out);
  const std::vector<std::string> header{"model", "case", "column", "backend", "recipe", "bundle", "dir", "status",
                                        "max_abs_error", "cosine", "sqnr_db", "headroom", "range_error", "atol",
                                        "cost_sqnr_db", "detail"};
  ASSERT_FALSE(rows.empty());
  ASSERT_EQ(rows[0], header);
  const json& cells = doc.at("cells");
  ASSERT_FALSE(cells.empty()) << "no cell to compare in " << verdicts();
  ASSERT_EQ(rows.size(), cells.size() + 1);
  bool drifted = false;
  for (size_t i = 0; i < cells.size(); ++i) {
    const json& c = cells[i];
    const std::vector<std::string>& r = rows[i + 1];
    ASSERT_EQ(r.size(), header.size()) << "row " << i + 1;
    std::string column;
    for (const json& k : doc.at("columns"))
      if (k.at("dir") == c.at("dir") && k.at("bundle") == c.at("bundle") && k.at("machine") == c.at("machine"))
        column = k.at("column").get<std::string>();
    EXPECT_EQ(r[2], column) << "row " << i + 1;
    for (const size_t f : {0, 1, 3, 4, 5, 6, 7, 15})
      EXPECT_EQ(r[f], c.at(header[f]).get<std::string>()) << header[f] << ", row " << i + 1;
    for (size_t f = 8; f < 15; ++f)
      EXPECT_EQ(r[f], as_csv(c.value(header[f], json()))) << header[f] << ", row " << i + 1;
    drifted = drifted || r[7] == "drifted";
  }
  EXPECT_TRUE(drifted) << "no cell drifted under --min-sqnr 200";
}

}  // namespace
}  // namespace etproof
