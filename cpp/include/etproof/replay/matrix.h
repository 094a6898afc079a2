// etproof/replay/matrix.h — golden cases × (backend, recipe) columns, every cell with a status
// (docs/design.md §6). Columns that could not run are listed with the reason, never left out.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "etproof/replay/bench.h"
#include "etproof/replay/replay.h"
#include "etproof/gate/gate.h"
#include "etproof/runtime/isolation.h"
#include "etproof/core/status.h"
#include "etproof/core/xfail.h"

namespace etproof {

// A cell's status is the one status vocabulary (etproof/status.h: to_string, fails_run).
using CellStatus = Status;

struct Column;
// Whether expected-failure record `r` names column `c` (xfail_matches_column on its identity).
bool column_matches(const Column& c, const XfailRecord& r);

struct Column {
  std::string bundle;                  // bundle name ("" for export-only columns)
  std::string backend;
  std::string recipe;
  std::string precision;
  std::vector<std::string> delegates;  // from the program
  std::optional<Bound> bound;
  std::string model;                   // the manifest's `model`
  std::string dir;                     // the bundle directory it was found in
  // The bundle's facts as its manifest records them (the evidence ledger's bundle fields).
  std::string sha256;                  // the artifact's SHA-256
  std::string created_utc;
  std::map<std::string, std::string> toolchain;
  // What its outputs were judged against here (ParityReport::against / judgement /
  // precision_reason, references.h).
  std::string against = "golden";
  std::string judgement;
  std::string precision_reason;
  std::string path;                    // the bundle's path as found in `dir`
  // With `matrix --bench` (bench_columns): the column's benchmark on its golden inputs.
  std::optional<BenchReport> speed;
  // Where it ran: "" on this machine; an emulated machine's label ("arm64/neoverse-n1",
  // etproof/emulation.h) for a column of add_emulated_columns, whose label then reads
  // "xnnpack/fp32 @ arm64/neoverse-n1" in every report.
  std::string machine;
  // That machine as the ledger records it (emulated_machine: arch, cpu, features, emulated,
  // emulator, host); null on this machine (the run's own machine_info()).
  nlohmann::json machine_record;
  std::vector<std::string> mutable_buffers;  // ParityReport::mutable_buffers: each case from the
                                             // initial state, on a program loaded afresh
  bool state_shared_across_methods = false;  // ParityReport::state_shared_across_methods
};

struct Cell {
  std::string case_id;
  size_t column = 0;                   // index into Matrix::columns
  CellStatus status = CellStatus::kAgreed;
  std::optional<double> max_abs_error;
  std::optional<double> cosine;
  std::optional<double> sqnr_db;
  std::optional<double> headroom;
  std::optional<double> range_error;   // worst max|a−r| / max|ref| over its outputs
  std::optional<double> atol;          // the resolved atol of its output with the least headroom
  std::string detail;                  // reason / failing rule / error text
  // What the recipe or this machine's precision cost (references.h, question 2): the worst SQNR
  // of its emulation against the float32 golden, and, without a budget, the default budget it
  // breaks (RecipeCost::over_default): flagged in the grid and the verdict line, not a failure.
  std::optional<double> cost_sqnr_db;
  std::string cost_over_default;
  std::optional<RepeatReport> repeats;  // CaseReport::repeats: the runs after the judged one
  std::optional<PassingBound> passing;  // its outputs' minimum passing bound together (gate.h)
  // The gate rules its outputs failed (TensorReport::failed_rules, each once, in order), and
  // "other" for a failure no rule names (an output of another shape, an edited golden).
  std::vector<std::string> failed_rules;
};

struct NotRun {
  std::string backend;
  std::string recipe;
  CellStatus status;
  std::string reason;                  // never empty: why it was not measured
  std::string dir;                     // the bundle directory it belongs to
  std::string model;                   // the model it is about, where known ("" otherwise)
  // The found bundle this line is about (a column of Matrix::columns in the same `dir`): "" for the
  // export half's refusals and failures and for a folder whose manifest could not be read, which
  // are columns of their own (coverage()).
  std::string bundle;
  std::string machine;                 // as Column::machine: "" here, else the emulated machine
};

// A bundle the caller's method selection (--method) left out of the columns: it lists none of the
// methods asked for. Never silent: every renderer names it with the reason (text, Markdown,
// JSON's "left_out", JUnit as a skipped test case); it neither passes nor fails the run.
struct LeftOut {
  std::string bundle;                  // the manifest's name
  std::string model;
  std::string dir;                     // the bundle directory it was found in
  std::string reason;                  // e.g. "has no method 'encode' (its methods: 'forward')"
};

// With `matrix --html`: which layer drifted, for a model whose columns have tapped twins
// (attach_attributions, etproof/render/attribute.h). Plain text and an image, so the matrix needs nothing
// of attribution itself.
struct AttributionFigure {
  std::string model;
  // One line per column with a twin: its index into Matrix::columns and attribute()'s summary (or,
  // where the twin could not be attributed, the error's one-line text).
  std::vector<std::pair<size_t, std::string>> lines;
  std::string image;    // the plot (SQNR against depth, one line per column) as a data: URI of an
                        // SVG drawn by the export half's matplotlib; empty when not drawn
  std::string why_not;  // why there is no image (empty when there is one)
};

struct Matrix {
  std::vector<Column> columns;
  std::vector<std::string> cases;      // row order: first appearance across columns
  std::vector<Cell> cells;
  // Every column, or part of one, that was not measured, with its status and reason: columns
  // that could not run at all, cases of a column that could not be gated, and the export half's
  // refusals and failures.
  std::vector<NotRun> not_run;
  size_t measured = 0;                 // cells that ran and were gated (xfail/xpass included)
  std::string caller_bound;            // the caller's bound flags; empty: each column's derived
  std::string caller_budget;           // the caller's --budget (describe_budget); empty: none
  std::string xfail_file;              // DIR/xfail.json when present; empty otherwise
  std::vector<XfailOutcome> xfail;     // one per record of that file, in its order
  std::vector<std::string> dirs;       // the directories, in the order given
  std::vector<std::string> xfail_files;  // every DIR/xfail.json read (xfail_file: the first)
  // The caller's method selection (--method), in the order given; empty: every method of every
  // bundle. With a selection, a bundle listing some of the methods is replayed on those alone,
  // and one listing none of them is in `left_out`, not in the columns.
  std::vector<std::string> methods;
  std::vector<LeftOut> left_out;
  // How often each case ran (build_matrix's `repetition`): the renderers say it once.
  Repetition repetition;
  // Filled only by attach_attributions (matrix --html); rendered by to_html in each model's section.
  std::vector<AttributionFigure> attributions;
  // The caller's coverage requirements (matrix --require COLUMN…, --require-all; coverage()): each
  // names columns that must have run here. A required column that did not run, and a --require
  // that names no column of the matrix at all, fail the run (exit_code 1) and are named in the
  // verdict.
  std::vector<std::string> required;
  bool require_all = false;
  // The models of the columns, in order of first appearance. Rows are (model, case): a case id
  // belongs to the columns of its model.
  std::vector<std::string> models() const;
  // Exit status: 1 when nothing was measured, when any cell drifted, when any cell or not-run
  // column has a status that fails_run (xpass, bundle-invalid, load-failed, run-failed,
  // export-failed, no-bound), when any xfail record passed (xpass, either half), or when a
  // requirement (`required`, `require_all`) is not met; 0 otherwise.
  // not-linked, unavailable and export-refused columns, xfail cells and stale records are listed
  // with their reasons but do not fail the run unless a requirement names them.
  int exit_code() const;
};

// ---- coverage: what was run ----------------------------------------------------------------------
//
// A column is one (directory, model, backend, recipe): a bundle found there (Matrix::columns), or
// an entry of the export half's report that has no bundle (export-refused, export-failed), or a
// folder whose manifest could not be read. Columns, never cells, are what coverage counts: a
// column RAN when at least one of its golden cases ran here and was judged against its bound
// (is_judged: agreed, agreed-undelegated, drifted, xfail, xpass); every other column did not run,
// with the status and reason of its not-run line (not-linked, unavailable, export-refused,
// load-failed, no-bound, crashed, …).
struct CoverageColumn {
  std::string model;
  std::string backend;
  std::string recipe;
  std::string dir;
  std::string bundle;                  // "" where the column has no bundle
  bool ran = false;
  Status status = Status::kAgreed;     // not run: why (ran: unused)
  std::string reason;                  // not run: the reason of its not-run line
  std::string machine;                 // as Column::machine: "" here, else the emulated machine
  // "backend/recipe", the column's name in every report and in --require ("?" for an unknown
  // part), with " @ MACHINE" for a column run on an emulated machine.
  std::string label() const;
};

// A requirement not met: a --require whose columns did not all run, or that names none.
struct UnmetRequirement {
  std::string require;                 // the --require as given; "--require-all" for that flag
  std::vector<size_t> not_run;         // indices into Coverage::columns of its columns not run
  size_t matched = 0;                  // how many columns it names (0: absent from the matrix)
};

struct Coverage {
  std::vector<CoverageColumn> columns;  // bundle columns in Matrix::columns order, then the others
  size_t ran = 0;
  std::vector<UnmetRequirement> unmet;  // in the order the requirements were given
};

// The matrix's coverage and whether its requirements hold. A requirement is a column as the
// matrix names it, BACKEND/RECIPE (e.g. xnnpack/fp32, coreml/fp16: that column of every model that
// has one), BACKEND alone (every recipe of it), or either prefixed with MODEL: (that model's only).
// Every column it names must have run; one naming no column at all is unmet too. require_all:
// every column must have run.
[[nodiscard]] Coverage coverage(const Matrix& m);
// A --require's syntax ([MODEL:]BACKEND[/RECIPE], no empty part): Error{kInvalidArgument} naming
// it otherwise (the CLI's exit 2, before anything runs).
void check_requirement(const std::string& require);
// "5 of 9 columns ran here (4 not-linked: coreml/fp16, coreml/fp32, vulkan/fp32, webgpu/fp32)"
// (", N of them under emulation" after "ran here" where columns ran on emulated machines):
// the columns that did not run grouped by status, each column name once with ×N where several
// models (or directories) share it. The verdict line of every renderer ends with it.
[[nodiscard]] std::string coverage_text(const Coverage& c);

// The width every text report of `matrix` and `parity` keeps: no line longer.
inline constexpr size_t kTextWidth = 120;
// `text` with every line longer than `width` columns (UTF-8 code points) broken at spaces, each
// continuation indented 4 more than its line; a word longer than the room left is cut. Lines that
// fit are left exactly as they are, so text already within the width is returned unchanged.
[[nodiscard]] std::string fit_text(const std::string& text, size_t width = kTextWidth);

// Builds the matrix over every bundle under `dir` (find_bundles). If `dir/export-report.json`
// exists (written by the export half: {"results": [{"backend","recipe","status":
// "exported"|"export-refused"|"export-failed","model"?,"bundle"?,"stage"?, "reason"?}]}), its
// refused/failed entries become not_run columns. If `dir/xfail.json` exists (docs/xfail.md), each
// record is applied last: a runtime record turns its column's drifted cells into xfail and its
// agreed ones into xpass; an export record turns a matching export-failed entry into xfail, and
// a matching pair that exported into an xpass outcome; a record matching nothing is stale.
// A malformed xfail.json throws Error{kXfailInvalid} (the run cannot say what was expected); a
// `dir` that is not a directory, or that the system cannot examine, Error{kIo}.
// Errors in one column never stop the others: a bundle whose manifest cannot be read at all (not
// JSON, a number out of range, nested too deep) is one bundle-invalid not-run line named by its
// folder, with the error; an unreadable export-report.json is one bundle-invalid line too. A non-empty `caller` replaces those fields of
// every column's derived bound (override_bound); the columns' bounds then say caller_supplied.
// A `budget` (the caller's --budget) replaces those keys of each bundle's own budget
// (effective_budget, references.h): a case whose recipe cost breaks it drifts.
//
// `methods` (the caller's --method, empty: every method): each bundle replays the golden cases of
// those of its methods the selection names (cells are named METHOD/CASE for a program with several
// methods, manifest.h case_label); a bundle that lists none of them is left out of the columns
// and named in Matrix::left_out with the reason (it neither passes nor fails the run). A bundle
// whose manifest cannot be read is replayed (and refused) as without a selection.
//
// `jobs`: how many columns replay at once (threads; ≤ 1: one after another). Each column is one
// call of the replay engine with no state shared with the others, and the columns are laid out
// in the directory's order afterwards, so the result is the same for any `jobs`.
//
// `isolation` (etproof/isolation.h; the CLI's matrix enables it unless --in-process): each column
// runs its program in its own worker process, so a crash, an out-of-memory kill or a time limit
// inside ExecuTorch is that column's (or case's) `crashed` status, with the signal or the limit,
// and the other columns go on.
[[nodiscard]] Matrix build_matrix(const std::filesystem::path& dir, const BoundOverride& caller = {},
                                  size_t jobs = 1,
                                  const std::optional<Budget>& budget = std::nullopt,
                                  const std::vector<std::string>& methods = {},
                                  const Isolation& isolation = {}, const Repetition& repetition = {});

// Several directories: each is built as above (its own export-report.json and xfail.json apply
// to its own columns only) and the results are concatenated, columns in directory order.
[[nodiscard]] Matrix build_matrix(const std::vector<std::filesystem::path>& dirs,
                                  const BoundOverride& caller = {}, size_t jobs = 1,
                                  const std::optional<Budget>& budget = std::nullopt,
                                  const std::vector<std::string>& methods = {},
                                  const Isolation& isolation = {}, const Repetition& repetition = {});

// `matrix --emulate` (etproof/emulation.h): the same directories replayed again on each emulated
// machine — every column through the worker cross-built for it, under its emulator — appended to
// `m` as columns of their own, each with Column::machine (its label) and machine_record (`machines`:
// one per emulation, emulated_machine's record, in the same order). Bundles of a delegate the
// emulated worker does not register are its not-linked columns, named as such; the export half's
// lines and the xfail outcomes are the host matrix's and are not repeated (an xfail record still
// turns an emulated column's drifted cells into xfail). `isolation` gives the limits; it is
// enabled, with the emulation set, for each machine.
void add_emulated_columns(Matrix& m, const std::vector<std::filesystem::path>& dirs,
                          const std::vector<Emulation>& emulations, const std::vector<nlohmann::json>& machines,
                          const BoundOverride& caller = {}, size_t jobs = 1,
                          const std::optional<Budget>& budget = std::nullopt,
                          const std::vector<std::string>& methods = {}, const Isolation& isolation = {},
                          const Repetition& repetition = {});

// `matrix --bench`: benchmarks (etproof/bench.h) every column whose program ran here — not the
// emulated ones (QEMU's speed says nothing of a device's) — (some cell
// was judged or measured without a bound), one column at a time — never in parallel, so that no
// timing shares the machine with another — with `isolation` (each in its own worker, as the
// replay was). Sets Column::speed. The renderers then show each column's median latency of its
// first method, its peak memory, and its speed-up against the same model's portable fp32 and
// XNNPACK fp32 columns (speedup_against), beside its verdicts.
void bench_columns(Matrix& m, const BenchOptions& options, const Isolation& isolation);
// How many times faster column `col` runs than the same model's (backend, recipe) column: that
// column's median latency over this one's (first method each); nullopt when either has no speed.
[[nodiscard]] std::optional<double> speedup_against(const Matrix& m, size_t col, const std::string& backend,
                                                    const std::string& recipe);


}  // namespace etproof
