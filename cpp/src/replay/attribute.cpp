// etproof/attribute.cpp — which layer drifted: the tapped twin replayed, its taps read in graph
// order (etproof/attribute.h).
#include "etproof/replay/attribute.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "etproof/runtime/bundle.h"
#include "etproof/runtime/export_half.h"
#include "core/common.h"
#include "core/json_reader.h"

namespace etproof {

namespace fs = std::filesystem;
using detail::JsonReader;
using nlohmann::json;

namespace {

// The remedy of a twin that cannot be used, naming the command this user runs (etproof_command).
std::string reexport_taps() {
  return "re-export the bundle with its tapped twin: " + etproof_command() +
         " export MODULE:FUNCTION --backend B --recipe R --out DIR --taps";
}

std::optional<bool> bool_at(JsonReader& r, const json& obj, const std::string& parent, const char* key) {
  const json* j = r.member(obj, parent, key, /*required=*/true);
  if (!j || !r.expect_type(*j, JsonReader::at(parent, key), j->is_boolean(), "a boolean")) return std::nullopt;
  return j->get<bool>();
}

TapPoint read_point(JsonReader& r, const json& p, const std::string& path) {
  TapPoint t;
  if (!r.expect_type(p, path, p.is_object(), "an object")) return t;
  t.output = r.string_at(p, path, "output").value_or("");
  t.index = size_t(r.int_at(p, path, "index").value_or(0));
  t.node = r.string_at(p, path, "node").value_or("");
  t.op = r.string_at(p, path, "op").value_or("");
  t.module_path = r.string_at(p, path, "module_path", /*required=*/false, /*non_empty=*/false).value_or("");
  t.module_class = r.string_at(p, path, "module_class", false, false).value_or("");
  if (const json* s = r.object_at(p, path, "source", /*required=*/false)) {
    const std::string sp = JsonReader::at(path, "source");
    TapSource src;
    src.file = r.string_at(*s, sp, "file").value_or("");
    src.line = r.int_at(*s, sp, "line", true, 1).value_or(0);
    src.code = r.string_at(*s, sp, "code", false, false).value_or("");
    t.source = src;
  }
  t.delegated = bool_at(r, p, path, "delegated").value_or(false);
  t.delegation_matches = bool_at(r, p, path, "delegation_matches").value_or(true);
  if (p.contains("eligible_index"))
    if (auto e = r.int_at(p, path, "eligible_index")) t.eligible_index = size_t(*e);
  if (const json* feeds = r.array_at(p, path, "feeds", /*required=*/false)) {
    std::vector<std::string> names;
    for (size_t i = 0; i < feeds->size(); ++i) {
      const json& f = (*feeds)[i];
      if (r.expect_type(f, JsonReader::at(JsonReader::at(path, "feeds"), i), f.is_string(), "a string"))
        names.push_back(f.get<std::string>());
    }
    t.feeds = std::move(names);
  }
  return t;
}

// The SQNR a step is measured with: +inf (identical) as what float32 can resolve, and no more.
double resolved_db(const TensorReport& t) { return std::min(t.sqnr_db, kFloat32ResolutionDb); }

std::string layer_name(const TapPoint& p) {
  std::string s = p.output + " " + p.op;
  if (!p.module_path.empty()) s += " (" + p.module_path + (p.module_class.empty() ? "" : ": " + p.module_class) + ")";
  if (p.source) s += " at " + p.source->file + ":" + std::to_string(p.source->line);
  return s;
}

// taps.of: the shipped bundle's name and its program's SHA-256 (64 lower-case hex digits).
void read_of(JsonReader& r, const json& taps, TapsRecord& t) {
  if (const json* of = r.object_at(taps, "taps", "of")) {
    t.of_name = r.string_at(*of, "taps.of", "name").value_or("");
    if (auto s = r.string_at(*of, "taps.of", "artifact_sha256")) {
      if (detail::is_hex64(*s))
        t.of_artifact_sha256 = *s;
      else
        r.problem("taps.of.artifact_sha256", detail::squote(*s) + " is not 64 lower-case hex digits");
    }
  }
}

// taps.range (optional): [FIRST, LAST] of the eligible nodes tapped, FIRST <= LAST < t.eligible.
void read_range(JsonReader& r, const json& taps, TapsRecord& t) {
  const json* range = r.array_at(taps, "taps", "range", /*required=*/false);
  if (!range) return;
  std::optional<int64_t> first, last;
  if (range->size() == 2) {
    first = r.int_value((*range)[0], "taps.range[0]", 0);
    last = r.int_value((*range)[1], "taps.range[1]", 0);
  } else {
    r.problem("taps.range", "expected [FIRST, LAST], found " + std::to_string(range->size()) + " entries");
  }
  if (first && last && (*first > *last || size_t(*last) >= t.eligible))
    r.problem("taps.range", "[" + std::to_string(*first) + ", " + std::to_string(*last) +
                                "] is not FIRST <= LAST < eligible (" + std::to_string(t.eligible) + ")");
  else if (first && last)
    t.range = std::pair<size_t, size_t>(size_t(*first), size_t(*last));
}

// A point's checks against the points before it (t.points) and the twin's outputs: its output is
// one of them and tapped once, its index and eligible index follow the last point's (graph order),
// its eligible index lies in the range tapped, and it feeds only model outputs. `seen` collects
// the outputs tapped so far.
void check_point(JsonReader& r, const TapPoint& p, const std::string& path, const TapsRecord& t,
                 const std::set<std::string>& outputs, std::set<std::string>& seen) {
  if (!p.output.empty() && !outputs.count(p.output))
    r.problem(path + ".output", detail::squote(p.output) + " is not an output of the twin's manifest");
  if (!p.output.empty() && !seen.insert(p.output).second)
    r.problem(path + ".output", detail::squote(p.output) + " is tapped twice");
  if (!t.points.empty() && p.index <= t.points.back().index)
    r.problem(path + ".index", std::to_string(p.index) + " does not follow " +
                                   std::to_string(t.points.back().index) + " (points are in graph order)");
  if (p.eligible_index) {
    const size_t lo = t.range ? t.range->first : 0, hi = t.range ? t.range->second : t.eligible - 1;
    if (*p.eligible_index < lo || *p.eligible_index > hi)
      r.problem(path + ".eligible_index", std::to_string(*p.eligible_index) +
                                              " is outside the eligible nodes tapped (" + std::to_string(lo) +
                                              ".." + std::to_string(hi) + ")");
    else if (!t.points.empty() && t.points.back().eligible_index &&
             *p.eligible_index <= *t.points.back().eligible_index)
      r.problem(path + ".eligible_index", std::to_string(*p.eligible_index) + " does not follow " +
                                              std::to_string(*t.points.back().eligible_index));
  }
  if (p.feeds)
    for (const std::string& f : *p.feeds)
      if (!outputs.count(f) || f.rfind("tap.", 0) == 0)
        r.problem(path + ".feeds", detail::squote(f) + " is not one of the model's outputs");
}

// taps.points (required, non-empty): each point read (read_point) and checked (check_point), in
// order, into t.points.
void read_points(JsonReader& r, const json& taps, const Manifest& twin, TapsRecord& t) {
  const json* points = r.array_at(taps, "taps", "points");
  if (!points) return;
  std::set<std::string> outputs;
  for (const TensorSpec& s : twin.outputs) outputs.insert(s.name);
  std::set<std::string> seen;
  for (size_t i = 0; i < points->size(); ++i) {
    const std::string path = JsonReader::at("taps.points", i);
    TapPoint p = read_point(r, (*points)[i], path);
    check_point(r, p, path, t, outputs, seen);
    t.points.push_back(std::move(p));
  }
  if (points->empty()) r.problem("taps.points", "empty: the twin taps nothing");
}

}  // namespace

TapsRecord read_taps(const Manifest& twin) {
  JsonReader r;
  TapsRecord t;
  const std::string origin = twin.name + ".etproof.json";
  const json& doc = twin.raw;
  const json* taps = doc.is_object() ? r.object_at(doc, "", "taps") : nullptr;
  if (!doc.is_object()) r.problem("(document)", "not an object");
  if (taps) {
    read_of(r, *taps, t);
    if (auto s = r.string_at(*taps, "taps", "selection")) {
      if (*s == "every" || *s == "spaced")
        t.selection = *s;
      else
        r.problem("taps.selection", detail::squote(*s) + " is not 'every' or 'spaced'");
    }
    t.eligible = size_t(r.int_at(*taps, "taps", "eligible").value_or(0));
    if (const json* calls = r.object_at(*taps, "taps", "delegate_calls")) {
      t.shipped_delegate_calls = size_t(r.int_at(*calls, "taps.delegate_calls", "shipped").value_or(0));
      t.twin_delegate_calls = size_t(r.int_at(*calls, "taps.delegate_calls", "twin").value_or(0));
    }
    t.delegation_matches = bool_at(r, *taps, "taps", "delegation_matches").value_or(true);
    read_range(r, *taps, t);
    t.exported_from = r.string_at(*taps, "taps", "exported_from", /*required=*/false).value_or("");
    read_points(r, *taps, twin, t);
  }
  if (!r.problems.empty())
    throw Error(ErrorKind::kManifestInvalid,
                origin + ": the tapped twin's taps record: " + detail::join(r.problems, "; "), reexport_taps());
  return t;
}

namespace {

// The recipe-cost sentence of the summary (find_drift): each tap's cost_step_db is the fall of the
// emulation's SQNR against the golden from the tap before — 0 for the first tap, and for a tap
// after taps the recipe left exact (SQNR at or above kFloat32ResolutionDb: a layer left in float):
// what a number format costs at the first layer it enters is the recipe, not growth. `costliest`
// is the largest such fall when it reaches
// kCulpritDropDb (a tenfold error amplitude in one layer, as for a culprit), else none: the cost
// grew gradually, as a recipe's rounding does.
void find_cost(Attribution& a) {
  const LayerRow* first = nullptr;
  const LayerRow* last = nullptr;
  std::optional<size_t> largest;
  for (size_t i = 0; i < a.layers.size(); ++i) {
    LayerRow& row = a.layers[i];
    if (!row.cost) continue;
    const double now = std::min(row.cost->sqnr_db, kFloat32ResolutionDb);
    if (last && std::min(last->cost->sqnr_db, kFloat32ResolutionDb) < kFloat32ResolutionDb) {
      const double before = std::min(last->cost->sqnr_db, kFloat32ResolutionDb);
      row.cost_step_db = std::isnan(now) ? std::numeric_limits<double>::infinity()
                         : std::isnan(before) ? -std::numeric_limits<double>::infinity()
                                              : before - now;
      if (!largest || row.cost_step_db > a.layers[*largest].cost_step_db) largest = i;
    }
    if (!first) first = &row;
    last = &row;
  }
  if (!first) return;
  a.summary += ". The recipe's own cost (" + first->cost->reference + " emulation against the float32 golden): SQNR " +
               detail::sqnr_text(first->cost->sqnr_db) + " dB at the first tap, " +
               detail::sqnr_text(last->cost->sqnr_db) + " dB at the last; ";
  if (largest && a.layers[*largest].cost_step_db >= kCulpritDropDb) {
    a.costliest = largest;
    const LayerRow& c = a.layers[*largest];
    a.summary += "it grows most at " + layer_name(c.point) + ", where the SQNR falls " +
                 detail::sqnr_text(c.cost_step_db) + " dB (to " + detail::sqnr_text(c.cost->sqnr_db) + " dB)";
  } else {
    a.summary += "no step between taps falls " + detail::sqnr_text(kCulpritDropDb) + " dB or more";
  }
}

void find_drift_only(Attribution& a);

}  // namespace

void find_drift(Attribution& a) {
  find_drift_only(a);
  find_cost(a);
}

namespace {

void find_drift_only(Attribution& a) {
  if (a.layers.empty()) {
    a.summary = "no tap reaches " + (a.output.empty() ? std::string("the outputs") : "output " + a.output) +
                (a.outputs_passed ? "; the outputs agree within the bound" : "; an output drifts, after every tap");
    return;
  }
  double before = kFloat32ResolutionDb;
  for (LayerRow& row : a.layers) {
    const double now = resolved_db(row.report);
    row.step_db = std::isnan(now) ? std::numeric_limits<double>::infinity() : before - now;
    before = std::isnan(now) ? -std::numeric_limits<double>::infinity() : now;
  }
  for (size_t i = 0; i < a.layers.size(); ++i) {
    // An inconclusive tap (its references disagree, or no bound narrower than it follows) is not
    // judged: it is no drift, and the earliest drift is looked for after it.
    if (!a.earliest_drift && !a.layers[i].report.passed && a.layers[i].report.inconclusive.empty())
      a.earliest_drift = i;
    // The first tap's fall is from float32's resolution: the precision's entry, not a growth —
    // where later taps exist, the largest growth is among them.
    if (i == 0 && a.layers.size() > 1) continue;
    if (!a.largest_growth || a.layers[i].step_db > a.layers[*a.largest_growth].step_db) a.largest_growth = i;
  }
  if (!a.earliest_drift) {
    a.summary = a.outputs_passed
                    ? "every tap agrees with its reference within the bound, and so do the outputs"
                    : "every tap agrees within the bound, but an output does not: the drift arises after the "
                      "last tap (untapped operators, or the outputs' own copy)";
    if (!a.layers.empty() && a.largest_growth)
      a.summary += " (SQNR " + detail::sqnr_text(a.layers.front().report.sqnr_db) + " dB at the first tap, " +
                   detail::sqnr_text(a.layers.back().report.sqnr_db) + " dB at the last; the largest fall, " +
                   detail::sqnr_text(a.layers[*a.largest_growth].step_db) + " dB, at " +
                   layer_name(a.layers[*a.largest_growth].point) + ")";
    return;
  }
  const LayerRow& first = a.layers[*a.earliest_drift];
  a.culprit = first.step_db >= kCulpritDropDb;
  const std::string sqnr = detail::sqnr_text(first.report.sqnr_db);
  if (a.culprit) {
    a.summary = "the earliest drift is " + layer_name(first.point) + ": its SQNR falls " +
                detail::sqnr_text(first.step_db) + " dB there (to " + sqnr + " dB), and every tap before it agrees";
    return;
  }
  const LayerRow& last = a.layers.back();
  double worst_step = -std::numeric_limits<double>::infinity();
  for (size_t i = 1; i < a.layers.size(); ++i) worst_step = std::max(worst_step, a.layers[i].step_db);
  // SQNR higher at the last tap than at the first: the error did not grow, it was there from the start.
  const bool grew = !(last.report.sqnr_db >= a.layers.front().report.sqnr_db);
  a.summary = std::string("no single culprit: ") +
              (grew ? "the error grows over depth" : "the error is there from the first tap and does not grow") +
              " (SQNR " + detail::sqnr_text(a.layers.front().report.sqnr_db) +
              " dB at the first tap, " + detail::sqnr_text(last.report.sqnr_db) + " dB at the last; no step after the first falls " +
              detail::sqnr_text(kCulpritDropDb) + " dB or more" +
              (a.layers.size() > 1 ? ", the largest " + detail::sqnr_text(worst_step) + " dB" : std::string()) +
              ") and first crosses the bound at " + layer_name(first.point);
}

}  // namespace

namespace {

// Whether the export half measured `m`'s program against its recipe's emulation and it matched
// (ManifestReferences program_at_export; nullopt: not measured).
std::optional<bool> matched_at_export(const Manifest& m) {
  auto it = m.references.find(m.recipe);
  if (it == m.references.end() || !it->second.program_at_export) return std::nullopt;
  return it->second.program_at_export->matched;
}

// The twin is judged by its own measurement at export (references.h, plan_judgement): where the
// shipped program and its twin did not both match (or both depart from) the recipe's emulation,
// the taps are judged against another reference than the column, and the summary says so.
std::string basis_note(const Manifest& shipped, const Manifest& twin) {
  const std::optional<bool> s = matched_at_export(shipped), t = matched_at_export(twin);
  if (!s || s == t) return "";
  const std::string emulation = "the " + shipped.recipe + " emulation";
  if (*s)
    return ". Note: the column is judged against " + emulation + ", which its program matched at export, "
           "but the taps are not: the tapped twin " + (t ? "departed from it" : "was not measured against it") +
           ", so its taps are judged as the judged: line says";
  return ". Note: the column's program departed from " + emulation + " at export and is judged by the recipe's "
         "row, but the tapped twin matched it: the taps are judged against the emulation, more tightly than the column";
}

}  // namespace

fs::path twin_dir(const fs::path& bundle_dir, const std::string& name) { return bundle_dir / (name + ".taps"); }
fs::path twin_dir(const Bundle& shipped) { return twin_dir(shipped.dir, shipped.manifest.name); }

namespace {

// The shipped bundle's tapped twin at `dir`, opened (its artifact not verified, as the shipped
// one's). Throws Error{kInvalidArgument} when `dir` is not a directory or is a symbolic link, and
// open_bundle's errors.
Bundle open_twin(const Bundle& shipped, const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(fs::symlink_status(dir, ec)))
    throw Error(ErrorKind::kInvalidArgument,
                "bundle '" + shipped.manifest.name + "' has no tapped twin: " + dir.string() + ": " +
                    (fs::is_symlink(fs::symlink_status(dir, ec)) ? "is a symbolic link"
                                                                 : detail::not_a_directory_text(dir)),
                reexport_taps());
  return open_bundle(dir, OpenOptions{.verify_artifact = false});
}

// Throws Error{kArtifactMismatch} unless the twin's taps record names the shipped bundle and its
// program's SHA-256, and the twin is a program of the shipped backend and recipe.
void check_twin_of(const Bundle& shipped, const Bundle& twin, const TapsRecord& taps, const fs::path& dir) {
  if (taps.of_name != shipped.manifest.name || taps.of_artifact_sha256 != shipped.manifest.artifact.sha256)
    throw Error(ErrorKind::kArtifactMismatch,
                dir.string() + " was exported for " + taps.of_name + " (.pte SHA-256 " + taps.of_artifact_sha256 +
                    "), not for this bundle's " + shipped.manifest.name + " (" + shipped.manifest.artifact.sha256 + ")",
                reexport_taps());
  if (twin.manifest.backend != shipped.manifest.backend || twin.manifest.recipe != shipped.manifest.recipe)
    throw Error(ErrorKind::kArtifactMismatch,
                dir.string() + " is a " + twin.manifest.backend + "/" + twin.manifest.recipe +
                    " program, the bundle a " + shipped.manifest.backend + "/" + shipped.manifest.recipe + " one",
                reexport_taps());
}

// The taps read and the outputs shown: every tap and model output, or with --output that output
// and the taps whose value reaches it. `read` points into the Attribution's taps.
struct Selection {
  std::set<std::string> tapped;       // every tap's output name
  std::vector<const TapPoint*> read;  // in graph order
  std::string output;                 // --output; "": all
  // Whether a measured tensor (a tap or a model output) is shown.
  bool shown(const TensorReport& t) const {
    if (tapped.count(t.output)) {
      return std::any_of(read.begin(), read.end(), [&](const TapPoint* p) { return p->output == t.output; });
    }
    return output.empty() || t.output == output;
  }
};

// Throws Error{kInvalidArgument} when `output` is not a model output of the twin, or when the taps
// record no feeds to choose by.
Selection select_taps(const Attribution& a, const Manifest& twin, const fs::path& dir, const std::string& output) {
  Selection sel;
  sel.output = output;
  for (const TapPoint& p : a.taps.points) sel.tapped.insert(p.output);
  std::vector<std::string> model_outputs;
  for (const TensorSpec& s : twin.outputs)
    if (!sel.tapped.count(s.name)) model_outputs.push_back(s.name);
  if (output.empty()) {
    for (const TapPoint& p : a.taps.points) sel.read.push_back(&p);
    return sel;
  }
  if (std::find(model_outputs.begin(), model_outputs.end(), output) == model_outputs.end())
    throw Error(ErrorKind::kInvalidArgument,
                "'" + output + "' is not an output of " + a.bundle + " (its outputs: " +
                    detail::join(model_outputs) + ")",
                "pass one of the outputs listed, or no --output");
  for (const TapPoint& p : a.taps.points) {
    if (!p.feeds)
      throw Error(ErrorKind::kInvalidArgument,
                  dir.string() + " records no taps.points[].feeds (which outputs each tap reaches): it was "
                                 "exported before they were recorded, so --output cannot choose the taps",
                  reexport_taps());
    if (std::find(p.feeds->begin(), p.feeds->end(), output) != p.feeds->end()) sel.read.push_back(&p);
  }
  return sel;
}

// The case attributed: `case_id` when given (Error{kInvalidArgument} when the twin has no such
// case), else the first case with a shown tensor failing, else the first case.
const CaseReport& choose_case(const Attribution& a, const Selection& sel, const std::string& case_id,
                              const fs::path& dir) {
  const CaseReport* chosen = nullptr;
  if (!case_id.empty()) {
    for (const CaseReport& c : a.twin_report.cases)
      if (c.case_id == case_id) chosen = &c;
    if (!chosen)
      throw Error(ErrorKind::kInvalidArgument,
                  "no golden case '" + case_id + "' in " + dir.string() + " (its cases: " + detail::join(a.cases) + ")",
                  "pass one of the cases listed, or no --case");
    return *chosen;
  }
  for (const CaseReport& c : a.twin_report.cases)
    if (!chosen && std::any_of(c.outputs.begin(), c.outputs.end(),
                               [&](const TensorReport& t) { return !t.passed && sel.shown(t); }))
      chosen = &c;
  return chosen ? *chosen : a.twin_report.cases.front();
}

// a.outputs (the shown model outputs, and whether they all passed) and a.layers (one row per tap
// read, with its recipe cost) from the chosen case. Throws Error{kManifestInvalid} for a tap the
// case did not measure.
void fill_rows(Attribution& a, const CaseReport& chosen, const Selection& sel, const fs::path& dir) {
  a.outputs_passed = true;
  for (const TensorReport& t : chosen.outputs)
    if (!sel.tapped.count(t.output) && sel.shown(t)) {
      a.outputs.push_back(t);
      a.outputs_passed = a.outputs_passed && t.passed;
    }
  for (const TapPoint* pp : sel.read) {
    const TapPoint& p = *pp;
    const auto it = std::find_if(chosen.outputs.begin(), chosen.outputs.end(),
                                 [&](const TensorReport& t) { return t.output == p.output; });
    if (it == chosen.outputs.end())  // read_taps checked the manifest lists it; the replay gates every output
      throw Error(ErrorKind::kManifestInvalid,
                  dir.string() + ": tap " + p.output + " was not measured in case " + a.case_id, reexport_taps());
    LayerRow row{p, *it, 0, std::nullopt, 0};
    for (const RecipeCost& k : chosen.costs)
      if (k.output == p.output) row.cost = k;
    a.layers.push_back(std::move(row));
  }
}

}  // namespace

Attribution attribute(const fs::path& bundle, const AttributeOptions& options) {
  const Bundle shipped = open_bundle(bundle, OpenOptions{.verify_artifact = false});
  const fs::path dir = twin_dir(shipped);
  const Bundle twin = open_twin(shipped, dir);
  Attribution a;
  a.bundle = shipped.manifest.name;
  a.model = shipped.manifest.model;
  a.twin = dir.string();
  a.backend = shipped.manifest.backend;
  a.recipe = shipped.manifest.recipe;
  a.precision = shipped.manifest.precision;
  a.taps = read_taps(twin.manifest);
  check_twin_of(shipped, twin, a.taps, dir);

  a.twin_report = replay(dir, options.replay);
  if (const Error* e = a.twin_report.first_error()) throw *e;
  for (const CaseReport& c : a.twin_report.cases) a.cases.push_back(c.case_id);
  if (a.twin_report.cases.empty())
    throw Error(ErrorKind::kManifestInvalid, dir.string() + ": the twin has no golden case to attribute",
                reexport_taps());

  const Selection sel = select_taps(a, twin.manifest, dir, options.output);
  a.output = options.output;
  const CaseReport& chosen = choose_case(a, sel, options.case_id, dir);
  a.case_id = chosen.case_id;
  fill_rows(a, chosen, sel, dir);
  find_drift(a);
  a.summary += basis_note(shipped.manifest, twin.manifest);
  return a;
}

}  // namespace etproof
