// etproof/schema.h — the JSON Schema files of schema/ (one per document both halves read), and a
// document validated against one of them with every problem listed (docs/manifest.md, "The
// schema files").
//
// The files are embedded in this binary at configure time (cpp/src/core/schema_data.h.in), so the
// binary is self-contained; the export half validates against the same files (Python,
// python/etproof/schema.py, jsonschema) and words each problem the same way, so both halves give
// a document the same answer: the same problems at the same JSON pointers, sorted by pointer.
// tests/schema/corpus holds the documents both test suites check this against.
//
// The validator is valijson (Debian libvalijson-dev, header-only, draft 7), private to
// schema.cpp. Thread-safe: each schema is parsed once, on first use, and never changes.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace etproof::schema {

// The documents with a schema file (schema/NAME.schema.json).
enum class Document { kManifest, kExportReport, kXfail, kBackends, kLedgerRecord, kBounds };

// "manifest", "export-report", "xfail", "backends", "ledger-record", "bounds": the file's stem and
// the corpus folder's name (tests/schema/corpus/NAME).
std::string_view name(Document d);
std::optional<Document> document_named(std::string_view name);
// "schema/manifest.schema.json": where the document's contract lives in the source tree.
std::string file_of(Document d);
// The schema file's text as embedded at configure time.
const char* schema_text(Document d);

struct SchemaProblem {
  std::string pointer;  // RFC 6901 JSON pointer of the offending value ("" = the document)
  std::string message;  // what is wrong, e.g. "missing", "unknown value 'float8' (known: …)"

  // The pointer as the readers' messages name a field: "/inputs/0/dtype" -> "inputs[0].dtype".
  std::string field() const;
  auto operator<=>(const SchemaProblem&) const = default;
};

// Every problem of `doc` against `which`'s schema, sorted by pointer (then message), each once;
// empty when the document follows the schema. Never throws for any document.
std::vector<SchemaProblem> validate(const nlohmann::json& doc, Document which);

// "/a/0/b" -> "a[0].b" (an all-digit token is an array index; "" -> "").
std::string field_path(std::string_view pointer);

// Each problem as "FIELD: message" ("(document)" for the document itself), in order: the form
// the readers join into one Error cause.
std::vector<std::string> problem_lines(const std::vector<SchemaProblem>& problems);

}  // namespace etproof::schema
