// The matrix (unit): an empty or missing directory, with no exported bundle. The matrix over real
// exported bundles is integration/matrix_test.cpp's.
#include "etproof/replay/matrix.h"
#include "etproof/render/matrix.h"

#include <string>

#include <gtest/gtest.h>

#include "etproof/core/error.h"
#include "test_support.h"

namespace etproof {
namespace {

namespace fs = std::filesystem;
using etproof::testing::scratch_dir;

TEST(Matrix, EmptyDirectoryMeasuresNothingAndFails) {
  const fs::path dir = scratch_dir();
  const Matrix m = build_matrix(dir);
  EXPECT_EQ(m.measured, 0u);
  EXPECT_TRUE(m.columns.empty());
  EXPECT_EQ(m.exit_code(), 1);
  EXPECT_NE(to_text(m).find("nothing was measured"), std::string::npos) << to_text(m);
}

TEST(Matrix, MissingDirectoryIsAnError) {
  try {
    (void)build_matrix(scratch_dir() / "does-not-exist");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kIo);
  }
}

}  // namespace
}  // namespace etproof
