// The bad-input catalog (issue 11 §4) as table-driven tests: each case makes a scratch copy of a
// real test bundle (or a scratch file), breaks it one way, runs one operation on it (a library
// call or the `etproof` binary) and asserts the error kind (and, for a replay or a matrix, the
// status), that the error names what is wrong, and that nothing was written or lost: every file
// under the scratch directory (path, type, size and SHA-256) is the same after as before, and the
// outputs a refused command must not write (`run --out DIR`, a ledger, a coverage page) do not
// appear. `internal` (an exception that is not an etproof::Error) or a crash always fails a case.
//
// A .pte whose manifest hash was fixed up after a bit flip (what ExecuTorch's loader itself must
// survive) is not here: fuzz/ and fuzz_crashes_test.cpp cover it. Edits that stand for a golden
// that disagrees with its manifest (wrong shape, dtype, no finite value) record the new hashes
// (rehash_references): otherwise the hash check refuses them first, which other cases assert.
//
// A case with a `bug` fails today: its expectation is what etproof should do, and the bug text
// (shown in the failure's trace) what it does instead.
//
// The table and the test are shared (bad_input_catalog.h): unit/bad_input_catalog_test.cpp
// instantiates the cases that build their input from nothing, integration/bad_input_catalog_test.cpp
// those that copy an exported test bundle (Case::source).
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "etproof/runtime/bundle.h"
#include "etproof/evidence/coverage.h"
#include "etproof/core/error.h"
#include "etproof/evidence/ledger.h"
#include "etproof/core/manifest.h"
#include "etproof/replay/matrix.h"
#include "etproof/render/matrix.h"
#include "etproof/core/npy.h"
#include "etproof/replay/replay.h"
#include "etproof/render/parity.h"
#include "etproof/runtime/run.h"
#include "etproof/core/status.h"
#include "etproof/core/xfail.h"
#include "bad_input_catalog.h"
#include "test_support.h"

namespace etproof::bad_input {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// ---- the scratch bundle ------------------------------------------------------------------------

std::string name_of(const Ctx& c) { return c.bundle.filename().string(); }
fs::path manifest(const Ctx& c) { return c.bundle / (name_of(c) + ".etproof.json"); }
fs::path goldens(const Ctx& c) { return c.bundle / (name_of(c) + ".goldens"); }
fs::path pte(const Ctx& c) { return c.bundle / (name_of(c) + ".pte"); }

void write_bytes(const fs::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary | std::ios::trunc) << bytes;
}

// Every entry under `dir`, not following links: type, and for a file its size and SHA-256.
std::map<std::string, std::string> snapshot(const fs::path& dir) {
  std::map<std::string, std::string> out;
  for (auto it = fs::recursive_directory_iterator(dir); it != fs::recursive_directory_iterator(); ++it) {
    const fs::file_status st = it->symlink_status();
    const std::string rel = it->path().lexically_relative(dir).string();  // never follows links
    if (fs::is_symlink(st))
      out[rel] = "link -> " + fs::read_symlink(it->path()).string();
    else if (fs::is_directory(st))
      out[rel] = "dir";
    else if (fs::is_regular_file(st))
      out[rel] = std::to_string(fs::file_size(it->path())) + " bytes, sha256 " +
                 etproof::testing::sha256_file(it->path());
    else
      out[rel] = "other";
  }
  return out;
}

// ---- what an operation came to -----------------------------------------------------------------

// A library call: the Error it throws, or none.
Op lib(std::function<void(Ctx&)> fn) {
  return [fn](Ctx& c) {
    Outcome o;
    try {
      fn(c);
      o.kind = "none";
    } catch (const Error& e) {
      o.kind = std::string(to_string(e.kind()));
      o.message = e.cause();
      o.remedy = e.remedy();
    } catch (const std::exception& e) {
      o.kind = "internal";
      o.message = e.what();
    }
    return o;
  };
}

Outcome from_report(const ParityReport& r) {
  Outcome o;
  if (r.refused) o.status = std::string(to_string(*r.refused));
  for (const CaseReport& cr : r.cases)
    if (o.status.empty() && cr.error) o.status = std::string(to_string(cr.status));
  if (const Error* e = r.first_error()) {
    o.kind = std::string(to_string(e->kind()));
    o.message = e->cause();
    o.remedy = e->remedy();
  } else {
    o.kind = "none";
    if (o.status.empty()) o.status = r.passed ? "passed" : "not-passed";
  }
  return o;
}

// replay() of the broken bundle: never throws; the first Error and the status behind it.
Op replay_op(ReplayOptions options = {}) {
  return [options](Ctx& c) {
    try {
      return from_report(replay(c.bundle, options));
    } catch (const std::exception& e) {
      return Outcome{"internal", "", std::string("replay threw: ") + e.what(), "", ""};
    }
  };
}

// build_matrix() over the scratch directory (the broken bundle is one column of it): the first
// not-run line or unmeasured cell, its kind read from its "[kind] cause" reason.
Op matrix_op() {
  return [](Ctx& c) {
    Outcome o;
    try {
      const Matrix m = build_matrix(c.root);
      std::string reason;
      if (!m.not_run.empty()) {
        o.status = std::string(to_string(m.not_run.front().status));
        reason = m.not_run.front().reason;
      } else {
        for (const Cell& cell : m.cells)
          if (cell.status != Status::kAgreed && cell.status != Status::kAgreedUndelegated) {
            o.status = std::string(to_string(cell.status));
            reason = cell.detail;
            break;
          }
      }
      o.message = reason;
      const size_t open = reason.find('['), close = reason.find(']', open);
      o.kind = open == std::string::npos || close == std::string::npos ? "none"
                                                                       : reason.substr(open + 1, close - open - 1);
      o.remedy = reason.find("remedy: ") != std::string::npos ? "in the reason" : "";
      if (o.status.empty()) o.status = "passed";
    } catch (const Error& e) {
      o.kind = std::string(to_string(e.kind()));
      o.message = e.cause();
      o.remedy = e.remedy();
    } catch (const std::exception& e) {
      o.kind = "internal";
      o.message = e.what();
    }
    return o;
  };
}

// The `etproof` binary with the arguments `args(ctx)` builds (each quoted already): its
// "error [KIND]: CAUSE" line; "usage" when the argument parser refused (exit 2, no such line).
Op cli(std::function<std::string(Ctx&)> args) {
  return [args](Ctx& c) {
    Outcome o;
#ifdef ETPROOF_CLI
    // A run that records by default would write here: inside the snapshot, and never allowed.
    c.absent.push_back(c.root / "default-ledger.jsonl");
    const std::string env = "ETPROOF_LEDGER=" + etproof::testing::quote((c.root / "default-ledger.jsonl").string());
    const etproof::testing::CliResult r = etproof::testing::run_etproof(args(c), env);
    o.message = r.err;
    if (r.rc == -1 || r.rc > 2) {
      o.kind = "crash";
      o.message = "exit " + std::to_string(r.rc) + ": " + r.err;
      return o;
    }
    // "error [KIND]: CAUSE"; or, from `parity`/`matrix` whose explicit --ledger could not be
    // written, "ledger: nothing recorded in FILE: [KIND] CAUSE" (exit 2, after the report)
    size_t at = r.err.find("error [");
    if (at != std::string::npos) at += 7;
    if (const size_t l = r.err.find("ledger: nothing recorded in "); at == std::string::npos && l != std::string::npos)
      if (const size_t b = r.err.find(": [", l); b != std::string::npos) at = b + 3;
    if (at != std::string::npos) {
      o.kind = r.err.substr(at, r.err.find(']', at) - at);
      const size_t rem = r.err.find("remedy: ");
      if (rem != std::string::npos) o.remedy = r.err.substr(rem + 8);
    } else {
      o.kind = r.rc == 2 ? "usage" : "none";
      o.status = "exit " + std::to_string(r.rc);
    }
    if (o.kind != "none" && r.rc != 2) o.kind += " (exit " + std::to_string(r.rc) + ", not 2)";
#else
    (void)args;
    (void)c;
    o.skip = "this test binary was built without the etproof CLI (ETPROOF_CLI)";
#endif
    return o;
  };
}

std::string q(const fs::path& p) { return etproof::testing::quote(p.string()); }

// ---- the breakages ------------------------------------------------------------------------------

Setup nothing() { return [](Ctx&) {}; }

void edit_manifest(Ctx& c, const std::function<void(json&)>& f) {
  json doc = json::parse(etproof::testing::slurp(manifest(c)));
  f(doc);
  write_bytes(manifest(c), doc.dump(2) + "\n");
}

// The manifest's field at JSON pointer `ptr` set to `v` (created where missing).
Setup set(const std::string& ptr, json v) {
  return [ptr, v](Ctx& c) { edit_manifest(c, [&](json& d) { d[json::json_pointer(ptr)] = v; }); };
}

// The manifest's object member at `ptr` removed.
Setup erase(const std::string& ptr) {
  return [ptr](Ctx& c) {
    edit_manifest(c, [&](json& d) {
      const json::json_pointer p(ptr);
      d[p.parent_pointer()].erase(p.back());
    });
  };
}

// The manifest's text edited as text.
Setup manifest_text(std::function<void(std::string&)> f) {
  return [f](Ctx& c) {
    std::string text = etproof::testing::slurp(manifest(c));
    f(text);
    write_bytes(manifest(c), text);
  };
}

// A file of the bundle (relative to it; NAME stands for the bundle's name) cut to `keep` bytes
// (negative: that many fewer than it has).
Setup truncate(const std::string& rel, long long keep) {
  return [rel, keep](Ctx& c) {
    std::string r = rel;
    if (auto at = r.find("NAME"); at != std::string::npos) r.replace(at, 4, name_of(c));
    const fs::path p = c.bundle / r;
    const auto size = static_cast<long long>(fs::file_size(p));
    fs::resize_file(p, static_cast<uintmax_t>(keep < 0 ? size + keep : keep));
  };
}

// One bit of a file of the bundle flipped, at byte `at` (negative: from the end).
Setup flip(const std::string& rel, long long at) {
  return [rel, at](Ctx& c) {
    std::string r = rel;
    if (auto n = r.find("NAME"); n != std::string::npos) r.replace(n, 4, name_of(c));
    const fs::path p = c.bundle / r;
    std::string bytes = etproof::testing::slurp(p);
    const size_t i = static_cast<size_t>(at < 0 ? static_cast<long long>(bytes.size()) + at : at);
    bytes[i] = static_cast<char>(bytes[i] ^ 0x10);
    write_bytes(p, bytes);
  };
}

Setup both(Setup a, Setup b) {
  return [a, b](Ctx& c) {
    a(c);
    b(c);
  };
}

// `the_file` (relative to the goldens directory) replaced by `t`, the manifest's hashes of the
// goldens then recorded anew: a golden that says otherwise than the manifest, not a damaged one.
Setup golden_rewritten(std::string the_file, HostTensor t, bool rehash = true) {
  return [the_file, t, rehash](Ctx& c) {
    write_npy(goldens(c) / the_file, t);
    if (rehash) etproof::testing::rehash_references(c.bundle);
  };
}

// Raw .npy bytes: format `major`.0, header dict `dict` padded as numpy pads it, then `data`.
std::string npy(const std::string& dict, const std::string& data, int major = 1) {
  const size_t prefix = major == 1 ? 10 : 12;
  std::string header = dict;
  header += std::string((64 - (prefix + header.size() + 1) % 64) % 64, ' ') + "\n";
  std::string out = "\x93NUMPY";
  out += static_cast<char>(major);
  out += '\0';
  const size_t n = header.size();
  out += static_cast<char>(n & 0xff);
  out += static_cast<char>((n >> 8) & 0xff);
  if (major != 1) out += std::string(2, '\0');
  return out + header + data;
}
const std::string kF4Dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
const std::string kEightBytes(8, '\0');

// ctx.file := root/NAME with `bytes`.
Setup file_with(std::string name, std::string bytes) {
  return [name, bytes](Ctx& c) {
    c.file = c.root / name;
    write_bytes(c.file, bytes);
  };
}

// A float32 tensor of `shape`, filled with `v`.
HostTensor f32_filled(std::vector<int64_t> shape, float v) {
  size_t n = 1;
  for (auto d : shape) n *= static_cast<size_t>(d);
  return etproof::testing::f32(std::vector<float>(n, v), shape);
}
HostTensor i32_filled(std::vector<int64_t> shape) {
  size_t n = 1;
  for (auto d : shape) n *= static_cast<size_t>(d);
  return etproof::testing::tensor_of<int32_t, DType::kInt32>(std::vector<int32_t>(n, 1), shape);
}

// An input file for `run`, written to root/NAME.
Setup input_file(std::string name, HostTensor t) {
  return [name, t](Ctx& c) { write_npy(c.root / name, t); };
}

// ---- xfail files and ledgers --------------------------------------------------------------------

json xfail_record() {
  return {{"model", "tiny"},     {"backend", "portable"},    {"recipe", "fp32"},
          {"half", "runtime"},   {"reason", "a known drift"}, {"recorded", "2026-11-29"}};
}

// ctx.file := root/xfail.json: one valid record, then `edit` applied to the document.
Setup xfail_doc(std::function<void(json&)> edit) {
  return [edit](Ctx& c) {
    json doc = {{"schema_version", 1}, {"records", json::array({xfail_record()})}};
    edit(doc);
    c.file = c.root / "xfail.json";
    write_bytes(c.file, doc.dump(2) + "\n");
  };
}
Setup xfail_text(std::string text) { return file_with("xfail.json", std::move(text)); }

json ledger_record(int i) {
  return finalize({{"schema", 1},
                   {"time_utc", "2026-11-29T10:00:0" + std::to_string(i) + "Z"},
                   {"kind", "matrix"},
                   {"half", "runtime"},
                   {"backend", "portable"},
                   {"status", "agreed"},
                   {"machine", {{"os", "Linux"}, {"cores", 2}}}});
}

// ctx.file := root/ledger.jsonl: two valid records, then `edit` applied to the text.
Setup ledger_text(std::function<void(std::string&)> edit) {
  return [edit](Ctx& c) {
    std::string text = ledger_record(1).dump() + "\n" + ledger_record(2).dump() + "\n";
    edit(text);
    c.file = c.root / "ledger.jsonl";
    write_bytes(c.file, text);
  };
}

// The second line of a ledger text replaced by `line`.
std::function<void(std::string&)> second_line(std::string line) {
  return [line](std::string& text) {
    const size_t a = text.find('\n') + 1, b = text.find('\n', a);
    text.replace(a, b - a, line);
  };
}

// ---- the table ----------------------------------------------------------------------------------

constexpr const char* kTiny = "tiny-portable-fp32";
constexpr const char* kXnn = "tiny-xnnpack-fp32";
constexpr const char* kMethods = "methods/encdec-portable-fp32";
constexpr const char* kPtd = "ptd/extweights-portable-fp32";
constexpr const char* kDyn = "shapes/dynbatch-portable-fp32";

Op open_op() {
  return lib([](Ctx& c) { (void)open_bundle(c.bundle); });
}
Op read_npy_op() {
  return lib([](Ctx& c) { (void)read_npy(c.file); });
}
Op read_xfail_op() {
  return lib([](Ctx& c) { (void)read_xfail(c.file); });
}
Op read_ledger_op() {
  return lib([](Ctx& c) { (void)read_ledger(c.file); });
}
// run_bundle with input x = root/FILE (the golden case0 input when FILE is empty).
Op run_op(std::string file = "", std::string input = "x") {
  return lib([file, input](Ctx& c) {
    const fs::path in = file.empty() ? goldens(c) / "case0.in.x.npy" : c.root / file;
    (void)run_bundle(c.bundle, {{input, in}});
  });
}
std::string golden_x(Ctx& c) { return q(goldens(c) / "case0.in.x.npy"); }

}  // namespace

std::vector<Case> catalog() {
  std::vector<Case> v;
  auto add = [&](Case c) { v.push_back(std::move(c)); };

  // -- programs: truncated, bit-flipped, missing, replaced (the hash check catches each) --------
  add({"pte_truncated_to_half", kTiny, truncate("NAME.pte", 2580), open_op(), "artifact-mismatch", "",
       "2580 bytes, the manifest says 5160"});
  add({"pte_truncated_to_zero", kTiny, truncate("NAME.pte", 0), replay_op(), "artifact-mismatch", "bundle-invalid",
       "0 bytes, the manifest says"});
  add({"pte_last_byte_cut", kXnn, truncate("NAME.pte", -1), replay_op(), "artifact-mismatch", "bundle-invalid",
       "the manifest says"});
  add({"pte_byte_appended", kTiny, [](Ctx& c) { std::ofstream(pte(c), std::ios::app) << 'x'; }, open_op(),
       "artifact-mismatch", "", "5161 bytes, the manifest says 5160"});
  add({"pte_bit_flipped_in_header", kTiny, flip("NAME.pte", 4), open_op(), "artifact-mismatch", "", "SHA-256"});
  add({"pte_bit_flipped_in_middle", kXnn, flip("NAME.pte", 1000), replay_op(), "artifact-mismatch",
       "bundle-invalid", "SHA-256"});
  add({"pte_bit_flipped_last_byte_cli_parity", kTiny, flip("NAME.pte", -1),
       cli([](Ctx& c) { return "parity --no-ledger " + q(c.bundle); }), "artifact-mismatch", "", "SHA-256"});
  add({"pte_missing", kTiny, [](Ctx& c) { fs::remove(pte(c)); }, open_op(), "artifact-mismatch", "",
       "missing (the manifest names it as the artifact)"});
  add({"pte_replaced_by_a_directory", kTiny,
       [](Ctx& c) {
         fs::remove(pte(c));
         fs::create_directory(pte(c));
       },
       open_op(), "artifact-mismatch", "", "a directory, not a file"});
  add({"pte_is_a_symlink_to_its_own_bytes", kTiny,
       [](Ctx& c) {
         fs::rename(pte(c), c.root / "elsewhere.pte");
         fs::create_symlink(c.root / "elsewhere.pte", pte(c));
       },
       open_op(), "artifact-mismatch", "", "a symbolic link"});
  add({"methods_pte_bit_flipped", kMethods, flip("NAME.pte", 200), replay_op(), "artifact-mismatch",
       "bundle-invalid", "SHA-256"});
  add({"ptd_truncated", kPtd, truncate("NAME.ptd", -16), open_op(), "artifact-mismatch", "", ".ptd"});
  add({"ptd_missing", kPtd, [](Ctx& c) { fs::remove(c.bundle / (name_of(c) + ".ptd")); }, replay_op(),
       "artifact-mismatch", "bundle-invalid", "missing (the manifest names it as the data file)"});
  add({"ptd_is_a_symlink", kPtd,
       [](Ctx& c) {
         fs::rename(c.bundle / (name_of(c) + ".ptd"), c.root / "elsewhere.ptd");
         fs::create_symlink(c.root / "elsewhere.ptd", c.bundle / (name_of(c) + ".ptd"));
       },
       open_op(), "artifact-mismatch", "", "a symbolic link (the manifest names it as the data file"});
  add({"pte_truncated_cli_run_writes_no_out", kTiny, truncate("NAME.pte", 100),
       cli([](Ctx& c) {
         c.absent.push_back(c.root / "out");
         return "run " + q(c.bundle) + " --input x=" + golden_x(c) + " --out " + q(c.root / "out");
       }),
       "artifact-mismatch", "", "100 bytes"});

  // -- the manifest as a document ----------------------------------------------------------------
  add({"manifest_missing", kTiny, [](Ctx& c) { fs::remove(manifest(c)); }, open_op(), "manifest-invalid", "",
       "no manifest"});
  add({"manifest_empty_file", kTiny, manifest_text([](std::string& t) { t.clear(); }), open_op(),
       "manifest-invalid", "", "not valid JSON"});
  add({"manifest_cut_in_half", kTiny, manifest_text([](std::string& t) { t.resize(t.size() / 2); }), replay_op(),
       "manifest-invalid", "bundle-invalid", "not valid JSON"});
  add({"manifest_top_level_array", kTiny, manifest_text([](std::string& t) { t = "[" + t + "]"; }), open_op(),
       "manifest-invalid", "", "expected a JSON object"});
  add({"manifest_string_not_utf8", kTiny,
       manifest_text([](std::string& t) { t.replace(t.find("\"tiny\""), 6, "\"ti\xff\xfeny\""); }), open_op(),
       "manifest-invalid", "", "not valid JSON"});
  add({"manifest_number_out_of_range", kTiny,
       manifest_text([](std::string& t) { t.replace(t.find("\"bytes\": 5160"), 13, "\"bytes\": 1e400"); }),
       open_op(), "manifest-invalid", "", "1e400"});
  add({"manifest_is_a_symlink", kTiny,
       [](Ctx& c) {
         fs::rename(manifest(c), c.root / "elsewhere.etproof.json");
         fs::create_symlink(c.root / "elsewhere.etproof.json", manifest(c));
       },
       open_op(), "manifest-invalid", "", "a symbolic link"});
  add({"two_manifests_none_named_for_the_folder", kTiny,
       [](Ctx& c) {
         fs::rename(manifest(c), c.bundle / "a.etproof.json");
         fs::copy_file(c.bundle / "a.etproof.json", c.bundle / "b.etproof.json");
       },
       open_op(), "manifest-invalid", "", "several manifests"});

  // -- every field kind: missing, wrong type, out of range, bad text ------------------------------
  add({"schema_version_missing", kTiny, erase("/schema_version"), open_op(), "manifest-invalid", "",
       "schema_version: missing"});
  add({"schema_version_a_string", kTiny, set("/schema_version", "1"), open_op(), "manifest-invalid", "",
       "schema_version: expected an integer, found a string"});
  add({"schema_version_a_float", kTiny, set("/schema_version", 1.5), open_op(), "manifest-invalid", "",
       "schema_version: expected an integer"});
  add({"schema_version_unknown_3", kTiny, set("/schema_version", 3), open_op(), "manifest-invalid", "",
       "schema_version: 3 is not supported"});
  add({"schema_version_0", kTiny, set("/schema_version", 0), open_op(), "manifest-invalid", "",
       "schema_version: 0 is not supported"});
  add({"schema_version_negative_huge", kTiny, set("/schema_version", INT64_MIN), open_op(), "manifest-invalid", "",
       "is not supported"});
  add({"name_missing", kTiny, erase("/name"), open_op(), "manifest-invalid", "", "name: missing"});
  add({"name_empty", kTiny, set("/name", ""), open_op(), "manifest-invalid", "", "name: '' does not match ^[A-Za-z0-9._-]+$"});
  add({"name_escapes_with_dotdot", kTiny, set("/name", "../x"), open_op(), "manifest-invalid", "",
       "name: '../x' does not match ^[A-Za-z0-9._-]+$"});
  add({"name_is_not_the_file_name", kTiny, set("/name", "other-portable-fp32"), open_op(), "manifest-invalid", "",
       "does not match the manifest's file name"});
  add({"artifact_missing", kTiny, erase("/artifact"), open_op(), "manifest-invalid", "", "artifact: missing"});
  add({"artifact_a_string", kTiny, set("/artifact", "tiny-portable-fp32.pte"), open_op(), "manifest-invalid", "",
       "artifact: expected an object"});
  add({"artifact_file_escapes_dotdot_slash", kTiny, set("/artifact/file", "../x.pte"), open_op(),
       "manifest-invalid", "", "artifact.file: '../x.pte' does not match ^[A-Za-z0-9._-]+$"});
  add({"artifact_file_absolute", kTiny, set("/artifact/file", "/etc/passwd"), open_op(), "manifest-invalid", "",
       "artifact.file: '/etc/passwd' does not match"});
  add({"artifact_file_dotdot", kTiny, set("/artifact/file", ".."), open_op(), "manifest-invalid", "",
       "artifact.file: is not allowed here ('.' and '..' are not file names)"});
  add({"artifact_file_empty", kTiny, set("/artifact/file", ""), open_op(), "manifest-invalid", "",
       "artifact.file: '' does not match"});
  add({"artifact_file_backslash", kTiny, set("/artifact/file", "..\\x.pte"), open_op(), "manifest-invalid", "",
       "artifact.file: '..\\x.pte' does not match"});
  add({"artifact_sha256_upper_case", kTiny,
       set("/artifact/sha256", "A6231C5BF8D5E8DE0A020AA3041F463329DEB46B10A87F8015D7F95638B5C992"), open_op(),
       "manifest-invalid", "", "artifact.sha256: 'A6231C5BF8D5E8DE0A020AA3041F463329DEB46B10A87F8015D7F95638B5C992' does not match ^[0-9a-f]{64}$"});
  add({"artifact_sha256_too_short", kTiny, set("/artifact/sha256", "a6231c5b"), open_op(), "manifest-invalid", "",
       "artifact.sha256: 'a6231c5b' does not match ^[0-9a-f]{64}$"});
  add({"artifact_sha256_of_other_bytes", kTiny, set("/artifact/sha256", std::string(64, '0')), open_op(),
       "artifact-mismatch", "", "the manifest says 0000"});
  add({"artifact_bytes_negative", kTiny, set("/artifact/bytes", -1), open_op(), "manifest-invalid", "",
       "artifact.bytes: -1 is below the minimum 0"});
  add({"artifact_bytes_a_string", kTiny, set("/artifact/bytes", "5160"), open_op(), "manifest-invalid", "",
       "artifact.bytes: expected an integer, found a string"});
  add({"artifact_bytes_above_int64", kTiny, set("/artifact/bytes", std::numeric_limits<uint64_t>::max()), open_op(),
       "manifest-invalid", "", "artifact.bytes: integer out of range"});
  add({"artifact_bytes_wrong_size", kTiny, set("/artifact/bytes", 5159), open_op(), "artifact-mismatch", "",
       "5160 bytes, the manifest says 5159"});
  add({"backend_unknown", kTiny, set("/backend", "tpu"), open_op(), "manifest-invalid", "",
       "'tpu' is not a backend etproof knows"});
  add({"backend_a_number", kTiny, set("/backend", 7), open_op(), "manifest-invalid", "",
       "backend: expected a string, found an integer"});
  add({"recipe_not_the_backends", kTiny, set("/recipe", "int8-static-per-channel"), open_op(), "manifest-invalid",
       "", "'int8-static-per-channel' is not a recipe of backend 'portable'"});
  add({"recipe_float_with_a_quantization_record", "tiny-xnnpack-int8-dynamic-per-channel", set("/recipe", "fp32"),
       open_op(), "manifest-invalid", "", "is a float recipe but the manifest records a quantization"});
  add({"recipe_unknown", kTiny, set("/recipe", "fp8"), open_op(), "manifest-invalid", "",
       "'fp8' is not a recipe of backend 'portable'"});
  add({"precision_not_the_recipes", kTiny, set("/precision", "float16"), open_op(), "manifest-invalid", "",
       "precision: 'float16' is not a precision"});
  add({"delegates_a_portable_bundle_cannot_own", kTiny, set("/delegates", json::array({"XnnpackBackend"})),
       open_op(), "manifest-invalid", "", "cannot own delegate XnnpackBackend"});
  add({"delegates_repeated", kXnn, set("/delegates", json::array({"XnnpackBackend", "XnnpackBackend"})), open_op(),
       "manifest-invalid", "", "out of order or repeated"});
  add({"delegates_empty_string", kXnn, set("/delegates", json::array({""})), open_op(), "manifest-invalid", "",
       "delegates[0]: empty string"});
  add({"delegates_differ_from_the_program", kXnn, set("/delegates", json::array()), replay_op(),
       "artifact-mismatch", "bundle-invalid", "XnnpackBackend"});
  add({"engine_name_other", kTiny, set("/engine/name", "tflite"), open_op(), "manifest-invalid", "",
       "engine.name: unknown value 'tflite' (known: 'executorch')"});
  add({"created_utc_not_a_timestamp", kTiny, set("/created_utc", "yesterday"), open_op(), "manifest-invalid", "",
       "created_utc: 'yesterday' does not match"});
  add({"created_utc_month_13", kTiny, set("/created_utc", "2026-13-45T99:99:99Z"), open_op(), "manifest-invalid",
       "", "created_utc", "accepted: is_utc_timestamp (json_reader.h) checks the digits' places only"});
  add({"toolchain_value_a_number", kTiny, set("/toolchain/torch", 2), open_op(), "manifest-invalid", "",
       "toolchain.torch: expected a string"});
  add({"operators_unsorted", kTiny, set("/operators", json::array({"aten::mul.out", "aten::add.out"})), open_op(),
       "manifest-invalid", "", "out of order or repeated"});
  add({"operators_not_an_operator_name", kTiny, set("/operators", json::array({"add"})), open_op(),
       "manifest-invalid", "", "operators[0]: 'add' does not match"});

  // -- tensors --------------------------------------------------------------------------------------
  add({"inputs_missing", kTiny, erase("/inputs"), open_op(), "manifest-invalid", "", "inputs: missing"});
  add({"input_dtype_unknown", kTiny, set("/inputs/0/dtype", "float33"), open_op(), "manifest-invalid", "",
       "inputs[0].dtype: unknown value 'float33' (known: 'float32'"});
  add({"input_shape_entry_a_string", kTiny, set("/inputs/0/shape/1", "3"), open_op(), "manifest-invalid", "",
       "inputs[0].shape[1]: expected an integer"});
  add({"input_shape_entry_below_minus_one", kTiny, set("/inputs/0/shape/0", -2), open_op(), "manifest-invalid", "",
       "inputs[0].shape[0]: -2 is below the minimum -1"});
  add({"input_name_empty", kTiny, set("/inputs/0/name", ""), open_op(), "manifest-invalid", "",
       "inputs[0].name: '' does not match"});
  add({"input_layout_unknown", kTiny, set("/inputs/0/layout", "nwhc"), open_op(), "manifest-invalid", "",
       "inputs[0].layout: unknown value 'nwhc'"});
  add({"inputs_duplicate_names", kTiny,
       [](Ctx& c) { edit_manifest(c, [](json& d) { d["inputs"].push_back(d["inputs"][0]); }); }, open_op(),
       "manifest-invalid", "", "inputs[1].name: duplicate name 'x'"});
  add({"outputs_empty", kTiny, set("/outputs", json::array()), open_op(), "manifest-invalid", "",
       "outputs: empty"});
  add({"input_shape_differs_from_the_program", kTiny, set("/inputs/0/shape/3", 17), replay_op(),
       "artifact-mismatch", "bundle-invalid", ""});
  add({"input_dtype_differs_from_the_program", kTiny, set("/inputs/0/dtype", "float16"), replay_op(),
       "artifact-mismatch", "bundle-invalid", ""});
  add({"dynamic_dim_on_a_fixed_axis", kDyn, set("/inputs/0/dynamic_dims/0/axis", 1), open_op(),
       "manifest-invalid", "", "is not a -1 (dynamic) entry of shape"});
  add({"dynamic_dim_max_below_min", kDyn, set("/inputs/0/dynamic_dims/0/max", 0), open_op(), "manifest-invalid",
       "", "is below min"});

  // -- golden cases in the manifest ------------------------------------------------------------------
  add({"golden_input_path_escapes", kTiny, set("/goldens/0/inputs/x", "../../case0.in.x.npy"), open_op(),
       "manifest-invalid", "", "goldens[0].inputs.x: '../../case0.in.x.npy' does not match"});
  add({"golden_input_path_absolute", kTiny, set("/goldens/0/inputs/x", "/tmp/case0.in.x.npy"), open_op(),
       "manifest-invalid", "", "goldens[0].inputs.x: '/tmp/case0.in.x.npy' does not match"});
  add({"golden_output_path_empty", kTiny, set("/goldens/0/outputs/y", ""), open_op(), "manifest-invalid", "",
       "goldens[0].outputs.y: '' does not match"});
  add({"golden_names_an_unknown_input", kTiny,
       [](Ctx& c) {
         edit_manifest(c, [](json& d) { d["goldens"][0]["inputs"] = {{"z", "case0.in.x.npy"}}; });
       },
       open_op(), "manifest-invalid", "", "'z' is not one of the inputs"});
  add({"golden_ids_duplicate", kTiny, set("/goldens/1/id", "case0"), open_op(), "manifest-invalid", "",
       "goldens[1].id: duplicate id 'case0'"});
  add({"golden_data_unknown", kTiny, set("/goldens/0/data", "fake"), open_op(), "manifest-invalid", "",
       "goldens[0].data: unknown value 'fake'"});
  add({"golden_files_sha256_not_hex", kTiny, set("/goldens/0/files/0/sha256", std::string(64, 'z')), open_op(),
       "manifest-invalid", "", "goldens[0].files[0].sha256"});
  add({"golden_files_one_left_out", kTiny,
       [](Ctx& c) { edit_manifest(c, [](json& d) { d["goldens"][0]["files"].erase(1); }); }, open_op(),
       "manifest-invalid", "", "must list exactly the case's input and output files"});
  add({"golden_reference_missing_though_captured", kTiny, erase("/goldens/0/references"), open_op(),
       "manifest-invalid", "", "missing (references records it as captured)"});
  add({"goldens_a_string", kTiny, set("/goldens", "case0"), open_op(), "manifest-invalid", "",
       "goldens: expected an array, found a string"});
  add({"goldens_empty", kTiny, set("/goldens", json::array()), open_op(), "manifest-invalid", "",
       "goldens: no golden case: a bundle carries at least one"});
  add({"goldens_empty_parity", kTiny, set("/goldens", json::array()), replay_op(), "manifest-invalid",
       "bundle-invalid", "no golden case"});
  add({"goldens_empty_in_a_matrix", kTiny, set("/goldens", json::array()), matrix_op(), "manifest-invalid",
       "bundle-invalid", "no golden case"});

  // -- schema 2 (several methods) ---------------------------------------------------------------------
  add({"methods_in_schema_1", kTiny, set("/methods", json::array()), open_op(), "manifest-invalid", "",
       "methods: is not a field of schema/manifest.schema.json"});
  add({"methods_empty", kMethods, set("/methods", json::array()), open_op(), "manifest-invalid", "",
       "methods: empty"});
  add({"method_name_duplicate", kMethods, set("/methods/1/name", "encode"), open_op(), "manifest-invalid", "",
       "duplicate method name 'encode'"});
  add({"method_name_not_an_identifier", kMethods, set("/methods/1/name", "de-code"), open_op(),
       "manifest-invalid", "", "methods[1].name: 'de-code' does not match"});
  add({"schema_2_with_top_level_inputs", kMethods, set("/inputs", json::array()), open_op(), "manifest-invalid",
       "", "inputs: is not a field of schema/manifest.schema.json"});
  add({"method_the_program_lacks", kMethods, set("/methods/1/name", "decode2"), replay_op(), "artifact-mismatch",
       "bundle-invalid", "decode2"});

  // -- golden files on disk -------------------------------------------------------------------------
  add({"golden_output_truncated", kTiny, truncate("NAME.goldens/case0.out.y.npy", -4), replay_op(),
       "artifact-mismatch", "bundle-invalid", "case0.out.y.npy: 140 bytes, the manifest says 144"});
  add({"golden_input_bit_flipped", kTiny, flip("NAME.goldens/case1.in.x.npy", 200), replay_op(),
       "artifact-mismatch", "bundle-invalid", "case1.in.x.npy: SHA-256"});
  add({"golden_file_missing", kTiny, [](Ctx& c) { fs::remove(goldens(c) / "case2.out.y.npy"); }, replay_op(),
       "artifact-mismatch", "bundle-invalid", "case2.out.y.npy: missing"});
  add({"golden_file_a_symlink", kTiny,
       [](Ctx& c) {
         fs::rename(goldens(c) / "case0.out.y.npy", c.root / "elsewhere.npy");
         fs::create_symlink(c.root / "elsewhere.npy", goldens(c) / "case0.out.y.npy");
       },
       replay_op(), "artifact-mismatch", "bundle-invalid", "a symbolic link"});
  add({"goldens_dir_a_symlink", kTiny,
       [](Ctx& c) {
         fs::rename(goldens(c), c.root / "elsewhere.goldens");
         fs::create_directory_symlink(c.root / "elsewhere.goldens", goldens(c));
       },
       replay_op(), "artifact-mismatch", "bundle-invalid", "a symbolic link"});
  add({"goldens_dir_missing", kTiny, [](Ctx& c) { fs::remove_all(goldens(c)); }, replay_op(), "artifact-mismatch",
       "bundle-invalid", "missing"});
  add({"golden_output_wrong_shape", kTiny, golden_rewritten("case0.out.y.npy", f32_filled({1, 5}, 0.5f)),
       replay_op(), "shape-mismatch", "bundle-invalid", "shape [1, 5], the manifest says [1, 4]"});
  add({"golden_input_wrong_rank", kTiny, golden_rewritten("case0.in.x.npy", f32_filled({3, 16, 16}, 0.5f)),
       replay_op(), "shape-mismatch", "bundle-invalid", "shape [3, 16, 16]"});
  add({"golden_output_wrong_dtype", kTiny,
       golden_rewritten("case0.out.y.npy", etproof::testing::f64({0.1, 0.2, 0.3, 0.4}, {1, 4})), replay_op(),
       "dtype-mismatch", "bundle-invalid", "dtype float64, the manifest says float32"});
  add({"golden_input_not_npy", kTiny,
       both([](Ctx& c) { write_bytes(goldens(c) / "case0.in.x.npy", "not a numpy file"); },
            [](Ctx& c) { etproof::testing::rehash_references(c.bundle); }),
       replay_op(), "npy-invalid", "bundle-invalid", "bad magic"});
  add({"golden_output_all_nan", kTiny,
       golden_rewritten("case0.out.y.npy", f32_filled({1, 4}, std::numeric_limits<float>::quiet_NaN())),
       replay_op(), "golden-invalid", "bundle-invalid", ""});
  add({"golden_input_all_inf", kTiny,
       golden_rewritten("case0.in.x.npy", f32_filled({1, 3, 16, 16}, std::numeric_limits<float>::infinity())),
       replay_op(), "golden-invalid", "bundle-invalid", ""});
  add({"reference_edited", kTiny, flip("NAME.goldens/case0.ref.float64.y.npy", -1), replay_op(),
       "artifact-mismatch", "bundle-invalid", "case0.ref.float64.y.npy"});
  add({"reference_file_missing", kTiny, [](Ctx& c) { fs::remove(goldens(c) / "case1.ref.float64.y.npy"); },
       replay_op(), "artifact-mismatch", "bundle-invalid", "case1.ref.float64.y.npy: missing"});
  add({"reference_wrong_dtype", kTiny, golden_rewritten("case0.ref.float64.y.npy", i32_filled({1, 4})),
       replay_op(), "dtype-mismatch", "bundle-invalid", "reference 'float64'"});
  add({"golden_truncated_in_a_matrix", kTiny, truncate("NAME.goldens/case1.out.y.npy", 10), matrix_op(),
       "artifact-mismatch", "bundle-invalid", "case1.out.y.npy"});
  add({"manifest_invalid_in_a_matrix", kTiny, set("/backend", "tpu"), matrix_op(), "manifest-invalid",
       "bundle-invalid", "'tpu'"});

  // -- .npy files ------------------------------------------------------------------------------------
  add({"npy_bad_magic", "", file_with("a.npy", "\x93NUMPX\x01\x00" + std::string(200, ' ')), read_npy_op(),
       "npy-invalid", "", "bad magic"});
  add({"npy_empty_file", "", file_with("a.npy", ""), read_npy_op(), "npy-invalid", "", "bad magic"});
  add({"npy_version_4", "", file_with("a.npy", npy(kF4Dict, kEightBytes, 4)), read_npy_op(), "npy-invalid", "",
       "unsupported .npy format version 4.0"});
  add({"npy_cut_in_the_header", "", file_with("a.npy", npy(kF4Dict, kEightBytes).substr(0, 30)), read_npy_op(),
       "npy-invalid", "", "truncated: header length says"});
  add({"npy_header_without_newline", "",
       [](Ctx& c) {
         std::string b = npy(kF4Dict, kEightBytes);
         b[10 + static_cast<unsigned char>(b[8]) - 1] = ' ';  // the header's last byte (its length < 256)
         file_with("a.npy", b)(c);
       },
       read_npy_op(), "npy-invalid", "", "does not end with a newline"});
  add({"npy_header_unknown_key", "",
       file_with("a.npy", npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1, }", kEightBytes)),
       read_npy_op(), "npy-invalid", "", "unexpected key 'x'"});
  add({"npy_header_missing_shape", "", file_with("a.npy", npy("{'descr': '<f4', 'fortran_order': False, }", "")),
       read_npy_op(), "npy-invalid", "", "missing key(s): 'shape'"});
  add({"npy_header_shape_not_a_tuple", "",
       file_with("a.npy", npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2), }", kEightBytes)),
       read_npy_op(), "npy-invalid", "", "is not a tuple"});
  add({"npy_header_shape_negative", "",
       file_with("a.npy", npy("{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }", kEightBytes)),
       read_npy_op(), "npy-invalid", "", "non-negative integers"});
  add({"npy_header_not_a_dict", "", file_with("a.npy", npy("['descr', '<f4']", kEightBytes)), read_npy_op(),
       "npy-invalid", "", "expected '{'"});
  add({"npy_fortran_order", "",
       file_with("a.npy", npy("{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }", kEightBytes)),
       read_npy_op(), "npy-invalid", "", "fortran_order True is not supported"});
  add({"npy_big_endian", "",
       file_with("a.npy", npy("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", kEightBytes)),
       read_npy_op(), "npy-invalid", "", "big-endian"});
  add({"npy_native_order", "",
       file_with("a.npy", npy("{'descr': '=f4', 'fortran_order': False, 'shape': (2,), }", kEightBytes)),
       read_npy_op(), "npy-invalid", "", "must be little-endian ('<')"});
  add({"npy_native_order_one_byte", "",
       file_with("a.npy", npy("{'descr': '=u1', 'fortran_order': False, 'shape': (8,), }", kEightBytes)),
       read_npy_op(), "npy-invalid", "", "uses native order '='"});
  add({"npy_dtype_complex", "",
       file_with("a.npy", npy("{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }", kEightBytes)),
       read_npy_op(), "dtype-unsupported", "", "dtype '<c8' is not one etproof carries"});
  add({"npy_dtype_string_garbage", "",
       file_with("a.npy", npy("{'descr': '<zz', 'fortran_order': False, 'shape': (1,), }", kEightBytes)),
       read_npy_op(), "dtype-unsupported", "", "'<zz'"});
  add({"npy_dtype_structured", "",
       file_with("a.npy", npy("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }", kEightBytes)),
       read_npy_op(), "dtype-unsupported", "", "structured dtype"});
  add({"npy_data_truncated", "", file_with("a.npy", npy(kF4Dict, std::string(7, '\0'))), read_npy_op(), "npy-invalid",
       "", "needs 8 bytes of data, the file has 7"});
  add({"npy_data_longer_than_shape", "", file_with("a.npy", npy(kF4Dict, std::string(12, '\0'))), read_npy_op(),
       "npy-invalid", "", "(4 extra)"});
  add({"npy_huge_shape_overflows", "",
       file_with("a.npy", npy("{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", "")),
       read_npy_op(), "npy-invalid", "", "overflows"});
  add({"npy_huge_shape_little_data", "",
       file_with("a.npy", npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776,), }", kEightBytes)),
       read_npy_op(), "npy-invalid", "", "needs 4398046511104 bytes of data, the file has 8"});
  add({"npy_dimension_beyond_int64", "",
       file_with("a.npy", npy("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }", "")),
       read_npy_op(), "npy-invalid", "", "overflows int64"});
  add({"npy_path_missing", "", [](Ctx& c) { c.file = c.root / "nothing.npy"; }, read_npy_op(), "io", "",
       "no such file"});
  add({"npy_path_a_directory", "", [](Ctx& c) { c.file = c.root; }, read_npy_op(), "io", "",
       "a directory, not a file"});
  add({"npy_path_a_symlink_loop", "",
       [](Ctx& c) {
         c.file = c.root / "loop.npy";
         fs::create_symlink(c.file, c.file);
       },
       read_npy_op(), "io", "", "a symbolic link loop"});

  // -- `etproof run` and run_bundle: inputs, outputs, flags -------------------------------------------
  add({"run_input_unknown_name", kTiny, nothing(),
       cli([](Ctx& c) { return "run " + q(c.bundle) + " --input x=" + golden_x(c) + " --input z=" + golden_x(c); }),
       "invalid-argument", "", "unknown input 'z'"});
  add({"run_input_missing", kTiny, nothing(), cli([](Ctx& c) { return "run " + q(c.bundle); }),
       "invalid-argument", "", "input 'x' not given"});
  add({"run_input_not_name_equals_file", kTiny, nothing(),
       cli([](Ctx& c) { return "run " + q(c.bundle) + " --input " + golden_x(c); }), "invalid-argument", "",
       "is not NAME=FILE.npy"});
  add({"run_input_given_twice", kTiny, nothing(),
       cli([](Ctx& c) { return "run " + q(c.bundle) + " --input x=" + golden_x(c) + " --input x=" + golden_x(c); }),
       "invalid-argument", "", "given twice"});
  add({"run_input_file_missing", kTiny, nothing(),
       cli([](Ctx& c) { return "run " + q(c.bundle) + " --input x=" + q(c.root / "no.npy"); }), "io", "",
       "no.npy"});
  add({"run_input_not_npy", kTiny, file_with("x.npy", "plain text"),
       cli([](Ctx& c) { return "run " + q(c.bundle) + " --input x=" + q(c.file); }), "npy-invalid", "",
       "bad magic"});
  add({"run_input_wrong_dtype", kTiny, input_file("x32.npy", i32_filled({1, 3, 16, 16})), run_op("x32.npy"),
       "dtype-mismatch", "", "int32"});
  add({"run_input_wrong_dtype_cli", kTiny, input_file("x32.npy", i32_filled({1, 3, 16, 16})),
       cli([](Ctx& c) { return "run " + q(c.bundle) + " --input x=" + q(c.root / "x32.npy"); }), "dtype-mismatch",
       "", "int32"});
  add({"run_input_wrong_shape", kTiny, input_file("x17.npy", f32_filled({1, 3, 16, 17}, 0.5f)), run_op("x17.npy"),
       "shape-mismatch", "", "[1, 3, 16, 17]"});
  add({"run_input_dynamic_dim_above_its_range", kDyn, input_file("x9.npy", f32_filled({9, 6}, 0.5f)),
       run_op("x9.npy"), "shape-mismatch", "", "batch"});
  add({"run_out_under_a_regular_file", kTiny, file_with("a-file", "not a directory\n"),
       cli([](Ctx& c) {
         c.absent.push_back(c.root / "a-file" / "out");
         return "run " + q(c.bundle) + " --input x=" + golden_x(c) + " --out " + q(c.root / "a-file" / "out");
       }),
       "io", "", "a-file"});
  add({"run_out_is_a_regular_file", kTiny, file_with("a-file", "not a directory\n"),
       cli([](Ctx& c) {
         return "run " + q(c.bundle) + " --input x=" + golden_x(c) + " --out " + q(c.root / "a-file");
       }),
       "io", "", "a-file"});
  add({"run_method_unknown", kMethods, nothing(),
       cli([](Ctx& c) { return "run " + q(c.bundle) + " --method nope"; }), "invalid-argument", "",
       "nope"});
  add({"run_method_missing_its_inputs", kMethods, nothing(),
       lib([](Ctx& c) {
         (void)run_bundle(c.bundle, {{"code", goldens(c) / "decode.id3.in.code.npy"}}, {}, {"decode"});
       }),
       "invalid-argument", "", "method 'decode': input 'ids' not given"});
  add({"run_input_no_selected_method_has", kMethods, nothing(),
       lib([](Ctx& c) {
         (void)run_bundle(c.bundle, {{"x", goldens(c) / "encode.batch1.in.x.npy"}}, {}, {"decode"});
       }),
       "invalid-argument", "", "unknown input 'x' (the inputs of the methods run (decode): 'code', 'ids')"});
  add({"run_bundle_path_missing", "", nothing(),
       cli([](Ctx& c) { return "run " + q(c.root / "no-such-bundle") + " --input x=" + q(c.root / "x.npy"); }),
       "io", "", "no-such-bundle"});
  add({"run_unknown_flag", kTiny, nothing(),
       cli([](Ctx& c) { return "run " + q(c.bundle) + " --input x=" + golden_x(c) + " --bogus"; }), "usage", "",
       "--bogus"});
  add({"run_out_given_no_value", kTiny, nothing(),
       cli([](Ctx& c) { return "run " + q(c.bundle) + " --input x=" + golden_x(c) + " --out"; }), "usage", "", ""});

  // -- `etproof parity`, `matrix`, `inspect`, `coverage`: paths and flag values ------------------------
  add({"parity_atol_negative", kTiny, nothing(),
       cli([](Ctx& c) { return "parity --no-ledger --atol -1 " + q(c.bundle); }), "invalid-argument", "",
       "--atol", "accepted: every case is reported DRIFT (exit 1, \"worst ratio inf of the bound\")"});
  add({"parity_rtol_negative", kTiny, nothing(),
       cli([](Ctx& c) { return "parity --no-ledger --rtol -0.5 " + q(c.bundle); }), "invalid-argument", "",
       "--rtol", "accepted: every case is reported DRIFT (exit 1)"});
  add({"parity_min_cosine_above_one", kTiny, nothing(),
       cli([](Ctx& c) { return "parity --no-ledger --min-cosine 2 " + q(c.bundle); }), "invalid-argument", "",
       "--min-cosine", "accepted: every case is reported DRIFT (exit 1, \"cosine 1-4.7e-15 < min 2\")"});
  add({"parity_atol_nan", kTiny, nothing(), cli([](Ctx& c) { return "parity --no-ledger --atol nan " + q(c.bundle); }),
       "invalid-argument", "", "--atol is NaN"});
  add({"parity_rtol_nan", kTiny, nothing(), cli([](Ctx& c) { return "parity --no-ledger --rtol NaN " + q(c.bundle); }),
       "invalid-argument", "", "--rtol is NaN"});
  add({"parity_atol_not_a_number", kTiny, nothing(),
       cli([](Ctx& c) { return "parity --no-ledger --atol abc " + q(c.bundle); }), "usage", "", "abc"});
  add({"parity_method_unknown_records_nothing", kMethods, nothing(),
       cli([](Ctx& c) {
         c.absent.push_back(c.root / "ledger.jsonl");
         return "parity --method nope --ledger " + q(c.root / "ledger.jsonl") + " " + q(c.bundle);
       }),
       "invalid-argument", "", "nope"});
  add({"parity_bundle_path_missing", "", nothing(),
       cli([](Ctx& c) { return "parity --no-ledger " + q(c.root / "no-such-bundle"); }), "io", "",
       "no-such-bundle"});
  add({"parity_given_a_golden_file", kTiny, nothing(),
       cli([](Ctx& c) { return "parity --no-ledger " + golden_x(c); }), "manifest-invalid", "", "no manifest"});
  add({"parity_ledger_is_a_directory", kTiny, [](Ctx& c) { fs::create_directory(c.root / "ledger-dir"); },
       cli([](Ctx& c) { return "parity --ledger " + q(c.root / "ledger-dir") + " " + q(c.bundle); }), "io", "",
       "ledger-dir"});
  add({"parity_budget_unknown_key", kTiny, nothing(),
       cli([](Ctx& c) { return "parity --no-ledger --budget min_snr=3 " + q(c.bundle); }), "invalid-argument", "",
       "min_snr"});
  add({"matrix_given_a_file", kTiny, nothing(), cli([](Ctx& c) { return "matrix --no-ledger " + q(pte(c)); }), "io",
       "", ".pte: a file, not a directory"});
  add({"matrix_dir_missing", "", nothing(),
       cli([](Ctx& c) { return "matrix --no-ledger " + q(c.root / "no-such-dir"); }), "io", "", "no-such-dir"});
  add({"matrix_jobs_not_a_number", kTiny, nothing(),
       cli([](Ctx& c) { return "matrix --no-ledger --jobs many " + q(c.root); }), "usage", "", ""});
  add({"inspect_dir_without_manifest", kTiny, [](Ctx& c) { fs::remove(manifest(c)); },
       cli([](Ctx& c) { return "inspect " + q(c.bundle); }), "manifest-invalid", "", "no manifest"});
  add({"measure_tolerances_margin_below_one", kTiny, nothing(),
       cli([](Ctx& c) { return "measure-tolerances --margin 0.5 " + q(c.root); }), "invalid-argument", "",
       "--margin"});
  add({"coverage_as_of_not_a_date", "", ledger_text([](std::string&) {}),
       cli([](Ctx& c) {
         c.absent.push_back(c.root / "page.md");
         return "coverage --ledger " + q(c.file) + " --as-of someday --out " + q(c.root / "page.md");
       }),
       "invalid-argument", "", "someday"});
  add({"coverage_as_of_february_30", "", ledger_text([](std::string&) {}),
       cli([](Ctx& c) {
         c.absent.push_back(c.root / "page.md");
         return "coverage --ledger " + q(c.file) + " --as-of 2026-02-30 --out " + q(c.root / "page.md");
       }),
       "invalid-argument", "", "2026-02-30", "accepted: the page is written as of a day that does not exist"});
  add({"classify_bundles_given_a_file", kTiny, nothing(),
       cli([](Ctx& c) { return "classify " + golden_x(c) + " --bundles " + q(pte(c)); }), "io", "",
       ".pte: a file, not a directory"});

  // -- xfail files -----------------------------------------------------------------------------------
  add({"xfail_not_json", "", xfail_text("{\"schema_version\": 1, \"records\": ["), read_xfail_op(), "xfail-invalid",
       "", "not valid JSON"});
  add({"xfail_top_level_array", "", xfail_text("[]"), read_xfail_op(), "xfail-invalid", "",
       "(document): expected an object, found an array"});
  add({"xfail_schema_version_missing", "", xfail_doc([](json& d) { d.erase("schema_version"); }), read_xfail_op(),
       "xfail-invalid", "", "schema_version: missing"});
  add({"xfail_schema_version_2", "", xfail_doc([](json& d) { d["schema_version"] = 2; }), read_xfail_op(),
       "xfail-invalid", "", "schema_version: must be 1, found 2"});
  add({"xfail_records_not_a_list", "", xfail_doc([](json& d) { d["records"] = "none"; }), read_xfail_op(),
       "xfail-invalid", "", "records: expected an array, found a string"});
  add({"xfail_record_reason_missing", "", xfail_doc([](json& d) { d["records"][0].erase("reason"); }),
       read_xfail_op(), "xfail-invalid", "", "records[0].reason: missing"});
  add({"xfail_record_model_empty", "", xfail_doc([](json& d) { d["records"][0]["model"] = ""; }), read_xfail_op(),
       "xfail-invalid", "", "records[0].model: empty string"});
  add({"xfail_record_half_unknown", "", xfail_doc([](json& d) { d["records"][0]["half"] = "both"; }),
       read_xfail_op(), "xfail-invalid", "", "records[0].half: unknown value 'both' (known: 'export', 'runtime')"});
  add({"xfail_record_date_month_13", "", xfail_doc([](json& d) { d["records"][0]["recorded"] = "2026-13-01"; }),
       read_xfail_op(), "xfail-invalid", "", "records[0].recorded: must be a date"});
  add({"xfail_record_date_not_a_date", "", xfail_doc([](json& d) { d["records"][0]["recorded"] = "yesterday"; }),
       read_xfail_op(), "xfail-invalid", "", "records[0].recorded"});
  add({"xfail_record_date_february_30", "", xfail_doc([](json& d) { d["records"][0]["recorded"] = "2026-02-30"; }),
       read_xfail_op(), "xfail-invalid", "", "records[0].recorded",
       "accepted: valid_date (xfail.cpp) checks day <= 31 whatever the month"});
  add({"xfail_record_unknown_field", "", xfail_doc([](json& d) { d["records"][0]["owner"] = "me"; }),
       read_xfail_op(), "xfail-invalid", "", "records[0].owner: is not a field of schema/xfail.schema.json"});
  add({"xfail_record_duplicate", "", xfail_doc([](json& d) { d["records"].push_back(xfail_record()); }),
       read_xfail_op(), "xfail-invalid", "", "records[1]: the same model/backend/recipe/half"});
  add({"xfail_cases_on_the_export_half", "",
       xfail_doc([](json& d) {
         d["records"][0]["half"] = "export";
         d["records"][0]["cases"] = {"case0"};
       }),
       read_xfail_op(), "xfail-invalid", "", "only a runtime record names cases"});
  add({"xfail_cases_empty", "", xfail_doc([](json& d) { d["records"][0]["cases"] = json::array(); }),
       read_xfail_op(), "xfail-invalid", "", "records[0].cases: empty (at least one item)"});
  add({"xfail_in_a_matrix_dir_stops_it", kTiny,
       [](Ctx& c) { write_bytes(c.root / "xfail.json", "{\"schema_version\": 1, \"records\": [{}]}"); },
       matrix_op(), "xfail-invalid", "", "records[0].model: missing"});
  add({"xfail_in_cli_matrix_records_nothing", kTiny,
       [](Ctx& c) { write_bytes(c.root / "xfail.json", "not json"); },
       cli([](Ctx& c) {
         c.absent.push_back(c.root / "ledger.jsonl");
         return "matrix --ledger " + q(c.root / "ledger.jsonl") + " " + q(c.root);
       }),
       "xfail-invalid", "", "xfail.json"});

  // -- ledgers -----------------------------------------------------------------------------------------
  add({"ledger_line_not_json", "", ledger_text(second_line("{not json")), read_ledger_op(), "ledger-invalid", "",
       "ledger.jsonl:2: "});
  add({"ledger_id_does_not_match", "",
       ledger_text([](std::string& t) {
         json r = ledger_record(2);
         r["status"] = "drifted";  // edited after the id was taken
         second_line(r.dump())(t);
       }),
       read_ledger_op(), "ledger-invalid", "", "does not match its content"});
  add({"ledger_last_line_truncated", "", ledger_text([](std::string& t) { t.resize(t.size() - 20); }),
       read_ledger_op(), "ledger-invalid", "", "ledger.jsonl:2: "});
  add({"ledger_record_lacks_status", "",
       ledger_text([](std::string& t) {
         json r = ledger_record(2);
         r.erase("status");
         second_line(finalize(r).dump())(t);
       }),
       read_ledger_op(), "ledger-invalid", "", "ledger.jsonl:2: status: missing"});
  add({"ledger_line_an_array", "", ledger_text(second_line("[1, 2]")), read_ledger_op(), "ledger-invalid", "",
       "not a JSON object"});
  add({"ledger_missing", "", [](Ctx& c) { c.file = c.root / "none.jsonl"; }, read_ledger_op(), "io", "",
       "none.jsonl"});
  add({"ledger_bad_line_cli_coverage_writes_no_page", "", ledger_text(second_line("{\"id\": 1}")),
       cli([](Ctx& c) {
         c.absent.push_back(c.root / "page.md");
         return "coverage --ledger " + q(c.file) + " --out " + q(c.root / "page.md");
       }),
       "ledger-invalid", "", "ledger.jsonl:2: "});
  add({"ledger_bad_line_run_coverage", "", ledger_text(second_line("{\"id\": \"0\"")),
       lib([](Ctx& c) {
         CoverageRequest r;
         r.ledgers = {c.file.string()};
         r.out = (c.root / "page.md").string();
         c.absent.push_back(c.root / "page.md");
         (void)run_coverage(r);
       }),
       "ledger-invalid", "", "ledger.jsonl:2: "});
  return v;
}

std::vector<Case> catalog_cases(bool needs_bundle) {
  std::vector<Case> out;
  for (Case& k : catalog())
    if (k.source.empty() != needs_bundle) out.push_back(std::move(k));
  return out;
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) { return info.param.name; }

// ---- the test -------------------------------------------------------------------------------------

// Cases print as their names (gtest would dump their bytes).
void PrintTo(const Case& k, std::ostream* os) { *os << k.name; }

TEST_P(Catalog, Case) {
  const Case& k = GetParam();
  Ctx c;
  c.root = etproof::testing::scratch_dir();
  if (!k.source.empty()) {
    const fs::path from = etproof::testing::test_bundles() / k.source;
    ETPROOF_REQUIRE_BUNDLE(from);
    c.bundle = c.root / fs::path(k.source).filename();
    fs::copy(from, c.bundle, fs::copy_options::recursive);
  }
  k.setup(c);
  const auto before = snapshot(c.root);

  const Outcome o = k.op(c);
  if (!o.skip.empty()) GTEST_SKIP() << o.skip;
  SCOPED_TRACE(k.bug.empty() ? "case " + k.name : "case " + k.name + ", a known bug: " + k.bug);

  EXPECT_NE(o.kind, "internal") << "a bug: " << o.message;
  EXPECT_NE(o.kind, "crash") << "a bug: " << o.message;
  EXPECT_EQ(o.kind, k.kind) << o.message;
  if (!k.status.empty()) {
    EXPECT_EQ(o.status, k.status) << o.message;
  }
  if (!k.needle.empty()) {
    EXPECT_NE(o.message.find(k.needle), std::string::npos) << k.needle << " not in: " << o.message;
  }
  if (o.kind != "usage" && o.kind != "none") {
    EXPECT_FALSE(o.remedy.empty()) << "no remedy: " << o.message;
  }

  EXPECT_EQ(snapshot(c.root), before) << "the operation wrote, changed or removed a file";
  for (const fs::path& p : c.absent) {
    std::error_code ec;
    EXPECT_FALSE(fs::exists(fs::symlink_status(p, ec))) << p << " was created";
  }
}

}  // namespace etproof::bad_input
