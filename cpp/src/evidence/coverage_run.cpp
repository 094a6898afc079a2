// `etproof coverage`'s reading and writing around render_coverage (etproof/coverage.h): which
// ledgers, the page written atomically, or --check's comparison with the committed page and its
// line diff. What the page says is coverage.cpp's.
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "core/common.h"
#include "etproof/evidence/coverage.h"
#include "etproof/core/error.h"
#include "etproof/evidence/ledger.h"
#include "core/json_parse.h"

namespace etproof {

std::string line_diff(const std::string& expected, const std::string& actual, size_t max_lines) {
  if (expected == actual) return "";
  auto split = [](const std::string& t) {
    std::vector<std::string> v;
    std::istringstream in(t);
    for (std::string l; std::getline(in, l);) v.push_back(l);
    return v;
  };
  const auto a = split(expected), b = split(actual);
  // Common prefix and suffix; the middle is the hunk.
  size_t p = 0;
  while (p < a.size() && p < b.size() && a[p] == b[p]) ++p;
  size_t sa = a.size(), sb = b.size();
  while (sa > p && sb > p && a[sa - 1] == b[sb - 1]) --sa, --sb;
  std::ostringstream out;
  out << "--- expected (committed)\n+++ actual (rendered from the ledger)\n";
  out << "@@ -" << (p + 1) << "," << (sa - p) << " +" << (p + 1) << "," << (sb - p) << " @@\n";
  size_t n = 0;
  for (size_t i = p; i < sa && n < max_lines; ++i, ++n) out << "-" << a[i] << "\n";
  for (size_t i = p; i < sb && n < max_lines; ++i, ++n) out << "+" << b[i] << "\n";
  if ((sa - p) + (sb - p) > max_lines) out << "… (" << ((sa - p) + (sb - p) - max_lines) << " more lines)\n";
  if (expected.size() && actual.size() && (expected.back() == '\n') != (actual.back() == '\n'))
    out << "(the final newline differs)\n";
  return out.str();
}

CoverageOutcome run_coverage(const CoverageRequest& a) {

  CoverageOutcome out;
  std::vector<std::string> ledgers = a.ledgers;
  if (ledgers.empty() && a.check)  // a committed page is checked against its own ledger only
    throw Error(ErrorKind::kInvalidArgument,
                "--check needs the ledger the page was rendered from",
                "pass it: etproof coverage --ledger evidence/ledger.jsonl --check (the project's "
                "page); without --ledger, coverage reads your own ledger, not the project's");
  if (ledgers.empty()) {
    std::string why;
    const auto p = default_ledger_path(&why);
    if (!p)
      throw Error(ErrorKind::kInvalidArgument, "no ledger to read: " + why,
                  "pass --ledger FILE (e.g. evidence/ledger.jsonl in the source tree)");
    ledgers.push_back(p->string());
    out.message += "coverage: reading " + p->string() + " (" + why + ")\n";
  }
  std::vector<std::vector<nlohmann::json>> all;
  for (const auto& l : ledgers) all.push_back(read_ledger(l));
  const auto records = merge_records(all);
  const std::string target = !a.out.empty() ? a.out : a.check ? "docs/backend-coverage.md" : "";
  CoverageOptions o;
  o.sources = ledgers;
  o.max_age_days = a.max_age_days;
  if (!a.as_of.empty()) o.as_of = a.as_of;
  o.toolchain = toolchain_info();
  o.regenerate = "etproof coverage";
  for (const auto& l : ledgers) o.regenerate += " --ledger " + l;
  if (a.max_age_days != 90) o.regenerate += " --max-age-days " + std::to_string(a.max_age_days);
  if (!a.as_of.empty()) o.regenerate += " --as-of " + a.as_of;
  if (!target.empty()) o.regenerate += " --out " + target;
  // read_ledger checks the fields every record has; one of the others of an unexpected type (a
  // hand-edited line whose id was fixed up) that rendering does not step around is the ledger's
  // problem, not a bug.
  const std::string page = detail::reading_json(
      {ErrorKind::kLedgerInvalid, "a record of " + detail::join(ledgers),
       "find the record with the field of the wrong type and restore it from version control, or delete it"},
      [&] { return render_coverage(records, o); });

  if (a.check) {
    std::ifstream in(target, std::ios::binary);
    if (!in)
      throw Error(ErrorKind::kIo, "cannot read " + target + " to check it",
                  "render it: " + o.regenerate);
    const std::string committed((std::istreambuf_iterator<char>(in)),
                                std::istreambuf_iterator<char>());
    if (committed == page) {
      out.message += "coverage: " + target + " matches the ledger (" +
                     std::to_string(records.size()) + " records)\n";
      return out;
    }
    out.message += "coverage: " + target + " differs from what the ledger renders:\n" +
                   line_diff(committed, page) + "remedy: " + o.regenerate + "\n";
    out.exit_code = 1;
    return out;
  }
  if (target.empty()) {
    out.page = page;
    return out;
  }
  detail::write_file_atomic(target, page);
  out.message += "coverage: wrote " + target + " from " + std::to_string(records.size()) +
                 " records\n";
  return out;
}

}  // namespace etproof
