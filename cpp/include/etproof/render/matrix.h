// etproof/render/matrix.h — the matrix as text, JSON, Markdown and HTML, and its table of formats.
// The render layer: formats only; the report itself and how it is made: etproof/replay/matrix.h.
#pragma once

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "etproof/render/formats.h"
#include "etproof/replay/matrix.h"

namespace etproof {

// Text: with one model in one directory, the case × column grid (in blocks of columns that fit the
// width). With several models or directories, grouped per model: a table of one row per column
// (status counts and its worst measured numbers), the bounds once per (recipe, precision), then the
// drifted and xfail cells listed — readable at ~15 models × 9 columns. Then the not-run lines, one
// per distinct (status, reason) with every column and model it covers; the summary (cells); the
// verdict, which ends with coverage_text (columns). Every line fits kTextWidth (fit_text).
[[nodiscard]] std::string to_text(const Matrix& m);
// Markdown: one case × column grid per model.
[[nodiscard]] std::string to_markdown(const Matrix& m);
// JSON: columns, cells, not_run, …, and `coverage` (coverage(): columns, ran, not_run,
// not_run_by_status, columns_not_run, required, require_all, unmet, required_not_run,
// required_absent, text) and `not_run_groups` (the not-run lines as the text groups them).
[[nodiscard]] nlohmann::json to_json(const Matrix& m);
// HTML (`matrix --html FILE`): one self-contained page — inline CSS, no script, no network asset —
// so it can be attached to a CI run or mailed and read offline. It holds: the run's verdict and
// the exit status it implies, with the summary; the caller's bound and budget when given; a legend
// of every status word (colour, meaning, whether it fails the run, how many) and of the headroom
// shading; per model, a grid of golden cases × (backend, recipe) columns whose cells are coloured
// by status, agreed ones shaded by headroom, each opening (<details>) to its max abs error,
// cosine, SQNR, headroom, range error, atol and detail, and carrying data-model, data-case,
// data-column, data-bundle, data-dir and data-status attributes for tools; per model the columns'
// bundle, precision, delegates, bound and what it was judged against (against, judgement,
// precision reason), and its not-run lines with status, whether they fail the run and reason;
// where m.attributions has a figure for the model, "Which layer drifted": each column's summary and
// the plot as an <img class="attribution"> (a data: URI, no network);
// the not-run lines of models with no column; the left-out bundles; the xfail records. Every
// string from a manifest, a report or an error is escaped: a bundle named <script> is text.
[[nodiscard]] std::string to_html(const Matrix& m);
// CSV (RFC 4180 quoting, "\n" line ends): a header, then one row per cell, in --json's "cells" order:
// model, case, column (backend/recipe[ @ machine]), backend, recipe, bundle, dir, status, then the
// numbers --json gives the cell — max_abs_error, cosine, sqnr_db, headroom, range_error, atol,
// cost_sqnr_db (as --json writes them; empty where it has null) — and detail.
[[nodiscard]] std::string to_csv(const Matrix& m);
// Writes to_html(m) to `file` atomically (a temporary file beside it, then rename; its parent
// directory is created). An unwritable path is Error{kIo} naming `file`, with nothing written.
void write_html(const Matrix& m, const std::filesystem::path& file);

// `etproof matrix --format NAME`: text (the directories read, then to_text), json (to_json, printed),
// markdown, junit (to_junit, etproof/render/junit.h), html (to_html; m.attributions as filled) and csv.
[[nodiscard]] Renderers<Matrix> matrix_renderers();

}  // namespace etproof
