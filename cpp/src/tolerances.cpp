// `etproof measure-tolerances` (tolerances.h): the bound table re-measured in its own terms.
#include "etproof/tolerances.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "etproof/bundle.h"
#include "etproof/error.h"
#include "etproof/matrix.h"
#include "etproof/replay.h"
#include "common.h"

namespace etproof {

namespace {

namespace fs = std::filesystem;
using detail::cosine_text;
using detail::format_number;
using detail::xml_escape;

constexpr double kInf = std::numeric_limits<double>::infinity();

std::string fmt(double v, int precision = 4) { return format_number(v, precision); }

using detail::json_number;
nlohmann::json num(double v) { return json_number(v); }
nlohmann::json num(const std::optional<double>& v) { return json_number(v); }
std::string error_text(const Error& e) { return detail::error_line(e); }

std::string index_text(const std::vector<int64_t>& idx) {
  return idx.empty() ? std::string("[]") : shape_to_string(idx);
}

// Rounded outwards to 2 significant digits: up (a tolerance) or down (a floor).
double round2(double v, bool up) {
  if (!(v > 0) || !std::isfinite(v)) return v;
  const double e = std::pow(10.0, std::floor(std::log10(v)) - 1);
  return (up ? std::ceil(v / e - 1e-9) : std::floor(v / e + 1e-9)) * e;
}

std::string where(const OutputObservation& o) {
  return o.bundle + " " + o.case_id + "/" + o.report.output;
}

// One bundle, replayed by the engine (replay.h): every output of every case it measured becomes an
// observation; what it could not run is listed in `skipped`. Without a bound the numbers are still
// measured (against a bound nothing exceeds) so the report can say what the table would need.
void measure_bundle(ToleranceReport& rep, const fs::path& dir, const fs::path& path,
                    const std::vector<XfailRecord>& records, const ToleranceOptions& opt) {
  ReplayOptions options;
  options.caller = opt.caller;
  options.xfail = records;
  const ParityReport r = replay(path, options);
  auto skip = [&](const std::string& why) {
    rep.skipped.push_back({dir.string(), r.bundle, r.backend, r.recipe, why});
  };
  if (r.refused) {
    skip(r.error ? error_text(*r.error) : std::string(to_string(*r.refused)));
    return;
  }
  for (const CaseReport& c : r.cases) {
    if (c.outputs.empty()) {
      skip("case " + c.case_id + ": " + c.detail);
      continue;
    }
    for (const TensorReport& t : c.outputs) {
      OutputObservation o;
      o.dir = dir.string();
      o.bundle = r.bundle;
      o.model = r.model;
      o.backend = r.backend;
      o.recipe = r.recipe;
      o.precision = r.precision;
      o.case_id = c.case_id;
      o.bound = r.bound;
      o.report = t;
      o.xfail = c.xfail.has_value();
      if (c.xfail) o.xfail_reason = c.xfail->reason;
      rep.outputs.push_back(std::move(o));
    }
  }
}

void summarize(ToleranceReport& rep) {
  std::map<std::pair<std::string, std::string>, std::vector<const OutputObservation*>> by_group;
  for (const auto& o : rep.outputs) by_group[{o.recipe, o.precision}].push_back(&o);
  const double M = rep.margin;
  for (const auto& [key, obs] : by_group) {
    GroupObservation g;
    g.recipe = key.first;
    g.precision = key.second;
    std::set<std::string> cases, models, bundles;
    bool any_sqnr = false;
    for (const OutputObservation* o : obs) {
      if (!g.bound && o->bound.source.rfind("none: ", 0) != 0) g.bound = o->bound;
      if (o->bound.source.rfind("none: ", 0) == 0) g.bound_error = o->bound.source.substr(6);
      if (o->xfail) {
        ++g.xfail_outputs;
        continue;
      }
      const TensorReport& t = o->report;
      ++g.outputs;
      cases.insert(o->dir + "/" + o->bundle + "/" + o->case_id);
      models.insert(o->model);
      bundles.insert(o->dir + "/" + o->bundle);
      if (!t.passed) ++g.failed_outputs;
      if (t.range_error >= g.worst_range_error) {
        g.worst_range_error = t.range_error;
        g.worst_range_at = where(*o);
      }
      if (t.qstep_error && (!g.worst_qstep_error || *t.qstep_error >= *g.worst_qstep_error)) {
        g.worst_qstep_error = t.qstep_error;
        g.worst_qstep_at = where(*o);
      }
      const double omc = 1 - t.cosine;
      if (omc >= g.worst_one_minus_cosine || g.worst_cosine_at.empty()) {
        g.worst_one_minus_cosine = std::max(omc, g.worst_one_minus_cosine);
        g.worst_cosine_at = where(*o);
      }
      if (!t.sqnr_skipped) {
        any_sqnr = true;
        if (t.sqnr_db <= g.worst_sqnr_db) {
          g.worst_sqnr_db = t.sqnr_db;
          g.worst_sqnr_at = where(*o);
        }
      }
      if (t.worst_ratio >= g.worst_ratio) {
        g.worst_ratio = t.worst_ratio;
        g.worst_ratio_at = where(*o);
      }
      // A non-numeric rule failed (NaN/inf, constant output): no margin can cover it.
      if (!t.passed && (t.failure.find("non-finite") != std::string::npos ||
                        t.failure.find("constant output") != std::string::npos))
        g.not_covered.push_back(where(*o) + ": " + t.failure);
    }
    g.cases = cases.size();
    g.models = models.size();
    g.bundles = bundles.size();
    // Suggested terms: M× the observation, rounded outwards.
    g.suggest_atol_range = round2(M * g.worst_range_error, true);
    if (g.worst_qstep_error) g.suggest_atol_qsteps = round2(M * *g.worst_qstep_error, true);
    g.suggest_min_cosine = 1 - round2(M * M * g.worst_one_minus_cosine, true);
    if (any_sqnr && std::isfinite(g.worst_sqnr_db))
      g.suggest_min_sqnr_db = std::floor((g.worst_sqnr_db - 20 * std::log10(M)) * 10) / 10;
    // Coverage by the margin.
    if (g.outputs == 0) {
      g.covered = true;  // only xfail outputs: nothing to cover (listed separately)
    } else if (!g.bound) {
      g.not_covered.push_back("no bound for this recipe/precision: " + g.bound_error);
    } else {
      const Bound& b = *g.bound;
      // A target term is what the table holds a recipe to, not a measurement with a margin: its
      // (non-xfail) observations must lie within it, with no margin.
      const double M = b.target && !b.caller_supplied ? 1.0 : rep.margin;
      if (M * g.worst_ratio > 1)
        g.not_covered.push_back("elementwise: " + fmt(M) + " × worst ratio " +
                                fmt(g.worst_ratio) + " > 1 (" + g.worst_ratio_at + ")");
      if (M * M * g.worst_one_minus_cosine > 1 - b.min_cosine)
        g.not_covered.push_back("cosine: " + fmt(M * M) + " × (1 − " +
                                cosine_text(1 - g.worst_one_minus_cosine) + ") > 1 − " +
                                cosine_text(b.min_cosine) + " (" + g.worst_cosine_at + ")");
      if (any_sqnr && b.min_sqnr_db != -kInf &&
          g.worst_sqnr_db - 20 * std::log10(M) < b.min_sqnr_db)
        g.not_covered.push_back("SQNR: " + fmt(g.worst_sqnr_db) + " dB − " +
                                fmt(20 * std::log10(M)) + " dB < floor " +
                                fmt(b.min_sqnr_db) + " dB (" + g.worst_sqnr_at + ")");
      g.covered = g.not_covered.empty();
    }
    rep.groups.push_back(std::move(g));
  }
}

std::string pair_label(const std::string& recipe, const std::string& precision) {
  return recipe + " / " + precision;
}

std::string resolved_text(const TensorReport& t) {
  std::string s = "atol " + fmt(t.atol, 4) + " + rtol " + fmt(t.rtol, 3) + "·|ref|";
  return s;
}

std::string output_line(const OutputObservation& o) {
  const TensorReport& t = o.report;
  std::ostringstream os;
  os << (o.xfail ? "xfail" : t.passed ? "pass " : "FAIL ") << "  " << o.bundle << "  " << o.case_id
     << "/" << t.output << "  " << o.backend << "/" << o.recipe << ": worst " << index_text(t.worst_index)
     << " " << fmt(t.worst_actual, 6) << " vs " << fmt(t.worst_reference, 6) << ", error "
     << fmt(t.range_error, 3) << "·max|ref|";
  if (t.qstep_error) os << " (" << fmt(*t.qstep_error, 3) << " steps)";
  os << ", over " << fmt(100 * t.fraction_over, 3) << "%, cosine " << cosine_text(t.cosine)
     << ", SQNR " << fmt(t.sqnr_db, 4) << " dB, bound " << resolved_text(t) << ", headroom "
     << fmt(t.headroom, 3);
  return os.str();
}

std::string term_text(const GroupObservation& g) {
  if (!g.bound) return "none (" + g.bound_error + ")";
  return describe_bound(*g.bound) +
         (g.bound->caller_supplied ? " (caller-supplied)"
          : g.bound->target        ? " (table; a target, not a measurement: checked without the "
                                     "margin)"
                                   : " (table)");
}

std::string suggestion_text(const GroupObservation& g) {
  std::ostringstream os;
  os << "atol_range " << fmt(g.suggest_atol_range, 2);
  if (g.suggest_atol_qsteps) os << ", atol_qsteps " << fmt(*g.suggest_atol_qsteps, 2);
  os << ", min_cosine " << cosine_text(g.suggest_min_cosine) << ", min_sqnr ";
  if (g.suggest_min_sqnr_db)
    os << fmt(*g.suggest_min_sqnr_db, 4) << " dB";
  else
    os << "none (exact)";
  return os.str();
}

}  // namespace

int ToleranceReport::exit_code() const {
  if (groups.empty()) return 1;
  size_t measured = 0;
  for (const auto& g : groups) {
    measured += g.outputs;
    if (!g.covered) return 1;
  }
  return measured == 0 ? 1 : 0;
}

ToleranceReport measure_tolerances(const std::vector<fs::path>& dirs,
                                   const ToleranceOptions& opt) {
  if (!(opt.margin >= 1) || !std::isfinite(opt.margin))
    throw Error(ErrorKind::kInvalidArgument,
                "--margin " + fmt(opt.margin) + " is not a number ≥ 1",
                "pass the amplitude margin the table must keep, e.g. --margin 4");
  ToleranceReport rep;
  rep.margin = opt.margin;
  if (!opt.caller.empty()) {
    std::vector<std::string> given;
    auto add = [&](const std::optional<double>& v, const char* flag) {
      if (v) given.push_back(std::string(flag) + " " + format_number(*v, 12));
    };
    add(opt.caller.atol, "--atol");
    add(opt.caller.rtol, "--rtol");
    add(opt.caller.min_cosine, "--min-cosine");
    add(opt.caller.min_sqnr_db, "--min-sqnr");
    for (size_t i = 0; i < given.size(); ++i) rep.caller_bound += (i ? " " : "") + given[i];
  }
  for (const fs::path& dir : dirs) {
    if (!fs::is_directory(dir))
      throw Error(ErrorKind::kIo, "bundle directory " + dir.string() + " does not exist",
                  "pass directories the export half wrote (etproof export … --out DIR)");
    rep.dirs.push_back(dir.string());
    std::vector<XfailRecord> records;
    if (fs::exists(dir / "xfail.json")) records = read_xfail(dir / "xfail.json");
    for (const fs::path& b : find_bundles(dir)) measure_bundle(rep, dir, b, records, opt);
  }
  summarize(rep);
  return rep;
}

std::string to_text(const ToleranceReport& r) {
  std::ostringstream os;
  os << "measure-tolerances: ";
  for (size_t i = 0; i < r.dirs.size(); ++i) os << (i ? ", " : "") << r.dirs[i];
  os << "\nmargin: " << fmt(r.margin) << "× in error amplitude (" << fmt(r.margin * r.margin)
     << "× in 1 − cosine, " << fmt(20 * std::log10(r.margin)) << " dB of SQNR)\n";
  if (!r.caller_bound.empty())
    os << "bound: caller-supplied (" << r.caller_bound
       << "); fields not given come from the table\n";
  os << "\nper (recipe, precision), xfail outputs excluded:\n";
  for (const GroupObservation& g : r.groups) {
    os << "  " << pair_label(g.recipe, g.precision) << ": " << (g.covered ? "covered" : "NOT COVERED")
       << " by the margin; " << g.outputs << " output(s), " << g.cases << " case(s), " << g.models
       << " model(s), " << g.bundles << " bundle(s)";
    if (g.xfail_outputs) os << "; " << g.xfail_outputs << " xfail output(s) excluded";
    os << "\n";
    if (g.outputs) {
      os << "    worst: range error " << fmt(g.worst_range_error, 4) << "·max|ref| ("
         << g.worst_range_at << ")";
      if (g.worst_qstep_error)
        os << ", " << fmt(*g.worst_qstep_error, 4) << " quant steps (" << g.worst_qstep_at << ")";
      os << "; 1 − cosine " << fmt(g.worst_one_minus_cosine, 3) << "; SQNR "
         << fmt(g.worst_sqnr_db, 4) << " dB; ratio to bound " << fmt(g.worst_ratio, 4)
         << " (" << g.worst_ratio_at << ")\n";
    }
    os << "    table: " << term_text(g) << "\n";
    if (g.outputs) os << "    " << fmt(r.margin) << "× the observation: " << suggestion_text(g) << "\n";
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
     << r.groups.size() << " (recipe, precision) pair(s), " << r.skipped.size()
     << " not measured: "
     << (r.exit_code() == 0 ? "PASS: the table covers every observation by the margin"
         : r.groups.empty()  ? "FAIL: nothing was measured"
                             : "FAIL: " + std::to_string(not_covered) +
                                   " pair(s) not covered by the margin: if an output above "
                                   "failed its bound, that bundle drifted (see it with etproof "
                                   "parity); if the golden set grew, re-measure the table "
                                   "(cpp/src/gate.cpp)")
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
  os << "**Margin** " << fmt(r.margin) << "× in error amplitude"
     << (r.caller_bound.empty() ? "" : "; bound caller-supplied (" + esc(r.caller_bound) + ")")
     << "\n\n| recipe | precision | covered | outputs | cases | models | xfail excluded | "
        "range error | quant steps | 1 − cosine | SQNR dB | ratio | table | "
     << fmt(r.margin) << "× observed |\n|"
     << " --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n";
  for (const GroupObservation& g : r.groups)
    os << "| " << esc(g.recipe) << " | " << esc(g.precision) << " | "
       << (g.covered ? "yes" : "**no**") << " | " << g.outputs << " | " << g.cases << " | "
       << g.models << " | " << g.xfail_outputs << " | " << fmt(g.worst_range_error, 4) << " | "
       << (g.worst_qstep_error ? fmt(*g.worst_qstep_error, 4) : "–") << " | "
       << fmt(g.worst_one_minus_cosine, 3) << " | " << fmt(g.worst_sqnr_db, 4) << " | "
       << fmt(g.worst_ratio, 4) << " | " << esc(term_text(g)) << " | " << esc(suggestion_text(g))
       << " |\n";
  os << "\n| status | bundle | case/output | backend/recipe | worst [index] actual vs ref | "
        "over | cosine | SQNR dB | bound (rule; resolved) | headroom |\n"
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n";
  for (const OutputObservation& o : r.outputs) {
    const TensorReport& t = o.report;
    os << "| " << (o.xfail ? "xfail" : t.passed ? "pass" : "**fail**") << " | " << esc(o.bundle)
       << " | " << esc(o.case_id + "/" + t.output) << " | " << esc(o.backend + "/" + o.recipe)
       << " | " << index_text(t.worst_index) << " " << fmt(t.worst_actual, 6) << " vs "
       << fmt(t.worst_reference, 6) << " | " << fmt(100 * t.fraction_over, 3) << "% | "
       << cosine_text(t.cosine) << " | " << fmt(t.sqnr_db, 4) << " | "
       << esc(describe_bound(o.bound)) << "; " << esc(resolved_text(t)) << " | "
       << fmt(t.headroom, 3) << " |\n";
  }
  if (!r.skipped.empty()) {
    os << "\n**Not measured**\n\n";
    for (const SkippedBundle& s : r.skipped) os << "- " << esc(s.bundle) << ": " << esc(s.reason) << "\n";
  }
  os << "\n" << (r.exit_code() == 0 ? "**PASS**" : "**FAIL**") << "\n";
  return os.str();
}

nlohmann::json to_json(const ToleranceReport& r) {
  nlohmann::json groups = nlohmann::json::array();
  for (const GroupObservation& g : r.groups)
    groups.push_back({{"recipe", g.recipe},
                      {"precision", g.precision},
                      {"covered", g.covered},
                      {"not_covered", g.not_covered},
                      {"outputs", g.outputs},
                      {"cases", g.cases},
                      {"models", g.models},
                      {"bundles", g.bundles},
                      {"xfail_outputs", g.xfail_outputs},
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
                        {"min_sqnr_db", num(g.suggest_min_sqnr_db)}}}});
  nlohmann::json outs = nlohmann::json::array();
  for (const OutputObservation& o : r.outputs) {
    const TensorReport& t = o.report;
    outs.push_back({{"dir", o.dir},
                    {"bundle", o.bundle},
                    {"model", o.model},
                    {"backend", o.backend},
                    {"recipe", o.recipe},
                    {"precision", o.precision},
                    {"case", o.case_id},
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
                    {"resolved", {{"atol", num(t.atol)}, {"rtol", num(t.rtol)}}}});
  }
  nlohmann::json skipped = nlohmann::json::array();
  for (const SkippedBundle& s : r.skipped)
    skipped.push_back({{"dir", s.dir},
                       {"bundle", s.bundle},
                       {"backend", s.backend},
                       {"recipe", s.recipe},
                       {"reason", s.reason}});
  return {{"dirs", r.dirs},
          {"margin", r.margin},
          {"caller_bound", r.caller_bound.empty() ? nlohmann::json() : nlohmann::json(r.caller_bound)},
          {"groups", groups},
          {"outputs", outs},
          {"skipped", skipped},
          {"exit_code", r.exit_code()}};
}

std::string to_junit(const ToleranceReport& r) {
  std::ostringstream os;
  size_t tests = 0, failures = 0, skipped = 0;
  std::ostringstream suites;
  for (const GroupObservation& g : r.groups) {
    size_t t = 1, f = g.covered ? 0 : 1, s = 0;
    std::ostringstream cases;
    const std::string suite = pair_label(g.recipe, g.precision);
    cases << "    <testcase classname=\"" << xml_escape(suite) << "\" name=\"coverage at margin "
          << fmt(r.margin) << "\">\n";
    if (!g.covered) {
      std::string why;
      for (const auto& w : g.not_covered) why += (why.empty() ? "" : "; ") + w;
      cases << "      <failure message=\"" << xml_escape(why) << "\"/>\n";
    }
    cases << "      <system-out>" << xml_escape("table: " + term_text(g) + "\nobserved × margin: " +
                                               suggestion_text(g))
          << "</system-out>\n    </testcase>\n";
    for (const OutputObservation& o : r.outputs) {
      if (o.recipe != g.recipe || o.precision != g.precision) continue;
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
