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
#include "core/common.h"
#include "core/json_parse.h"
#include "evidence/coverage_claims.h"

using nlohmann::json;

namespace etproof {
namespace {

using coverage_detail::count_of;
using coverage_detail::date_of;
using coverage_detail::Entry;
using coverage_detail::is_probe;
using coverage_detail::Notes;
using coverage_detail::plural;
using coverage_detail::s;
using coverage_detail::sqnr_cell;
using detail::read_json_number;

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

std::string fmt(double v, int prec) { return detail::format_number(v, prec); }

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
  // What those numbers were measured against where it is not the golden (an emulation, float64
  // truth), and what the recipe cost (its emulation against the golden, question 2).
  const std::string against = n.value("against", std::string());
  if (!against.empty() && against != "golden")
    parts.push_back(against == "float64" ? std::string("against float64 truth")
                                         : "against its " + against + " emulation");
  if (auto v = read_json_number(n.value("cost_sqnr_db", json())))
    parts.push_back("recipe cost SQNR " + sqnr_cell(*v) + " dB");
  return detail::join(parts);
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

// What a record is judged stale against: the page's "as of" day and this binary's toolchain.
struct Staleness {
  std::optional<int64_t> as_of_day;  // day_number of the page's as-of date; nullopt: no age check
  int max_age_days = 90;
  std::string executorch, etproof;   // this binary's versions; "": not compared
};

// Why a record is stale, its reasons joined ("N days old, executorch X (now Y), …"); "": fresh.
std::string stale_why(const json& r, const Staleness& now) {
  std::vector<std::string> why;
  if (now.as_of_day) {
    if (auto d = day_number(s(r, "time_utc")); d && *now.as_of_day - *d > now.max_age_days)
      why.push_back(std::to_string(*now.as_of_day - *d) + " days old");
  }
  const std::string& cur_et = now.executorch;
  const std::string& cur_ep = now.etproof;
  const json tc = r.value("toolchain", json::object());
  if (!cur_et.empty() && !s(tc, "executorch").empty() && s(tc, "executorch") != cur_et)
    why.push_back("executorch " + s(tc, "executorch") + " (now " + cur_et + ")");
  if (!cur_ep.empty() && !s(tc, "etproof").empty() && s(tc, "etproof") != cur_ep)
    why.push_back("etproof " + s(tc, "etproof") + " (now " + cur_ep + ")");
  const json btc = r.value("bundle_toolchain", json::object());
  if (!cur_et.empty() && !s(btc, "executorch").empty() && s(btc, "executorch") != cur_et)
    why.push_back("bundle exported with executorch " + s(btc, "executorch"));
  return detail::join(why);
}

// When the page stands: the records' span and the date it is "as of".
struct Dating {
  std::string oldest, newest;  // the records' smallest and largest time_utc ("" without records)
  std::string as_of;           // YYYY-MM-DD: o.as_of, else the newest record's date
  Staleness now;
};

// The page's dating from every record (bench records too) and the options. Throws
// Error{kInvalidArgument} when o.as_of is not a date.
Dating date_page(const std::vector<json>& all_records, const CoverageOptions& o) {
  Dating d;
  for (const auto& r : all_records) {
    const std::string t = s(r, "time_utc");
    d.newest = std::max(d.newest, t);
    if (d.oldest.empty() || t < d.oldest) d.oldest = t;
  }
  d.as_of = o.as_of.value_or(d.newest.substr(0, 10));
  d.now.as_of_day = day_number(d.as_of);
  if (o.as_of && !d.now.as_of_day)
    throw Error(ErrorKind::kInvalidArgument, "--as-of \"" + *o.as_of + "\" is not a date",
                "pass YYYY-MM-DD");
  d.as_of = d.as_of.substr(0, 10);
  d.now.max_age_days = o.max_age_days;
  d.now.executorch = s(o.toolchain, "executorch");
  d.now.etproof = s(o.toolchain, "etproof");
  return d;
}

// One machine kind (machine_kind) and the hosts of that kind that recorded runs.
struct MachineTally {
  json kind;                      // machine_kind of the last record of this kind
  std::set<std::string> hosts;    // each host's `machine`, as JSON text
  std::set<std::string> kernels;  // the hosts' kernel builds
  std::string first, last;        // the oldest and newest record's date
  size_t records = 0;
};

// Every record's machine, by label (machine_label).
std::map<std::string, MachineTally> tally_machines(const std::vector<json>& all_records) {
  std::map<std::string, MachineTally> machines;
  for (const auto& r : all_records) {
    const json& host = r.value("machine", json::object());
    MachineTally& m = machines[machine_label(host)];
    m.kind = machine_kind(host);
    m.hosts.insert(host.dump());
    if (!s(host, "kernel").empty()) m.kernels.insert(s(host, "kernel"));
    const std::string d = date_of(r);
    if (m.first.empty() || d < m.first) m.first = d;
    m.last = std::max(m.last, d);
    ++m.records;
  }
  return machines;
}

// backend key -> machine label -> the newest entry of each subject there, in the page's order.
using Latest = std::map<std::string, std::map<std::string, std::vector<Entry>>>;

// The newest evidence per subject — (machine, backend, half, what: the probe, or the bundle's
// model, recipe and precision) — every record at the newest time_utc kept; each entry with why it
// is stale. Entries point into `records`, which must outlive the result.
Latest latest_entries(const std::vector<json>& records, const Staleness& now) {
  std::map<std::string, std::vector<const json*>> subjects;
  for (const auto& r : records) {
    const std::string src = is_probe(r) ? "probe" : "bundle|" + s(r, "model") + "|" +
                                                        s(r, "recipe") + "|" + s(r, "precision");
    const std::string key = machine_label(r.value("machine", json::object())) + "\x1f" +
                            s(r, "backend") + "\x1f" + s(r, "half") + "\x1f" + src;
    subjects[key].push_back(&r);
  }
  Latest latest;
  for (auto& [key, rs] : subjects) {
    std::string t;
    for (auto* r : rs) t = std::max(t, s(*r, "time_utc"));
    for (auto* r : rs)
      if (s(*r, "time_utc") == t)
        latest[s(*r, "backend")][machine_label(r->value("machine", json::object()))].push_back(
            {r, stale_why(*r, now)});
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
  return latest;
}

// The backends the page lists, (key, name): the table's keys in its order, then keys only the
// ledger has.
std::vector<std::pair<std::string, std::string>> backend_rows(const Latest& latest) {
  std::vector<std::pair<std::string, std::string>> keys;
  std::set<std::string> known;
  for (const auto& e : backend_table().backends) {
    keys.emplace_back(e.key, e.name);
    known.insert(e.key);
  }
  for (const auto& [b, _] : latest)
    if (!known.count(b)) keys.emplace_back(b, "not in this binary's backend table");
  return keys;
}

// The title, the sources, the records' span and the legend of the claims.
std::string intro_section(size_t records, size_t machine_kinds, const Dating& d, const CoverageOptions& o) {
  const std::string& cur_et = d.now.executorch;
  const std::string& cur_ep = d.now.etproof;
  std::ostringstream out;
  out << "# Backend coverage\n\n";
  out << "<!-- Generated by `etproof coverage` from the evidence ledger; do not edit by hand. -->\n\n";
  out << "What each backend has been shown to do, rendered from the evidence ledger alone";
  if (!o.sources.empty()) {
    out << " (";
    for (size_t i = 0; i < o.sources.size(); ++i) out << (i ? ", " : "") << "`" << o.sources[i] << "`";
    out << ")";
  }
  out << ": " << plural(records, "record") << " from " << plural(machine_kinds, "machine kind");
  if (records) out << ", " << d.oldest.substr(0, 10) << " to " << d.newest.substr(0, 10);
  out << ". Every claim names the run behind it (date, machine, etproof commit). Regenerate with `"
      << (o.regenerate.empty() ? std::string("etproof coverage") : o.regenerate) << "`.\n\n";
  out << "- **works**: a run through the backend agreed with its reference within its bound (a "
         "matrix or parity column, or the `etproof backends` one-operation probe). The row says "
         "which reference (the float32 golden, float64 truth, or the recipe's own emulation: "
         "a quantized program is judged against what its recipe computes, and where that admits "
         "no bound stricter than the golden row's, against the golden), the bound's loosest "
         "floors, and what the recipe cost (its emulation against the golden).\n";
  out << "- **agrees under emulation**: a run agreed, but on an emulated CPU (`matrix --emulate`: "
         "the program and the target's kernels under QEMU); evidence about the program, never about "
         "hardware, so never **works**.\n";
  out << "- **lowers**: only the export half passed (a bundle was written, or the one-operation "
         "probe lowered to the delegate); nothing ran it, so it is not claimed to work.\n";
  out << "- **stale**: the newest evidence is more than " << o.max_age_days << " days older than "
      << (d.as_of.empty() ? std::string("the newest record") : d.as_of)
      << (o.as_of || d.as_of.empty() ? "" : " (the newest record)")
      << ", or was recorded by a toolchain other than this binary's (etproof "
      << (cur_ep.empty() ? "?" : cur_ep) << ", executorch " << (cur_et.empty() ? "?" : cur_et)
      << ").\n\n";
  return out.str();
}

// "## Machines": one row per machine kind, its ISA features, hosts, kernels, records and dates.
std::string machines_section(const std::map<std::string, MachineTally>& machines) {
  std::ostringstream out;
  out << "## Machines\n\n";
  if (machines.empty()) {
    out << "No records yet.\n\n";
    return out.str();
  }
  out << "A machine is its kind: OS, CPU, architecture and the ISA features that select kernels "
         "(`machine` in the ledger without its kernel build and core count); hosts of one kind "
         "are one row. Features are those `etproof` records (AVX-512 and its BF16/FP16/VNNI "
         "extensions, AMX; Arm dot product, i8mm, SVE, SME); \"not recorded\": runs from before "
         "it recorded them, a kind of their own.\n\n";
  out << "| machine | OS | CPU | arch | ISA features | hosts | kernels | records | dates |\n";
  out << "| --- | --- | --- | --- | --- | ---: | --- | ---: | --- |\n";
  for (const auto& [label, tally] : machines) {
    const json& m = tally.kind;
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
        << md(s(m, "arch")) << " | " << md(features) << " | " << tally.hosts.size()
        << " | "
        << md(detail::join(std::vector<std::string>(tally.kernels.begin(), tally.kernels.end()), ", "))
        << " | " << tally.records << " | " << tally.first
        << (tally.first == tally.last ? "" : " to " + tally.last) << " |\n";
  }
  out << "\n";
  return out.str();
}

// One backend's entries as summary rows: (probe?, recipe) -> machine -> entries. A recipe is
// suffixed with the precision it computed in where that is not the recipe's own (OpenVINO's fp32
// in bfloat16 on a CPU with native bfloat16 is a row of its own); the probe (no recipe) sorts last.
std::map<std::pair<bool, std::string>, std::map<std::string, std::vector<const Entry*>>> rows_by_recipe(
    const std::map<std::string, std::vector<Entry>>& per_machine) {
  std::map<std::pair<bool, std::string>, std::map<std::string, std::vector<const Entry*>>> by_recipe;
  for (const auto& [label, es] : per_machine)
    for (const Entry& e : es) {
      std::string recipe = s(*e.r, "recipe");
      const bool probe = is_probe(*e.r) || recipe.empty();
      const std::string precision = s(*e.r, "precision");
      const std::string own = recipe == "fp16" ? "float16" : "float32";
      if (!probe && !precision.empty() && precision != own) recipe += " in " + precision;
      by_recipe[{probe, probe ? std::string("probe") : recipe}][label].push_back(&e);
    }
  return by_recipe;
}

// "## Summary": one row per backend, recipe and machine (coverage_detail::summarize), a backend
// without evidence "never run"; the notes the cells cite, numbered, under the table.
std::string summary_section(const std::vector<std::pair<std::string, std::string>>& keys, const Latest& latest) {
  std::ostringstream out;
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
    for (const auto& [recipe, per_machine] : rows_by_recipe(it->second))
      for (const auto& [label, es] : per_machine) {
        const coverage_detail::Summary sm = coverage_detail::summarize(es, notes);
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
  return out.str();
}

// One row of a backend's evidence table: the machine, half, what, status (stale marked), numbers,
// the run (date, kind, commit) and the reason or detail (its first 600 bytes).
std::string evidence_row(const std::string& label, const Entry& e) {
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
  std::ostringstream out;
  out << "| " << label << " | " << s(r, "half") << " | " << md(what(r) + ids) << " | "
      << md(st) << " | " << md(numbers_text(r)) << " | " << date_of(r) << " "
      << s(r, "kind") << " @" << md(s(r, "etproof_commit")) << " | " << md(clip(note, 600))
      << " |\n";
  return out.str();
}

// "## Evidence per backend": per backend, the newest record of each subject, machine and half.
std::string evidence_section(const std::vector<std::pair<std::string, std::string>>& keys, const Latest& latest) {
  std::ostringstream out;
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
      for (const auto& e : es) out << evidence_row(label, e);
    out << "\n";
  }
  return out.str();
}

}  // namespace

std::string render_coverage(const std::vector<json>& all_records, const CoverageOptions& o) {
  // Performance records (`etproof bench`) are no claim: they go to the Speed section alone.
  std::vector<json> records, speed;
  for (const auto& r : all_records) (s(r, "kind") == "bench" ? speed : records).push_back(r);
  const Dating dating = date_page(all_records, o);
  const std::map<std::string, MachineTally> machines = tally_machines(all_records);
  const Latest latest = latest_entries(records, dating.now);
  const auto keys = backend_rows(latest);
  return intro_section(all_records.size(), machines.size(), dating, o) + machines_section(machines) +
         summary_section(keys, latest) + evidence_section(keys, latest) + speed_section(speed);
}

}  // namespace etproof
