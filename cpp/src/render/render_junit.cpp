// etproof/render_junit.cpp — JUnit XML (docs/design.md §8) for the matrix and for
// measure-tolerances (etproof/matrix.h, etproof/tolerances.h).
#include <map>
#include <sstream>

#include "etproof/render/junit.h"
#include "render/render_matrix.h"
#include "render/render_tolerances.h"
#include "core/common.h"

namespace etproof {
using namespace render;  // NOLINT: the private helpers of render_matrix.h
using detail::xml_escape;
namespace {

// Test cases counted, of one testsuite or of the whole report.
struct Counts {
  size_t tests = 0, failures = 0, skipped = 0;
  Counts& operator+=(const Counts& o) {
    tests += o.tests;
    failures += o.failures;
    skipped += o.skipped;
    return *this;
  }
};

// `<testsuite name=… tests=… failures=… errors="0" skipped=…>`, its `cases`, and its end.
void write_suite(std::ostringstream& suites, const std::string& name, const Counts& n, const std::string& cases) {
  suites << "  <testsuite name=\"" << xml_escape(name) << "\" tests=\"" << n.tests << "\" failures=\""
         << n.failures << "\" errors=\"0\" skipped=\"" << n.skipped << "\">\n" << cases << "  </testsuite>\n";
}

// The XML declaration and `<testsuites name=…>` around every suite.
std::string junit_document(const std::string& name, const Counts& n, const std::string& suites) {
  std::ostringstream os;
  os << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"" << name << "\" "
     << "tests=\"" << n.tests << "\" failures=\"" << n.failures << "\" errors=\"0\" skipped=\""
     << n.skipped << "\">\n" << suites << "</testsuites>\n";
  return os.str();
}

// ---- the matrix ----------------------------------------------------------------------------------

// Statuses a CI page shows as skipped: expected failures and columns not runnable here.
bool skips(CellStatus s) {
  return s == CellStatus::kXfail || s == CellStatus::kNotLinked || s == CellStatus::kUnavailable ||
         s == CellStatus::kExportRefused || s == CellStatus::kNotRunnableHere;
}

// One testcase: a failure when `status` fails the run, skipped when it skips, `out` as its
// system-out; counted into `n` (failures and skipped; the caller counts tests).
void write_testcase(std::ostringstream& os, const std::string& classname, const std::string& name,
                    CellStatus status, const std::string& detail, const std::string& out, Counts& n) {
  os << "    <testcase classname=\"" << xml_escape(classname) << "\" name=\"" << xml_escape(name) << "\">\n";
  const std::string msg = std::string(to_string(status)) + (detail.empty() ? "" : ": " + detail);
  if (fails_run(status)) {
    ++n.failures;
    os << "      <failure type=\"" << to_string(status) << "\" message=\"" << xml_escape(msg) << "\"/>\n";
  } else if (skips(status)) {
    ++n.skipped;
    os << "      <skipped message=\"" << xml_escape(msg) << "\"/>\n";
  }
  if (!out.empty()) os << "      <system-out>" << xml_escape(out) << "</system-out>\n";
  os << "    </testcase>\n";
}

// A cell's numbers and its column's bound, as its testcase's system-out.
std::string cell_out(const Cell& cell, const Column& c) {
  std::ostringstream out;
  out << to_string(cell.status);
  if (cell.max_abs_error) out << ", max abs error " << fmt(*cell.max_abs_error, 4);
  if (cell.range_error) out << " (" << fmt(*cell.range_error, 3) << "·max|ref|)";
  if (cell.cosine) out << ", cosine " << cosine_text(*cell.cosine);
  if (cell.sqnr_db) out << ", SQNR " << fmt(*cell.sqnr_db, 4) << " dB";
  if (cell.atol) out << ", resolved atol " << fmt(*cell.atol, 4);
  if (cell.headroom) out << ", headroom " << fmt(*cell.headroom, 3);
  out << "; bound: " << bound_text(c.bound);
  return out.str();
}

// Column `col`'s testsuite ("MODEL BACKEND/RECIPE"): one testcase per cell.
Counts write_column_suite(std::ostringstream& suites, const Matrix& m, size_t col) {
  const Column& c = m.columns[col];
  std::ostringstream cases;
  Counts n;
  const std::string classname =
      model_label(c.model) + "." + c.backend + "." + c.recipe + (c.machine.empty() ? "" : "." + c.machine);
  for (const Cell& cell : m.cells) {
    if (cell.column != col) continue;
    ++n.tests;
    write_testcase(cases, classname, cell.case_id, cell.status, cell.detail, cell_out(cell, c), n);
  }
  write_suite(suites, model_label(c.model) + " " + label_in_model(m, col), n, cases.str());
  return n;
}

// The "not run" testsuite: one testcase per not-run line, and a failing one when nothing was
// measured; nothing when neither.
Counts write_not_run_suite(std::ostringstream& suites, const Matrix& m) {
  if (m.not_run.empty() && m.measured != 0) return {};
  std::ostringstream cases;
  Counts n;
  for (const NotRun& r : m.not_run) {
    ++n.tests;
    write_testcase(cases, "not-run", not_run_label(r), r.status, r.reason, "", n);
  }
  if (m.measured == 0) {
    ++n.tests;
    ++n.failures;
    cases << "    <testcase classname=\"matrix\" name=\"something was measured\">\n"
          << "      <failure message=\"nothing was measured\"/>\n    </testcase>\n";
  }
  write_suite(suites, "not run", n, cases.str());
  return n;
}

// The "left out" testsuite: the bundles the caller's --method left out, skipped with the reason.
Counts write_left_out_suite(std::ostringstream& suites, const Matrix& m) {
  if (m.left_out.empty()) return {};
  std::ostringstream cases;
  for (const LeftOut& l : m.left_out)
    cases << "    <testcase classname=\"left-out\" name=\"" << xml_escape(l.bundle) << "\">\n"
          << "      <skipped message=\"" << xml_escape("left out by --method: " + l.reason) << "\"/>\n"
          << "    </testcase>\n";
  const Counts n{m.left_out.size(), 0, m.left_out.size()};
  write_suite(suites, "left out", n, cases.str());
  return n;
}

// ---- measure-tolerances ------------------------------------------------------------------------

// Group `g`'s testsuite: its coverage testcase, then one testcase per output of the group.
Counts write_group_suite(std::ostringstream& suites, const ToleranceReport& r, const GroupObservation& g) {
  Counts n{1, g.covered ? 0u : 1u, 0};
  std::ostringstream cases;
  const std::string suite = group_label(g);
  cases << "    <testcase classname=\"" << xml_escape(suite) << "\" name=\"coverage at margin "
        << tfmt(r.margin) << "\">\n";
  if (!g.covered) {
    std::string why;
    for (const auto& w : g.not_covered) why += (why.empty() ? "" : "; ") + w;
    cases << "      <failure message=\"" << xml_escape(why) << "\"/>\n";
  }
  cases << "      <system-out>" << xml_escape("table: " + term_text(g) + "\nobserved × margin: " +
                                             suggestion_text(g))
        << "</system-out>\n    </testcase>\n";
  for (const OutputObservation& o : r.outputs) {
    if (o.recipe != g.recipe || o.precision != g.precision || o.against != g.against) continue;
    ++n.tests;
    cases << "    <testcase classname=\"" << xml_escape(o.model + "." + o.backend + "." + o.recipe)
          << "\" name=\"" << xml_escape(o.bundle + " " + o.case_id + "/" + o.report.output) << "\">\n";
    if (o.xfail) {
      ++n.skipped;
      cases << "      <skipped message=\"" << xml_escape("xfail: " + o.xfail_reason) << "\"/>\n";
    } else if (!o.report.passed) {
      ++n.failures;
      cases << "      <failure message=\"" << xml_escape(o.report.failure) << "\"/>\n";
    }
    cases << "      <system-out>" << xml_escape(output_line(o)) << "</system-out>\n    </testcase>\n";
  }
  write_suite(suites, suite, n, cases.str());
  return n;
}

}  // namespace

std::string to_junit(const Matrix& m) {
  std::ostringstream suites;
  Counts total;
  for (size_t col = 0; col < m.columns.size(); ++col) total += write_column_suite(suites, m, col);
  total += write_not_run_suite(suites, m);
  total += write_left_out_suite(suites, m);
  return junit_document("etproof matrix", total, suites.str());
}

std::string to_junit(const ToleranceReport& r) {
  std::ostringstream suites;
  Counts total;
  for (const GroupObservation& g : r.groups) total += write_group_suite(suites, r, g);
  return junit_document("etproof measure-tolerances", total, suites.str());
}

}  // namespace etproof
