// replay/greedy.cpp — a greedy decode's tokens over a sequence case's steps (replay/greedy.h).
#include "replay/greedy.h"

#include <map>
#include <string>

#include "etproof/core/status.h"

namespace etproof::detail {

namespace {
// The index of the largest of the last `row` values of `t` (the first on a tie); -1 when `t` has
// fewer values or `row` is 0.
int64_t last_row_argmax(const HostTensor& t, size_t row) {
  const std::vector<double> v = t.to_double();
  if (v.size() < row || row == 0) return -1;
  size_t best = v.size() - row;
  for (size_t i = best; i < v.size(); ++i)
    if (v[i] > v[best]) best = i;
  return static_cast<int64_t>(best - (v.size() - row));
}

}  // namespace

// CaseReport::greedy of one step: the tokens the program, the golden and the emulation choose.
void greedy_token(CaseReport& c, const Manifest& m, const GoldenCase::Step& step,
                  const std::map<std::string, HostTensor>& actual, const std::map<std::string, HostTensor>& golden,
                  const std::map<std::string, HostTensor>* emulation) {
  const std::string& out = m.greedy_output;
  auto a = actual.find(out);
  auto g = golden.find(out);
  if (a == actual.end() || g == golden.end() || g->second.shape.empty()) return;
  const auto row = static_cast<size_t>(g->second.shape.back());
  CaseReport::GreedyToken k;
  k.sequence = step.case_id;
  k.program = last_row_argmax(a->second, row);
  k.golden = last_row_argmax(g->second, row);
  if (emulation)
    if (auto eo = emulation->find(out); eo != emulation->end()) k.emulation = last_row_argmax(eo->second, row);
  c.greedy = k;
}

// ParityReport::greedy: per sequence case (its steps in replay order), the leading tokens the
// program and the emulation take as the float32 model does; the budget's min_greedy_tokens judged
// on the emulation's (the recipe's cost), the step of its first difference drifting when under it.
bool budget_judged(Status s) {
  return s == Status::kAgreed || s == Status::kDrifted || s == Status::kOverBudget;
}

void fail_budget(CaseReport& c, const std::string& why) {
  c.passed = false;
  if (c.status == Status::kAgreed) c.status = Status::kOverBudget;
  c.detail = c.detail.empty() ? why : c.detail + "; " + why;
}

void judge_greedy(ParityReport& r, const Manifest& m, const std::string& cost_reference) {
  if (m.greedy_output.empty()) return;
  const std::optional<int64_t> want = r.budget ? r.budget->min_greedy_tokens : std::nullopt;
  std::map<std::string, size_t> where;
  for (const CaseReport& c : r.cases) {
    if (!c.greedy) continue;
    auto [it, fresh] = where.emplace(c.greedy->sequence, r.greedy.size());
    if (fresh) {
      GreedyAgreement a;
      a.case_id = c.greedy->sequence;
      a.output = m.greedy_output;
      a.budget = want;
      if (c.greedy->emulation) {
        a.reference = cost_reference;
        a.emulation = 0;
      }
      r.greedy.push_back(a);
    }
    GreedyAgreement& a = r.greedy[it->second];
    const CaseReport::GreedyToken& k = *c.greedy;
    if (a.program == a.tokens && a.program_differs_at.empty()) {
      if (k.program == k.golden) ++a.program;
      else a.program_differs_at = c.case_id;
    }
    if (a.emulation && *a.emulation == a.tokens && a.emulation_differs_at.empty()) {
      if (k.emulation && *k.emulation == k.golden) ++*a.emulation;
      else a.emulation_differs_at = c.case_id;
    }
    ++a.tokens;
  }
  if (!want) return;
  if (r.greedy.empty() || !r.greedy.front().emulation) {
    const std::string note = "min_greedy_tokens not judged: " +
                             (r.greedy.empty() ? std::string("no sequence case ran")
                                               : "no recipe emulation to compare with the golden (recipe " + m.recipe +
                                                     " costs nothing by definition, or the bundle predates references)");
    r.budget_note = r.budget_note.empty() ? note : r.budget_note + "; " + note;
    return;
  }
  for (const GreedyAgreement& a : r.greedy) {
    if (!a.over_budget()) continue;
    const std::string why = "the recipe's greedy decode of " + a.case_id + " takes " + std::to_string(*a.emulation) +
                            " token(s) as the float32 model does (" + a.reference + " emulation), under the budget " +
                            std::to_string(*a.budget) + "; its first different token is this step's";
    for (CaseReport& c : r.cases) {
      if (c.case_id == a.emulation_differs_at && budget_judged(c.status)) fail_budget(c, why);
    }
  }
}

}  // namespace etproof::detail
