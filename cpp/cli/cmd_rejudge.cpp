// etproof rejudge — recorded evidence judged again under other bounds, running nothing
// (etproof/evidence/rejudge.h).
#include <iostream>
#include <memory>

#include "common.h"
#include "etproof/evidence/ledger.h"
#include "etproof/evidence/rejudge.h"
#include "etproof/gate/references.h"
#include "format.h"
#include "subcommands.h"

namespace etproof_cli {
namespace {

struct RejudgeOptions {
  std::vector<std::string> ledgers;
  etproof::RejudgeBound bound;
  std::vector<std::string> budget;
  FormatOption format;
};

int run_rejudge(const RejudgeOptions& o) {
  etproof::RejudgeBound bound = o.bound;
  if (const std::optional<etproof::Budget> b = parse_budget(o.budget)) {
    if (b->min_cosine || b->top1_agreement || b->min_greedy_tokens)
      throw Error(ErrorKind::kInvalidArgument,
                  "rejudge judges a budget on the recipe's recorded cost, its SQNR: only min_sqnr_db",
                  "pass --budget min_sqnr_db=VALUE (the ledger records no cosine, top-1 or greedy cost)");
    bound.budget_min_sqnr_db = b->min_sqnr_db;
  }
  std::vector<std::string> ledgers = o.ledgers;
  if (ledgers.empty()) {
    std::string why;
    const auto p = etproof::default_ledger_path(&why);
    if (!p)
      throw Error(ErrorKind::kInvalidArgument, "no ledger to read: " + why,
                  "pass the ledger: etproof rejudge evidence/ledger.jsonl (the project's)");
    ledgers.push_back(p->string());
  }
  std::vector<std::vector<nlohmann::json>> all;
  for (const std::string& l : ledgers) all.push_back(etproof::read_ledger(l));
  etproof::RejudgeReport r = etproof::rejudge(etproof::merge_records(all), bound);
  r.ledgers = ledgers;
  std::cout << (o.format.format == "json" ? etproof::to_json(r).dump(2) + "\n" : etproof::to_text(r));
  return r.now_fail > 0 ? 1 : 0;
}

}  // namespace

Subcommand register_rejudge(CLI::App& app) {
  auto o = std::make_shared<RejudgeOptions>();
  auto* sub = app.add_subcommand(
      "rejudge", "recorded evidence judged again under other bounds, running nothing (exit 1: a record that "
                 "passed fails under them)");
  sub->add_option("LEDGER", o->ledgers,
                  "ledger(s) to read, merged (default: the ledger runs record to: $ETPROOF_LEDGER, else "
                  "$XDG_STATE_HOME/etproof/ledger.jsonl)");
  sub->add_option("--atol", o->bound.atol,
                  "the elementwise rules replaced by max |a - r| <= ATOL (rtol 0, output units), judged on each "
                  "record's minimum passing bound");
  sub->add_option("--min-cosine", o->bound.min_cosine, "the cosine rule replaced by this floor");
  sub->add_option("--min-sqnr", o->bound.min_sqnr_db, "the SQNR rule replaced by this floor, in dB");
  add_budget_option(sub, o->budget);
  add_format_option(sub, o->format,
                    std::vector<FormatChoice>{{"text", "the records whose verdict changes or that are refused, and "
                                                       "the counts"},
                                              {"json", "the bound, the counts and every record's verdict recorded "
                                                       "and now, as one JSON object"}});
  return {sub, [o] { return run_rejudge(*o); }};
}

}  // namespace etproof_cli
