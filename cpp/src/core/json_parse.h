// cpp/src/core/json_parse.h — private to the library: the one way etproof parses a JSON document it
// reads (a manifest, DIR/xfail.json, each ledger line, DIR/export-report.json, the export half's
// probe output, the embedded backend table), and the one place an exception of the JSON library
// becomes a typed Error. Every reader names what a bad document is to it (its ErrorKind, how the
// document is named, the remedy) in a JsonSource.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "etproof/core/error.h"

namespace etproof::detail {

// How deep arrays and objects may nest in any document etproof reads ([] is 1, [[]] is 2).
// The deepest real documents: a schema-2 manifest, 8 (methods[i].goldens[j].references.NAME.
// OUTPUT{file, bytes, sha256}: tests/fixtures/manifest_v2.json); data/backends.json 6; an xfail
// file 4; a ledger record 3. 64 is eight times the deepest, room for any field a later writer
// adds, and shallow enough that what walks a document recursively — nlohmann's copy (a Manifest
// keeps one in `raw`), dump(), operator== — needs a few KB of stack, where 100,000 levels
// overflow it (SIGSEGV).
inline constexpr size_t kMaxJsonDepth = 64;

// What a document is to its reader, for the errors about it.
struct JsonSource {
  ErrorKind kind;      // of every error about the document: kManifestInvalid, kXfailInvalid, …
  std::string origin;  // how the cause names it first: a path, "FILE:LINE"
  std::string remedy;
};

// `text` parsed as one JSON document whose arrays and objects nest at most kMaxJsonDepth deep.
// Throws Error{source.kind}, with source.remedy:
// - "ORIGIN: not valid JSON: MESSAGE" with nlohmann's own message (its first 300 bytes), for anything its parser
//   refuses: a syntax error (with the byte), a number outside double's range (1e400,
//   out_of_range.406), a string that is not UTF-8;
// - "ORIGIN: arrays and objects nested N levels deep (at most 64 are read)": a value deeper
//   than the limit is never built (the parser's callback discards it), so nothing recurses over it.
nlohmann::json parse_json(std::string_view text, const JsonSource& source);

// How deep `doc` nests (a scalar 0, [] or {} 1), walked without recursion.
size_t json_depth(const nlohmann::json& doc);

// For a document the caller built (parse_manifest, parse_backend_table): throws Error{source.kind}
// as parse_json does when `doc` nests deeper than kMaxJsonDepth, before anything copies it.
void check_json_depth(const nlohmann::json& doc, const JsonSource& source);

// Error{source.kind} "ORIGIN: MESSAGE" for an exception of the JSON library met while taking values
// out of a parsed document (type_error from get<>()/value() on a value of another type,
// out_of_range from at() on a missing key or index, invalid_iterator), with source.remedy.
Error json_error(const JsonSource& source, const nlohmann::json::exception& e);

// `read()`'s result, with any exception of the JSON library it throws turned into json_error's
// Error; an etproof::Error (or anything else) passes through unchanged.
template <class Read>
auto reading_json(const JsonSource& source, Read&& read) -> decltype(read()) {
  try {
    return read();
  } catch (const nlohmann::json::exception& e) {
    throw json_error(source, e);
  }
}

}  // namespace etproof::detail
