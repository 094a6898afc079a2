// `matrix --format NAME` (unit): the command's --format choices are the matrix's table
// (etproof/render/matrix.h matrix_renderers), and a name not in it is a usage error. The formats
// printed on real bundles are integration/matrix_formats_test.cpp's.
#include <string>

#include <gtest/gtest.h>

#include "etproof/render/matrix.h"
#include "test_support.h"

namespace etproof {
namespace {

using Result = etproof::testing::CliResult;

Result cli(const std::string& args) { return etproof::testing::run_etproof(args); }

// The help of --format lists every row of the table (its name and help, the first the default); a
// name not in it is a usage error.
TEST(MatrixFormats, FormatChoicesAreTheTables) {
  const Result help = cli("matrix --help");
  ASSERT_EQ(help.rc, 0) << help.err;
  const Renderers<Matrix> table = matrix_renderers();
  for (const Renderer<Matrix>& r : table) {
    const std::string choice =
        std::string(r.name) + (&r == &table.front() ? " (default): " : ": ") + std::string(r.help);
    // The help wraps long descriptions (WrappingFormatter): found whichever line it broke on.
    EXPECT_NE(etproof::testing::unwrapped(help.out).find(choice), std::string::npos) << choice << "\n" << help.out;
  }
  EXPECT_EQ(cli("matrix --format xml").rc, 2);
  EXPECT_EQ(cli("inspect x --format junit").rc, 2);  // inspect has no JUnit
}

}  // namespace
}  // namespace etproof
