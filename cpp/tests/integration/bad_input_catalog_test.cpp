// The bad-input catalog (bad_input_catalog.cpp) (integration): its cases on a scratch copy of an
// exported test bundle (Case::source), broken one way each. Those that build their input from
// nothing are unit/bad_input_catalog_test.cpp's.
#include <gtest/gtest.h>

#include "bad_input_catalog.h"

namespace etproof::bad_input {
namespace {

INSTANTIATE_TEST_SUITE_P(BadInput, Catalog, ::testing::ValuesIn(catalog_cases(true)), case_name);

}  // namespace
}  // namespace etproof::bad_input
