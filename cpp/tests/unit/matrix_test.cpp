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

namespace etproof {
namespace {

// One spelling of the cosine per column, in the grid (one model) and in the per-column tables
// (several): a column with a cosine written 1−ε (1 − 1e-10) writes its other cosines below 1 the
// same way (0.99995 as 1-5e-05), never as 0.99995 beside 1-1e-10.
TEST(MatrixTextCosine, OneSpellingPerColumn) {
  Matrix m;
  Column k{"m-xnnpack-int8", "xnnpack", "int8", "float32", {"XnnpackBackend"}, std::nullopt, "m", "x"};
  m.columns = {k};
  m.cases = {"a", "b"};
  auto cell = [](const std::string& id, double cosine) {
    Cell c;
    c.case_id = id;
    c.column = 0;
    c.status = Status::kAgreed;
    c.max_abs_error = 1e-3;
    c.cosine = cosine;
    return c;
  };
  m.cells = {cell("a", 1 - 1e-10), cell("b", 0.99995)};
  m.measured = 2;
  const std::string grid = to_text(m);
  EXPECT_NE(grid.find("1-1e-10"), std::string::npos) << grid;
  EXPECT_NE(grid.find("1-5e-05"), std::string::npos) << grid;
  EXPECT_EQ(grid.find("0.99995"), std::string::npos) << grid;
  // Two models: the per-column tables (each column's worst cosine).
  Column other = k;
  other.bundle = "n-xnnpack-int8";
  other.model = "n";
  m.columns.push_back(other);
  m.cases.push_back("c");
  Cell c = cell("c", 1 - 1e-10);
  c.column = 1;
  m.cells.push_back(c);
  const std::string tables = to_text(m);
  EXPECT_NE(tables.find("1-5e-05"), std::string::npos) << tables;
  EXPECT_EQ(tables.find("0.99995"), std::string::npos) << tables;
}

}  // namespace
}  // namespace etproof
