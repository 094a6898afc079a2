// The backend-coverage page: rendered from constructed ledgers (stale by age and by toolchain,
// refused, never run, xfail, two machines merged), and `etproof coverage --check` on the
// committed page and on a modified copy.
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "etproof/core/backend_table.h"
#include "etproof/evidence/coverage.h"
#include "etproof/core/error.h"
#include "etproof/evidence/ledger.h"
#include "etproof/core/status.h"
#include "test_support.h"

namespace fs = std::filesystem;
using etproof::testing::quote;
using etproof::testing::slurp;
using nlohmann::json;
using namespace etproof;
using etproof::testing::scratch_dir;

namespace {

const json kMachineA = {{"os", "Debian GNU/Linux 12 (bookworm)"}, {"kernel", "Linux 6.1"},
                        {"cpu", "Intel Xeon"}, {"cores", 2}, {"arch", "x86_64"}};
const json kMachineB = {{"os", "macOS 15.1"}, {"kernel", "Darwin 24.1"}, {"cpu", "Apple M3"},
                        {"cores", 8}, {"arch", "arm64"}};
const json kToolchain = {{"etproof", "0.1.0"}, {"executorch", "1.5.1"}};

json rec(const json& machine, const std::string& time, const std::string& kind,
         const std::string& half, const std::string& backend, const std::string& status,
         const std::string& reason = "", const json& numbers = nullptr,
         const json& toolchain = kToolchain) {
  json r = {{"schema", 1}, {"time_utc", time}, {"kind", kind}, {"command", "etproof " + kind},
            {"machine", machine}, {"toolchain", toolchain}, {"etproof_commit", "0123456789ab"},
            {"etproof_commit_source", "git"}, {"half", half}, {"backend", backend},
            {"status", status}};
  if (kind != "backends") {
    r["model"] = "efficientnet_lite0";
    r["recipe"] = "fp32";
    r["precision"] = "float32";
  }
  if (!reason.empty()) r["reason"] = reason;
  if (!numbers.is_null()) r["numbers"] = numbers;
  return finalize(r);
}

CoverageOptions opts() {
  CoverageOptions o;
  o.toolchain = kToolchain;
  o.sources = {"evidence/ledger.jsonl"};
  o.regenerate = "etproof coverage --ledger evidence/ledger.jsonl --out docs/backend-coverage.md";
  return o;
}

// The summary row of one backend (and machine label, when given) as the page prints it: its
// reasons cited as "(note N)".
std::string raw_row(const std::string& page, const std::string& key, const std::string& machine = "") {
  std::istringstream in(page.substr(page.find("## Summary")));
  for (std::string l; std::getline(in, l);)
    if (l.rfind("| `" + key + "` ", 0) == 0 && (machine.empty() || l.find(machine) != std::string::npos))
      return l;
  return "";
}

// The text of note N under the summary table ("" when there is none).
std::string note_text(const std::string& page, int n) {
  const std::string head = "\n" + std::to_string(n) + ". ";
  const auto at = page.find(head, page.find("\nNotes:\n"));
  if (at == std::string::npos) return "";
  return page.substr(at + head.size(), page.find('\n', at + head.size()) - at - head.size());
}

// The row with each "STATUS (note N)" read as "STATUS: REASON", the reason in full from its note.
std::string row(const std::string& page, const std::string& key, const std::string& machine = "") {
  std::string r = raw_row(page, key, machine);
  for (size_t at; (at = r.find(" (note ")) != std::string::npos;) {
    const size_t end = r.find(')', at);
    const int n = std::stoi(r.substr(at + 7, end - at - 7));
    r = r.substr(0, at) + ": " + note_text(page, n) + r.substr(end + 1);
  }
  return r;
}

// The evidence section of one backend.
std::string section(const std::string& page, const std::string& key) {
  const auto b = page.find("### `" + key + "`");
  if (b == std::string::npos) return "";
  return page.substr(b, page.find("\n### ", b + 1) - b);
}

using CliRun = etproof::testing::CliResult;

CliRun cli_in(const fs::path& cwd, const std::string& args) {
  return etproof::testing::run_etproof(args, "", cwd);
}

}  // namespace

TEST(Coverage, RunEvidenceIsWorksExportAloneIsOnlyLowers) {
  const json nums = {{"cases", 6}, {"cosine", 0.99991}, {"sqnr_db", 38.21}, {"max_abs_error", 0.05}};
  const std::vector<json> records = {
      rec(kMachineA, "2026-11-29T10:00:00Z", "matrix", "export", "xnnpack", "exported"),
      rec(kMachineA, "2026-11-29T10:00:00Z", "matrix", "runtime", "xnnpack", "agreed", "", nums),
      rec(kMachineA, "2026-11-29T10:00:00Z", "matrix", "export", "coreml", "exported"),
      rec(kMachineA, "2026-11-29T10:00:00Z", "matrix", "runtime", "coreml", "not-linked",
          "CoreMLBackend is not linked into this binary")};
  const std::string page = render_coverage(records, opts());
  const std::string x = row(page, "xnnpack");
  EXPECT_NE(x.find("**works**"), std::string::npos) << x;
  EXPECT_NE(x.find("agreed: 1 model, 6 cases; worst SQNR 38.2 dB, cosine 0.99991 (2026-11-29)"),
            std::string::npos) << x;
  EXPECT_NE(x.find(machine_label(kMachineA)), std::string::npos) << x;
  const std::string c = row(page, "coreml");
  EXPECT_EQ(c.find("works"), std::string::npos) << c;
  EXPECT_NE(c.find("| lowers (not run: not-linked) |"), std::string::npos) << c;
  EXPECT_NE(c.find("not-linked: CoreMLBackend is not linked into this binary"), std::string::npos) << c;
  // A parity run and a matrix run of the same bundle in the same second count its cases once.
  auto twice = records;
  json again = records[1];
  again.erase("id");
  again["kind"] = "parity";
  again["numbers"]["case_ids"] = {"a", "b", "c", "d", "e", "f"};
  twice[1]["numbers"]["case_ids"] = {"a", "b", "c", "d", "e", "f"};
  twice.push_back(finalize(again));
  EXPECT_NE(row(render_coverage(twice, opts()), "xnnpack").find("1 model, 6 cases"), std::string::npos)
      << row(render_coverage(twice, opts()), "xnnpack");
  // Pure function of the records: no wall clock, no order dependence.
  std::vector<json> reversed(records.rbegin(), records.rend());
  EXPECT_EQ(render_coverage(reversed, opts()), page);
  EXPECT_NE(page.find("4 records from 1 machine kind, 2026-11-29 to 2026-11-29"), std::string::npos);
}

// One row per recipe: an int8 recipe's SQNR is never reported as the backend's fp32 numbers, and
// the one-operation probe has its own row.
TEST(Coverage, EachRecipeHasItsOwnRowAndNumbers) {
  auto with_recipe = [](json r, const std::string& recipe) {
    r["recipe"] = recipe;
    r.erase("id");
    return finalize(r);
  };
  const std::vector<json> records = {
      rec(kMachineA, "2026-11-29T10:00:00Z", "matrix", "runtime", "xnnpack", "agreed", "",
          {{"cases", 6}, {"sqnr_db", 110.0}, {"cosine", 1.0}}),
      with_recipe(rec(kMachineA, "2026-11-29T10:00:00Z", "matrix", "runtime", "xnnpack", "agreed", "",
                      {{"cases", 6}, {"sqnr_db", 10.9}, {"cosine", 0.96}}),
                  "int8-static-per-channel"),
      rec(kMachineA, "2026-11-29T10:00:00Z", "backends", "runtime", "xnnpack", "agreed", "",
          {{"sqnr_db", 140.0}})};
  const std::string page = render_coverage(records, opts());
  std::vector<std::string> rows;
  std::istringstream in(page.substr(page.find("## Summary")));
  for (std::string l; std::getline(in, l);)
    if (l.rfind("| `xnnpack` ", 0) == 0) rows.push_back(l);
  ASSERT_EQ(rows.size(), 3u) << page;
  EXPECT_NE(rows[0].find("| fp32 |"), std::string::npos) << rows[0];
  EXPECT_NE(rows[0].find("worst SQNR 110 dB"), std::string::npos) << rows[0];
  EXPECT_NE(rows[1].find("| int8-static-per-channel |"), std::string::npos) << rows[1];
  EXPECT_NE(rows[1].find("worst SQNR 10.9 dB"), std::string::npos) << rows[1];
  EXPECT_NE(rows[2].find("| probe |"), std::string::npos) << rows[2];
  EXPECT_NE(rows[2].find("agreed: probe; worst SQNR 140 dB"), std::string::npos) << rows[2];
  for (const std::string& r : rows) EXPECT_NE(r.find("**works**"), std::string::npos) << r;
}

// A claim row says what its runs were judged against, by what bound at its loosest, and what the
// recipe cost: a column judged against its emulation is not read as agreeing with the golden, and
// an output that fell back to the golden row counts against the golden.
TEST(Coverage, ClaimRowNamesWhatItWasJudgedAgainstItsBoundAndItsCost) {
  auto int8 = [](const std::string& model, const json& numbers) {
    json r = rec(kMachineA, "2026-11-29T10:00:00Z", "matrix", "runtime", "openvino", "agreed", "", numbers);
    r["model"] = model;
    r["recipe"] = "int8-static-per-channel";
    r["precision"] = "bfloat16";
    r.erase("id");
    return finalize(r);
  };
  const json widened = {{"cases", 3}, {"sqnr_db", 57.3}, {"cosine", 0.9999}, {"against", "int8-static-per-channel"},
                        {"bound", {{"atol", 1e-9}, {"rtol", 0.0}, {"min_cosine", 0.9963}, {"min_sqnr_db", 21.0}}},
                        {"cost_sqnr_db", 51.3}};
  const json fell_back = {{"cases", 7}, {"sqnr_db", 12.6}, {"cosine", 0.97}, {"against", "golden"},
                          {"bound", {{"atol", 1e-9}, {"rtol", 0.0}, {"min_cosine", 0.927113}, {"min_sqnr_db", 8.145}}},
                          {"cost_sqnr_db", 11.7}};
  const std::string both = row(render_coverage({int8("tiny", widened), int8("mobilenet_v3_small", fell_back)}, opts()),
                               "openvino");
  EXPECT_NE(both.find("against its emulation (1 model), the golden (1 model); bound at its loosest SQNR ≥ 8.14 dB, "
                      "cosine ≥ 0.927113; recipe cost SQNR down to 11.7 dB"),
            std::string::npos)
      << both;
  const std::string one = row(render_coverage({int8("tiny", widened)}, opts()), "openvino");
  EXPECT_NE(one.find("against its emulation (1 model); bound at its loosest SQNR ≥ 21 dB, cosine ≥ 0.9963; recipe "
                     "cost SQNR down to 51.3 dB"),
            std::string::npos)
      << one;
  EXPECT_EQ(one.find("the golden"), std::string::npos) << one;
  // No SQNR rule (-inf) is no floor to print; records without these numbers print none of it.
  json no_sqnr = widened;
  no_sqnr["bound"]["min_sqnr_db"] = "-inf";
  const std::string cos_only = row(render_coverage({int8("tiny", no_sqnr)}, opts()), "openvino");
  EXPECT_NE(cos_only.find("bound at its loosest cosine ≥ 0.9963;"), std::string::npos) << cos_only;
  const std::string bare = row(render_coverage({int8("tiny", {{"cases", 3}, {"sqnr_db", 57.3}})}, opts()), "openvino");
  EXPECT_EQ(bare.find("against"), std::string::npos) << bare;
  EXPECT_EQ(bare.find("bound at"), std::string::npos) << bare;
}

TEST(Coverage, EveryTableBackendIsListedAndNeverRunSaysSo) {
  const std::string page = render_coverage(
      {rec(kMachineA, "2026-11-29T10:00:00Z", "matrix", "runtime", "xnnpack", "agreed", "", {{"cases", 1}})},
      opts());
  for (const auto& e : backend_table().backends) {
    EXPECT_NE(page.find("### `" + e.key + "`"), std::string::npos) << e.key;
    if (e.key != "xnnpack") {
      EXPECT_NE(row(page, e.key).find("| — | never run | — | — |"), std::string::npos) << row(page, e.key);
      EXPECT_NE(section(page, e.key).find("Never run: no record in the ledger."), std::string::npos);
    }
  }
}

TEST(Coverage, StaleByAgeAndByToolchainAreMarked) {
  const json nums = {{"cases", 6}, {"sqnr_db", 40}};
  const std::vector<json> records = {
      // Old evidence: 150 days before the newest record.
      rec(kMachineA, "2026-07-02T10:00:00Z", "matrix", "runtime", "openvino", "agreed", "", nums),
      // Fresh, but recorded by another executorch.
      rec(kMachineA, "2026-11-29T10:00:00Z", "matrix", "runtime", "xnnpack", "agreed", "", nums,
          {{"etproof", "0.1.0"}, {"executorch", "1.4.0"}}),
      // Fresh, current toolchain.
      rec(kMachineA, "2026-11-29T10:00:00Z", "matrix", "runtime", "portable", "agreed", "", nums)};
  const std::string page = render_coverage(records, opts());
  EXPECT_NE(row(page, "openvino").find("**works** **(stale)**"), std::string::npos) << row(page, "openvino");
  EXPECT_NE(section(page, "openvino").find("stale: 150 days old"), std::string::npos) << section(page, "openvino");
  EXPECT_NE(row(page, "xnnpack").find("**(stale)**"), std::string::npos);
  EXPECT_NE(section(page, "xnnpack").find("stale: executorch 1.4.0 (now 1.5.1)"), std::string::npos);
  EXPECT_EQ(row(page, "portable").find("stale"), std::string::npos) << row(page, "portable");
  EXPECT_NE(page.find("more than 90 days older than 2026-11-29 (the newest record)"), std::string::npos);
  // --as-of and --max-age-days move the line; a later run of the same subject supersedes.
  CoverageOptions o = opts();
  o.as_of = "2026-08-01";
  EXPECT_EQ(row(render_coverage(records, o), "openvino").find("stale"), std::string::npos);
  o.as_of.reset();
  o.max_age_days = 200;
  EXPECT_EQ(row(render_coverage(records, o), "openvino").find("stale"), std::string::npos);
  auto newer = records;
  newer.push_back(rec(kMachineA, "2026-11-28T10:00:00Z", "matrix", "runtime", "openvino", "drifted",
                      "SQNR 3 dB < 20 dB", {{"cases", 6}}));
  const std::string p2 = render_coverage(newer, opts());
  EXPECT_NE(row(p2, "openvino").find("fails at run time"), std::string::npos) << row(p2, "openvino");
  EXPECT_EQ(section(p2, "openvino").find("2026-07-02"), std::string::npos);
  o.as_of = "not-a-date";
  EXPECT_THROW(render_coverage(records, o), Error);
}

TEST(Coverage, RefusalsAndXfailsKeepTheirReasons) {
  const std::vector<json> records = {
      rec(kMachineA, "2026-11-29T10:00:00Z", "backends", "export", "qnn", "refused",
          "QNN_SDK_ROOT is not set: Qualcomm AI Engine Direct SDK (QNN) not found"),
      rec(kMachineA, "2026-11-29T10:00:00Z", "matrix", "export", "vulkan", "export-refused",
          "vulkan needs the Vulkan SDK's glslc"),
      rec(kMachineA, "2026-11-29T10:00:00Z", "matrix", "runtime", "xnnpack", "agreed", "", {{"cases", 2}}),
      rec(kMachineA, "2026-11-29T10:00:00Z", "matrix", "runtime", "xnnpack", "xfail",
          "static int8 misses the int8 bound on 4 of 6 photos", {{"cases", 4}, {"sqnr_db", 4.3}}),
      rec(kMachineA, "2026-11-29T10:00:00Z", "matrix", "runtime", "openvino", "xfail",
          "known drift", {{"cases", 1}})};
  const std::string page = render_coverage(records, opts());
  EXPECT_NE(row(page, "qnn").find("| refused |"), std::string::npos) << row(page, "qnn");
  EXPECT_NE(row(page, "qnn").find("refused: QNN_SDK_ROOT is not set"), std::string::npos);
  EXPECT_NE(row(page, "vulkan").find("export-refused: vulkan needs the Vulkan SDK's glslc"), std::string::npos)
      << row(page, "vulkan");
  EXPECT_NE(row(page, "xnnpack").find("also xfail 4 cases"), std::string::npos) << row(page, "xnnpack");
  EXPECT_NE(section(page, "xnnpack").find("| xfail | 4 cases, SQNR 4.3 dB |"), std::string::npos)
      << section(page, "xnnpack");
  EXPECT_NE(section(page, "xnnpack").find("static int8 misses the int8 bound on 4 of 6 photos"),
            std::string::npos);
  EXPECT_NE(row(page, "openvino").find("known failure (xfail)"), std::string::npos) << row(page, "openvino");
  // A reason is never cut: the row cites it, the note under the table holds all of it, once.
  const std::string long_reason = "QNN_SDK_ROOT is not set: " + std::string(400, 'x') + " (end)";
  const std::string two = render_coverage(
      {rec(kMachineA, "2026-11-29T10:00:00Z", "backends", "export", "qnn", "refused", long_reason),
       rec(kMachineB, "2026-11-29T10:00:00Z", "backends", "export", "qnn", "refused", long_reason)},
      opts());
  EXPECT_NE(raw_row(two, "qnn").find("refused (note 1)"), std::string::npos) << raw_row(two, "qnn");
  EXPECT_EQ(note_text(two, 1), long_reason);
  EXPECT_EQ(note_text(two, 2), "");  // the same reason on two machines: one note
  EXPECT_EQ(two.find("…"), std::string::npos);
  const std::string xp = render_coverage(
      {rec(kMachineA, "2026-11-29T10:00:00Z", "matrix", "runtime", "openvino", "xpass",
           "unexpected pass: update or remove the xfail record", {{"cases", 1}})}, opts());
  EXPECT_NE(row(xp, "openvino").find("xpass: update the xfail record"), std::string::npos) << row(xp, "openvino");
  EXPECT_EQ(row(xp, "openvino").find("**works**"), std::string::npos);
}

// Every replay status, read back from a record: the claim follows the status vocabulary's own
// predicates (etproof/status.h), not a list of its words kept here.
TEST(Coverage, ClaimsFollowTheStatusVocabulary) {
  for (int i = 0; i <= static_cast<int>(Status::kXpass); ++i) {
    const Status st = static_cast<Status>(i);
    const std::string word(to_string(st));
    ASSERT_EQ(status_from_string(word), st);
    const std::string page = render_coverage(
        {rec(kMachineA, "2026-11-29T10:00:00Z", "matrix", "export", "xnnpack", kExported),
         rec(kMachineA, "2026-11-29T10:00:00Z", "matrix", "runtime", "xnnpack", word, "why",
             {{"cases", 1}})},
        opts());
    const std::string claim = row(page, "xnnpack");
    std::string want;
    if (st == Status::kAgreed) want = "| **works** |";
    else if (st == Status::kAgreedUndelegated) want = "| runs undelegated |";
    else if (st == Status::kXpass) want = "| agreed against an expected failure";
    else if (st == Status::kXfail) want = "| known failure (xfail) |";
    else if (st == Status::kOverBudget) want = "| faithful, recipe over budget |";  // the recipe's, not the backend's
    else if (fails_run(st) && st != Status::kExportFailed) want = "| fails at run time |";
    else want = "| lowers (not run: " + word + ") |";  // not judged and no failure of the run
    EXPECT_NE(claim.find(want), std::string::npos) << word << ": " << claim;
    EXPECT_EQ(is_agreement(st), claim.find("works") != std::string::npos ||
                                    claim.find("runs undelegated") != std::string::npos)
        << word << ": " << claim;
  }
  // The words that are not replay statuses: a registry answer, and an old ledger's probe failure.
  auto probe_row = [](const std::string& backend, const std::string& status) {
    return row(render_coverage({rec(kMachineA, "2026-11-29T10:00:00Z", "backends", "runtime",
                                    backend, status, "why")},
                               opts()),
               backend);
  };
  EXPECT_NE(probe_row("qnn", "available").find("| registered, unproven (nothing run) |"),
            std::string::npos);
  EXPECT_NE(probe_row("xnnpack", "failed").find("| fails at run time |"), std::string::npos);
}

TEST(Coverage, MergedLedgersFromTwoMachinesGetARowEach) {
  const fs::path dir = scratch_dir();
  append_records(dir / "linux.jsonl",
                 {rec(kMachineA, "2026-11-29T10:00:00Z", "matrix", "runtime", "coreml", "not-linked", "no Core ML here"),
                  rec(kMachineA, "2026-11-29T10:00:00Z", "matrix", "runtime", "xnnpack", "agreed", "", {{"cases", 6}})});
  append_records(dir / "mac.jsonl",
                 {rec(kMachineB, "2026-11-20T10:00:00Z", "matrix", "runtime", "coreml", "agreed", "", {{"cases", 6}})});
  const auto merged = merge_records({read_ledger(dir / "linux.jsonl"), read_ledger(dir / "mac.jsonl"),
                                     read_ledger(dir / "mac.jsonl")});
  ASSERT_EQ(merged.size(), 3u);
  const std::string page = render_coverage(merged, opts());
  const std::string a = machine_label(kMachineA), b = machine_label(kMachineB);
  EXPECT_NE(a, b);
  EXPECT_NE(page.find("3 records from 2 machine kinds, 2026-11-20 to 2026-11-29"), std::string::npos);
  EXPECT_NE(page.find("| " + b + " | macOS 15.1 | Apple M3 | arm64 | not recorded | 1 | Darwin 24.1 | 1 | 2026-11-20 |"),
            std::string::npos) << page;
  EXPECT_NE(row(page, "coreml", b).find("**works**"), std::string::npos) << row(page, "coreml", b);
  EXPECT_NE(row(page, "coreml", a).find("not runnable here"), std::string::npos) << row(page, "coreml", a);
  EXPECT_EQ(row(page, "xnnpack", b), "");
}

TEST(Coverage, HostsOfOneKindAreOneMachineAndFeaturesMakeAnotherKind) {
  // Three VMs of one kind (other kernel builds, other core counts) are one machine kind with
  // three hosts; the same CPU name with other kernel-selecting features is another kind.
  json vm1 = kMachineA, vm2 = kMachineA, vm3 = kMachineA;
  vm2["kernel"] = "Linux 6.1.0-99";
  vm3["kernel"] = "Linux 6.6";
  vm3["cores"] = 16;
  for (json* m : {&vm1, &vm2, &vm3}) (*m)["features"] = {"avx2", "avx512_bf16", "avx512f"};
  json amx = vm1;
  amx["features"] = {"amx_bf16", "amx_int8", "avx2", "avx512_bf16", "avx512f"};
  EXPECT_EQ(machine_label(vm1), machine_label(vm2));
  EXPECT_EQ(machine_label(vm1), machine_label(vm3));
  EXPECT_NE(machine_label(vm1), machine_label(amx));
  EXPECT_NE(machine_label(vm1), machine_label(kMachineA)) << "features not recorded: a kind of its own";
  EXPECT_EQ(machine_kind(vm3).count("kernel") + machine_kind(vm3).count("cores"), 0u);
  const std::string page = render_coverage(
      {rec(vm1, "2026-11-29T10:00:00Z", "matrix", "runtime", "xnnpack", "agreed", "", {{"cases", 6}}),
       rec(vm2, "2026-11-30T10:00:00Z", "matrix", "runtime", "xnnpack", "agreed", "", {{"cases", 6}}),
       rec(vm3, "2026-12-01T10:00:00Z", "matrix", "runtime", "portable", "agreed", "", {{"cases", 6}}),
       rec(amx, "2026-12-01T10:00:00Z", "matrix", "runtime", "xnnpack", "agreed", "", {{"cases", 6}})},
      opts());
  EXPECT_NE(page.find("4 records from 2 machine kinds"), std::string::npos) << page;
  EXPECT_NE(page.find("| " + machine_label(vm1) + " | Debian GNU/Linux 12 (bookworm) | Intel Xeon | "
                      "x86_64 | avx2 avx512_bf16 avx512f | 3 | Linux 6.1, Linux 6.1.0-99, Linux 6.6 "
                      "| 3 | 2026-11-29 to 2026-12-01 |"),
            std::string::npos) << page;
  EXPECT_NE(page.find("| " + machine_label(amx) + " | Debian GNU/Linux 12 (bookworm) | Intel Xeon | "
                      "x86_64 | amx_bf16 amx_int8 avx2 avx512_bf16 avx512f | 1 |"),
            std::string::npos) << page;
  EXPECT_NE(row(page, "xnnpack", machine_label(amx)).find("**works**"), std::string::npos);
}

TEST(Coverage, ARunInAnotherPrecisionThanTheRecipesIsARowOfItsOwn) {
  // OpenVINO computes an fp32 program in bfloat16 on a CPU with native bfloat16 and in float32
  // elsewhere: on one machine kind (features not recorded) those are two rows, never one.
  json bf16 = rec(kMachineA, "2026-11-29T10:00:00Z", "matrix", "runtime", "openvino", "agreed", "",
                  {{"cases", 6}, {"sqnr_db", 25.7}});
  bf16["precision"] = "bfloat16";
  json f32 = rec(kMachineA, "2026-12-01T10:00:00Z", "matrix", "runtime", "openvino", "agreed", "",
                 {{"cases", 6}, {"sqnr_db", 111.0}});
  const std::string page = render_coverage({finalize(bf16), f32}, opts());
  EXPECT_NE(page.find("| `openvino` OpenVINO | fp32 in bfloat16 | " + machine_label(kMachineA)),
            std::string::npos) << page;
  EXPECT_NE(page.find("| `openvino` OpenVINO | fp32 | " + machine_label(kMachineA)),
            std::string::npos) << page;
}

TEST(Coverage, AnEmptyLedgerListsEveryBackendAsNeverRun) {
  const std::string page = render_coverage({}, opts());
  EXPECT_NE(page.find("0 records from 0 machine kinds."), std::string::npos) << page;
  EXPECT_NE(page.find("No records yet."), std::string::npos);
  EXPECT_NE(row(page, "xnnpack").find("never run"), std::string::npos);
  EXPECT_EQ(page.find("| **works**"), std::string::npos);
}

TEST(Coverage, LineDiffShowsTheChangedLines) {
  EXPECT_EQ(line_diff("a\nb\n", "a\nb\n"), "");
  const std::string d = line_diff("a\nb\nc\n", "a\nB\nc\n");
  EXPECT_NE(d.find("@@ -2,1 +2,1 @@\n-b\n+B\n"), std::string::npos) << d;
}

// The committed page is what the committed ledger renders to; a modified copy fails --check.
TEST(CoverageCli, CheckPassesOnTheCommittedPageAndFailsOnAModifiedCopy) {
  const fs::path src = ETPROOF_SOURCE_DIR;
  ASSERT_TRUE(fs::exists(src / "evidence" / "ledger.jsonl"));
  const std::string args =
      "coverage --ledger evidence/ledger.jsonl --out docs/backend-coverage.md --check";
  const CliRun committed = cli_in(src, args);
  EXPECT_EQ(committed.rc, 0) << committed.err;
  EXPECT_NE(committed.err.find("matches the ledger"), std::string::npos) << committed.err;

  const fs::path copy = scratch_dir();
  fs::create_directories(copy / "evidence");
  fs::create_directories(copy / "docs");
  fs::copy_file(src / "evidence" / "ledger.jsonl", copy / "evidence" / "ledger.jsonl");
  std::string page = slurp(src / "docs" / "backend-coverage.md");
  const auto at = page.find("**works**");
  ASSERT_NE(at, std::string::npos);
  page.replace(at, 9, "**works perfectly**");
  std::ofstream(copy / "docs" / "backend-coverage.md", std::ios::binary) << page;
  const CliRun modified = cli_in(copy, args);
  EXPECT_EQ(modified.rc, 1) << modified.err;
  EXPECT_NE(modified.err.find("-"), std::string::npos);
  EXPECT_NE(modified.err.find("works perfectly"), std::string::npos) << modified.err;
  EXPECT_NE(modified.err.find("remedy: etproof coverage --ledger evidence/ledger.jsonl --out "
                              "docs/backend-coverage.md"),
            std::string::npos) << modified.err;

  // Writing renders the same page; a corrupt ledger is a typed error with its line number.
  const CliRun written = cli_in(copy, "coverage --ledger evidence/ledger.jsonl --out docs/backend-coverage.md");
  EXPECT_EQ(written.rc, 0) << written.err;
  EXPECT_EQ(slurp(copy / "docs" / "backend-coverage.md"), slurp(src / "docs" / "backend-coverage.md"));
  std::ofstream(copy / "evidence" / "ledger.jsonl", std::ios::app) << "{\"truncated\": \n";
  const CliRun corrupt = cli_in(copy, "coverage --ledger evidence/ledger.jsonl");
  EXPECT_EQ(corrupt.rc, 2);
  EXPECT_NE(corrupt.err.find("error [ledger-invalid]: evidence/ledger.jsonl:"), std::string::npos) << corrupt.err;
  EXPECT_NE(corrupt.err.find("remedy:"), std::string::npos);
}
