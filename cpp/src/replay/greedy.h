// replay/greedy.h — private to the replay layer: the greedy decode of a sequence case
// (etproof/replay/replay.h, GreedyAgreement; the manifest's greedy.output, Manifest::greedy_output).
#pragma once

#include <map>
#include <string>

#include "etproof/core/manifest.h"
#include "etproof/core/npy.h"
#include "etproof/replay/replay.h"

namespace etproof::detail {

// CaseReport::greedy of one step of a sequence case: the next token (argmax over the last axis of
// the output's last row) that `actual` (the program's outputs), `golden` (the float32 golden's)
// and `emulation` (the recipe's emulation's, nullptr where the bundle carries none) choose. Does
// nothing where `m.greedy_output` is missing from `actual` or `golden`.
void greedy_token(CaseReport& c, const Manifest& m, const GoldenCase::Step& step,
                  const std::map<std::string, HostTensor>& actual, const std::map<std::string, HostTensor>& golden,
                  const std::map<std::string, HostTensor>* emulation);

// Whether a case's recipe cost can still be judged over the bundle (top-1 agreement, greedy
// tokens): it ran and was measured — agreed, drifted or already over-budget.
[[nodiscard]] bool budget_judged(Status s);
// A bundle-wide budget broken by this case (`why` names the budget and the measured value): a
// faithful (agreed) case becomes over-budget, a drifted one stays drifted; `why` is appended to
// its detail and the case fails.
void fail_budget(CaseReport& c, const std::string& why);

// ParityReport::greedy from the cases' tokens (replay order), and the budget's min_greedy_tokens
// judged on the emulation named `cost_reference`: under it, the step of the first different token
// fails as over-budget (fail_budget), naming the budget; not judged (budget_note) without an
// emulation.
void judge_greedy(ParityReport& r, const Manifest& m, const std::string& cost_reference);

}  // namespace etproof::detail
