// etproof coverage — the backend-coverage page (Markdown), rendered from evidence ledger(s) alone.
#include <iostream>
#include <memory>

#include "common.h"
#include "etproof/evidence/coverage.h"
#include "subcommands.h"

namespace etproof_cli {
namespace {

int run_coverage(const etproof::CoverageRequest& a) {
  const etproof::CoverageOutcome o = etproof::run_coverage(a);
  std::cout << o.page;
  std::cerr << o.message;
  return o.exit_code;
}

}  // namespace

// The options struct is the library's own request (etproof/evidence/coverage.h).
Subcommand register_coverage(CLI::App& app) {
  auto o = std::make_shared<etproof::CoverageRequest>();
  auto* sub = app.add_subcommand(
      "coverage", "the backend-coverage page (Markdown), rendered from evidence ledger(s) alone");
  sub->add_option("--ledger", o->ledgers,
                  "ledger to read; repeat to merge (concatenated, de-duplicated by id); "
                  "default: the ledger runs record to ($ETPROOF_LEDGER, else "
                  "$XDG_STATE_HOME/etproof/ledger.jsonl)");
  sub->add_option("--out", o->out, "write the page here (atomically) instead of stdout");
  sub->add_flag("--check", o->check,
                "compare with --out FILE (default docs/backend-coverage.md) instead of "
                "writing; exit 1 with a diff when it differs");
  sub->add_option("--max-age-days", o->max_age_days,
                  "evidence older than this (before --as-of) is marked stale (default 90)")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--as-of", o->as_of, "YYYY-MM-DD the age is measured from (default: the newest record's date)");
  return {sub, [o] { return etproof_cli::run_coverage(*o); }};
}

}  // namespace etproof_cli
