// etproof/render_tolerances.cpp — measure-tolerances' report as text, Markdown and JSON
// (etproof/tolerances.h), and its table of formats (JUnit: render_junit.cpp).
#include <cmath>
#include <iomanip>
#include <set>
#include <sstream>

#include "etproof/render/formats.h"
#include "etproof/render/junit.h"
#include "etproof/render/tolerances.h"
#include "etproof/replay/tolerances.h"
#include "render/render_tolerances.h"

namespace etproof {
using namespace render;  // NOLINT: the private helpers of render_tolerances.h

std::string to_text(const ToleranceReport& r) {
  std::ostringstream os;
  os << "measure-tolerances: ";
  for (size_t i = 0; i < r.dirs.size(); ++i) os << (i ? ", " : "") << r.dirs[i];
  os << "\nmargin: " << tfmt(r.margin) << "× in error amplitude (" << tfmt(r.margin * r.margin)
     << "× in 1 − cosine, " << tfmt(20 * std::log10(r.margin)) << " dB of SQNR)\n";
  if (!r.caller_bound.empty())
    os << "bound: caller-supplied (" << r.caller_bound
       << "); fields not given come from the table\n";
  os << (r.own_reference
             ? "measured: each column against its own reference computation (--own-reference: "
               "the float32 golden, or the precision's emulation), no truth, no widening\n"
             : "measured as judged: float columns against float64 truth with the row widened by "
               "4x the golden's (or emulation's) own error against truth, where the bundle "
               "carries references; int8 against the golden; integers exactly\n");
  os << "\nper (recipe, precision, against), xfail outputs excluded:\n";
  for (const GroupObservation& g : r.groups) {
    os << "  " << group_label(g) << ": " << (g.covered ? "covered" : "NOT COVERED")
       << " by the margin; " << g.outputs << " output(s), " << g.cases << " case(s), " << g.models
       << " model(s), " << g.bundles << " bundle(s)";
    if (g.xfail_outputs) os << "; " << g.xfail_outputs << " xfail output(s) excluded";
    if (g.inconclusive_outputs)
      os << "; " << g.inconclusive_outputs << " inconclusive output(s) excluded (their references disagree or no bound follows)";
    os << "\n";
    if (g.outputs) {
      os << "    worst: range error " << tfmt(g.worst_range_error, 4) << "·max|ref| ("
         << g.worst_range_at << ")";
      if (g.worst_qstep_error)
        os << ", " << tfmt(*g.worst_qstep_error, 4) << " quant steps (" << g.worst_qstep_at << ")";
      os << "; 1 − cosine " << tfmt(g.worst_one_minus_cosine, 3) << "; SQNR "
         << tfmt(g.worst_sqnr_db, 4) << " dB; ratio to bound " << tfmt(g.worst_ratio, 4)
         << " (" << g.worst_ratio_at << ")\n";
    }
    os << "    table: " << term_text(g) << "\n";
    if (g.outputs) os << "    " << tfmt(r.margin) << "× the observation: " << suggestion_text(g) << "\n";
    for (const std::string& why : g.not_covered) os << "    not covered: " << why << "\n";
  }
  os << "\nper output (bound resolved; headroom = 1 − worst ratio):\n";
  for (const OutputObservation& o : r.outputs) {
    os << "  " << output_line(o) << "\n";
    if (!o.report.passed && !o.xfail) os << "      failed: " << o.report.failure << "\n";
    if (o.xfail) os << "      expected failure: " << o.xfail_reason << "\n";
  }
  if (!r.skipped.empty()) {
    os << "\nnot measured:\n";
    for (const SkippedBundle& s : r.skipped) os << "  " << s.bundle << ": " << s.reason << "\n";
  }
  size_t not_covered = 0, xfail = 0;
  for (const auto& g : r.groups) not_covered += !g.covered;
  for (const auto& o : r.outputs) xfail += o.xfail;
  os << "\n" << r.outputs.size() << " output(s) measured (" << xfail << " xfail, excluded), "
     << r.groups.size() << " (recipe, precision, against) group(s), " << r.skipped.size()
     << " not measured: "
     << (r.exit_code() == 0 ? "PASS: the table covers every observation by the margin"
         : r.groups.empty()  ? "FAIL: nothing was measured"
                             : "FAIL: " + std::to_string(not_covered) +
                                   " group(s) not covered by the margin: if an output above "
                                   "failed its bound, that bundle drifted (see it with etproof "
                                   "parity); if the golden set grew, re-measure the table "
                                   "(cpp/src/gate/bounds.cpp)")
     << "\n";
  return os.str();
}

std::string to_markdown(const ToleranceReport& r) {
  auto esc = [](std::string s) {
    std::string out;
    for (char ch : s) out += ch == '|' ? std::string("\\|") : std::string(1, ch == '\n' ? ' ' : ch);
    return out;
  };
  std::ostringstream os;
  os << "**Margin** " << tfmt(r.margin) << "× in error amplitude"
     << (r.caller_bound.empty() ? "" : "; bound caller-supplied (" + esc(r.caller_bound) + ")")
     << (r.own_reference ? "; each column against its own reference (--own-reference)"
                         : "; as judged (float columns against float64 truth, widened)")
     << "\n\n| recipe | precision | against | covered | outputs | cases | models | xfail excluded | "
        "range error | quant steps | 1 − cosine | SQNR dB | ratio | table | "
     << tfmt(r.margin) << "× observed |\n|"
     << " --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n";
  for (const GroupObservation& g : r.groups)
    os << "| " << esc(g.recipe) << " | " << esc(g.precision) << " | "
       << esc(g.against + (g.widened ? " (widened)" : "")) << " | "
       << (g.covered ? "yes" : "**no**") << " | " << g.outputs << " | " << g.cases << " | "
       << g.models << " | " << g.xfail_outputs << " | " << tfmt(g.worst_range_error, 4) << " | "
       << (g.worst_qstep_error ? tfmt(*g.worst_qstep_error, 4) : "–") << " | "
       << tfmt(g.worst_one_minus_cosine, 3) << " | " << tfmt(g.worst_sqnr_db, 4) << " | "
       << tfmt(g.worst_ratio, 4) << " | " << esc(term_text(g)) << " | " << esc(suggestion_text(g))
       << " |\n";
  os << "\n| status | bundle | case/output | backend/recipe | worst [index] actual vs ref | "
        "over | cosine | SQNR dB | bound (rule; resolved) | headroom |\n"
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n";
  for (const OutputObservation& o : r.outputs) {
    const TensorReport& t = o.report;
    os << "| " << (o.xfail ? "xfail" : t.passed ? "pass" : "**fail**") << " | " << esc(o.bundle)
       << " | " << esc(o.case_id + "/" + t.output) << " | " << esc(o.backend + "/" + o.recipe)
       << " | " << index_text(t.worst_index) << " " << tfmt(t.worst_actual, 6) << " vs "
       << tfmt(t.worst_reference, 6) << " | " << tfmt(100 * t.fraction_over, 3) << "% | "
       << cosine_text(t.cosine) << " | " << tfmt(t.sqnr_db, 4) << " | "
       << esc(describe_bound(o.bound)) << "; " << esc(resolved_text(t)) << " | "
       << tfmt(t.headroom, 3) << " |\n";
  }
  if (!r.skipped.empty()) {
    os << "\n**Not measured**\n\n";
    for (const SkippedBundle& s : r.skipped) os << "- " << esc(s.bundle) << ": " << esc(s.reason) << "\n";
  }
  os << "\n" << (r.exit_code() == 0 ? "**PASS**" : "**FAIL**") << "\n";
  return os.str();
}

namespace {

// A (recipe, precision, against) group: what it covers, its worst observations and where, its
// bound, and the row the margin would suggest.
nlohmann::json group_json(const GroupObservation& g) {
  return {{"recipe", g.recipe},
          {"precision", g.precision},
          {"against", g.against},
          {"widened", g.widened},
          {"covered", g.covered},
          {"not_covered", g.not_covered},
          {"outputs", g.outputs},
          {"cases", g.cases},
          {"models", g.models},
          {"bundles", g.bundles},
          {"xfail_outputs", g.xfail_outputs},
          {"inconclusive_outputs", g.inconclusive_outputs},
          {"failed_outputs", g.failed_outputs},
          {"worst",
           {{"range_error", num(g.worst_range_error)},
            {"range_error_at", g.worst_range_at},
            {"qstep_error", num(g.worst_qstep_error)},
            {"qstep_error_at", g.worst_qstep_at},
            {"one_minus_cosine", num(g.worst_one_minus_cosine)},
            {"cosine_at", g.worst_cosine_at},
            {"sqnr_db", num(g.worst_sqnr_db)},
            {"sqnr_at", g.worst_sqnr_at},
            {"ratio", num(g.worst_ratio)},
            {"ratio_at", g.worst_ratio_at}}},
          {"bound", g.bound ? to_json(*g.bound) : nlohmann::json(nullptr)},
          {"bound_error", g.bound_error},
          {"suggested",
           {{"atol_range", num(g.suggest_atol_range)},
            {"atol_qsteps", num(g.suggest_atol_qsteps)},
            {"min_cosine", num(g.suggest_min_cosine)},
            {"min_sqnr_db", num(g.suggest_min_sqnr_db)}}}};
}

// One output measured: its bundle and case, verdict, worst element, errors in the gate's terms,
// and its bound as resolved.
nlohmann::json output_json(const OutputObservation& o) {
  const TensorReport& t = o.report;
  return {{"dir", o.dir},
          {"bundle", o.bundle},
          {"model", o.model},
          {"backend", o.backend},
          {"recipe", o.recipe},
          {"precision", o.precision},
          {"case", o.case_id},
          {"against", o.against},
          {"output", t.output},
          {"passed", t.passed},
          {"failure", t.failure},
          {"xfail", o.xfail},
          {"xfail_reason", o.xfail ? nlohmann::json(o.xfail_reason) : nlohmann::json()},
          {"worst_index", t.worst_index},
          {"worst_actual", num(t.worst_actual)},
          {"worst_reference", num(t.worst_reference)},
          {"max_abs_error", num(t.max_abs_error)},
          {"fraction_over", t.fraction_over},
          {"cosine", num(t.cosine)},
          {"sqnr_db", num(t.sqnr_db)},
          {"reference_range", num(t.reference_range)},
          {"quant_scale", num(t.quant_scale)},
          {"range_error", num(t.range_error)},
          {"qstep_error", num(t.qstep_error)},
          {"worst_ratio", num(t.worst_ratio)},
          {"headroom", num(t.headroom)},
          {"bound", to_json(o.bound)},
          {"resolved", {{"atol", num(t.atol)}, {"rtol", num(t.rtol)}}}};
}

}  // namespace

nlohmann::json to_json(const ToleranceReport& r) {
  nlohmann::json groups = nlohmann::json::array(), outs = nlohmann::json::array(),
                 skipped = nlohmann::json::array();
  for (const GroupObservation& g : r.groups) groups.push_back(group_json(g));
  for (const OutputObservation& o : r.outputs) outs.push_back(output_json(o));
  for (const SkippedBundle& s : r.skipped)
    skipped.push_back({{"dir", s.dir},
                       {"bundle", s.bundle},
                       {"backend", s.backend},
                       {"recipe", s.recipe},
                       {"reason", s.reason}});
  return {{"dirs", r.dirs},
          {"margin", r.margin},
          {"caller_bound", r.caller_bound.empty() ? nlohmann::json() : nlohmann::json(r.caller_bound)},
          {"own_reference", r.own_reference},
          {"groups", groups},
          {"outputs", outs},
          {"skipped", skipped},
          {"exit_code", r.exit_code()}};
}

namespace {

std::string json_text_report(const ToleranceReport& r) { return json_report(to_json(r)); }

constexpr Renderer<ToleranceReport> kToleranceRenderers[] = {
    {"text", to_text, "per (recipe, precision, against): covered or not, the worst observed; then each output"},
    {"json", json_text_report, "every group and output with its numbers, for tools"},
    {"markdown", to_markdown, "the groups and the outputs as two tables"},
    {"junit", to_junit, "JUnit XML: a testsuite per group, a testcase per output (as --junit FILE writes)"},
};

}  // namespace

Renderers<ToleranceReport> tolerance_renderers() { return kToleranceRenderers; }

}  // namespace etproof
