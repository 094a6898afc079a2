// etproof/render_parity.cpp — a replay's report as text and JSON (etproof/replay.h), and what
// `etproof parity` prints (etproof/render/parity.h: parity_renderers).
#include <algorithm>
#include <limits>
#include <sstream>

#include "etproof/render/formats.h"
#include "etproof/render/parity.h"
#include "etproof/replay/matrix.h"  // fit_text: the reports' width
#include "etproof/replay/replay.h"
#include "core/common.h"

namespace etproof {
namespace {
using detail::cosine_text;
using detail::json_number;
using detail::sqnr_text;
std::string fmt(double v, int precision = 6) { return detail::format_number(v, precision); }
std::string fixed(double v, int decimals) { return detail::fixed_number(v, decimals); }
std::string index_to_string(const std::vector<int64_t>& idx) {
  return idx.empty() ? std::string("[]") : shape_to_string(idx);
}
// The bound's rule in one short line: its terms as they apply to this report's outputs. A
// quantization term is shown in the form the outputs use (steps of the recorded output scale, or
// the range form where none is recorded; both only when the outputs differ); describe_bound (and
// --json's "rule") has the full form.
std::string brief_bound(const ParityReport& r) {
  const Bound& b = r.bound;
  bool scaled = false, unscaled = false;
  for (const CaseReport& c : r.cases)
    for (const TensorReport& t : c.outputs)
      if (!t.exact) (t.quant_scale ? scaled : unscaled) = true;
  std::ostringstream os;
  os << "atol " << fmt(b.atol);
  if (b.atol_qsteps != 0 && scaled && !unscaled) {
    if (b.atol_range != 0) os << " + " << fmt(b.atol_range, 4) << "·max|ref|";
    os << " + " << fmt(b.atol_qsteps, 4) << (b.atol_qsteps == 1 ? " quant step" : " quant steps");
  } else if (b.atol_qsteps != 0 && unscaled && !scaled) {
    os << " + " << fmt(b.atol_range + b.atol_range_unquantized, 4) << "·max|ref|";
  } else if (b.atol_qsteps != 0) {
    if (b.atol_range != 0) os << " + " << fmt(b.atol_range, 4) << "·max|ref|";
    os << " + " << fmt(b.atol_qsteps, 4) << (b.atol_qsteps == 1 ? " quant step" : " quant steps") << " (else " << fmt(b.atol_range_unquantized, 4)
       << "·max|ref|)";
  } else if (b.atol_range != 0 || b.atol_range_unquantized != 0) {
    os << " + " << fmt(b.atol_range + b.atol_range_unquantized, 4) << "·max|ref|";
  }
  os << ", rtol " << fmt(b.rtol) << ", cosine ≥ " << cosine_text(b.min_cosine);
  if (b.min_sqnr_db != -std::numeric_limits<double>::infinity()) os << ", SQNR ≥ " << fmt(b.min_sqnr_db, 4) << " dB";
  os << describe_thresholds(b);
  return os.str();
}
// The report's head: bundle, backend, recipe and precision; the delegates in the program; the
// methods (with several); the bound in one short line (its source and citations are in --json and
// in `parity --verbose`); the judgement and precision notes.
void write_head(std::ostringstream& os, const ParityReport& r) {
  os << "parity: " << r.bundle << "  backend " << r.backend << ", recipe " << r.recipe
     << ", precision " << r.precision << "\n";
  // A bundle materialized from a .bpte (etproof/runtime/bpte.h): its model names the file and says
  // where the recipe came from.
  if (r.model.find(" (ExecuTorch BundledProgram; ") != std::string::npos) os << "from: " << r.model << "\n";
  os << "delegates in program: ";
  if (r.delegates.empty()) {
    os << "none (portable kernels)";
  } else {
    for (size_t i = 0; i < r.delegates.size(); ++i) os << (i ? ", " : "") << r.delegates[i];
  }
  os << "\n";
  if (r.several_methods) os << "methods: " << detail::join_or_none(r.methods) << "\n";
  if (!r.mutable_buffers.empty())
    os << "state: " << detail::state_rule(r.mutable_buffers, r.state_shared_across_methods) << "\n";
  os << "bound: " << brief_bound(r)
     << (r.bound.caller_supplied ? " (supplied by the caller, not derived)" : " (derived)") << "\n";
  if (!r.judgement.empty()) os << "judged: " << r.judgement << "\n";
  if (!r.precision_reason.empty()) os << "precision here: " << r.precision_reason << "\n";
}

// An integer output, judged exactly: its mismatches and first mismatch; its cosine, measured only.
void write_exact_output(std::ostringstream& os, const TensorReport& t) {
  os << "    bound: exact (integer output, the float bound does not apply";
  if (t.integer_atol) os << ", integer_atol " << fmt(*t.integer_atol);
  os << "): " << t.mismatches << " of " << t.numel << " elements differ\n    ";
  if (!t.first_mismatch.empty())
    os << "first at " << index_to_string(t.first_mismatch) << ": actual " << t.first_mismatch_actual
       << ", reference " << t.first_mismatch_reference << "; ";
  os << "cosine " << cosine_text(t.cosine) << " (measured, not judged)\n";
  if (!t.passed) os << "    failed: " << t.failure << "\n";
}

// A float output's sign flips above the noise level and its worst slice, where it has them.
void write_flips_and_slices(std::ostringstream& os, const TensorReport& t) {
  if (t.sign_flips)
    os << "    sign flips: " << t.sign_flips << " above the noise level atol/"
       << fmt(t.noise_margin) << " = " << fmt(t.noise_level, 4) << ", largest at "
       << index_to_string(t.worst_sign_flip) << ": actual " << fmt(t.sign_flip_actual, 8)
       << ", reference " << fmt(t.sign_flip_reference, 8) << "\n";
  if (t.slice_axis && t.worst_slice) {
    const SliceReport& w = t.slices[*t.worst_slice];
    size_t failing = 0;
    for (const SliceReport& s : t.slices) failing += s.passed ? 0 : 1;
    os << "    slices along axis " << *t.slice_axis << ": " << t.slices.size() << ", "
       << failing << " failing; worst slice " << w.index << ": cosine "
       << cosine_text(w.cosine) << ", SQNR " << sqnr_text(w.sqnr_db) << " dB, max abs error "
       << fmt(w.max_abs_error, 4) << (w.passed ? "" : " — FAIL: " + w.failure) << "\n";
  }
}

// A float output: the bound as resolved for it and its error in the bound's terms, sign flips and
// slices, cosine and SQNR against their floors, what it was judged against, and why it failed.
void write_float_output(std::ostringstream& os, const ParityReport& r, const TensorReport& t) {
  os << "    bound resolved: atol " << fmt(t.atol, 4) << " + rtol " << fmt(t.rtol) << "·|ref|";
  if (r.bound.scale_relative()) {
    os << " (max|ref| " << fmt(t.reference_range, 4);
    if (t.quant_scale) os << ", output scale " << fmt(*t.quant_scale, 4);
    os << ")";
  }
  os << "; error " << fmt(t.range_error, 3) << "·max|ref|";
  if (t.qstep_error) os << ", " << fmt(*t.qstep_error, 3) << (*t.qstep_error == 1 ? " quant step" : " quant steps");
  os << "\n";
  write_flips_and_slices(os, t);
  // The floors as applied to this output (widened against truth where they were), never
  // the row's: the report's numbers are the ones the verdict used.
  os << "    cosine " << cosine_text(t.cosine);
  if (!t.cosine_skipped) os << " (floor " << cosine_text(t.min_cosine) << ")";
  os << ", SQNR " << sqnr_text(t.sqnr_db) << " dB";
  if (t.sqnr_skipped)
    os << " (SQNR rule skipped: the reference is all zeros; so is the cosine rule)";
  else if (t.min_sqnr_db != -std::numeric_limits<double>::infinity())
    os << " (floor " << fmt(t.min_sqnr_db, 4) << " dB)";
  for (const auto& [name, value] : t.measured)
    os << ", " << name << " " << fmt(value, 4) << " (threshold " << fmt(t.thresholds.at(name), 4) << ")";
  os << "\n";
  if (t.against != "golden" || !t.widened_by.empty()) {
    os << "    against "
       << (t.against == "float64" ? std::string("float64 truth")
                                  : "the " + t.against + " emulation");
    if (!t.widened_by.empty() && t.widening_error)
      os << "; bound widened by " << fmt(kReferenceMargin, 3) << "x the " << t.widened_by
         << (t.against == "float64" ? "'s own error against truth, " : "'s distance from it, ")
         << fmt(*t.widening_error, 3);
    os << "\n";
  }
  if (!t.fell_back.empty()) os << "    " << t.fell_back << "\n";
  if (!t.inconclusive.empty())
    os << "    inconclusive: " << t.inconclusive << "\n";
  else if (!t.passed)
    os << "    failed: " << t.failure << "\n";
}

// One output of a case: its verdict, worst element, error against the bound, then the rest as
// an integer (exact) or a float output.
void write_output(std::ostringstream& os, const ParityReport& r, const TensorReport& t) {
  os << "  " << t.output << " (" << t.numel << " elements): "
     << (t.passed ? "pass" : !t.inconclusive.empty() ? "INCONCLUSIVE (not judged)" : "FAIL")
     << "\n";
  os << "    worst element " << index_to_string(t.worst_index) << ": actual "
     << fmt(t.worst_actual, 8) << ", reference " << fmt(t.worst_reference, 8) << "\n";
  // The worst ratio only: headroom is 1 − it (both are in --json).
  os << "    max abs error " << fmt(t.max_abs_error, 4) << ", worst ratio "
     << fmt(t.worst_ratio, 4) << " of the bound, over the bound "
     << fixed(100 * t.fraction_over, 2) << "%\n";
  if (t.exact)
    write_exact_output(os, t);
  else
    write_float_output(os, r, t);
  // A failing output: the bound under which it would have passed, each rule alone (gate.h).
  if (!t.passed) os << "    would pass with: " << passing_bound_text(passing_bound(t)) << "\n";
}

// What the recipe cost on one case: its emulation against the float32 golden, and the program
// against that emulation.
void write_recipe_cost(std::ostringstream& os, const RecipeCost& k) {
  os << "  recipe cost" << (k.output.empty() ? "" : " of " + k.output) << " (" << k.reference
     << " emulation against the float32 golden): max abs "
     << "error " << fmt(k.max_abs_error, 4) << ", cosine " << cosine_text(k.cosine)
     << ", SQNR " << sqnr_text(k.sqnr_db) << " dB";
  if (k.top1_agrees) os << ", top-1 " << (*k.top1_agrees ? "kept" : "CHANGED");
  if (!k.over_budget.empty()) os << " — OVER BUDGET: " << k.over_budget;
  os << "\n";
  if (k.program_vs_emulation)
    os << "    the program against that emulation: max abs error "
       << fmt(k.program_vs_emulation->max_abs_error, 4) << ", cosine "
       << cosine_text(k.program_vs_emulation->cosine) << ", SQNR "
       << sqnr_text(k.program_vs_emulation->sqnr_db) << " dB\n";
}

// One golden case: its verdict (and status where it did not run), why it drifted when no output's
// numbers say, each output, and what the recipe cost.
void write_case(std::ostringstream& os, const ParityReport& r, const CaseReport& c) {
  os << "case " << c.case_id << " (" << c.data << "): "
     << (c.passed                              ? "PASS"
         : c.status == Status::kInconclusive   ? "INCONCLUSIVE"
         : c.status == Status::kOverBudget     ? "OVER BUDGET"
         : c.status == Status::kNondeterministic ? "NONDETERMINISTIC"
                                               : "DRIFT");
  if (c.status != Status::kAgreed && c.status != Status::kDrifted &&
      c.status != Status::kInconclusive && c.status != Status::kOverBudget &&
      c.status != Status::kNondeterministic)
    os << "  [" << to_string(c.status) << "] " << c.detail;
  os << "\n";
  if (c.status == Status::kNondeterministic) os << "  why: " << c.detail << "\n";
  // A failure no output's numbers explain (an edited golden, an output of another shape, the
  // recipe's cost over the budget): say why.
  const bool outputs_pass =
      std::all_of(c.outputs.begin(), c.outputs.end(), [](const TensorReport& t) { return t.passed; });
  // An edited golden (--allow-edited-goldens) says so whatever its numbers against that golden.
  if ((c.status == Status::kDrifted || c.status == Status::kOverBudget) && (outputs_pass || c.golden_edited) &&
      !c.detail.empty())
    os << "  why: " << c.detail << "\n";
  for (const TensorReport& t : c.outputs) write_output(os, r, t);
  for (const RecipeCost& k : c.costs) write_recipe_cost(os, k);
}

// The caller's budget, the emulation's top-1 agreement against it, and the budget's note.
void write_budget(std::ostringstream& os, const ParityReport& r) {
  if (r.budget) os << "budget (what the recipe may cost): " << describe_budget(*r.budget) << "\n";
  if (r.top1)
    os << "top-1 agreement of the " << r.top1->reference << " emulation with the golden ("
       << r.top1->output << "): " << r.top1->agreed << "/" << r.top1->rows << " = "
       << fmt(r.top1->fraction(), 4)
       << (!r.top1->budget        ? std::string(" (no budget: reported, not judged)")
           : r.top1->over_budget() ? " — OVER BUDGET " + fmt(*r.top1->budget, 4)
                                   : " (within the budget " + fmt(*r.top1->budget, 4) + ")")
       << "\n";
  for (const GreedyAgreement& a : r.greedy) {
    os << "greedy decode of " << a.case_id << " (" << a.output << "): the program takes " << a.program << " of "
       << a.tokens << " tokens as the float32 model does"
       << (a.program_differs_at.empty() ? std::string() : " (first difference at " + a.program_differs_at + ")");
    if (a.emulation)
      os << "; the " << a.reference << " emulation " << *a.emulation
         << (a.emulation_differs_at.empty() ? std::string() : " (first difference at " + a.emulation_differs_at + ")")
         << (!a.budget          ? std::string(" (no budget: reported, not judged)")
             : a.over_budget() ? " — OVER BUDGET " + std::to_string(*a.budget)
                               : " (within the budget " + std::to_string(*a.budget) + ")");
    os << "\n";
  }
  if (!r.budget_note.empty()) os << "budget: " << r.budget_note << "\n";
}

// How often the cases ran (ReplayOptions::repetition), once for the report: every case the same
// across its runs, or how many were not (each named on its case's line) and what that means.
void write_repeats(std::ostringstream& os, const ParityReport& r) {
  size_t repeated = 0, differing = 0;
  const RepeatReport* one = nullptr;
  for (const CaseReport& c : r.cases)
    if (c.repeats) {
      ++repeated;
      differing += c.repeats->identical() ? 0 : 1;
      one = one ? one : &*c.repeats;
    }
  if (!one) return;
  os << "repeats: each case " << one->runs << " times"
     << (one->fresh_loads ? " (" + std::to_string(one->fresh_loads) + " on a fresh load)" : std::string()) << ": ";
  if (!differing) {
    os << "every output bit-identical across the runs\n";
    return;
  }
  os << differing << " of " << repeated << " cases gave other bytes on another run (nondeterministic): "
     << "a program that reads memory it never wrote, a race, or a backend whose numbers depend on "
        "its state; the first run's verdict is shown, and no single run can be trusted\n";
}

// The result line (PASS, INCONCLUSIVE, OVER BUDGET or DRIFT, with the cases within the bound),
// what an inconclusive or over-budget case means, and the hint to pass a caller bound after a
// drift under a derived one.
void write_result(std::ostringstream& os, const ParityReport& r) {
  size_t passed = 0, inconclusive = 0, drifted = 0, over = 0, nondet = 0;
  bool numbers_failed = false;  // an output outside its bound (not a shape, a budget or an edit)
  for (const CaseReport& c : r.cases) {
    for (const TensorReport& t : c.outputs) numbers_failed = numbers_failed || !t.passed;
    // Within the bound: agreed, faithful but over budget, or nondeterministic whose first run was.
    const Status judged = c.repeats && c.status == Status::kNondeterministic ? c.repeats->first : c.status;
    passed += c.passed || (judged != c.status && (is_agreement(judged) || judged == Status::kOverBudget)) ? 1 : 0;
    inconclusive += c.status == Status::kInconclusive ? 1 : 0;
    drifted += c.status == Status::kDrifted ? 1 : 0;
    over += c.status == Status::kOverBudget ? 1 : 0;
    nondet += c.status == Status::kNondeterministic ? 1 : 0;
  }
  const bool only_inconclusive = !r.passed && inconclusive > 0 && drifted == 0 && over == 0 && nondet == 0;
  const bool only_over = !r.passed && over > 0 && drifted == 0 && inconclusive == 0 && nondet == 0;
  os << "result: "
     << (r.passed ? "PASS" : only_inconclusive ? "INCONCLUSIVE" : only_over ? "OVER BUDGET"
         : nondet > 0 && drifted == 0 ? "NONDETERMINISTIC" : "DRIFT")
     << " (" << passed + over << " of " << r.cases.size() << " cases within the bound";
  if (over) os << ", " << over << " of them over the budget";
  if (inconclusive) os << ", " << inconclusive << " inconclusive";
  if (nondet) os << ", " << nondet << " nondeterministic";
  os << ")";
  if (r.cases.empty()) os << " — no golden cases ran, nothing was measured";
  os << "\n";
  if (inconclusive)
    os << "inconclusive: a case whose references disagree, or whose bound would admit more than "
          "its output spans, is neither agreed nor drifted; re-export the bundle so its golden, "
          "float64 truth and emulations come from one model state, or judge it in a precision "
          "that can carry its outputs\n";
  if (over)
    os << "over budget: the program is faithful to its recipe (within the bound), but what the "
          "recipe costs against the float32 golden breaks the budget: choose a recipe that costs "
          "less for this model, or a budget it meets (--budget KEY=VALUE, the manifest's budget)\n";
  write_repeats(os, r);
  if (!r.passed && numbers_failed && !r.bound.caller_supplied && !only_inconclusive && !only_over)
    os << "hint: if this bound does not fit this model, pass --atol/--rtol/--min-cosine/--min-sqnr (table: "
          "cpp/src/gate/bounds.cpp)\n";
}
}  // namespace

std::string to_text(const ParityReport& r) {
  std::ostringstream os;
  write_head(os, r);
  std::vector<std::string> rules;  // each failed rule's explanation once, after the cases
  for (const CaseReport& c : r.cases) {
    write_case(os, r, c);
    for (const TensorReport& t : c.outputs)
      for (const std::string& rule : t.failed_rules)
        if (std::find(rules.begin(), rules.end(), rule) == rules.end()) rules.push_back(rule);
  }
  os << rules_legend(rules);
  write_budget(os, r);
  write_result(os, r);
  return fit_text(os.str());
}


namespace {
// ParityReport::greedy as JSON: per sequence case, the tokens the program and the emulation take
// as the float32 model does, where each first differs, and the budget's verdict.
nlohmann::json greedy_json(const std::vector<GreedyAgreement>& greedy) {
  nlohmann::json list = nlohmann::json::array();
  for (const GreedyAgreement& a : greedy) {
    nlohmann::json j = {{"case", a.case_id}, {"output", a.output}, {"tokens", a.tokens},
                        {"program", a.program}, {"program_differs_at", a.program_differs_at}};
    if (a.emulation) {
      j["reference"] = a.reference;
      j["emulation"] = *a.emulation;
      j["emulation_differs_at"] = a.emulation_differs_at;
      j["over_budget"] = a.over_budget();
    }
    list.push_back(std::move(j));
  }
  return list;
}
}  // namespace

nlohmann::json to_json(const ParityReport& r) {
  nlohmann::json cases = nlohmann::json::array();
  for (const CaseReport& c : r.cases) {
    nlohmann::json outs = nlohmann::json::array();
    for (const TensorReport& t : c.outputs) outs.push_back(to_json(t));
    nlohmann::json costs = nlohmann::json::array();
    for (const RecipeCost& k : c.costs) {
      nlohmann::json jk = {{"reference", k.reference},
                           {"output", k.output},
                           {"max_abs_error", json_number(k.max_abs_error)},
                           {"cosine", json_number(k.cosine)},
                           {"sqnr_db", json_number(k.sqnr_db)}};
      if (k.top1_agrees) {
        jk["top1_agrees"] = *k.top1_agrees;
        jk["top1_rows"] = k.top1_rows;
        jk["top1_agreed"] = k.top1_agreed;
      }
      if (!k.over_budget.empty()) jk["over_budget"] = k.over_budget;
      if (k.program_vs_emulation)
        jk["program_vs_emulation"] = {
            {"max_abs_error", json_number(k.program_vs_emulation->max_abs_error)},
            {"cosine", json_number(k.program_vs_emulation->cosine)},
            {"sqnr_db", json_number(k.program_vs_emulation->sqnr_db)}};
      costs.push_back(std::move(jk));
    }
    nlohmann::json jc = {{"case", c.case_id},
                         {"data", c.data},
                         {"passed", c.passed},
                         {"status", to_string(c.status)},
                         {"outputs", outs}};
    if (r.several_methods) jc["method"] = c.method;  // with one method: as before, no key
    if (!costs.empty()) jc["recipe_cost"] = costs;
    if (!c.detail.empty()) jc["detail"] = c.detail;
    if (c.error) jc["error"] = to_string(c.error->kind());
    if (c.repeats) jc["repeats"] = to_json(*c.repeats);
    cases.push_back(std::move(jc));
  }
  nlohmann::json doc = {{"bundle", r.bundle},       {"backend", r.backend}, {"recipe", r.recipe},
                        {"precision", r.precision}, {"delegates", r.delegates},
                        {"bound", to_json(r.bound)}, {"cases", cases},     {"passed", r.passed}};
  if (!r.model.empty()) doc["model"] = r.model;
  if (r.several_methods) doc["methods"] = r.methods;
  if (!r.mutable_buffers.empty()) {
    doc["state"] = {{"mutable_buffers", r.mutable_buffers}, {"per_case", "fresh"}};
    if (r.state_shared_across_methods) doc["state"]["shared_across_methods"] = true;
  }
  doc["against"] = r.against;
  if (!r.judgement.empty()) doc["judgement"] = r.judgement;
  if (!r.precision_reason.empty()) doc["precision_reason"] = r.precision_reason;
  if (!r.no_bound.empty()) doc["no_bound"] = r.no_bound;
  if (r.budget) {
    nlohmann::json b = nlohmann::json::object();
    if (r.budget->min_sqnr_db) b["min_sqnr_db"] = json_number(*r.budget->min_sqnr_db);
    if (r.budget->min_cosine) b["min_cosine"] = json_number(*r.budget->min_cosine);
    if (r.budget->top1_agreement) b["top1_agreement"] = json_number(*r.budget->top1_agreement);
    if (r.budget->min_greedy_tokens) b["min_greedy_tokens"] = *r.budget->min_greedy_tokens;
    doc["budget"] = b;
  }
  if (!r.greedy.empty()) doc["greedy"] = greedy_json(r.greedy);
  if (r.top1)
    doc["top1_agreement"] = {{"output", r.top1->output},
                             {"reference", r.top1->reference},
                             {"agreed", r.top1->agreed},
                             {"rows", r.top1->rows},
                             {"fraction", json_number(r.top1->fraction())},
                             {"over_budget", r.top1->over_budget()}};
  if (!r.budget_note.empty()) doc["budget_note"] = r.budget_note;
  if (r.refused) {
    doc["refused"] = to_string(*r.refused);
    if (r.error) doc["error"] = {{"kind", to_string(r.error->kind())}, {"cause", r.error->cause()},
                                 {"remedy", r.error->remedy()}};
  }
  return doc;
}

namespace {

// The bound's source and citations (parity --verbose), as an indented paragraph placed after the
// report's bound line (the line and its continuations); the report is unchanged without it.
std::string with_bound_source(const std::string& text, const Bound& bound) {
  const size_t at = text.find("\nbound: ");
  if (at == std::string::npos || bound.source.empty()) return text;
  size_t end = text.find('\n', at + 1);
  while (end != std::string::npos && text.compare(end + 1, 4, "    ") == 0) end = text.find('\n', end + 1);
  if (end == std::string::npos) return text;
  return text.substr(0, end + 1) + fit_text("  source: " + bound.source + "\n") + text.substr(end + 1);
}

std::string text_printout(const ParityPrintout& p) {
  std::string out;
  if (p.machine)
    out = "on " + p.emulated_as + ", emulated (" + p.machine->value("emulator", std::string()) + ", " +
          p.machine->value("cpu", std::string()) + "): evidence about the program, not a device\n";
  const std::string text = to_text(p.report);
  return out + (p.verbose ? with_bound_source(text, p.report.bound) : text);
}

std::string json_printout(const ParityPrintout& p) {
  nlohmann::json doc = to_json(p.report);  // the bound's source always
  doc["machine"] = p.machine ? *p.machine : nlohmann::json(nullptr);
  return json_report(doc);
}

constexpr Renderer<ParityPrintout> kParityRenderers[] = {
    {"text", text_printout, "each case and output against the bound, then the result"},
    {"json", json_printout, "the report with every number, the bound's source and citations"},
};

}  // namespace

Renderers<ParityPrintout> parity_renderers() { return kParityRenderers; }

}  // namespace etproof
