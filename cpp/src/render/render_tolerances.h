// cpp/src/render/render_tolerances.h — private to the library: the text pieces measure-tolerances'
// renderers (render_tolerances.cpp: text, Markdown, JSON; render_junit.cpp: JUnit) share.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "etproof/replay/tolerances.h"
#include "core/common.h"

namespace etproof::render {

using detail::cosine_text;
using detail::format_number;
using detail::json_number;
inline std::string tfmt(double v, int precision = 4) { return format_number(v, precision); }
inline nlohmann::json num(double v) { return json_number(v); }
inline nlohmann::json num(const std::optional<double>& v) { return json_number(v); }
inline std::string index_text(const std::vector<int64_t>& idx) {
  return idx.empty() ? std::string("[]") : shape_to_string(idx);
}
// "fp32 / float32 against float64 truth (widened)", "int8-dynamic-per-channel / float32".
inline std::string group_label(const GroupObservation& g) {
  std::string s = g.recipe + " / " + g.precision;
  if (g.against == "float64") s += " against float64 truth";
  else if (!g.against.empty() && g.against != "golden") s += " against the " + g.against + " emulation";
  if (g.widened) s += " (widened)";
  return s;
}

inline std::string resolved_text(const TensorReport& t) {
  std::string s = "atol " + tfmt(t.atol, 4) + " + rtol " + tfmt(t.rtol, 3) + "·|ref|";
  return s;
}

inline std::string output_line(const OutputObservation& o) {
  const TensorReport& t = o.report;
  std::ostringstream os;
  os << (o.xfail ? "xfail" : t.passed ? "pass " : "FAIL ") << "  " << o.bundle << "  " << o.case_id
     << "/" << t.output << "  " << o.backend << "/" << o.recipe << ": worst " << index_text(t.worst_index)
     << " " << tfmt(t.worst_actual, 6) << " vs " << tfmt(t.worst_reference, 6) << ", error "
     << tfmt(t.range_error, 3) << "·max|ref|";
  if (t.qstep_error) os << " (" << tfmt(*t.qstep_error, 3) << " steps)";
  os << ", over " << tfmt(100 * t.fraction_over, 3) << "%, cosine " << cosine_text(t.cosine)
     << ", SQNR " << tfmt(t.sqnr_db, 4) << " dB, bound " << resolved_text(t) << ", headroom "
     << tfmt(t.headroom, 3);
  return os.str();
}

inline std::string term_text(const GroupObservation& g) {
  if (!g.bound) return "none (" + g.bound_error + ")";
  return describe_bound(*g.bound) +
         (g.bound->caller_supplied ? " (caller-supplied)"
          : g.bound->target        ? " (table; a target, not a measurement: checked without the "
                                     "margin)"
                                   : " (table)");
}

inline std::string suggestion_text(const GroupObservation& g) {
  std::ostringstream os;
  os << "atol_range " << tfmt(g.suggest_atol_range, 2);
  if (g.suggest_atol_qsteps) os << ", atol_qsteps " << tfmt(*g.suggest_atol_qsteps, 2);
  os << ", min_cosine " << cosine_text(g.suggest_min_cosine) << ", min_sqnr ";
  if (g.suggest_min_sqnr_db)
    os << tfmt(*g.suggest_min_sqnr_db, 4) << " dB";
  else
    os << "none (exact)";
  return os.str();
}


}  // namespace etproof::render
