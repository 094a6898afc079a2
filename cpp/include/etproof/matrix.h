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
  kBundleInvalid,      // manifest invalid or artifact/manifest mismatch
};
std::string_view to_string(CellStatus s);  // "agreed", "agreed-undelegated", "drifted", …

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
  std::string reason;
};

struct Matrix {
  std::vector<Column> columns;
  std::vector<std::string> cases;      // row order: first appearance across columns
  std::vector<Cell> cells;
  std::vector<NotRun> not_run;
  size_t measured = 0;                 // cells that ran and were gated
  // Exit status: 0 when at least one cell was measured and none drifted; 1 otherwise.
  int exit_code() const;
};

// Builds the matrix over every bundle under `dir` (find_bundles). If `dir/export-report.json`
// exists (written by the export half: {"results": [{"backend","recipe","status":
// "exported"|"export-refused"|"export-failed","stage"?, "reason"?}]}), its refused/failed entries
// become not_run columns. Errors in one column never stop the others.
Matrix build_matrix(const std::filesystem::path& dir);

std::string to_text(const Matrix& m);
std::string to_markdown(const Matrix& m);
nlohmann::json to_json(const Matrix& m);

}  // namespace etproof
