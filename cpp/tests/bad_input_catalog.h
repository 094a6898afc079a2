// The bad-input catalog's table and its test (bad_input_catalog.cpp), shared by the two test
// executables: unit/bad_input_catalog_test.cpp instantiates the cases that build their input from
// nothing, integration/bad_input_catalog_test.cpp those that copy an exported test bundle.
#pragma once

#include <filesystem>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace etproof::bad_input {

struct Ctx {
  std::filesystem::path root;    // the case's scratch directory: everything under it is snapshotted
  std::filesystem::path bundle;  // the copy of the case's source bundle (root / its folder name)
  std::filesystem::path file;    // the file the operation reads, where it reads one (npy, xfail, ledger)
  std::vector<std::filesystem::path> absent;  // what the refused operation must not create
};

struct Outcome {
  std::string kind;     // an ErrorKind's word; "none" (no error), "usage" (the CLI's argument
                        // parser refused), "internal", "crash"
  std::string status;   // a replay's or a matrix's status word, where the operation has one
  std::string message;  // the cause (the CLI's stderr)
  std::string remedy;
  std::string skip;     // non-empty: the case cannot run here, and why
};

using Setup = std::function<void(Ctx&)>;
using Op = std::function<Outcome(Ctx&)>;

struct Case {
  std::string name;
  std::string source;  // the test bundle copied into the scratch directory ("" for none)
  Setup setup;
  Op op;
  std::string kind;    // the expected ErrorKind word
  std::string status;  // the expected status word ("" for an operation without one)
  std::string needle;  // in the cause ("" for none)
  // Non-empty: the case fails today, for this reason (reported, to be fixed in the library); the
  // expectation above is what it should do.
  std::string bug = "";
};

// Every case of the catalog, in its order.
std::vector<Case> catalog();
// The cases that copy an exported test bundle (needs_bundle: Case::source is not empty), or the
// others, which build their input from nothing.
std::vector<Case> catalog_cases(bool needs_bundle);
// A case's test name: its own name.
std::string case_name(const ::testing::TestParamInfo<Case>& info);

// Cases print as their names (gtest would dump their bytes).
void PrintTo(const Case& k, std::ostream* os);

// TEST_P(Catalog, Case) (bad_input_catalog.cpp): one case of the catalog, run and checked.
class Catalog : public ::testing::TestWithParam<Case> {};

}  // namespace etproof::bad_input
