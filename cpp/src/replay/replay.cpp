// etproof/replay.cpp — the one replay engine (etproof/replay.h).
#include "etproof/replay/replay.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <new>

#include <executorch/runtime/platform/runtime.h>

#include "etproof/core/backend_table.h"
#include "etproof/runtime/registry.h"
#include "core/common.h"
#include "replay/case_tensors.h"
#include "replay/greedy.h"
#include "replay/repeat.h"
#include "replay/report_identity.h"

namespace etproof {
namespace fs = std::filesystem;
using detail::error_line;
using detail::join;
using detail::join_or_none;
using detail::CaseTensors;
using detail::read_case;

namespace {

// The manifest of a bundle whose full open failed (e.g. the artifact does not match): the cases
// are still known and shown. nullopt when the manifest itself is unreadable.
std::optional<Manifest> manifest_only(const fs::path& path) {
  try {
    return open_bundle(path, OpenOptions{.verify_artifact = false}).manifest;
  } catch (const Error&) {
    return std::nullopt;
  }
}

void take_identity(ParityReport& r, const Manifest& m) {
  detail::copy_identity(r, m);
  r.compute_unit = m.compute_unit;
  r.manifest_read = true;
  r.several_methods = has_several_methods(m);
  r.mutable_buffers = m.mutable_buffers;
  r.state_shared_across_methods = m.state_shared_across_methods;
}

// Whether case `g` is among the methods replayed (an empty selection: every method).
bool selected(const std::vector<std::string>& methods, const GoldenCase& g) {
  return methods.empty() || std::find(methods.begin(), methods.end(), g.method) != methods.end();
}

// The bundle could not be run at all: every golden case (where the manifest names them) gets
// the refusal's status, so a matrix column still shows its rows.
void refuse(ParityReport& r, const std::optional<Manifest>& m, Status status,
            const std::string& reason, std::optional<Error> error,
            const std::vector<std::string>& methods) {
  r.refused = status;
  r.error = std::move(error);
  r.passed = false;
  if (!m) return;
  r.methods = select_methods(*m, methods).selected;
  for (const GoldenCase& g : m->goldens) {
    if (!selected(methods, g)) continue;
    CaseReport c;
    c.case_id = case_label(*m, g);
    c.method = g.method;
    c.data = g.data;
    c.status = status;
    c.detail = reason;
    r.cases.push_back(std::move(c));
  }
}

// The bound of the report and what it is judged against (step 5): the caller's bound or the
// derived bound with the caller's fields replaced (both against the float32 golden), or the
// plan for this machine (references.h); none known: no_bound says why.
JudgePlan choose_bound(ParityReport& r, const Manifest& m, const ReplayOptions& o) {
  JudgePlan plan;
  auto no_bound = [&](const Error& e) {
    r.bound_error = e;
    r.no_bound = "ran, but no bound is known for recipe " + m.recipe + " / precision " +
                 plan.precision + "; pass one (--atol/--rtol/--min-cosine/--min-sqnr) or measure "
                 "it into the bound table, data/bounds.json: " + error_line(e);
    // Measured against a bound no output can exceed: the numbers, not a verdict.
    r.bound = Bound{};
    r.bound.atol = std::numeric_limits<double>::infinity();
    r.bound.min_cosine = -std::numeric_limits<double>::infinity();
    r.bound.source = "none: " + error_line(e);
  };
  if (o.bound || !o.caller.empty()) {
    plan.precision = m.precision;
    plan.why = "against the float32 golden (a caller's bound is stated against it)";
    // What the recipe cost does not depend on the bound: still measured, and judged by a budget.
    plan.cost_reference = plan_judgement(m, precision_here(m), o.use_truth).cost_reference;
    if (o.bound) {
      r.bound = *o.bound;
      r.bound.caller_supplied = true;
      if (r.bound.source.empty()) r.bound.source = "caller";
    } else {
      try {
        r.bound = override_bound(o.caller, m.recipe, m.precision, m.compute_unit);
      } catch (const Error& e) {
        no_bound(e);
      }
    }
  } else {
    plan = plan_judgement(m, precision_here(m), o.use_truth);
    if (plan.no_rule)
      no_bound(*plan.no_rule);
    else
      r.bound = plan.rule;
  }
  r.precision = plan.precision;
  r.precision_reason = plan.precision_reason;
  r.against = plan.against;
  r.judgement = plan.why;
  return plan;
}

const TensorSpec* output_spec(const std::vector<TensorSpec>& outputs, const std::string& name) {
  for (const TensorSpec& t : outputs)
    if (t.name == name) return &t;
  return nullptr;
}

// The outputs of a case's method (its MethodSpec; a hand-built Manifest without methods, or a case
// naming none: the top-level outputs).
const std::vector<TensorSpec>& method_outputs(const Manifest& m, const GoldenCase& g) {
  for (const MethodSpec& s : m.methods)
    if (s.name == g.method) return s.outputs;
  return m.outputs;
}

// One output judged as the plan says (question 1), with the gate's options from the output's spec
// (the case's method's).
TensorReport judge_output(const std::vector<TensorSpec>& outputs, const std::string& name,
                          const HostTensor& actual, const HostTensor& golden,
                          const std::map<std::string, std::map<std::string, HostTensor>>& refs,
                          const JudgePlan& plan, const Bound& bound) {
  const TensorSpec* spec = output_spec(outputs, name);
  CompareOptions copts;
  std::optional<double> scale;
  if (spec) {
    copts.slice_axis = spec->slice_axis;
    copts.integer_atol = spec->integer_atol;
    if (spec->quantization) scale = spec->quantization->scale;
  }
  auto reference_of = [&](const std::string& ref_name) -> const HostTensor& {
    auto it = refs.find(ref_name);
    const auto* by_output = it == refs.end() ? nullptr : &it->second;
    auto o = by_output ? by_output->find(name) : decltype(by_output->end()){};
    if (!by_output || o == by_output->end())
      throw Error(ErrorKind::kManifestInvalid,
                  "output \"" + name + "\" has no " + ref_name + " reference in this case",
                  "re-export the bundle; the manifest says the reference was captured");
    return o->second;
  };
  // Measured as judged, judged by nothing (Status::kInconclusive): `why` the references disagree.
  auto inconclusive = [](TensorReport& t, const std::string& why) {
    if (why.empty()) return;
    t.inconclusive = t.failure = why;
    t.passed = false;
  };
  // Integer and bool outputs: exactly against the float32 golden (gate.h).
  if (plan.against == "golden" || is_integer_dtype(actual.dtype)) {
    TensorReport t = compare_tensor(name, actual, golden, bound, scale, copts);
    t.against = "golden";
    inconclusive(t, golden_disagrees(plan, golden, reference_of));
    return t;
  }
  if (plan.against == "float64" || !plan.widen_by.empty()) {
    // Only a widening plan (against truth, or against an emulation computed in a reduced
    // precision) widens and checks the bound (the other plans' rule is resolved by compare_tensor
    // itself): applied_bound is the one place that does it, as inspect prints it.
    const AppliedBound applied = applied_bound(plan, bound, golden, reference_of, scale);
    copts.noise_rule = applied.noise_rule;
    const HostTensor& ref = applied.against == "golden" ? golden : reference_of(applied.against);
    TensorReport t = compare_tensor(name, as_float64(actual), as_float64(ref), applied.bound,
                                    scale, copts);
    t.against = applied.against;
    t.widened_by = applied.widened_by;
    t.fell_back = applied.fell_back;
    if (applied.widening) t.widening_error = applied.widening->max_abs_error;
    inconclusive(t, applied.inconclusive);  // measured against the unwidened rule
    return t;
  }
  const HostTensor& emulation = reference_of(plan.against);
  TensorReport t = emulation.dtype == actual.dtype
                       ? compare_tensor(name, actual, emulation, bound, scale, copts)
                       : compare_tensor(name, as_float64(actual), as_float64(emulation), bound,
                                        scale, copts);
  t.against = plan.against;
  inconclusive(t, golden_disagrees(plan, golden, reference_of));
  return t;
}

// The case refused with an error: its status, one-line detail and the error itself.
void refuse(CaseReport& c, Status status, const std::string& detail, const Error& e) {
  c.status = status;
  c.detail = detail;
  c.error = e;
}

// The recipe's cost on output `name` (question 2: the plan's cost reference against the golden),
// appended to c.costs when the case carries that reference for the output; a cost over the budget
// is appended to `over` (the case's over-budget reasons, apart from its faithfulness failures).
void add_recipe_cost(CaseReport& c, const Bundle& b, const std::string& name, const HostTensor& actual,
                     const HostTensor& ref, const CaseTensors& t, const JudgePlan& plan,
                     const std::optional<Budget>& budget, std::vector<std::string>& over) {
  const auto& labels = b.manifest.labels;  // schema 1 only: the top-1 part (judge_top1)
  const auto emu = t.refs.at(plan.cost_reference).find(name);
  if (emu == t.refs.at(plan.cost_reference).end()) return;
  RecipeCost cost = recipe_cost(plan.cost_reference, emu->second, ref,
                                labels && labels->output == name, budget);
  cost.output = name;
  cost.program_vs_emulation = reference_error(actual, emu->second);
  if (!budget && !(cost.sqnr_db >= kDefaultCostSqnrDb))
    cost.over_default = "SQNR " + detail::sqnr_text(cost.sqnr_db) + " dB < the default budget " +
                        detail::format_number(kDefaultCostSqnrDb, 3) + " dB";
  if (!cost.over_budget.empty())
    over.push_back(name + ": the recipe's cost is over the budget (" + cost.over_budget + ")");
  c.costs.push_back(std::move(cost));
}

// A program output whose shape is not its golden's: the program ran and computed a wrong shape
// (an OpenVINO delegate returning a dynamic output at its upper-bound shape, say), a drift of
// shape — the backend's, not the bundle's, whose golden matches its manifest (read_golden_outputs).
std::string shape_drift(const Manifest& m, const std::string& name, const HostTensor& actual,
                        const HostTensor& golden) {
  return name + ": shape " + shape_to_string(actual.shape) + " from the program, " +
         shape_to_string(golden.shape) + " in the golden (the program ran and computed another shape" +
         (m.delegates.empty() ? std::string(", on portable kernels")
                              : "; delegate " + join(m.delegates) + ": the backend's, not the bundle's") +
         ")";
}

// Each golden output judged against the program's (judge_output), with the recipe's cost on float
// outputs where the plan measures one; faithfulness failures and over-budget costs appended.
// Throws Error{kManifestInvalid} for a golden output the program did not return, and
// judge_output's errors.
void judge_outputs(CaseReport& c, const Bundle& b, const GoldenCase& g,
                   const std::map<std::string, HostTensor>& actual, const CaseTensors& t, const Bound& bound,
                   const JudgePlan& plan, const std::optional<Budget>& budget,
                   std::vector<std::string>& failures, std::vector<std::string>& over) {
  for (const auto& [name, ref] : t.reference) {
    auto it = actual.find(name);
    if (it == actual.end())
      throw Error(ErrorKind::kManifestInvalid,
                  "golden case \"" + c.case_id + "\" has output \"" + name +
                      "\" but the program returned no output of that name",
                  "re-export the bundle; its goldens and outputs disagree");
    if (it->second.shape != ref.shape) {  // the program ran and returned another shape: a drift
      failures.push_back(shape_drift(b.manifest, name, it->second, ref));
      continue;
    }
    TensorReport r = judge_output(method_outputs(b.manifest, g), name, it->second, ref, t.refs, plan, bound);
    if (!r.passed) failures.push_back(name + ": " + r.failure);
    c.outputs.push_back(std::move(r));
    if (!plan.cost_reference.empty() && !is_integer_dtype(ref.dtype))
      add_recipe_cost(c, b, name, it->second, ref, t, plan, budget, over);
  }
}

// The case's verdict, two questions apart: from its faithfulness failures agreed, drifted, or
// inconclusive when every failure is an output whose references disagree or whose widened bound
// is no bound (references.h: applied_bound); a drift of another output or an edited golden says
// drifted, and an edited golden is never a pass. A faithful case whose recipe cost breaks the
// budget (`over`) is over-budget; an unfaithful one stays drifted, its cost named after the drift.
void conclude(CaseReport& c, std::vector<std::string>& failures, const std::vector<std::string>& over,
              const std::vector<std::string>& edited) {
  c.golden_edited = !edited.empty();
  if (!edited.empty())  // measured against goldens that are not the export's: never a pass
    failures.insert(failures.begin(), "golden edited since export (" + join(edited, "; ") +
                                          "): its numbers against the edited golden are shown, never certified");
  const bool faithful = !c.outputs.empty() && failures.empty();
  c.passed = faithful && over.empty();
  c.status = c.passed ? Status::kAgreed : faithful ? Status::kOverBudget : Status::kDrifted;
  const size_t inconclusive = static_cast<size_t>(std::count_if(
      c.outputs.begin(), c.outputs.end(), [](const TensorReport& t) { return !t.inconclusive.empty(); }));
  if (!faithful && inconclusive > 0 && inconclusive == failures.size() && edited.empty())
    c.status = Status::kInconclusive;
  failures.insert(failures.end(), over.begin(), over.end());
  c.detail = join(failures, "; ");
}

// A case that could not start: the program failed to load again for it (a stateful program's
// fresh load per case), with the load's status and error.
CaseReport refused_case(const Manifest& m, const GoldenCase& g, const Error& e) {
  CaseReport c;
  c.case_id = case_label(m, g);
  c.method = g.method;
  c.data = g.data;
  refuse(c, status_of(e), "loading the program afresh for this case (it writes state): " + error_line(e), e);
  return c;
}

// A sequence's step that cannot run because the step before it did not (its state is that step's):
// the earlier step's status, naming it.
CaseReport step_not_run(const Manifest& m, const GoldenCase& g, const CaseReport& before) {
  CaseReport c;
  c.case_id = case_label(m, g);
  c.method = g.method;
  c.data = g.data;
  const Error e(before.error->kind(), "not run: the step before it, " + before.case_id +
                                          ", did not run, and this step continues its state",
                before.error->remedy());
  refuse(c, before.status, error_line(e), e);
  return c;
}

// Runs one golden case and gates each output (step 6). allow_edited: read goldens that no longer
// match the manifest's hashes (--allow-edited-goldens); such a case is drifted whatever it measures.
// keep: where not null, the run's inputs and outputs are kept there for the repeats (repeat.h).
CaseReport run_case(const Bundle& b, LoadedModel& model, const GoldenCase& g, const Bound& bound,
                    const JudgePlan& plan, const std::optional<Budget>& budget, bool allow_edited,
                    std::optional<detail::JudgedRun>* keep) {
  CaseReport c;
  c.case_id = case_label(b.manifest, g);
  c.method = g.method;
  c.data = g.data;
  CaseTensors t;
  try {
    t = read_case(b, g, c.case_id, plan, allow_edited);
  } catch (const Error& e) {
    refuse(c, Status::kBundleInvalid, "goldens unreadable: " + error_line(e), e);
    return c;
  }
  std::map<std::string, HostTensor> actual;
  try {
    actual = g.method.empty() ? model.run(t.inputs) : model.run(g.method, t.inputs);
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::kOutputShapeMismatch) {  // the program ran: a drift of shape
      std::vector<std::string> failures{e.cause()};
      conclude(c, failures, {}, t.edited);
      return c;
    }
    refuse(c, status_of(e), error_line(e), e);
    return c;
  }
  if (keep) *keep = detail::JudgedRun{t.inputs, actual};
  if (!b.manifest.greedy_output.empty() && g.sequence) {
    auto e = t.refs.find(plan.cost_reference);
    detail::greedy_token(c, b.manifest, *g.sequence, actual, t.reference,
                         plan.cost_reference.empty() || e == t.refs.end() ? nullptr : &e->second);
  }
  // An edited golden (allow_edited): its numbers are measured against the edited golden itself —
  // what the user edited it to see — not against references the edit did not touch.
  JudgePlan case_plan = plan;
  if (!t.edited.empty()) {
    case_plan.against = "golden";
    case_plan.widen_by.clear();
    case_plan.golden_truth.clear();
  }
  std::vector<std::string> failures, over;
  try {
    judge_outputs(c, b, g, actual, t, bound, case_plan, budget, failures, over);
  } catch (const Error& e) {
    c.outputs.clear();
    c.costs.clear();
    refuse(c, status_of(e), error_line(e), e);
    return c;
  }
  conclude(c, failures, over, t.edited);
  return c;
}

// Question 2 over the bundle (Top1Agreement): the classifier output's top-1 agreement over every
// measured case, judged against the budget's top1_agreement; under it, each measured case with a
// changed row fails, naming the budget: over-budget where it was faithful (drifted stays drifted).
void judge_top1(ParityReport& r, const Manifest& m) {
  const std::optional<double> want = r.budget ? r.budget->top1_agreement : std::nullopt;
  Top1Agreement t;
  t.budget = want;
  for (const CaseReport& c : r.cases)
    for (const RecipeCost& k : c.costs)
      if (k.top1_rows) {
        t.output = m.labels ? m.labels->output : std::string();
        t.reference = k.reference;
        t.rows += k.top1_rows;
        t.agreed += k.top1_agreed;
      }
  if (t.rows) r.top1 = t;
  if (!want) return;
  if (!t.rows) {
    r.budget_note = !m.labels ? "top1_agreement not judged: the bundle has no classifier output "
                                "(the manifest names no labels)"
                              : "top1_agreement not judged: no recipe emulation to compare with "
                                "the golden (recipe " + m.recipe + " costs nothing by definition, "
                                "or the bundle predates references)";
    return;
  }
  if (!t.over_budget()) return;
  const std::string why = "the recipe's top-1 agreement over the bundle, " +
                          std::to_string(t.agreed) + "/" + std::to_string(t.rows) + " = " +
                          detail::format_number(t.fraction(), 4) + ", is under the budget " +
                          detail::format_number(*want, 4) + ", and this case changed the class";
  for (CaseReport& c : r.cases) {
    if (!detail::budget_judged(c.status)) continue;  // not measured
    bool changed = false;
    for (const RecipeCost& k : c.costs) changed = changed || k.top1_agreed < k.top1_rows;
    if (changed) detail::fail_budget(c, why);
  }
}

// The case's final status: no-bound, undelegated, and the expected-failure record that covers it.
void settle(CaseReport& c, const ParityReport& r, bool undelegated, const ReplayOptions& o) {
  if (!detail::budget_judged(c.status)) return;  // not measured
  const XfailRecord* x =
      find_runtime_xfail(o.xfail, r.model, r.bundle, r.backend, r.recipe, c.case_id);
  if (x) c.xfail = *x;
  if (!r.no_bound.empty()) {
    c.status = Status::kNoBound;
    c.detail = r.no_bound;
    return;
  }
  if (c.status == Status::kAgreed && undelegated) {
    c.status = Status::kAgreedUndelegated;
    c.detail = "no delegate in the program: ran on portable kernels, not " + r.backend;
  }
  if (!x) return;
  if (c.status == Status::kDrifted || c.status == Status::kOverBudget) {
    c.status = Status::kXfail;
    c.detail = "expected failure (" + o.xfail_file + ", recorded " + x->recorded + "): " +
               x->reason + "; measured: " + c.detail;
  } else {
    c.status = Status::kXpass;
    c.detail = "unexpected pass: update or remove the xfail record in " + o.xfail_file +
               " (recorded " + x->recorded + ": " + x->reason + ")";
  }
}

// A plan widened by a rounded emulation judges an output against the golden where that leaves
// no bound (AppliedBound::fell_back): the report's judgement says how many did, and where every
// judged output did, the column's basis and bound are the golden row's (what the matrix shows).
void note_fallbacks(ParityReport& r, const JudgePlan& plan) {
  if (!plan.fallback) return;
  r.fallback_bound = plan.fallback;
  size_t judged = 0, fell = 0;
  for (const CaseReport& c : r.cases)
    for (const TensorReport& t : c.outputs) {
      if (t.exact) continue;
      ++judged;
      if (!t.fell_back.empty()) ++fell;
    }
  if (fell == 0) return;
  r.judgement += fallback_note(plan, fell, judged);
  if (fell == judged) {
    r.against = "golden";
    r.bound = *plan.fallback;
  }
}

void finish(ParityReport& r) {
  bool all = !r.cases.empty() && r.no_bound.empty() && !r.refused;
  for (const CaseReport& c : r.cases) all = all && c.passed;
  r.passed = all;
}

// run_parity's refusal of a bundle no bound is known for: plan_judgement's capability-unavailable.
void throw_if_no_bound(const Manifest& m) {
  const JudgePlan plan = plan_judgement(m, precision_here(m));
  if (plan.no_rule) throw *plan.no_rule;
}

}  // namespace

const Error* ParityReport::first_error() const {
  if (error) return &*error;
  for (const CaseReport& c : cases)
    if (c.error) return &*c.error;
  return nullptr;
}

std::optional<Refusal> check_delegates(const std::vector<std::string>& ids,
                                       const std::string& backend_key) {
  const DelegateAvailability a = delegate_availability(ids);
  if (a.ok()) return std::nullopt;
  if (!a.not_linked.empty()) {
    const std::string needs = runtime_needs_text(a.not_linked.front(), backend_key);
    return Refusal{Status::kNotLinked, "delegate " + join(a.not_linked) +
                                           " is not linked into this binary (registered here: " +
                                           join_or_none(a.registered) + ")" +
                                           (needs.empty() ? "" : "; " + needs)};
  }
  std::string said;  // what each unavailable backend said while answering (registry.h)
  for (const std::string& id : a.unavailable)
    if (const auto b = find_backend(id); b && !b->unavailable_detail.empty())
      said += (said.empty() ? ": " : "; ") + b->unavailable_detail;
  return Refusal{Status::kUnavailable,
                 "delegate " + join(a.unavailable) +
                     " is registered but reports itself unavailable on this machine" + said};
}

void prepare_for_threads() {
  static const bool done = [] {
    ::executorch::runtime::runtime_init();
    (void)prepare_backend_environment();
    (void)registered_backends();
    return true;
  }();
  (void)done;
}

std::vector<BundleReplay> replay_all(const std::vector<fs::path>& paths,
                                     const ReplayOptions& options, size_t jobs) {
  return replay_all(paths, std::vector<ReplayOptions>(paths.size(), options), jobs);
}

std::vector<BundleReplay> replay_all(const std::vector<fs::path>& paths,
                                     const std::vector<ReplayOptions>& options, size_t jobs) {
  if (options.size() != paths.size())
    throw Error(ErrorKind::kInvalidArgument,
                "replay_all: " + std::to_string(paths.size()) + " path(s) but " +
                    std::to_string(options.size()) + " set(s) of options",
                "give one ReplayOptions per path");
  std::vector<BundleReplay> out(paths.size());
  if (jobs > 1) prepare_for_threads();
  detail::parallel_for(paths.size(), jobs, [&](size_t i) {
    out[i].path = paths[i];
    try {
      out[i].report = replay(paths[i], options[i]);
    } catch (const Error& e) {
      out[i].unforeseen = error_line(e);
    } catch (const std::bad_alloc&) {
      // Not a bug, nor this bundle's fault as such: its column could not be run here (status_of
      // gives run-failed), shown as any bundle refused before its manifest was read.
      try {
        const Error e = out_of_memory_error("replaying " + paths[i].string());
        ParityReport r;
        r.path = paths[i].string();
        r.bundle = paths[i].filename().string();
        refuse(r, std::nullopt, status_of(e), error_line(e), e, options[i].methods);
        out[i].report = std::move(r);
      } catch (...) {
        out[i].report.reset();
        out[i].unforeseen = "out of memory";  // short enough to need no allocation
      }
    } catch (const std::exception& e) {
      out[i].unforeseen = std::string("unexpected exception: ") + e.what();
    }
  });
  return out;
}

namespace {
// prepare(), refusing first (before anything is hashed or loaded) a bundle without a method the
// caller asked for. That refusal is a caller's mistake, not the bundle's: its Error is
// kInvalidArgument (the CLI reports it as a usage error, exit 2, and records no evidence), and
// its status bundle-invalid — the status status_of gives that kind, and one that fails a run,
// so a request that could not be honoured never passes as not-linked or unavailable would.
Prepared prepare_methods(const fs::path& path, const std::vector<std::string>& methods,
                         const Isolation& isolation = {}) {
  Prepared p;
  try {
    p.bundle = open_bundle(path, OpenOptions{.verify_artifact = false});  // hashed at load, if runnable
  } catch (const Error& e) {
    p.refused = status_of(e);
    p.error = e;
    return p;
  }
  const Manifest& m = p.bundle->manifest;
  if (auto e = unknown_methods_error(m, methods)) {
    p.refused = Status::kBundleInvalid;
    p.error = *e;
    return p;
  }
  // On an emulated machine the worker built for it says what it registers (its LoadedModel::load
  // refuses a delegate it lacks by name); this binary's registry says nothing about it.
  if (auto why = isolation.emulation ? std::nullopt : check_delegates(m.delegates, m.backend)) {
    p.refused = why->status;
    p.error = Error(why->status == Status::kNotLinked ? ErrorKind::kBackendNotLinked
                                                      : ErrorKind::kBackendUnavailable,
                    "bundle '" + m.name + "': " + why->reason,
                    why->status == Status::kNotLinked
                        ? "run it where its runtime is linked, or use a bundle exported for a "
                          "backend registered here (etproof backends lists them)"
                        : "run on a machine where the backend is available, or use a bundle "
                          "exported for an available backend");
    return p;
  }
  try {
    p.model.emplace(LoadedModel::load(*p.bundle, isolation));
  } catch (const Error& e) {
    p.refused = status_of(e);
    p.error = e;
  }
  return p;
}
}  // namespace

Prepared prepare(const fs::path& path) { return prepare_methods(path, {}); }

ParityReport replay(const Bundle& goldens, LoadedModel& model, const ReplayOptions& options) {
  ParityReport r;
  r.path = goldens.dir.string();
  take_identity(r, goldens.manifest);
  if (auto e = unknown_methods_error(goldens.manifest, options.methods)) {
    (void)choose_bound(r, goldens.manifest, options);
    refuse(r, goldens.manifest, Status::kBundleInvalid, error_line(*e), *e, options.methods);
    return r;
  }
  r.methods = select_methods(goldens.manifest, options.methods).selected;
  r.delegates = model.program_delegates();
  const JudgePlan plan = choose_bound(r, goldens.manifest, options);
  r.budget = effective_budget(goldens.manifest.budget, options.budget);
  const bool undelegated = r.backend != "portable" && r.delegates.empty();
  // A program that writes state runs each case from its initial state: on a program loaded
  // afresh, every case (the model given may have run before). Measured: ExecuTorch keeps a
  // method's mutable buffers across runs, so a reused one carries the calls before it.
  // A sequence case's steps run in order on one loaded program, the state carried between them;
  // it runs where every step's method is selected.
  const bool fresh = !goldens.manifest.mutable_buffers.empty();
  const bool keep = options.repetition.any();
  std::vector<detail::ReplayedRun> ran;  // for the repeats
  for (const std::vector<const GoldenCase*>& run : case_runs(goldens.manifest)) {
    if (!std::all_of(run.begin(), run.end(), [&](const GoldenCase* g) { return selected(options.methods, *g); }))
      continue;
    detail::ReplayedRun& kept = ran.emplace_back(detail::ReplayedRun{run, r.cases.size(), {}});
    kept.judged.resize(run.size());
    if (fresh) {
      try {
        model = LoadedModel::load(goldens, options.isolation);
      } catch (const Error& e) {
        for (const GoldenCase* g : run) r.cases.push_back(refused_case(goldens.manifest, *g, e));
        continue;
      }
    }
    bool stopped = false;  // a step of this sequence did not run: the later ones cannot
    for (size_t i = 0; i < run.size(); ++i) {
      if (stopped) {
        const CaseReport before = r.cases.back();
        r.cases.push_back(step_not_run(goldens.manifest, *run[i], before));
        continue;
      }
      r.cases.push_back(run_case(goldens, model, *run[i], r.bound, plan, r.budget,
                                 options.allow_edited_goldens, keep ? &kept.judged[i] : nullptr));
      if (r.cases.back().error) kept.judged[i].reset();  // refused: nothing to repeat
      stopped = run[i]->sequence && r.cases.back().error.has_value();
    }
  }
  if (keep) detail::repeat_runs(r, goldens, model, options, ran, fresh);
  judge_top1(r, goldens.manifest);
  detail::judge_greedy(r, goldens.manifest, plan.cost_reference);
  for (CaseReport& c : r.cases) settle(c, r, undelegated, options);
  detail::judge_repeats(r);
  note_fallbacks(r, plan);
  finish(r);
  return r;
}

ParityReport replay(const fs::path& path, const ReplayOptions& options) {
  Prepared p = prepare_methods(path, options.methods, options.isolation);
  if (!p.refused) return replay(*p.bundle, *p.model, options);
  ParityReport r;
  r.path = path.string();
  std::optional<Manifest> m = p.bundle ? std::optional<Manifest>(p.bundle->manifest)
                                       : manifest_only(path);
  if (m) {
    take_identity(r, *m);
    (void)choose_bound(r, *m, options);
  } else {
    r.bundle = path.filename().string();
  }
  // Every case of the methods asked for (all, by default) gets the refusal's status.
  refuse(r, m, *p.refused, error_line(*p.error), p.error, options.methods);
  return r;
}

ParityReport run_parity(const Bundle& bundle, const std::optional<Bound>& bound) {
  // Derive before loading so an unknown recipe is refused without touching the runtime.
  if (!bound) throw_if_no_bound(bundle.manifest);
  LoadedModel model = LoadedModel::load(bundle);
  return run_parity(bundle, model, bound);
}

ParityReport run_parity(const Bundle& bundle, LoadedModel& model,
                        const std::optional<Bound>& bound) {
  if (!bound) throw_if_no_bound(bundle.manifest);  // the throwing form says so
  ReplayOptions o;
  o.bound = bound;
  ParityReport r = replay(bundle, model, o);
  if (const Error* e = r.first_error()) throw *e;
  return r;
}

}  // namespace etproof
