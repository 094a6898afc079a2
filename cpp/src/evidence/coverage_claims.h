// cpp/src/evidence/coverage_claims.h — private to the library: what the coverage page
// (coverage.cpp) and its claims (coverage_claims.cpp) share: a ledger record's fields read as
// text, the newest evidence of one subject (Entry), the numbered notes under the summary table,
// and one summary row's cells (summarize).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/common.h"

namespace etproof::coverage_detail {

// j[key] when j is an object holding a string there; "" otherwise.
inline std::string s(const nlohmann::json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_string()) return "";
  return j[key].get<std::string>();
}

// A count (a non-negative integer), or nullopt.
inline std::optional<size_t> count_of(const nlohmann::json& j) {
  if (!j.is_number_integer() || (j.is_number_integer() && !j.is_number_unsigned() && j.get<int64_t>() < 0))
    return std::nullopt;
  return j.get<size_t>();
}

// An SQNR on the page: three significant digits ("143", "21.7"; "inf" when identical), compact
// for a table cell; the reports' one-decimal form is detail::sqnr_text.
inline std::string sqnr_cell(double v) { return detail::format_number(v, 3); }

// A record's date, "YYYY-MM-DD" (the first ten characters of its time_utc).
inline std::string date_of(const nlohmann::json& r) { return s(r, "time_utc").substr(0, 10); }

// "1 case", "3 cases".
inline std::string plural(size_t n, const std::string& word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

// Whether a record is the one-operation probe's (`etproof backends`, kind "backends").
inline bool is_probe(const nlohmann::json& r) { return s(r, "kind") == "backends"; }

// The newest record of one subject on one machine; `r` points into the caller's records.
struct Entry {
  const nlohmann::json* r = nullptr;
  std::string stale;  // why stale; empty: fresh
};

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

// Cells of the summary for one backend on one machine.
struct Summary {
  std::string claim, export_cell, runtime_cell;
};

// One summary row from the entries of one backend, recipe and machine (both halves); reasons
// cited in the cells are numbered in `notes`. The claims are etproof/evidence/coverage.h's.
Summary summarize(const std::vector<const Entry*>& entries, Notes& notes);

}  // namespace etproof::coverage_detail
