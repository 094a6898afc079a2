// etproof/inspect.cpp — what a bundle holds, as text and JSON (etproof/inspect.h).
#include "etproof/replay/inspect.h"
#include "etproof/replay/matrix.h"

#include <iomanip>
#include <limits>
#include <sstream>

#include "core/common.h"

namespace etproof {
namespace {
using detail::join;

nlohmann::json spec_json(const TensorSpec& s) {
  nlohmann::json j{{"name", s.name},
                   {"dtype", std::string(to_string(s.dtype))},
                   {"shape", s.shape}};
  if (s.layout) j["layout"] = *s.layout;
  for (const auto& d : s.dynamic_dims)
    j["dynamic_dims"].push_back({{"axis", d.axis}, {"name", d.name}, {"min", d.min}, {"max", d.max}});
  return j;
}

std::string spec_text(const TensorSpec& s) {
  std::string dims;
  for (const auto& d : s.dynamic_dims)
    dims += " " + d.name + "[" + std::to_string(d.axis) + "]=" + std::to_string(d.min) + ".." + std::to_string(d.max);
  return s.name + " " + std::string(to_string(s.dtype)) + " " + shape_to_string(s.shape) +
         (s.layout ? " " + *s.layout : "") + dims;
}

}  // namespace

Inspection inspect_bundle(const std::filesystem::path& path) {
  Inspection i;
  i.bundle = open_bundle(path);
  const Manifest& m = i.bundle.manifest;
  i.delegates = m.delegates;
  if (m.target) i.target_check = check_target(*m.target);
  try {
    LoadedModel model = LoadedModel::load(i.bundle);
    i.delegates = model.program_delegates();
    i.delegates_from = "program";
  } catch (const Error& e) {
    i.load_note = "[" + std::string(to_string(e.kind())) + "] " + e.cause();
  }
  const JudgePlan plan = plan_judgement(m, precision_here(m));
  i.judged = plan.why;
  i.precision = plan.precision;
  i.precision_reason = plan.precision_reason;
  if (plan.no_rule) {
    i.bound_note = plan.no_rule->cause();
    return i;
  }
  i.bound = plan.rule;
  // Per case and float output, the bound as the replay applies it (replay.cpp: judge_output).
  try {
    for (const GoldenCase& g : m.goldens) {
      const std::map<std::string, HostTensor> goldens = read_golden_outputs(i.bundle, g);
      std::map<std::string, std::map<std::string, HostTensor>> refs;
      for (const std::string& name : {plan.against, plan.widen_by, plan.golden_truth})
        if (!name.empty() && name != "golden" && !refs.count(name))
          refs[name] = read_golden_reference(i.bundle, g, name);
      for (const auto& [output, golden] : goldens) {
        if (is_integer_dtype(golden.dtype)) continue;
        auto reference_of = [&](const std::string& name) -> const HostTensor& {
          auto r = refs.find(name);
          if (r == refs.end() || !r->second.count(output))
            throw Error(ErrorKind::kManifestInvalid,
                        "output \"" + output + "\" has no " + name + " reference in case " + g.id,
                        "re-export the bundle; the manifest says the reference was captured");
          return r->second.at(output);
        };
        const std::optional<double> scale = output_scale(m, output);
        i.applied.push_back({case_label(m, g), output,
                             applied_bound(plan, plan.rule, golden, reference_of, scale)});
      }
    }
  } catch (const Error& e) {
    i.applied_note = "[" + std::string(to_string(e.kind())) + "] " + e.cause();
  }
  // The outputs that fell back to the golden row, as the replay counts them (replay.cpp).
  const size_t fell = static_cast<size_t>(std::count_if(
      i.applied.begin(), i.applied.end(), [](const Inspection::Applied& a) { return !a.bound.fell_back.empty(); }));
  i.judged += fallback_note(plan, fell, i.applied.size());
  if (fell > 0 && fell == i.applied.size()) i.bound = *plan.fallback;
  return i;
}

namespace {

// The bundle's identity: where it is, the model, its weights and engine, the backend, recipe,
// precision and compute unit, and its target with the check here.
void identity_json(nlohmann::json& j, const Inspection& i) {
  const Manifest& m = i.bundle.manifest;
  j["bundle"] = i.bundle.dir.string();
  j["name"] = m.name;
  j["model"] = m.model;
  if (m.weights) j["weights"] = {{"kind", m.weights->kind}, {"source", m.weights->source}};
  j["engine"] = {{"name", m.engine_name}, {"version", m.engine_version}};
  j["backend"] = m.backend;
  j["recipe"] = m.recipe;
  j["precision"] = m.precision;
  if (m.compute_unit) j["compute_unit"] = *m.compute_unit;
  if (m.target) {
    j["target"] = {{"kind", m.target->kind}, {"requirements", m.target->requirements}};
    if (!m.target->openvino.empty()) j["target"]["openvino"] = m.target->openvino;
    if (!m.target->isa.empty()) j["target"]["isa"] = m.target->isa;
    const TargetCheck& c = *i.target_check;
    j["target"]["here"] = {{"checked", c.checked}, {"matches", c.matches}, {"requirements", c.here}, {"why", c.why}};
  }
}

// The program's signature: inputs, outputs, each method's where there are several (a single
// forward's document stays as it was), and the golden cases.
void signature_json(nlohmann::json& j, const Manifest& m) {
  j["inputs"] = nlohmann::json::array();
  for (const auto& s : m.inputs) j["inputs"].push_back(spec_json(s));
  j["outputs"] = nlohmann::json::array();
  for (const auto& s : m.outputs) j["outputs"].push_back(spec_json(s));
  const bool several = has_several_methods(m);
  if (several) {
    j["methods"] = nlohmann::json::array();
    for (const MethodSpec& method : m.methods) {
      nlohmann::json jm = {{"name", method.name}, {"inputs", nlohmann::json::array()},
                           {"outputs", nlohmann::json::array()}};
      for (const auto& s : method.inputs) jm["inputs"].push_back(spec_json(s));
      for (const auto& s : method.outputs) jm["outputs"].push_back(spec_json(s));
      j["methods"].push_back(std::move(jm));
    }
  }
  j["goldens"] = nlohmann::json::array();
  for (const auto& g : m.goldens) {
    nlohmann::json jg = {{"id", g.id}, {"data", g.data}, {"origin", g.origin}};
    if (several) jg["method"] = g.method;
    j["goldens"].push_back(std::move(jg));
  }
}

// The bound each case's float output is judged by, as parity applies it.
nlohmann::json applied_json(const std::vector<Inspection::Applied>& applied) {
  nlohmann::json out = nlohmann::json::array();
  for (const Inspection::Applied& a : applied) {
    const Bound& b = a.bound.resolved;
    nlohmann::json ja = {{"case", a.case_id},
                         {"output", a.output},
                         {"against", a.bound.against},
                         {"reference_range", detail::json_number(a.bound.reference_range)},
                         {"atol", detail::json_number(b.atol)},
                         {"rtol", detail::json_number(b.rtol)},
                         {"min_cosine", detail::json_number(b.min_cosine)},
                         {"min_sqnr_db", detail::json_number(b.min_sqnr_db)}};
    if (!b.thresholds.empty()) ja["thresholds"] = thresholds_json(b);
    if (!a.bound.widened_by.empty()) {
      ja["widened_by"] = a.bound.widened_by;
      ja["widening_error"] = detail::json_number(a.bound.widening->max_abs_error);
    }
    if (!a.bound.inconclusive.empty()) ja["inconclusive"] = a.bound.inconclusive;
    if (!a.bound.fell_back.empty()) ja["fell_back"] = a.bound.fell_back;
    out.push_back(std::move(ja));
  }
  return out;
}

// The identity lines: bundle, model, weights, backend, recipe and the target with its check here.
void identity_text(std::ostream& os, const Inspection& i) {
  const Manifest& m = i.bundle.manifest;
  os << "bundle    " << m.name << "  (" << i.bundle.dir.string() << ")\n";
  os << "model     " << m.model << ", written by " << m.engine_name << " "
            << m.engine_version << " on " << m.created_utc << "\n";
  os << "weights   "
            << (m.weights ? m.weights->kind + ": " + m.weights->source : "unknown (not recorded)")
            << "\n";
  os << "backend   " << m.backend << " (requested at export)\n";
  os << "recipe    " << m.recipe << ", precision " << m.precision
            << (m.compute_unit ? ", compute unit " + *m.compute_unit : "") << "\n";
  if (m.target) {
    const TargetCheck& c = *i.target_check;
    os << "target    " << m.target->kind << ": compiled for '" << m.target->requirements << "'; "
       << (!c.checked ? "not checked here: " + c.why
                      : c.matches ? "this machine states the same ('" + c.here + "'): it loads here"
                                  : "NOT runnable here: " + c.why)
       << "\n";
  }
}

// The delegates (from the program, else the manifest) and the export's delegation record: nodes
// delegated and not, per operator, with the reasons.
void delegation_text(std::ostream& os, const Inspection& i) {
  const Manifest& m = i.bundle.manifest;
  os << "delegates " << (i.delegates.empty() ? "none (portable kernels)" : join(i.delegates))
            << "  [read from the " << i.delegates_from << "]\n";
  if (!i.load_note.empty()) os << "          program not loadable here: " << i.load_note << "\n";
  if (i.delegates_from == "program" && i.delegates != m.delegates)
    os << "          WARNING: the manifest records " << join(m.delegates) << "\n";
  if (!m.delegation) {
    os << "delegation unknown (not recorded)\n";
    return;
  }
  const auto& d = *m.delegation;
  // getitem reads one output of a delegate call (or of a multi-output op): ExecuTorch's
  // get_delegation_info counts it as a node not delegated, but it computes nothing. It is left
  // out of the "not" count and marked in the table, so a fully delegated graph reads "0 not".
  size_t getitems = 0;
  for (const auto& o : d.by_operator)
    if (o.op == "getitem") getitems += o.non_delegated;
  const size_t non_delegated = d.non_delegated_nodes > 0 ? size_t(d.non_delegated_nodes) : 0;
  const size_t not_delegated = non_delegated >= getitems ? non_delegated - getitems : 0;
  os << "delegation " << d.delegated_nodes << " nodes delegated, " << not_delegated << " not"
     << (getitems ? " (and " + std::to_string(getitems) + " getitem reading delegate outputs)" : "") << "\n";
  size_t w = 2;
  for (const auto& o : d.by_operator) w = std::max(w, o.op.size());
  for (const auto& o : d.by_operator)
    os << "  " << std::left << std::setw(static_cast<int>(w)) << o.op << "  delegated "
              << std::right << std::setw(5) << o.delegated << "  not " << std::setw(5)
              << o.non_delegated << (o.op == "getitem" ? "  (reads outputs; computes nothing)" : "") << "\n";
  for (const auto& o : d.by_operator)
    for (const auto& r : o.reasons) os << "    not delegated: " << o.op << ": " << r << "\n";
}

// What the bundle holds: the signature (per method where there are several), preprocessing,
// labels, golden cases, the program and its data files.
void contents_text(std::ostream& os, const Manifest& m) {
  if (has_several_methods(m)) {
    for (const MethodSpec& method : m.methods) {
      os << "method    " << method.name << "\n";
      for (const auto& s : method.inputs) os << "  input   " << spec_text(s) << "\n";
      for (const auto& s : method.outputs) os << "  output  " << spec_text(s) << "\n";
    }
  } else {
    for (const auto& s : m.inputs) os << "input     " << spec_text(s) << "\n";
    for (const auto& s : m.outputs) os << "output    " << spec_text(s) << "\n";
  }
  if (m.preprocessing)
    os << "preprocess image: shorter side " << m.preprocessing->resize_shorter << ", crop "
              << m.preprocessing->crop_h << "x" << m.preprocessing->crop_w << "\n";
  if (m.labels)
    os << "labels    " << m.labels->names.size() << " for output " << m.labels->output
              << " (" << m.labels->source << ")\n";
  os << "goldens   " << m.goldens.size() << " case(s):";
  for (const auto& g : m.goldens) os << " " << case_label(m, g) << " (" << g.data << ")";
  os << "\n";
  os << "artifact  " << m.artifact.file << ", " << m.artifact.bytes << " bytes, sha256 "
            << m.artifact.sha256 << " (verified)\n";
  for (const auto& f : m.data_files)
    os << "data      " << f.file << ", " << f.bytes << " bytes, sha256 " << f.sha256
              << " (verified)\n";
}

// One case's output and the bound it is judged by, as parity applies it (or why it is not judged).
void applied_text(std::ostream& os, const Inspection::Applied& a) {
  const Bound& b = a.bound.resolved;
  os << "  " << a.case_id << " " << a.output << ": ";
  if (!a.bound.inconclusive.empty()) {
    os << "INCONCLUSIVE: " << a.bound.inconclusive << "\n";
    return;
  }
  os << "atol " << detail::format_number(b.atol, 4)
     << (b.rtol != 0 ? " + rtol " + detail::format_number(b.rtol, 4) + "·|ref|" : std::string())
     << " (max|ref| "
     << detail::format_number(a.bound.reference_range, 4) << "), cosine ≥ "
     << detail::cosine_text(b.min_cosine) << ", "
     << (b.min_sqnr_db == -std::numeric_limits<double>::infinity()
             ? std::string("no SQNR floor")
             : "SQNR ≥ " + detail::format_number(b.min_sqnr_db, 4) + " dB")
     << describe_thresholds(b);
  if (a.bound.widening)
    os << " (widened by " << detail::format_number(kReferenceMargin, 3) << "x the "
       << a.bound.widened_by << "'s " << detail::format_number(a.bound.widening->max_abs_error, 3)
       << (a.bound.against == "float64" ? " against truth)" : " from the " + a.bound.against + " emulation)");
  if (!a.bound.fell_back.empty()) os << "\n    against the golden: " << a.bound.fell_back;
  os << "\n";
}

}  // namespace

nlohmann::json to_json(const Inspection& i) {
  const Manifest& m = i.bundle.manifest;
  nlohmann::json j;
  identity_json(j, i);
  j["delegates"] = i.delegates;
  j["delegates_from"] = i.delegates_from;
  j["manifest_delegates"] = m.delegates;
  if (!i.load_note.empty()) j["load_error"] = i.load_note;
  if (m.delegation) {
    nlohmann::json ops = nlohmann::json::array();
    for (const auto& o : m.delegation->by_operator)
      ops.push_back({{"op", o.op}, {"delegated", o.delegated}, {"non_delegated", o.non_delegated},
                     {"reasons", o.reasons}});
    j["delegation"] = {{"delegated_nodes", m.delegation->delegated_nodes},
                       {"non_delegated_nodes", m.delegation->non_delegated_nodes},
                       {"by_operator", ops}};
  }
  signature_json(j, m);
  j["artifact"] = {{"file", m.artifact.file}, {"bytes", m.artifact.bytes},
                   {"sha256", m.artifact.sha256}, {"verified", true}};
  j["bound"] = i.bound ? to_json(*i.bound) : nlohmann::json(nullptr);
  if (!i.bound) j["bound_note"] = i.bound_note;
  j["judged"] = i.judged;
  j["precision_judged"] = i.precision;
  if (!i.precision_reason.empty()) j["precision_reason"] = i.precision_reason;
  j["applied"] = applied_json(i.applied);
  if (!i.applied_note.empty()) j["applied_note"] = i.applied_note;
  if (m.labels) j["labels"] = {{"output", m.labels->output}, {"source", m.labels->source},
                               {"count", m.labels->names.size()}};
  j["preprocessing"] = m.preprocessing.has_value();
  j["toolchain"] = m.toolchain;
  j["created_utc"] = m.created_utc;
  return j;
}

std::string to_text(const Inspection& i) {
  std::ostringstream os;
  identity_text(os, i);
  delegation_text(os, i);
  contents_text(os, i.bundle.manifest);
  if (i.bound)
    os << "bound     " << describe_bound(*i.bound) << "\n";
  else
    os << "bound     none derivable: " << i.bound_note << "\n";
  if (!i.judged.empty()) os << "judged    " << i.judged << "\n";
  if (!i.precision_reason.empty()) os << "precision here: " << i.precision_reason << "\n";
  // The bound each case's float outputs are judged by, as parity applies it.
  for (const Inspection::Applied& a : i.applied) applied_text(os, a);
  if (!i.applied_note.empty()) os << "          applied bounds not read: " << i.applied_note << "\n";
  return fit_text(os.str());
}

}  // namespace etproof
