// etproof/core/xfail.h — expected failures (DIR/xfail.json, docs/xfail.md): reading the records and
// matching them, in one place, to the columns and golden cases they are about. The replay engine
// (etproof/replay.h) applies runtime records to cases; the matrix applies export records to the
// export half's report and reports what each record met.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace etproof {

// One record of DIR/xfail.json (docs/xfail.md): a failure that is known and expected.
struct XfailRecord {
  std::string model;     // NAME in the bundle names NAME-BACKEND-RECIPE (the manifest's `model`
                         // also matches a column)
  std::string backend;   // export key
  std::string recipe;
  std::string half;      // "export" (matches export-report.json entries) | "runtime" (columns)
  std::string reason;    // why it fails, with the measurement behind it
  std::string recorded;  // YYYY-MM-DD
  // Runtime half only: the golden cases expected to fail; empty (field absent): every case of
  // the column. Cases not listed are judged as usual.
  std::vector<std::string> cases;
};

// Reads an expected-failure file. Throws Error{kXfailInvalid} naming the file and every field
// that does not follow docs/xfail.md at once ("records[0].half: …"), or saying it is not JSON
// (nlohmann's message: also a number out of double's range) or nests more than 64 levels deep;
// Error{kIo} if unreadable.
std::vector<XfailRecord> read_xfail(const std::filesystem::path& file);

// What one record met in this run.
enum class XfailResult {
  kXfail,         // everything it matched failed, as recorded (does not fail the run)
  kXpass,         // something it matched passed: fails the run until the record is updated
  kNotExercised,  // it matched, but nothing it matched was judged (not-linked, export-refused, …)
  kStale,         // it matched no column and no export-report entry (listed; does not fail)
};
std::string_view to_string(XfailResult r);  // "xfail", "xpass", "not-exercised", "stale"

struct XfailOutcome {
  XfailRecord record;
  XfailResult result = XfailResult::kStale;
  std::string detail;  // what it matched and how (cases, statuses), or why it is stale
};

// NAME of a bundle named NAME-BACKEND-RECIPE; nullopt when the name has another form.
std::optional<std::string> model_of_bundle(const std::string& bundle, const std::string& backend,
                                           const std::string& recipe);

// Whether record `r` is about the column (model, bundle name, backend, recipe): same backend and
// recipe, and its model is the manifest's `model` or the NAME of a bundle named
// NAME-BACKEND-RECIPE. Either half.
bool xfail_matches_column(const XfailRecord& r, const std::string& model, const std::string& bundle,
                          const std::string& backend, const std::string& recipe);

// Whether a runtime record covers golden case `case_id` of a column it matches: it names no
// cases (every case), or names this one.
bool xfail_covers_case(const XfailRecord& r, const std::string& case_id);

// The runtime record (half "runtime") of `records` that covers case `case_id` of the column, or
// nullptr. read_xfail refuses two records for the same column, so at most one matches.
const XfailRecord* find_runtime_xfail(const std::vector<XfailRecord>& records,
                                      const std::string& model, const std::string& bundle,
                                      const std::string& backend, const std::string& recipe,
                                      const std::string& case_id);

// "MODEL BACKEND/RECIPE (HALF half, cases a, b)".
std::string record_label(const XfailRecord& r);

}  // namespace etproof
