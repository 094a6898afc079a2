// etproof/matrix.h — golden cases × (backend, recipe) columns, every cell with a status
// (DESIGN.md §6). Columns that could not run are listed with the reason, never left out.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "etproof/gate.h"

namespace etproof {

enum class CellStatus {
  kAgreed,             // ran on the named delegate (or is a portable column), within its bound
  kAgreedUndelegated,  // a delegate backend was requested, no delegate in the program, agreed
  kDrifted,            // ran, outside its bound
  kExportRefused,      // the export half refused (toolchain missing)
  kExportFailed,       // quantize / lower / serialize failed
  kNotLinked,          // this binary has no runtime for the delegate
  kUnavailable,        // registered but not available on this machine
  kLoadFailed,         // ExecuTorch refused to load (code kept)
  kRunFailed,          // ExecuTorch failed to run (code kept)
  kBundleInvalid,      // manifest invalid, artifact/manifest mismatch, goldens unreadable
  kNoBound,            // ran, but no bound is known for this recipe/precision; pass one (the
                       // measured numbers are still shown)
};
std::string_view to_string(CellStatus s);  // "agreed", "agreed-undelegated", "drifted", …

// Whether a cell or not-run column with this status fails the matrix run. Fails: drifted, and
// every column that was found but could not be judged — bundle-invalid, load-failed, run-failed,
// export-failed, no-bound (failures of the claim). Does not fail: agreed, agreed-undelegated, and
// the absent capabilities — not-linked, unavailable, export-refused (listed with their reasons).
bool fails_run(CellStatus s);

struct Column {
  std::string bundle;                  // bundle name ("" for export-only columns)
  std::string backend;
  std::string recipe;
  std::string precision;
  std::vector<std::string> delegates;  // from the program
  std::optional<Bound> bound;
};

struct Cell {
  std::string case_id;
  size_t column = 0;                   // index into Matrix::columns
  CellStatus status = CellStatus::kAgreed;
  std::optional<double> max_abs_error;
  std::optional<double> cosine;
  std::optional<double> sqnr_db;
  std::optional<double> headroom;
  std::string detail;                  // reason / failing rule / error text
};

struct NotRun {
  std::string backend;
  std::string recipe;
  CellStatus status;
  std::string reason;                  // never empty: why it was not measured
};

struct Matrix {
  std::vector<Column> columns;
  std::vector<std::string> cases;      // row order: first appearance across columns
  std::vector<Cell> cells;
  // Every column, or part of one, that was not measured, with its status and reason: columns
  // that could not run at all, cases of a column that could not be gated, and the export half's
  // refusals and failures.
  std::vector<NotRun> not_run;
  size_t measured = 0;                 // cells that ran and were gated
  std::string caller_bound;            // the caller's bound flags; empty: each column's derived
  // Exit status: 1 when nothing was measured, when any cell drifted, or when any cell or not-run
  // column has a status that fails_run (bundle-invalid, load-failed, run-failed, export-failed,
  // no-bound); 0 otherwise. not-linked, unavailable and export-refused columns are listed with
  // their reasons but do not fail the run: they are absent capabilities, not failed claims.
  int exit_code() const;
};

// Builds the matrix over every bundle under `dir` (find_bundles). If `dir/export-report.json`
// exists (written by the export half: {"results": [{"backend","recipe","status":
// "exported"|"export-refused"|"export-failed","stage"?, "reason"?}]}), its refused/failed entries
// become not_run columns. Errors in one column never stop the others. A non-empty `caller`
// replaces those fields of every column's derived bound (override_bound); the columns' bounds
// then say caller_supplied.
Matrix build_matrix(const std::filesystem::path& dir, const BoundOverride& caller = {});

std::string to_text(const Matrix& m);
std::string to_markdown(const Matrix& m);
nlohmann::json to_json(const Matrix& m);

}  // namespace etproof
