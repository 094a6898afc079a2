// The backend-coverage page, from ledger records alone (etproof/coverage.h).
#include "etproof/evidence/coverage.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <cmath>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "etproof/core/backend_table.h"
#include "etproof/core/error.h"
#include "etproof/evidence/ledger.h"
#include "etproof/runtime/registry.h"
#include "etproof/core/status.h"
#include "core/common.h"
#include "core/json_parse.h"

using nlohmann::json;

namespace etproof {
namespace {

using detail::read_json_number;

std::string s(const json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_string()) return "";
  return j[key].get<std::string>();
}

// Table-safe text: no pipes, no line breaks.
std::string md(const std::string& in) {
  std::string out;
  for (char c : in) {
    if (c == '|') out += "\\|";
    else if (c == '\n' || c == '\r') out += ' ';
    else out += c;
  }
  return out;
}

// At most n bytes, cut on a UTF-8 character boundary, "…" when cut.
std::string clip(const std::string& in, size_t n) {
  if (in.size() <= n) return in;
  size_t cut = n;
  while (cut > 0 && (static_cast<unsigned char>(in[cut]) & 0xC0) == 0x80) --cut;
  return in.substr(0, cut) + "…";
}

// A count (a non-negative integer), or nullopt.
std::optional<size_t> count_of(const json& j) {
  if (!j.is_number_integer() || (j.is_number_integer() && !j.is_number_unsigned() && j.get<int64_t>() < 0))
    return std::nullopt;
  return j.get<size_t>();
}

std::string fmt(double v, int prec) { return detail::format_number(v, prec); }
// An SQNR on the page: three significant digits ("143", "21.7"; "inf" when identical), compact
// for a table cell; the reports' one-decimal form is detail::sqnr_text.
std::string sqnr_cell(double v) { return fmt(v, 3); }

std::string date_of(const json& r) { return s(r, "time_utc").substr(0, 10); }

std::string plural(size_t n, const std::string& word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

bool is_probe(const json& r) { return s(r, "kind") == "backends"; }

// What a record is evidence about, in words.
std::string what(const json& r) {
  if (is_probe(r)) {
    std::string w = r["half"] == "export" ? "one-operation probe (export)" : "one-operation probe";
    if (r.contains("bundle") && r["half"] == "runtime") w += " (`" + s(r, "bundle") + "`)";
    else if (r["half"] == "runtime") w = "registry (nothing run)";
    return w;
  }
  std::string w = s(r, "model").empty() ? "?" : s(r, "model");
  if (!s(r, "recipe").empty()) w += " " + s(r, "recipe");
  if (!s(r, "precision").empty()) w += " (" + s(r, "precision") + ")";
  if (!s(r, "bundle_sha256").empty()) w += ", sha256 " + s(r, "bundle_sha256").substr(0, 12);
  return w;
}

std::string numbers_text(const json& r) {
  if (!r.contains("numbers") || !r["numbers"].is_object()) return "";
  const json& n = r["numbers"];
  std::vector<std::string> parts;
  if (auto c = count_of(n.value("cases", json()))) parts.push_back(plural(*c, "case"));
  if (auto v = read_json_number(n.value("max_abs_error", json()))) parts.push_back("max abs err " + fmt(*v, 3));
  if (auto v = read_json_number(n.value("cosine", json()))) parts.push_back("cosine " + detail::cosine_text(*v));
  if (auto v = read_json_number(n.value("sqnr_db", json()))) parts.push_back("SQNR " + sqnr_cell(*v) + " dB");
  return detail::join(parts);
}

struct Entry {
  const json* r = nullptr;
  std::string stale;  // why stale; empty: fresh
};

// What a record's status says, for the claims. A replay status (etproof/status.h) is read back
// with status_from_string and judged by its predicates; the words that are not replay statuses
// are in other_words(), the one place they are listed here.
enum class Other {
  kNone,                 // a replay status, or a word this binary does not know
  kExported,             // kExported: a bundle exists, with a delegate call where one is due
  kExportedUndelegated,  // kExportedUndelegated: a delegate backend's program without one
  kAvailable,            // export half: its probe lowered to the delegate; runtime half: the
                         // registry's RuntimeStatus::kAvailable, nothing run
  kRefused,              // the export half's probe refused (its toolchain is missing)
  kRemovedUpstream,      // the backend table's and the registry's "removed-upstream"
  kRegistryOnly,         // the registry's "linked-not-registered" / "no-runtime": nothing run
  kFailed,               // a probe failure, as ledgers before the status vocabulary wrote it
};

// The words, from the enums that spell them where one does. The registry's "not-linked" and
// "unavailable" are spelled as the replay statuses are, and read as those.
const std::vector<std::pair<std::string, Other>>& other_words() {
  static const std::vector<std::pair<std::string, Other>> words = {
      {kExported, Other::kExported},
      {kExportedUndelegated, Other::kExportedUndelegated},
      {std::string(to_string(RuntimeStatus::kAvailable)), Other::kAvailable},
      {"refused", Other::kRefused},  // the export half's probe (python/etproof/backends.py)
      {std::string(to_string(RuntimeStatus::kRemovedUpstream)), Other::kRemovedUpstream},
      {std::string(to_string(RuntimeStatus::kLinkedNotRegistered)), Other::kRegistryOnly},
      {std::string(to_string(RuntimeStatus::kNoRuntime)), Other::kRegistryOnly},
      {"failed", Other::kFailed},
  };
  return words;
}

struct Reading {
  std::optional<Status> status;
  Other other = Other::kNone;
};

Reading read_status(const std::string& st) {
  Reading r;
  r.status = status_from_string(st);
  if (!r.status)
    for (const auto& [word, other] : other_words())
      if (st == word) r.other = other;
  return r;
}

Reading reading_of(const json& r) { return read_status(s(r, "status")); }

// The claims' predicates.
bool ran_ok(const Reading& r) { return r.status == Status::kAgreed; }
bool lowered(const Reading& r) { return r.other == Other::kExported || r.other == Other::kAvailable; }
// A failure of the run (fails_run) other than an unexpected pass, which has its own claim (the
// export half's export-failed is never a runtime record); or an old ledger's probe "failed".
bool run_failure(const Reading& r) {
  return (r.status && fails_run(*r.status) && *r.status != Status::kXpass &&
          *r.status != Status::kExportFailed) ||
         r.other == Other::kFailed;
}

// The lowest of the values seen (a NaN, once seen, stays: it is the worst).
void lowest(std::optional<double>& slot, const std::optional<double>& v) {
  detail::keep_worst(slot, v, /*larger_is_worse=*/false);
}

// Cells of the summary for one backend on one machine.
struct Summary {
  std::string claim, export_cell, runtime_cell;
};

std::string newest_date(const std::vector<const Entry*>& es) {
  std::string d;
  for (auto* e : es) d = std::max(d, date_of(*e->r));
  return d;
}

bool all_stale(const std::vector<const Entry*>& es) {
  if (es.empty()) return false;
  for (auto* e : es)
    if (e->stale.empty()) return false;
  return true;
}

// The summary's reasons, each written once in full under the table and cited by number.
struct Notes {
  std::vector<std::string> texts;
  // "(note N)" for `reason`, numbering it on first use.
  std::string cite(const std::string& reason) {
    auto it = std::find(texts.begin(), texts.end(), reason);
    if (it == texts.end()) it = texts.insert(texts.end(), reason);
    return "(note " + std::to_string(it - texts.begin() + 1) + ")";
  }
};

// "status (note N)" for each distinct status; the reason in full in `notes`.
std::string statuses_text(const std::vector<const Entry*>& es, Notes& notes) {
  std::vector<std::string> seen;
  std::string out;
  for (auto* e : es) {
    const std::string st = s(*e->r, "status");
    if (std::find(seen.begin(), seen.end(), st) != seen.end()) continue;
    seen.push_back(st);
    std::string reason = s(*e->r, "reason");
    out += (out.empty() ? "" : "; ") + st + (reason.empty() ? "" : " " + notes.cite(reason));
  }
  return out;
}

Summary summarize(const std::vector<const Entry*>& entries, Notes& notes) {
  std::vector<const Entry*> exp, run, run_ok, run_undeleg, run_bad, run_xfail, run_xpass, exp_ok,
      exp_undeleg;
  for (const Entry* e : entries) {
    const Reading st = reading_of(*e->r);
    if ((*e->r)["half"] == "export") {
      exp.push_back(e);
      if (lowered(st)) exp_ok.push_back(e);
      if (st.other == Other::kExportedUndelegated) exp_undeleg.push_back(e);
    } else {
      run.push_back(e);
      if (ran_ok(st)) run_ok.push_back(e);
      if (st.status == Status::kAgreedUndelegated) run_undeleg.push_back(e);
      if (run_failure(st)) run_bad.push_back(e);
      if (st.status == Status::kXfail) run_xfail.push_back(e);
      if (st.status == Status::kXpass) run_xpass.push_back(e);
    }
  }
  Summary out;
  auto stale_mark = [](const std::vector<const Entry*>& es) {
    return all_stale(es) ? std::string(" **(stale)**") : std::string();
  };
  // Export half.
  if (!exp_ok.empty()) {
    size_t bundles = 0;
    bool probe = false;
    for (auto* e : exp_ok)
      if (is_probe(*e->r)) probe = true;
      else ++bundles;
    std::string what_ = bundles ? plural(bundles, "bundle") : "";
    if (probe) what_ += std::string(what_.empty() ? "" : " + ") + "probe";
    out.export_cell = "lowers (" + what_ + ", " + newest_date(exp_ok) + ")" + stale_mark(exp_ok);
    std::vector<const Entry*> other;
    for (auto* e : exp)
      if (!lowered(reading_of(*e->r))) other.push_back(e);
    if (!other.empty()) out.export_cell += "; also " + statuses_text(other, notes);
  } else if (!exp.empty()) {
    out.export_cell = statuses_text(exp, notes) + " (" + newest_date(exp) + ")" + stale_mark(exp);
  } else {
    out.export_cell = "—";
  }
  // Runtime half.
  if (!run_ok.empty()) {
    std::set<std::string> models;
    std::set<std::string> case_keys;  // model|recipe|precision|case: a case a matrix and a parity
    size_t cases = 0;                 // run both measured counts once
    bool probe = false;
    std::optional<double> sqnr, cosine;
    for (auto* e : run_ok) {
      const json& r = *e->r;
      if (is_probe(r)) probe = true;
      else models.insert(s(r, "model"));
      if (r.contains("numbers") && r["numbers"].is_object()) {
        const json& n = r["numbers"];
        if (!is_probe(r)) {
          const json ids = n.value("case_ids", json());
          if (ids.is_array()) {
            for (const auto& id : ids)
              if (id.is_string())
                case_keys.insert(s(r, "model") + "|" + s(r, "recipe") + "|" + s(r, "precision") +
                                 "|" + id.get<std::string>());
          } else {
            cases += count_of(n.value("cases", json())).value_or(0);
          }
        }
        lowest(sqnr, read_json_number(n.value("sqnr_db", json())));
        lowest(cosine, read_json_number(n.value("cosine", json())));
      }
    }
    cases += case_keys.size();
    std::string w;
    if (!models.empty()) w = plural(models.size(), "model") + ", " + plural(cases, "case");
    if (probe) w += std::string(w.empty() ? "" : " + ") + "probe";
    out.runtime_cell = "agreed: " + w;
    if (sqnr || cosine) {
      out.runtime_cell += "; worst";
      if (sqnr) out.runtime_cell += " SQNR " + sqnr_cell(*sqnr) + " dB";
      if (cosine) out.runtime_cell += std::string(sqnr ? "," : "") + " cosine " + detail::cosine_text(*cosine);
    }
    out.runtime_cell += " (" + newest_date(run_ok) + ")" + stale_mark(run_ok);
    std::map<std::string, size_t> others;
    for (auto* e : run) {
      if (ran_ok(reading_of(*e->r))) continue;
      const std::string st = s(*e->r, "status");
      size_t c = 0;
      if (e->r->contains("numbers") && (*e->r)["numbers"].is_object())
        c = count_of((*e->r)["numbers"].value("cases", json())).value_or(0);
      others[st] += c;
    }
    std::string also;
    for (const auto& [st, c] : others)
      also += (also.empty() ? "" : ", ") + st + (c ? " " + plural(c, "case") : "");
    if (!also.empty()) out.runtime_cell += "; also " + also;
  } else if (!run.empty()) {
    out.runtime_cell = statuses_text(run, notes) + " (" + newest_date(run) + ")" + stale_mark(run);
  } else {
    out.runtime_cell = "—";
  }
  // The claim: nothing is "works" on evidence weaker than a run.
  auto has = [&](const std::vector<const Entry*>& es, Other other) {
    for (auto* e : es)
      if (reading_of(*e->r).other == other) return true;
    return false;
  };
  // A run under emulation (machine.emulated, etproof/emulation.h) is evidence about the program
  // and the kernels, never about hardware: its agreement is a claim level of its own.
  const bool emulated = std::any_of(entries.begin(), entries.end(), [](const Entry* e) {
    const json m = e->r->value("machine", json::object());
    return m.is_object() && m.value("emulated", false) == true;
  });
  if (!run_ok.empty()) {
    out.claim = (emulated ? "agrees under emulation" : "**works**") + stale_mark(run_ok);
    if (!run_bad.empty()) out.claim += ", with failures";
  } else if (!run_undeleg.empty()) {
    out.claim = "runs undelegated" + stale_mark(run_undeleg);
  } else if (!run_bad.empty()) {
    // Inconclusive alone: it ran, but its references could not judge it (neither works nor fails).
    const bool only_inconclusive = std::all_of(run_bad.begin(), run_bad.end(), [](const Entry* e) {
      return reading_of(*e->r).status == Status::kInconclusive;
    });
    out.claim = (only_inconclusive ? "ran, not judged (inconclusive)" : "fails at run time") +
                stale_mark(run_bad);
  } else if (!run_xpass.empty()) {
    out.claim = "agreed against an expected failure (xpass: update the xfail record)" +
                stale_mark(run_xpass);
  } else if (!run_xfail.empty()) {
    out.claim = "known failure (xfail)" + stale_mark(run_xfail);
  } else if (!exp_ok.empty()) {
    out.claim = "lowers" + stale_mark(exp_ok);
    if (!run.empty()) {
      std::string st;
      for (auto* e : run) {
        const std::string x = s(*e->r, "status");
        if (st.find(x) == std::string::npos) st += (st.empty() ? "" : "/") + x;
      }
      out.claim += " (not run: " + st + ")";
    } else {
      out.claim += " (not run)";
    }
  } else if (!exp_undeleg.empty()) {
    out.claim = "lowers without a delegate" + stale_mark(exp_undeleg);
  } else if (has(exp, Other::kRemovedUpstream) || has(run, Other::kRemovedUpstream)) {
    out.claim = "removed upstream";
  } else if (!exp.empty() && !run.empty() && !has(run, Other::kAvailable)) {
    out.claim = "refused";
  } else if (!exp.empty()) {
    out.claim = "refused" + std::string(has(run, Other::kAvailable) ? " (runtime registered, unproven)" : "");
  } else if (!run.empty()) {
    out.claim = has(run, Other::kAvailable) ? "registered, unproven (nothing run)" : "not runnable here";
  } else {
    out.claim = "never run";
  }
  return out;
}

}  // namespace

std::optional<int64_t> day_number(const std::string& date) {
  if (date.size() < 10 || !detail::is_calendar_date(std::string_view(date).substr(0, 10))) return std::nullopt;
  int64_t y = std::stoi(date.substr(0, 4));
  const unsigned m = std::stoi(date.substr(5, 2)), d = std::stoi(date.substr(8, 2));
  // Howard Hinnant's days_from_civil.
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

json machine_kind(const json& machine) {
  json kind = json::object();
  if (!machine.is_object()) return kind;
  for (const auto& [k, v] : machine.items())
    if (k != "kernel" && k != "cores") kind[k] = v;
  return kind;
}

std::string machine_label(const json& machine) {
  const std::string hash = "m-" + detail::sha256_hex(machine_kind(machine).dump()).substr(0, 8);
  const auto name = machine.find("name");
  if (name == machine.end() || !name->is_string() || name->get<std::string>().empty()) return hash;
  std::string safe;  // Markdown- and HTML-inert: letters, digits, . _ - only, at most 40
  for (const char c : name->get<std::string>().substr(0, 40))
    safe += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-') ? c : '_';
  return safe + " " + hash;
}


namespace {
// "## Speed": the newest `etproof bench` record of each (backend, machine, model, recipe,
// precision, method), beside nothing it could be mistaken for; "" when the ledgers hold none.
std::string speed_section(const std::vector<json>& speed) {
  if (speed.empty()) return "";
  using Key = std::tuple<std::string, std::string, std::string, std::string, std::string, std::string>;
  std::map<Key, const json*> newest;
  for (const auto& r : speed) {
    const json perf = r.value("performance", json::object());
    if (!perf.is_object()) continue;
    const Key k{s(r, "backend"), machine_label(r.value("machine", json::object())), s(r, "model"), s(r, "recipe"),
                s(r, "precision"), s(perf, "method")};
    const json*& slot = newest[k];
    if (!slot || s(*slot, "time_utc") < s(r, "time_utc")) slot = &r;
  }
  std::ostringstream out;
  out << "## Speed\n\n";
  out << "The newest `etproof bench` record of each backend, machine, model, recipe, precision and "
         "method: one call on the model's golden input, in milliseconds (median and p90 of the timed "
         "calls), with ExecuTorch's thread-pool size, the first load and the peak memory the bundle "
         "added. Speed is no claim: a backend's claim above rests on its parity evidence alone.\n\n";
  out << "| backend | machine | model | recipe | precision | method | median ms | p90 ms | runs | threads | first load ms | peak MiB | run |\n";
  out << "| --- | --- | --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n";
  auto num = [](const json& j, const char* key) {
    const auto v = read_json_number(j.value(key, json()));
    return v ? detail::format_number(*v, 3) : std::string("—");
  };
  for (const auto& [k, r] : newest) {
    const json perf = r->value("performance", json::object());
    const json threads = perf.value("threads_used", json());
    out << "| `" << std::get<0>(k) << "` | " << std::get<1>(k) << " | " << md(std::get<2>(k)) << " | "
        << md(std::get<3>(k)) << " | " << md(std::get<4>(k)) << " | " << md(std::get<5>(k)) << " | "
        << num(perf, "median_ms") << " | " << num(perf, "p90_ms") << " | " << num(perf, "runs") << " | "
        << (threads.is_number_integer() ? threads.dump() : "—") << " | " << num(perf, "first_load_ms") << " | "
        << num(perf, "peak_rss_mb") << " | " << date_of(*r) << " @" << md(s(*r, "etproof_commit")) << " |\n";
  }
  out << "\n";
  return out.str();
}
}  // namespace

std::string render_coverage(const std::vector<json>& all_records, const CoverageOptions& o) {
  // Performance records (`etproof bench`) are no claim: they go to the Speed section alone.
  std::vector<json> records, speed;
  for (const auto& r : all_records) (s(r, "kind") == "bench" ? speed : records).push_back(r);
  // As of: the newest record's date unless given.
  std::string newest, oldest;
  for (const auto& r : all_records) {
    const std::string t = s(r, "time_utc");
    newest = std::max(newest, t);
    if (oldest.empty() || t < oldest) oldest = t;
  }
  std::string as_of = o.as_of.value_or(newest.substr(0, 10));
  std::optional<int64_t> as_of_day = day_number(as_of);
  if (o.as_of && !as_of_day)
    throw Error(ErrorKind::kInvalidArgument, "--as-of \"" + *o.as_of + "\" is not a date",
                "pass YYYY-MM-DD");
  as_of = as_of.substr(0, 10);
  const std::string cur_et = s(o.toolchain, "executorch");
  const std::string cur_ep = s(o.toolchain, "etproof");

  auto stale_why = [&](const json& r) -> std::string {
    std::vector<std::string> why;
    if (as_of_day) {
      if (auto d = day_number(s(r, "time_utc")); d && *as_of_day - *d > o.max_age_days)
        why.push_back(std::to_string(*as_of_day - *d) + " days old");
    }
    const json tc = r.value("toolchain", json::object());
    if (!cur_et.empty() && !s(tc, "executorch").empty() && s(tc, "executorch") != cur_et)
      why.push_back("executorch " + s(tc, "executorch") + " (now " + cur_et + ")");
    if (!cur_ep.empty() && !s(tc, "etproof").empty() && s(tc, "etproof") != cur_ep)
      why.push_back("etproof " + s(tc, "etproof") + " (now " + cur_ep + ")");
    const json btc = r.value("bundle_toolchain", json::object());
    if (!cur_et.empty() && !s(btc, "executorch").empty() && s(btc, "executorch") != cur_et)
      why.push_back("bundle exported with executorch " + s(btc, "executorch"));
    return detail::join(why);
  };

  // Machine kinds (machine_kind), each with the hosts of that kind that recorded runs.
  std::map<std::string, json> machines;
  std::map<std::string, std::set<std::string>> machine_hosts, machine_kernels;
  std::map<std::string, std::pair<std::string, std::string>> machine_span;
  std::map<std::string, size_t> machine_records;
  for (const auto& r : all_records) {
    const json& host = r.value("machine", json::object());
    const std::string m = machine_label(host);
    machines[m] = machine_kind(host);
    machine_hosts[m].insert(host.dump());
    if (!s(host, "kernel").empty()) machine_kernels[m].insert(s(host, "kernel"));
    auto& span = machine_span[m];
    const std::string d = date_of(r);
    if (span.first.empty() || d < span.first) span.first = d;
    span.second = std::max(span.second, d);
    ++machine_records[m];
  }

  // Newest evidence per subject: (machine, backend, half, what).
  std::map<std::string, std::vector<const json*>> subjects;
  for (const auto& r : records) {
    const std::string src = is_probe(r) ? "probe" : "bundle|" + s(r, "model") + "|" +
                                                        s(r, "recipe") + "|" + s(r, "precision");
    const std::string key = machine_label(r.value("machine", json::object())) + "\x1f" +
                            s(r, "backend") + "\x1f" + s(r, "half") + "\x1f" + src;
    subjects[key].push_back(&r);
  }
  // backend -> machine -> entries
  std::map<std::string, std::map<std::string, std::vector<Entry>>> latest;
  for (auto& [key, rs] : subjects) {
    std::string t;
    for (auto* r : rs) t = std::max(t, s(*r, "time_utc"));
    for (auto* r : rs)
      if (s(*r, "time_utc") == t)
        latest[s(*r, "backend")][machine_label(r->value("machine", json::object()))].push_back(
            {r, stale_why(*r)});
  }
  for (auto& [b, per_machine] : latest)
    for (auto& [m, es] : per_machine)
      std::stable_sort(es.begin(), es.end(), [](const Entry& x, const Entry& y) {
        auto k = [](const Entry& e) {
          const json& r = *e.r;
          return std::tuple(s(r, "half") == "export" ? 0 : 1, is_probe(r) ? 0 : 1, s(r, "model"),
                            s(r, "recipe"), s(r, "precision"), s(r, "status"), s(r, "id"));
        };
        return k(x) < k(y);
      });

  // Backend order: the table's keys, then keys only the ledger has.
  std::vector<std::pair<std::string, std::string>> keys;  // key, name
  std::set<std::string> known;
  for (const auto& e : backend_table().backends) {
    keys.emplace_back(e.key, e.name);
    known.insert(e.key);
  }
  for (const auto& [b, _] : latest)
    if (!known.count(b)) keys.emplace_back(b, "not in this binary's backend table");

  std::ostringstream out;
  out << "# Backend coverage\n\n";
  out << "<!-- Generated by `etproof coverage` from the evidence ledger; do not edit by hand. -->\n\n";
  out << "What each backend has been shown to do, rendered from the evidence ledger alone";
  if (!o.sources.empty()) {
    out << " (";
    for (size_t i = 0; i < o.sources.size(); ++i) out << (i ? ", " : "") << "`" << o.sources[i] << "`";
    out << ")";
  }
  out << ": " << plural(all_records.size(), "record") << " from " << plural(machines.size(), "machine kind");
  if (!all_records.empty()) out << ", " << oldest.substr(0, 10) << " to " << newest.substr(0, 10);
  out << ". Every claim names the run behind it (date, machine, etproof commit). Regenerate with `"
      << (o.regenerate.empty() ? std::string("etproof coverage") : o.regenerate) << "`.\n\n";
  out << "- **works**: a run through the backend agreed with the float32 reference within its "
         "bound (a matrix or parity column, or the `etproof backends` one-operation probe).\n";
  out << "- **agrees under emulation**: a run agreed, but on an emulated CPU (`matrix --emulate`: "
         "the program and the target's kernels under QEMU); evidence about the program, never about "
         "hardware, so never **works**.\n";
  out << "- **lowers**: only the export half passed (a bundle was written, or the one-operation "
         "probe lowered to the delegate); nothing ran it, so it is not claimed to work.\n";
  out << "- **stale**: the newest evidence is more than " << o.max_age_days << " days older than "
      << (as_of.empty() ? std::string("the newest record") : as_of)
      << (o.as_of || as_of.empty() ? "" : " (the newest record)")
      << ", or was recorded by a toolchain other than this binary's (etproof "
      << (cur_ep.empty() ? "?" : cur_ep) << ", executorch " << (cur_et.empty() ? "?" : cur_et)
      << ").\n\n";

  out << "## Machines\n\n";
  if (machines.empty()) out << "No records yet.\n\n";
  else {
    out << "A machine is its kind: OS, CPU, architecture and the ISA features that select kernels "
           "(`machine` in the ledger without its kernel build and core count); hosts of one kind "
           "are one row. Features are those `etproof` records (AVX-512 and its BF16/FP16/VNNI "
           "extensions, AMX; Arm dot product, i8mm, SVE, SME); \"not recorded\": runs from before "
           "it recorded them, a kind of their own.\n\n";
    out << "| machine | OS | CPU | arch | ISA features | hosts | kernels | records | dates |\n";
    out << "| --- | --- | --- | --- | --- | ---: | --- | ---: | --- |\n";
    for (const auto& [label, m] : machines) {
      const auto& span = machine_span[label];
      std::string features = "not recorded";
      if (m.contains("features") && m["features"].is_array()) {
        std::vector<std::string> f;
        for (const auto& e : m["features"])
          if (e.is_string()) f.push_back(e.get<std::string>());
        features = f.empty() ? std::string("none of them") : detail::join(f, " ");
      }
      std::string cpu = s(m, "cpu");
      if (m.value("emulated", false) == true)  // an emulated machine names its emulator and host
        cpu += " (emulated by " + s(m, "emulator") + " on " +
               s(m.value("host", json::object()), "cpu") + ")";
      out << "| " << label << " | " << md(s(m, "os")) << " | " << md(cpu) << " | "
          << md(s(m, "arch")) << " | " << md(features) << " | " << machine_hosts[label].size()
          << " | "
          << md(detail::join(std::vector<std::string>(machine_kernels[label].begin(),
                                                      machine_kernels[label].end()),
                             ", "))
          << " | " << machine_records[label] << " | " << span.first
          << (span.first == span.second ? "" : " to " + span.second) << " |\n";
    }
    out << "\n";
  }

  out << "## Summary\n\n";
  out << "One row per backend, recipe and machine: a recipe's numbers are never mixed with another's "
         "(an int8 recipe's SQNR is not the fp32 one's), nor a precision's (\"fp32 in bfloat16\": "
         "the delegate computed the fp32 program in bfloat16 on that machine). \"probe\" is "
         "`etproof backends`' one-operation program. Each reason is written once, in full, under "
         "the table.\n\n";
  out << "| backend | recipe | machine | claim | export half | runtime half |\n";
  out << "| --- | --- | --- | --- | --- | --- |\n";
  Notes notes;
  for (const auto& [key, name] : keys) {
    auto it = latest.find(key);
    if (it == latest.end()) {
      out << "| `" << key << "` " << md(name) << " | — | — | never run | — | — |\n";
      continue;
    }
    // recipe (and the precision it computed in, where that is not the recipe's own: OpenVINO's
    // fp32 in bfloat16 on a CPU with native bfloat16 is a row of its own) -> machine -> entries;
    // the probe (no recipe) last.
    std::map<std::pair<bool, std::string>, std::map<std::string, std::vector<const Entry*>>> by_recipe;
    for (const auto& [label, es] : it->second)
      for (const Entry& e : es) {
        std::string recipe = s(*e.r, "recipe");
        const bool probe = is_probe(*e.r) || recipe.empty();
        const std::string precision = s(*e.r, "precision");
        const std::string own = recipe == "fp16" ? "float16" : "float32";
        if (!probe && !precision.empty() && precision != own) recipe += " in " + precision;
        by_recipe[{probe, probe ? std::string("probe") : recipe}][label].push_back(&e);
      }
    for (const auto& [recipe, per_machine] : by_recipe)
      for (const auto& [label, es] : per_machine) {
        const Summary sm = summarize(es, notes);
        out << "| `" << key << "` " << md(name) << " | " << md(recipe.second) << " | " << label
            << " | " << md(sm.claim) << " | " << md(sm.export_cell) << " | " << md(sm.runtime_cell)
            << " |\n";
      }
  }
  out << "\n";
  if (!notes.texts.empty()) {
    out << "Notes:\n\n";
    for (size_t i = 0; i < notes.texts.size(); ++i)
      out << i + 1 << ". " << md(notes.texts[i]) << "\n";
    out << "\n";
  }

  out << "## Evidence per backend\n\n";
  out << "The newest record of each subject (one-operation probe, or model × recipe × precision), "
         "per machine and half. Refusals and expected failures keep their reasons.\n\n";
  for (const auto& [key, name] : keys) {
    out << "### `" << key << "` — " << name << "\n\n";
    auto it = latest.find(key);
    if (it == latest.end()) {
      out << "Never run: no record in the ledger.\n\n";
      continue;
    }
    out << "| machine | half | evidence | status | numbers | run | reason / note |\n";
    out << "| --- | --- | --- | --- | --- | --- | --- |\n";
    for (const auto& [label, es] : it->second)
      for (const auto& e : es) {
        const json& r = *e.r;
        std::string note = s(r, "reason");
        if (note.empty()) note = s(r, "detail");
        std::string st = s(r, "status");
        if (!e.stale.empty()) {
          st += " **(stale)**";
          note = "stale: " + e.stale + (note.empty() ? "" : ". " + note);
        }
        std::string ids;
        if (r.contains("backend_ids") && r["backend_ids"].is_array() && r["half"] == "runtime" &&
            !r["backend_ids"].empty()) {
          for (const auto& i : r["backend_ids"])
            if (i.is_string()) ids += (ids.empty() ? "" : ", ") + i.get<std::string>();
          if (!ids.empty()) ids = " on " + ids;
        }
        out << "| " << label << " | " << s(r, "half") << " | " << md(what(r) + ids) << " | "
            << md(st) << " | " << md(numbers_text(r)) << " | " << date_of(r) << " "
            << s(r, "kind") << " @" << md(s(r, "etproof_commit")) << " | " << md(clip(note, 600))
            << " |\n";
      }
    out << "\n";
  }
  out << speed_section(speed);
  return out.str();
}

}  // namespace etproof
