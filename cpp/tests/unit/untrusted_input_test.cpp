// Untrusted documents and filesystems (issue 11): every JSON document the runtime half reads is
// parsed with a depth limit and any exception of the JSON library becomes a typed error; one bad
// bundle in a matrix directory is one bundle-invalid line; filesystem errors are io errors and a
// failed allocation is out-of-memory, never "internal". Each case asserts the error kind and that
// nothing was written; the cases beside them show what must still be read. Here (unit): built
// documents, manifests, ledgers and the coverage command, with no exported bundle; the bundles,
// matrices and filesystems are integration/untrusted_input_test.cpp's.
#include <pthread.h>

#include <chrono>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "etproof/core/backend_table.h"
#include "etproof/runtime/bundle.h"
#include "etproof/evidence/coverage.h"
#include "etproof/core/error.h"
#include "etproof/replay/inspect.h"
#include "etproof/evidence/ledger.h"
#include "etproof/core/manifest.h"
#include "etproof/replay/matrix.h"
#include "etproof/render/matrix.h"
#include "etproof/replay/replay.h"
#include "etproof/render/parity.h"
#include "etproof/runtime/run.h"
#include "etproof/core/xfail.h"
#include "test_support.h"
#include "untrusted_support.h"

namespace etproof {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::quote;
using testing::scratch_dir;
using testing::slurp;

using testing::kDeep;
using testing::nested_arrays;
using testing::on_small_stack;
using testing::snapshot;

// Adds `"x": VALUE` (raw JSON text) to the manifest's top-level object: an unknown field, which a
// reader ignores, so only the value itself can be what is refused.
void add_raw_field(const fs::path& manifest, const std::string& value) {
  std::string text = slurp(manifest);
  const size_t close = text.rfind('}');
  ASSERT_NE(close, std::string::npos);
  text.insert(close, ", \"x\": " + value);
  std::ofstream(manifest, std::ios::binary | std::ios::trunc) << text;
}

// Expects `fn` to throw Error{kind} with every needle in its cause and a remedy; returns the cause.
std::string expect_error(ErrorKind kind, const std::function<void()>& fn, const std::vector<std::string>& needles) {
  try {
    fn();
    ADD_FAILURE() << "no error; expected " << to_string(kind);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    for (const auto& n : needles) EXPECT_NE(e.cause().find(n), std::string::npos) << n << " not in: " << e.cause();
    EXPECT_FALSE(e.remedy().empty());
    return e.cause();
  }
  return "";
}

const std::string kDeepCause = "nested " + std::to_string(kDeep + 1) + " levels deep (at most 64 are read)";

// ---- the deep manifest -------------------------------------------------------------------------

// A document the caller built, as deep: parse_manifest refuses it before copying it into `raw`.
TEST(DeepJson, BuiltDocumentIsRefusedBeforeItIsCopied) {
  json deep = json::array();
  for (size_t i = 1; i < kDeep; ++i) {
    json outer = json::array();
    outer.push_back(std::move(deep));
    deep = std::move(outer);
  }
  json doc = json::parse(slurp(testing::fixture("manifest_v1.json")));
  doc["x"] = std::move(deep);
  on_small_stack([&] {
    expect_error(ErrorKind::kManifestInvalid, [&] { (void)parse_manifest(doc, "built.etproof.json"); },
                 {"built.etproof.json: ", kDeepCause});
  });
  json table = json::parse(embedded_backend_table_json());
  table["x"] = std::move(doc);
  on_small_stack([&] {
    expect_error(ErrorKind::kManifestInvalid, [&] { (void)parse_backend_table(table, "table.json"); },
                 {"table.json: ", "nested " + std::to_string(kDeep + 2) + " levels deep"});
  });
}

// The limit is 64 levels: a manifest that reaches exactly 64 is parsed, 65 is refused while
// parsing. (The 64-deep one is then refused by the schema, for its key "x" only: no key of
// schema/manifest.schema.json holds anything that deep, and unknown keys are refused.)
TEST(DeepJson, SixtyFourLevelsAreReadSixtyFiveAreNot) {
  const fs::path dir = scratch_dir();
  for (const size_t total : {size_t(64), size_t(65)}) {
    const fs::path p = dir / ("depth" + std::to_string(total) + ".etproof.json");
    fs::copy_file(testing::fixture("manifest_v1.json"), p);
    add_raw_field(p, nested_arrays(total - 1));  // the top-level object is the first level
    if (total == 64) {
      const std::string cause = expect_error(ErrorKind::kManifestInvalid, [&] { (void)read_manifest(p); },
                                             {"x: is not a field of schema/manifest.schema.json"});
      EXPECT_EQ(cause.find("nested"), std::string::npos) << cause;
      EXPECT_EQ(json::parse(slurp(p))["x"].dump(), nested_arrays(63));
    } else {
      expect_error(ErrorKind::kManifestInvalid, [&] { (void)read_manifest(p); },
                   {"nested 65 levels deep (at most 64 are read)"});
    }
  }
}

// Still read: every real manifest (the deepest real one, schema 2, is 8 levels) and a large but
// shallow document — a million numbers and ten thousand keys in an unknown field, about 8 MB —
// parsed and validated in full, refused for that one key alone (unknown keys are refused).
TEST(DeepJson, RealAndLargeShallowManifestsAreStillRead) {
  for (const char* f : {"manifest_v1.json", "manifest_v2.json"}) {
    const Manifest m = read_manifest(testing::fixture(f));
    EXPECT_EQ(to_canonical_json(m.raw), slurp(testing::fixture(f))) << f;
  }
  const fs::path p = scratch_dir() / "large.etproof.json";
  fs::copy_file(testing::fixture("manifest_v1.json"), p);
  std::string numbers = "[";
  for (int i = 0; i < 1000000; ++i) numbers += (i ? "," : "") + std::to_string(i);
  numbers += "]";
  std::string keys = "{";
  for (int i = 0; i < 10000; ++i) keys += (i ? ",\"k" : "\"k") + std::to_string(i) + "\": [[[" + std::to_string(i) + "]]]";
  keys += "}";
  add_raw_field(p, "{\"numbers\": " + numbers + ", \"keys\": " + keys + "}");
  const auto start = std::chrono::steady_clock::now();
  const std::string cause =
      expect_error(ErrorKind::kManifestInvalid, [&] { (void)read_manifest(p); }, {"large.etproof.json: "});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(cause, p.string() + ": x: is not a field of schema/manifest.schema.json");
  const json raw = json::parse(slurp(p));
  EXPECT_EQ(raw["x"]["numbers"].size(), 1000000u);
  EXPECT_EQ(raw["x"]["keys"]["k9999"][0][0][0], 9999);
  std::cout << "read " << fs::file_size(p) << " bytes of shallow manifest in " << seconds << " s\n";
}

// ---- numbers out of range, and values of another type -----------------------------------------

// The fuzzer's 33 bytes: nlohmann's out_of_range.406, once an "internal" error, is the manifest's.
TEST(JsonNumbers, OutOfRangeNumberIsManifestInvalid) {
  const fs::path dir = scratch_dir();
  const fs::path p = dir / "fuzz.etproof.json";
  std::ofstream(p, std::ios::binary) << R"({"schema_version": 1, "x": 1e400})";
  ASSERT_EQ(fs::file_size(p), 33u);
  const auto before = snapshot(dir);
  expect_error(ErrorKind::kManifestInvalid, [&] { (void)read_manifest(p); },
               {p.string(), "not valid JSON", "number overflow parsing '1e400'"});
  EXPECT_EQ(snapshot(dir), before);
}

// A ledger line 100,000 deep or with 1e400: ledger-invalid at FILE:LINE; nothing appended.
TEST(JsonNumbers, DeepOrOutOfRangeLedgerLineIsLedgerInvalid) {
  const fs::path dir = scratch_dir();
  const std::pair<std::string, std::string> cases[] = {
      {R"({"id": "0", "deep": )" + nested_arrays(kDeep) + "}", kDeepCause},
      {R"({"id": "0", "numbers": {"cosine": 1e400}})", "number overflow parsing '1e400'"}};
  for (const auto& [line, needle] : cases) {
    const fs::path ledger = dir / "l.jsonl";
    std::ofstream(ledger, std::ios::binary | std::ios::trunc) << "\n" << line << "\n";
    const auto before = snapshot(dir);
    on_small_stack([&] {
      expect_error(ErrorKind::kLedgerInvalid, [&] { (void)read_ledger(ledger); },
                   {ledger.string() + ":2: ", needle});
      CoverageRequest request;
      request.ledgers = {ledger.string()};
      request.out = (dir / "page.md").string();
      expect_error(ErrorKind::kLedgerInvalid, [&] { (void)run_coverage(request); }, {needle});
    });
    EXPECT_EQ(snapshot(dir), before);  // no page written
  }
}

// A record whose id matches but whose other fields have unexpected types (a hand-made line): the
// ledger reader refuses it against schema/ledger-record.schema.json, naming every such field at
// once, never a type_error (coverage's rendering around odd types stays for records built in
// memory).
TEST(JsonNumbers, LedgerFieldsOfAnotherTypeAreRefusedEachNamed) {
  json r = {{"schema", 1},           {"time_utc", "2026-11-29T10:00:00Z"},
            {"kind", "matrix"},      {"half", "runtime"},
            {"backend", "xnnpack"},  {"status", "agreed"},
            {"backend_ids", {1, nullptr}},
            {"numbers", {{"case_ids", {1, 2}}, {"cases", "three"}, {"cosine", {}}}},
            {"machine", {{"os", 1}, {"cores", 1e300}, {"arch", {"x86_64"}}}}};
  const fs::path ledger = scratch_dir() / "odd.jsonl";
  std::ofstream(ledger) << finalize(r).dump() << "\n";
  CoverageRequest request;
  request.ledgers = {ledger.string()};
  expect_error(ErrorKind::kLedgerInvalid, [&] { (void)run_coverage(request); },
               {"odd.jsonl:1: backend_ids[0]: expected a string, found an integer; backend_ids[1]: expected a "
                "string, found null; machine.arch: expected a string, found an array; machine.cores: expected an "
                "integer, found a float; machine.os: expected a string, found an integer; numbers.case_ids[0]",
                "numbers.cases: expected an integer, found a string"});
}

#ifdef ETPROOF_CLI
using testing::run_etproof;

// A CLI result's error line names the kind, and never "internal".
void expect_cli_error(const testing::CliResult& r, const std::string& kind, const std::vector<std::string>& needles) {
  EXPECT_EQ(r.rc, 2) << r.err;
  EXPECT_NE(r.err.find("error [" + kind + "]: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("remedy: "), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("internal"), std::string::npos) << r.err;
  for (const auto& n : needles) EXPECT_NE(r.err.find(n), std::string::npos) << n << " not in: " << r.err;
}

// A ledger with a deep line: `coverage` exits 2 with ledger-invalid and writes no page.
TEST(JsonNumbers, CliCoverageRefusesADeepLedgerLine) {
  const fs::path dir = scratch_dir();
  std::ofstream(dir / "l.jsonl") << R"({"id": "0", "deep": )" << nested_arrays(kDeep) << "}\n";
  const auto before = snapshot(dir);
  expect_cli_error(run_etproof("coverage --ledger " + quote((dir / "l.jsonl").string()) + " --out " +
                                   quote((dir / "page.md").string()),
                               "ulimit -s 1024;"),
                   "ledger-invalid", {"l.jsonl:1: ", kDeepCause});
  EXPECT_EQ(snapshot(dir), before);
}

#endif  // ETPROOF_CLI

}  // namespace
}  // namespace etproof
