// etproof/runtime/bpte.h — ExecuTorch's BundledProgram (.bpte) opened as a bundle.
//
// A .bpte (executorch.devtools.BundledProgram, schema bundled_program_schema.fbs of the executorch
// wheel, file identifier "BP08") carries a program with test cases per method: inputs and expected
// outputs. ExecuTorch itself and its CI carry goldens this way. etproof judges one as it judges a
// bundle: materialize_bpte writes the bundle the .bpte describes (the program as NAME.pte, a
// manifest, each test case's tensors as goldens) into a cache directory named by the .bpte's
// SHA-256, and every command, the worker and EXPECT_BUNDLE_PARITY open that (open_bundle does it
// for a path ending in .bpte; find_bundles lists the .bpte files of a directory beside its bundle
// directories).
//
// What the manifest says that the .bpte does not record, and where it comes from:
//   backend    from the program's delegates (none: portable; one id: the backend table's entry that
//              registers it, the first in table order)
//   recipe     fp32 unless BpteOptions::recipe (or $ETPROOF_BPTE_RECIPE) names one of the backend's
//   precision  the table's precision of that recipe
//   inputs/outputs  names input0…, output0… (a BundledProgram has no names), dtypes and shapes from
//              the program's method metadata; a method whose inputs or outputs are not all tensors is
//              refused (etproof carries tensors only)
//   goldens    one case per test case that has expected outputs, id caseK (METHOD.caseK with several
//              methods), its origin naming the .bpte, method and index
//   toolchain, engine version  "unknown (not recorded in a BundledProgram)"
// The bound is then the table's for that recipe and precision, judged against the golden (no
// float64 truth or emulation is carried); the report says the recipe and where it came from
// (the manifest's `model`: "NAME.bpte (ExecuTorch BundledProgram; recipe R: SOURCE)").
#pragma once

#include <filesystem>
#include <string>

namespace etproof {

struct BpteOptions {
  // The recipe to judge by; "" = $ETPROOF_BPTE_RECIPE, else fp32. Must be one of the backend's in
  // the table (Error{kInvalidArgument} otherwise, listing them).
  std::string recipe;
  // Where bundles are materialized; "" = $ETPROOF_BPTE_CACHE, else $XDG_CACHE_HOME/etproof/bpte,
  // else ~/.cache/etproof/bpte, else the system's temporary directory.
  std::filesystem::path cache_dir;
};

// True for a path whose file name ends in ".bpte" (the extension ExecuTorch's schema declares).
bool is_bpte_path(const std::filesystem::path& path);

// Writes (once per .bpte content and recipe) and returns the bundle directory the .bpte describes:
// CACHE/<first 16 hex digits of its SHA-256>-<recipe>/NAME, NAME the file's stem with characters
// outside [A-Za-z0-9._-] replaced by '_'. Written into a temporary directory and renamed into
// place, so concurrent callers (matrix's workers) see it whole or not at all.
// Throws Error{kIo} (unreadable file, unwritable cache), Error{kManifestInvalid} (not a
// BundledProgram: its flatbuffer fails verification or its identifier is not BP08; no program; no
// test case with expected outputs; a test value that is not a tensor, or whose bytes do not fit
// its dtype and sizes), Error{kLoadFailed} (ExecuTorch refuses the embedded program, or a method
// the test suites name is not in it), Error{kInvalidArgument} (a recipe the backend has not).
std::filesystem::path materialize_bpte(const std::filesystem::path& bpte, const BpteOptions& options = {});

}  // namespace etproof
