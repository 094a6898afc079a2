// The text `matrix` and `parity` print (issue 16 §1 and §5): the verdict line says what was run
// (how many columns ran, which did not and why), --require turns a column that did not run into a
// failure, no line is wider than 120 columns, and the columns that did not run are listed once per
// reason. Every count is compared with what `--json` reports for the same matrix, on real bundles:
// the test bundles (build/test-bundles and its directories) and the golden set when it is exported.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "etproof/runtime/bundle.h"
#include "etproof/replay/matrix.h"
#include "etproof/render/matrix.h"
#include "etproof/replay/replay.h"
#include "etproof/render/parity.h"
#include "test_support.h"

namespace etproof {
namespace {

namespace fs = std::filesystem;
using etproof::testing::unwrapped;
using etproof::testing::quote;
using etproof::testing::scratch_dir;
using etproof::testing::test_bundles;
using json = nlohmann::json;

constexpr size_t kWidth = 120;

fs::path golden_set() { return etproof::testing::env_dir("ETPROOF_GOLDEN_BUNDLES"); }

// Display columns: UTF-8 code points ("≥", "·", "×" and "—" are one column each).
size_t columns_of(const std::string& line) {
  size_t n = 0;
  for (char ch : line) n += (static_cast<unsigned char>(ch) & 0xC0) != 0x80;
  return n;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// Every line wider than kWidth, with its number, for the failure message ("" when none).
std::string too_wide(const std::string& text) {
  std::string out;
  const auto lines = lines_of(text);
  for (size_t i = 0; i < lines.size(); ++i)
    if (columns_of(lines[i]) > kWidth)
      out += "line " + std::to_string(i + 1) + " (" + std::to_string(columns_of(lines[i])) + " columns): " +
             lines[i] + "\n";
  return out;
}

// The verdict paragraph: the line that starts with "PASS — " or "FAIL: " and its continuation
// lines (indented), joined.
std::string verdict_of(const std::string& text) {
  const auto lines = lines_of(text);
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].rfind("PASS — ", 0) != 0 && lines[i].rfind("FAIL: ", 0) != 0) continue;
    std::string v = lines[i];
    for (size_t j = i + 1; j < lines.size() && lines[j].rfind("    ", 0) == 0; ++j)
      v += " " + lines[j].substr(lines[j].find_first_not_of(' '));
    return v;
  }
  return "";
}

// The "not run (…)" section: from its heading to the next blank line.
std::string not_run_section(const std::string& text) {
  const size_t at = text.find("\nnot run (");
  if (at == std::string::npos) return "";
  const size_t end = text.find("\n\n", at + 1);
  return text.substr(at + 1, end == std::string::npos ? std::string::npos : end - at - 1);
}

size_t count_of(const std::string& hay, const std::string& needle) {
  size_t n = 0;
  for (size_t at = hay.find(needle); at != std::string::npos; at = hay.find(needle, at + 1)) ++n;
  return n;
}

// build/test-bundles and each directory under it that holds bundles: between them, columns that
// ran and columns that did not (Core ML not linked, a kernel missing).
std::vector<fs::path> test_bundle_dirs() {
  std::vector<fs::path> dirs{test_bundles()};
  std::vector<fs::path> subdirs;
  for (const auto& e : fs::directory_iterator(test_bundles()))
    if (e.is_directory() && !find_bundles(e.path()).empty() &&
        !fs::exists(e.path() / (e.path().filename().string() + ".etproof.json")))
      subdirs.push_back(e.path());
  std::sort(subdirs.begin(), subdirs.end());
  dirs.insert(dirs.end(), subdirs.begin(), subdirs.end());
  return dirs;
}

std::string args_of(const std::vector<fs::path>& dirs) {
  std::string out;
  for (const fs::path& d : dirs) out += " " + quote(d.string());
  return out;
}

etproof::testing::CliResult cli(const std::string& args) { return etproof::testing::run_etproof(args); }

using etproof::testing::parse;

// What the verdict must say about coverage, from --json: "R of N columns ran here", and for each
// status of the columns that did not run, "K STATUS: " followed by every label of those columns.
void expect_verdict_states_coverage(const std::string& verdict, const json& doc) {
  const json& cov = doc.at("coverage");
  const size_t columns = cov.at("columns").get<size_t>(), ran = cov.at("ran").get<size_t>();
  EXPECT_EQ(cov.at("not_run").get<size_t>(), columns - ran);
  EXPECT_NE(verdict.find(std::to_string(ran) + " of " + std::to_string(columns) + " column"), std::string::npos)
      << verdict;
  EXPECT_NE(verdict.find(" ran here"), std::string::npos) << verdict;
  EXPECT_EQ(verdict, doc.at("verdict").get<std::string>());
  EXPECT_NE(verdict.find(cov.at("text").get<std::string>()), std::string::npos) << verdict;
  std::map<std::string, size_t> by_status;
  for (const json& c : cov.at("columns_not_run")) {
    ++by_status[c.at("status").get<std::string>()];
    EXPECT_NE(verdict.find(c.at("column").get<std::string>()), std::string::npos)
        << c.dump() << "\n" << verdict;
  }
  EXPECT_EQ(json(by_status), cov.at("not_run_by_status"));
  for (const auto& [status, n] : by_status)
    EXPECT_NE(verdict.find(std::to_string(n) + " " + status + ": "), std::string::npos) << status << "\n" << verdict;
  if (by_status.empty()) EXPECT_EQ(verdict.find(" ran here ("), std::string::npos) << verdict;
  // Columns, not cells: the cell counts are the summary's, and say so.
  EXPECT_EQ(columns, doc.at("columns").size() + [&] {
              size_t without_bundle = 0;
              for (const json& c : cov.at("columns_not_run")) without_bundle += c.at("bundle").is_null();
              return without_bundle;
            }());
}

// The not-run section lists each reason once, and every not-run line of --json is in one group.
void expect_grouped_by_reason(const std::string& text, const json& doc) {
  const json& groups = doc.at("not_run_groups");
  const std::string section = unwrapped(not_run_section(text));
  size_t lines = 0;
  std::set<std::pair<std::string, std::string>> seen;
  for (const json& g : groups) {
    const std::string reason = g.at("reason").get<std::string>();
    EXPECT_TRUE(seen.insert({g.at("status").get<std::string>(), reason}).second) << "reason listed twice: " << reason;
    EXPECT_EQ(count_of(section, ": " + reason), 1u) << reason << "\n" << section;
    EXPECT_NE(section.find(g.at("covers").get<std::string>() + ": " + g.at("status").get<std::string>()),
              std::string::npos)
        << g.dump() << "\n" << section;
    lines += g.at("lines").size();
  }
  EXPECT_EQ(lines, doc.at("not_run").size());
  // One entry (not one line per column and model) per group: a heading line each in the text.
  size_t entries = 0;
  for (const std::string& line : lines_of(not_run_section(text)))
    entries += line.rfind("  ", 0) == 0 && line.rfind("   ", 0) != 0;
  EXPECT_EQ(entries, groups.size()) << not_run_section(text);
  if (groups.empty()) EXPECT_EQ(text.find("\nnot run ("), std::string::npos) << text;
}

// ---- the test bundles -------------------------------------------------------------------------------

TEST(MatrixText, VerdictLineSaysHowManyColumnsRanAndWhichDidNot) {
  ETPROOF_REQUIRE_BUNDLE(test_bundles() / "tiny-portable-fp32");
  const std::string dirs = args_of(test_bundle_dirs());
  const auto text = cli("matrix --no-ledger" + dirs);
  const auto j = cli("matrix --no-ledger --json" + dirs);
  const json doc = parse(j);
  EXPECT_EQ(text.rc, j.rc) << text.err;
  EXPECT_EQ(text.rc, doc.at("exit_code").get<int>());
  const std::string verdict = verdict_of(text.out);
  ASSERT_FALSE(verdict.empty()) << text.out;
  expect_verdict_states_coverage(verdict, doc);
  // Here some columns of the test bundles do not run (Core ML is not linked into this binary, a
  // kernel the bucketize program calls is missing): the verdict names them.
  if (doc.at("coverage").at("not_run").get<size_t>() == 0)
    GTEST_SKIP() << "every column of the test bundles ran here: nothing for the verdict to name as not run";
  EXPECT_NE(verdict.find(" ran here ("), std::string::npos) << verdict;
  // The summary counts cells, and says so in each of its counts.
  EXPECT_NE(unwrapped(text.out).find(std::to_string(doc.at("measured").get<size_t>()) + " cells measured"),
            std::string::npos)
      << text.out;
  EXPECT_EQ(unwrapped(text.out).find("not measured (") == std::string::npos ||
                unwrapped(text.out).find("cells not measured (") != std::string::npos,
            true)
      << text.out;
}

TEST(MatrixText, SingleDirectoryVerdictCountsItsColumns) {
  ETPROOF_REQUIRE_BUNDLE(test_bundles() / "tiny-portable-fp32");
  ETPROOF_SKIP_IF_OPENVINO_OFF_UNDER_ASAN();
  const std::string dir = quote(test_bundles().string());
  const auto text = cli("matrix --no-ledger " + dir);
  const json doc = parse(cli("matrix --no-ledger --json " + dir));
  EXPECT_EQ(text.rc, 0) << text.out << text.err;
  const std::string verdict = verdict_of(text.out);
  expect_verdict_states_coverage(verdict, doc);
  const size_t n = doc.at("columns").size();
  const std::string head = "PASS — " + std::to_string(n) + " of " + std::to_string(n) + " columns ran here";
  EXPECT_EQ(verdict.substr(0, head.size()), head) << text.out;
  // On a CPU with bfloat16 units OpenVINO's fp32 column is named as computed below its recipe.
  const std::string rest = verdict.size() > head.size() ? verdict.substr(head.size()) : "";
  EXPECT_TRUE(rest.empty() || rest == "; computed here in a lower precision than the recipe names: openvino/fp32 "
                                      "in bfloat16")
      << verdict;
  EXPECT_EQ(too_wide(text.out), "") << text.out;
}

// Two copies of one bundle in two directories: each column of the grid, the columns list and the
// failures name its directory, so the copies can be told apart.
TEST(MatrixText, CopiesOfOneBundleAreToldApartByTheirDirectory) {
  const fs::path tiny = test_bundles() / "tiny-portable-fp32";
  ETPROOF_REQUIRE_BUNDLE(tiny);
  const fs::path root = scratch_dir() / "matrix-copies";
  fs::remove_all(root);
  for (const char* d : {"a", "b"}) {
    fs::create_directories(root / d);
    fs::copy(tiny, root / d / "tiny-portable-fp32", fs::copy_options::recursive);
  }
  const auto text = cli("matrix --no-ledger --in-process " + quote((root / "a").string()) + " " +
                        quote((root / "b").string()));
  EXPECT_EQ(text.rc, 0) << text.out << text.err;
  // Each column's label carries its directory (a long one wraps onto the next line).
  for (const char* d : {"a", "b"})
    EXPECT_EQ(count_of(text.out, "[" + (root / d).string() + "]"), 1u) << text.out;
  EXPECT_EQ(count_of(text.out, "  portable/fp32\n"), 2u) << text.out;
  EXPECT_EQ(too_wide(text.out), "") << text.out;
}

TEST(MatrixText, RequireOfAColumnThatDidNotRunFailsNamingIt) {
  ETPROOF_REQUIRE_BUNDLE(test_bundles() / "verdicts");
  std::string dir = quote((test_bundles() / "verdicts").string());
  const json plain = parse(cli("matrix --no-ledger --json " + dir));
  // A column that did not run here without failing the run by itself (not-linked, unavailable, …).
  const json* missing = nullptr;
  for (const json& c : plain.at("coverage").at("columns_not_run"))
    if (!c.at("fails_run").get<bool>()) missing = &c;
  if (!missing)
    GTEST_SKIP() << "every column of " << dir << " ran here (Core ML linked?): no column to require that did not";
  const std::string column = missing->at("column").get<std::string>();
  const std::string status = missing->at("status").get<std::string>();
  // The verdict models' other columns need not all pass on every machine (offset_linear's OpenVINO
  // column is inconclusive where it computes in bfloat16), so the requirement is tried on a
  // directory of that column's bundle beside one that agrees everywhere: only the requirement can
  // fail the run there.
  ASSERT_TRUE(missing->at("bundle").is_string()) << missing->dump();
  const fs::path tiny = test_bundles() / "tiny-portable-fp32";
  ETPROOF_REQUIRE_BUNDLE(tiny);
  const fs::path root = scratch_dir() / "matrix-require";
  fs::remove_all(root);
  fs::create_directories(root);
  const std::string bundle = missing->at("bundle").get<std::string>();
  fs::copy(fs::path(missing->at("dir").get<std::string>()) / bundle, root / bundle, fs::copy_options::recursive);
  fs::copy(tiny, root / "tiny-portable-fp32", fs::copy_options::recursive);
  const std::string model = missing->at("model").get<std::string>();
  dir = quote(root.string());
  ASSERT_EQ(parse(cli("matrix --no-ledger --json " + dir)).at("exit_code").get<int>(), 0) << dir;

  // Required, it fails the run: exit 1, the verdict names it and why, --json lists it.
  const auto text = cli("matrix --no-ledger --require " + quote(column) + " " + dir);
  EXPECT_EQ(text.rc, 1) << text.out << text.err;
  const std::string verdict = verdict_of(text.out);
  EXPECT_EQ(verdict.rfind("FAIL: ", 0), 0u) << verdict;
  EXPECT_NE(verdict.find("required column " + column + " did not run"), std::string::npos) << verdict;
  EXPECT_NE(verdict.find(status), std::string::npos) << verdict;
  const auto j = cli("matrix --no-ledger --json --require " + quote(column) + " " + dir);
  EXPECT_EQ(j.rc, 1);
  const json doc = parse(j);
  EXPECT_EQ(doc.at("exit_code").get<int>(), 1);
  EXPECT_EQ(doc.at("coverage").at("required"), json({column}));
  ASSERT_FALSE(doc.at("coverage").at("required_not_run").empty()) << doc.at("coverage").dump(2);
  for (const json& r : doc.at("coverage").at("required_not_run")) {
    EXPECT_EQ(r.at("require"), column);
    EXPECT_EQ(r.at("column"), column);
    EXPECT_FALSE(r.at("reason").get<std::string>().empty());
  }
  EXPECT_TRUE(doc.at("coverage").at("required_absent").empty());
  EXPECT_EQ(verdict, doc.at("verdict").get<std::string>());
  // The same column named with its model.
  const std::string qualified = model + ":" + column;
  EXPECT_EQ(cli("matrix --no-ledger --require " + quote(qualified) + " " + dir).rc, 1);

  // --require-all: the same.
  const auto all = cli("matrix --no-ledger --require-all " + dir);
  EXPECT_EQ(all.rc, 1) << all.out;
  EXPECT_NE(verdict_of(all.out).find("--require-all: "), std::string::npos) << all.out;
}

TEST(MatrixText, RequireOfAColumnThatRanPassesAndOfAnAbsentOneFails) {
  ETPROOF_REQUIRE_BUNDLE(test_bundles() / "tiny-portable-fp32");
  ETPROOF_SKIP_IF_OPENVINO_OFF_UNDER_ASAN();
  const std::string dir = quote(test_bundles().string());
  const json plain = parse(cli("matrix --no-ledger --json " + dir));
  ASSERT_EQ(plain.at("exit_code").get<int>(), 0) << plain.at("verdict");
  ASSERT_FALSE(plain.at("columns").empty());
  // Every column of this directory ran: require each (repeated and comma-separated), and the
  // backend alone.
  std::string each;
  for (const json& c : plain.at("columns"))
    each += " --require " + quote(c.at("backend").get<std::string>() + "/" + c.at("recipe").get<std::string>());
  const auto ran = cli("matrix --no-ledger" + each + " --require portable/fp32,xnnpack --require-all " + dir);
  EXPECT_EQ(ran.rc, 0) << ran.out << ran.err;
  EXPECT_EQ(verdict_of(ran.out).rfind("PASS — ", 0), 0u) << ran.out;

  // A column no bundle of the matrix has: a failure naming it.
  const auto absent = cli("matrix --no-ledger --require vulkan/fp16 " + dir);
  EXPECT_EQ(absent.rc, 1) << absent.out << absent.err;
  EXPECT_NE(verdict_of(absent.out).find("required column vulkan/fp16 is not in the matrix"), std::string::npos)
      << absent.out;
  const json doc = parse(cli("matrix --no-ledger --json --require vulkan/fp16 " + dir));
  EXPECT_EQ(doc.at("coverage").at("required_absent"), json({"vulkan/fp16"}));
  EXPECT_EQ(doc.at("exit_code").get<int>(), 1);

  // Not a column name at all: a usage error (exit 2), before anything runs.
  for (const char* bad : {"/fp32", "xnnpack/", ":xnnpack/fp32", "a/b/c"}) {
    const auto r = cli("matrix --no-ledger --require " + quote(bad) + " " + dir);
    EXPECT_EQ(r.rc, 2) << bad << "\n" << r.out << r.err;
    EXPECT_NE(r.err.find("error [invalid-argument]"), std::string::npos) << r.err;
  }
}

TEST(MatrixText, NoLineWiderThan120ColumnsOnTheTestBundles) {
  ETPROOF_REQUIRE_BUNDLE(test_bundles() / "tiny-portable-fp32");
  const std::vector<fs::path> dirs = test_bundle_dirs();
  const auto all = cli("matrix --no-ledger" + args_of(dirs));
  EXPECT_EQ(too_wide(all.out), "") << all.out;
  for (const fs::path& d : dirs) {
    const auto one = cli("matrix --no-ledger " + quote(d.string()));
    EXPECT_EQ(too_wide(one.out), "") << d << "\n" << one.out;
  }
  // parity on every test bundle: the report of each (as EXPECT_PARITY prints it too), and with
  // --verbose the bound's source, wrapped.
  size_t reports = 0;
  for (const fs::path& d : dirs)
    for (const fs::path& b : find_bundles(d)) {
      const ParityReport r = replay(b);
      EXPECT_EQ(too_wide(to_text(r)), "") << b << "\n" << to_text(r);
      ++reports;
    }
  EXPECT_GT(reports, 10u);
  const auto verbose = cli("parity --no-ledger --verbose " + quote((test_bundles() / "tiny-xnnpack-fp32").string()));
  EXPECT_EQ(verbose.rc, 0) << verbose.err;
  EXPECT_EQ(too_wide(verbose.out), "") << verbose.out;
}

// The bound is one short line; its source and citations are for --verbose and --json.
TEST(MatrixText, ParityPrintsTheBoundInOneLineAndItsSourceOnlyWhenAsked) {
  const fs::path bundle = test_bundles() / "tiny-xnnpack-int8-dynamic-per-channel";
  ETPROOF_REQUIRE_BUNDLE(bundle);
  const auto plain = cli("parity --no-ledger " + quote(bundle.string()));
  const auto verbose = cli("parity --no-ledger -v " + quote(bundle.string()));
  const auto j = cli("parity --no-ledger --json " + quote(bundle.string()));
  ASSERT_EQ(plain.rc, 0) << plain.out << plain.err;
  EXPECT_EQ(verbose.rc, 0);
  const json doc = parse(j);
  const std::string source = doc.at("bound").at("source").get<std::string>();
  ASSERT_GT(source.size(), 200u) << "the derived bound's source is its measurements and citations";
  // Plain: one line "bound: …", no source.
  const auto lines = lines_of(plain.out);
  const auto bound = std::find_if(lines.begin(), lines.end(), [](const std::string& l) { return l.rfind("bound: ", 0) == 0; });
  ASSERT_NE(bound, lines.end()) << plain.out;
  EXPECT_LE(columns_of(*bound), kWidth) << *bound;
  EXPECT_NE(bound->find("(derived)"), std::string::npos) << *bound;
  EXPECT_TRUE(bound + 1 == lines.end() || (bound + 1)->rfind("    ", 0) != 0) << "the bound line is one line";
  EXPECT_EQ(plain.out.find("source:"), std::string::npos) << plain.out;
  EXPECT_EQ(unwrapped(plain.out).find(source.substr(0, 60)), std::string::npos) << plain.out;
  // --verbose: the same report with the source after the bound line.
  const std::string v = unwrapped(verbose.out);
  EXPECT_NE(v.find("bound: " + bound->substr(7) + " source: " + source), std::string::npos) << verbose.out;
  EXPECT_EQ(too_wide(verbose.out), "") << verbose.out;
}

// The same refusal of many columns is one entry: a scratch directory holding a Core ML bundle this
// binary cannot run and an export report with one refusal, for two models, of the same reason.
TEST(MatrixText, NotRunColumnsAreGroupedByReason) {
  const fs::path coreml = test_bundles() / "verdicts" / "gelu_wide-coreml-fp16";
  ETPROOF_REQUIRE_BUNDLE(coreml);
  ETPROOF_REQUIRE_BUNDLE(test_bundles() / "tiny-portable-fp32");
  const fs::path dir = scratch_dir();
  fs::copy(coreml, dir / coreml.filename(), fs::copy_options::recursive);
  fs::copy(test_bundles() / "tiny-portable-fp32", dir / "tiny-portable-fp32", fs::copy_options::recursive);
  const std::string why = "vulkan is not installed here (pip install executorch[vulkan]); a refusal, not a failure";
  std::ofstream(dir / "export-report.json") << json{
      {"results",
       {{{"backend", "vulkan"}, {"recipe", "fp32"}, {"status", "export-refused"}, {"model", "gelu_wide"}, {"reason", why}},
        {{"backend", "vulkan"}, {"recipe", "fp32"}, {"status", "export-refused"}, {"model", "tiny"}, {"reason", why}},
        {{"backend", "vulkan"}, {"recipe", "fp16"}, {"status", "export-refused"}, {"model", "tiny"}, {"reason", why}}}}};
  const auto text = cli("matrix --no-ledger " + quote(dir.string()));
  const json doc = parse(cli("matrix --no-ledger --json " + quote(dir.string())));
  EXPECT_EQ(text.rc, 0) << text.out << text.err;
  EXPECT_EQ(doc.at("not_run").size(), 4u) << doc.at("not_run").dump(2);
  expect_grouped_by_reason(text.out, doc);
  // The three refusals are one entry, naming each column and both models.
  EXPECT_EQ(count_of(unwrapped(text.out), why), 1u) << text.out;
  EXPECT_NE(unwrapped(text.out).find("vulkan/fp32 ×2, vulkan/fp16 (every model: 2): export-refused: " + why),
            std::string::npos)
      << text.out;
  expect_verdict_states_coverage(verdict_of(text.out), doc);
  EXPECT_EQ(doc.at("coverage").at("columns").get<size_t>(), 5u);
  EXPECT_EQ(doc.at("coverage").at("ran").get<size_t>(), 1u);
  EXPECT_EQ(too_wide(text.out), "") << text.out;
}

// ---- the golden set ---------------------------------------------------------------------------------

TEST(MatrixText, GoldenSetFitsAndGroupsItsNotRunColumns) {
  const fs::path golden = golden_set();
  if (golden.empty() || !fs::exists(golden / "export-report.json"))
    GTEST_SKIP() << "golden set not exported: " << golden
                 << " (python -m etproof golden-set --out build/golden-set; ./setup.sh exports it)";
  if (etproof::testing::kUnderAddressSanitizer)
    GTEST_SKIP() << "the golden set's matrix takes minutes under AddressSanitizer; its text does not depend on "
                    "the sanitizer (the ordinary build runs this test)";
  // One matrix (in this process, every core), its text and its JSON.
  const Matrix m = build_matrix(golden, {}, std::max(1u, std::thread::hardware_concurrency()));
  const std::string text = to_text(m);
  const json doc = json::parse(to_json(m).dump());
  EXPECT_EQ(too_wide(text), "") << text;
  expect_verdict_states_coverage(verdict_of(text), doc);
  expect_grouped_by_reason(text, doc);
  // Grouped: far fewer entries than not-run lines (one per column and model before).
  EXPECT_LT(doc.at("not_run_groups").size(), doc.at("not_run").size());

  // parity on one bundle of each model and of each (backend, recipe, precision) that ran.
  std::set<std::string> models, kinds;
  size_t reports = 0;
  for (size_t col = 0; col < m.columns.size(); ++col) {
    const Column& c = m.columns[col];
    bool ran = false;
    for (const Cell& cell : m.cells) ran = ran || (cell.column == col && is_judged(cell.status));
    if (!ran) continue;
    const bool new_model = models.insert(c.model).second;
    const bool new_kind = kinds.insert(c.backend + "/" + c.recipe + "/" + c.precision).second;
    if (!new_model && !new_kind) continue;
    const ParityReport r = replay(c.path);
    EXPECT_EQ(too_wide(to_text(r)), "") << c.path << "\n" << to_text(r);
    ++reports;
  }
  EXPECT_GE(reports, models.size());
}

}  // namespace
}  // namespace etproof
