// etproof/evidence/rejudge.h — recorded evidence judged again under other bounds, running nothing
// (`etproof rejudge LEDGER --atol A --min-cosine C --min-sqnr S --budget min_sqnr_db=X`).
//
// A runtime record of a judged run (kind matrix or parity; status agreed, agreed-undelegated,
// drifted, over-budget, xfail or xpass) carries what the gate measured (ledger-record.schema.json,
// "numbers"): the worst numbers over its cases, the minimum passing bound (gate.h: PassingBound),
// the rules that failed and the recipe's cost. Re-judged:
//   - the rules the new bound replaces are judged by the recorded passing bound: --atol A replaces
//     the elementwise rules (allclose and sign-flip; |a − r| ≤ A, rtol 0), --min-cosine the cosine
//     rule, --min-sqnr the SQNR rule, each against what the record measured against (its
//     "against": the float32 golden, float64 truth or the recipe's emulation);
//   - every other rule keeps its recorded outcome (failed_rules): a record that failed a rule the
//     new bound does not replace stays drifted;
//   - --budget min_sqnr_db=X judges the recipe's recorded cost (a faithful record under it is
//     over-budget); without --budget the recorded budget verdict stands.
// With no bound given, each verdict is derived again from the record's own numbers (its failed
// rules) and compared with its status: the recorded verdicts reproduce. The xfail records of the
// run that recorded it are not applied: an xfail record reads as drifted, an xpass as agreed.
// A record that lacks what the new rule needs (recorded before etproof kept failed rules or the
// passing bound, a budget without a recorded cost) is refused, with the reason — never guessed.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "etproof/core/status.h"

namespace etproof {

struct RejudgeBound {
  std::optional<double> atol;              // output units
  std::optional<double> min_cosine;
  std::optional<double> min_sqnr_db;       // dB
  std::optional<double> budget_min_sqnr_db;  // dB, the recipe's cost
  [[nodiscard]] bool empty() const { return !atol && !min_cosine && !min_sqnr_db && !budget_min_sqnr_db; }
};

struct Rejudged {
  std::string id, time_utc, kind, model, backend, recipe;
  std::string machine;          // the emulated machine's profile, "" on hardware
  std::string recorded;         // the record's status word
  std::optional<Status> now;    // nullopt: refused
  bool changed = false;         // now differs from the recorded verdict (xfail read as drifted)
  bool now_fails = false;       // changed from a passing verdict to a failing one
  std::string why;              // what decided it (the numbers against the new bound), or the refusal
};

struct RejudgeReport {
  RejudgeBound bound;
  std::vector<std::string> ledgers;
  std::vector<Rejudged> records;  // every judged runtime record, in the ledger's order
  size_t unchanged = 0, changed = 0, refused = 0, now_fail = 0;
};

// Re-judges every judged runtime record of `records` (read_ledger's) under `bound`. Never throws
// for a record: a record it cannot re-judge is refused (Rejudged::now nullopt, `why` says why).
[[nodiscard]] RejudgeReport rejudge(const std::vector<nlohmann::json>& records, const RejudgeBound& bound);

// The changed records a line each, the refused ones grouped by reason with their count, and the
// totals; lines within 120 columns.
[[nodiscard]] std::string to_text(const RejudgeReport& r);
// {"bound", "ledgers", "counts": {unchanged, changed, refused, now_fail}, "records": [{id,
// time_utc, kind, model, backend, recipe, machine, recorded, now (null: refused), changed, why}]}.
[[nodiscard]] nlohmann::json to_json(const RejudgeReport& r);

}  // namespace etproof
