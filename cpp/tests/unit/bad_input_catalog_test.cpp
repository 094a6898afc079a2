// The bad-input catalog (bad_input_catalog.cpp) (unit): its cases that build their input from
// nothing (a .npy, an xfail file, a ledger, a missing path), and the table's own size and names.
// The cases on a copy of an exported test bundle are integration/bad_input_catalog_test.cpp's.
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "bad_input_catalog.h"

namespace etproof::bad_input {
namespace {

INSTANTIATE_TEST_SUITE_P(BadInput, Catalog, ::testing::ValuesIn(catalog_cases(false)), case_name);

// The table holds the catalog's size and distinct names (issue 11 asks for at least 60 cases).
TEST(BadInputCatalog, HasAtLeastSixtyDistinctCases) {
  const auto cases = catalog();
  EXPECT_GE(cases.size(), 60u);
  std::set<std::string> names;
  for (const Case& k : cases) EXPECT_TRUE(names.insert(k.name).second) << "duplicate case " << k.name;
}

}  // namespace
}  // namespace etproof::bad_input
