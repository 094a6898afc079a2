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

std::string to_junit(const Matrix& m) {
  using detail::xml_escape;
  std::ostringstream suites;
  size_t tests = 0, failures = 0, skipped = 0;
  auto skips = [](CellStatus s) {
    return s == CellStatus::kXfail || s == CellStatus::kNotLinked ||
           s == CellStatus::kUnavailable || s == CellStatus::kExportRefused ||
           s == CellStatus::kNotRunnableHere;
  };
  auto testcase = [&](std::ostringstream& os, const std::string& classname,
                      const std::string& name, CellStatus status, const std::string& detail,
                      const std::string& out, size_t& f, size_t& s) {
    os << "    <testcase classname=\"" << xml_escape(classname) << "\" name=\""
       << xml_escape(name) << "\">\n";
    const std::string msg = std::string(to_string(status)) + (detail.empty() ? "" : ": " + detail);
    if (fails_run(status)) {
      ++f;
      os << "      <failure type=\"" << to_string(status) << "\" message=\"" << xml_escape(msg)
         << "\"/>\n";
    } else if (skips(status)) {
      ++s;
      os << "      <skipped message=\"" << xml_escape(msg) << "\"/>\n";
    }
    if (!out.empty()) os << "      <system-out>" << xml_escape(out) << "</system-out>\n";
    os << "    </testcase>\n";
  };
  for (size_t col = 0; col < m.columns.size(); ++col) {
    const Column& c = m.columns[col];
    std::ostringstream cases;
    size_t t = 0, f = 0, s = 0;
    const std::string classname = model_label(c.model) + "." + c.backend + "." + c.recipe +
                                  (c.machine.empty() ? "" : "." + c.machine);
    for (const Cell& cell : m.cells) {
      if (cell.column != col) continue;
      ++t;
      std::ostringstream out;
      out << to_string(cell.status);
      if (cell.max_abs_error) out << ", max abs error " << fmt(*cell.max_abs_error, 4);
      if (cell.range_error) out << " (" << fmt(*cell.range_error, 3) << "·max|ref|)";
      if (cell.cosine) out << ", cosine " << cosine_text(*cell.cosine);
      if (cell.sqnr_db) out << ", SQNR " << fmt(*cell.sqnr_db, 4) << " dB";
      if (cell.atol) out << ", resolved atol " << fmt(*cell.atol, 4);
      if (cell.headroom) out << ", headroom " << fmt(*cell.headroom, 3);
      out << "; bound: " << bound_text(c.bound);
      testcase(cases, classname, cell.case_id, cell.status, cell.detail, out.str(), f, s);
    }
    tests += t;
    failures += f;
    skipped += s;
    suites << "  <testsuite name=\"" << xml_escape(model_label(c.model) + " " + label_in_model(m, col))
           << "\" tests=\"" << t << "\" failures=\"" << f << "\" errors=\"0\" skipped=\"" << s
           << "\">\n" << cases.str() << "  </testsuite>\n";
  }
  if (!m.not_run.empty() || m.measured == 0) {
    std::ostringstream cases;
    size_t t = 0, f = 0, s = 0;
    for (const NotRun& n : m.not_run) {
      ++t;
      testcase(cases, "not-run", not_run_label(n), n.status, n.reason, "", f, s);
    }
    if (m.measured == 0) {
      ++t;
      ++f;
      cases << "    <testcase classname=\"matrix\" name=\"something was measured\">\n"
            << "      <failure message=\"nothing was measured\"/>\n    </testcase>\n";
    }
    tests += t;
    failures += f;
    skipped += s;
    suites << "  <testsuite name=\"not run\" tests=\"" << t << "\" failures=\"" << f
           << "\" errors=\"0\" skipped=\"" << s << "\">\n" << cases.str() << "  </testsuite>\n";
  }
  if (!m.left_out.empty()) {  // the caller's --method left them out: skipped, with the reason
    std::ostringstream cases;
    for (const LeftOut& l : m.left_out)
      cases << "    <testcase classname=\"left-out\" name=\"" << xml_escape(l.bundle) << "\">\n"
            << "      <skipped message=\"" << xml_escape("left out by --method: " + l.reason) << "\"/>\n"
            << "    </testcase>\n";
    tests += m.left_out.size();
    skipped += m.left_out.size();
    suites << "  <testsuite name=\"left out\" tests=\"" << m.left_out.size()
           << "\" failures=\"0\" errors=\"0\" skipped=\"" << m.left_out.size() << "\">\n"
           << cases.str() << "  </testsuite>\n";
  }
  std::ostringstream os;
  os << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"etproof matrix\" tests=\""
     << tests << "\" failures=\"" << failures << "\" errors=\"0\" skipped=\"" << skipped
     << "\">\n" << suites.str() << "</testsuites>\n";
  return os.str();
}

std::string to_junit(const ToleranceReport& r) {
  std::ostringstream os;
  size_t tests = 0, failures = 0, skipped = 0;
  std::ostringstream suites;
  for (const GroupObservation& g : r.groups) {
    size_t t = 1, f = g.covered ? 0 : 1, s = 0;
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
      ++t;
      cases << "    <testcase classname=\"" << xml_escape(o.model + "." + o.backend + "." + o.recipe)
            << "\" name=\"" << xml_escape(o.bundle + " " + o.case_id + "/" + o.report.output) << "\">\n";
      if (o.xfail) {
        ++s;
        cases << "      <skipped message=\"" << xml_escape("xfail: " + o.xfail_reason) << "\"/>\n";
      } else if (!o.report.passed) {
        ++f;
        cases << "      <failure message=\"" << xml_escape(o.report.failure) << "\"/>\n";
      }
      cases << "      <system-out>" << xml_escape(output_line(o)) << "</system-out>\n    </testcase>\n";
    }
    tests += t;
    failures += f;
    skipped += s;
    suites << "  <testsuite name=\"" << xml_escape(suite) << "\" tests=\"" << t << "\" failures=\""
           << f << "\" errors=\"0\" skipped=\"" << s << "\">\n" << cases.str() << "  </testsuite>\n";
  }
  os << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"etproof measure-tolerances\" "
     << "tests=\"" << tests << "\" failures=\"" << failures << "\" errors=\"0\" skipped=\""
     << skipped << "\">\n" << suites.str() << "</testsuites>\n";
  return os.str();
}

}  // namespace etproof
