// The matrix in a binary WITHOUT any delegate: real delegated programs (XNNPACK, OpenVINO) are
// `not-linked`, by name, listed as not run with the reason; the portable column is still measured
// and agrees.
#include <gtest/gtest.h>

#include "etproof/replay/matrix.h"
#include "etproof/render/matrix.h"
#include "../test_support.h"

namespace etproof {
namespace {

TEST(NotLinkedMatrix, XnnpackColumnsAreNotLinkedByNameAndPortableStillAgrees) {
  const auto dir = testing::test_bundles();
  ETPROOF_REQUIRE_BUNDLE(dir / "tiny-xnnpack-fp32");
  const Matrix m = build_matrix(dir);
  size_t not_linked = 0, agreed = 0;
  for (const Cell& c : m.cells) {
    const Column& col = m.columns.at(c.column);
    if (col.backend != "portable") {
      EXPECT_EQ(c.status, CellStatus::kNotLinked) << c.case_id << ": " << c.detail;
      for (const std::string& id : col.delegates)
        EXPECT_NE(c.detail.find(id), std::string::npos) << c.detail;
      ++not_linked;
    } else {
      EXPECT_EQ(c.status, CellStatus::kAgreed) << c.case_id << ": " << c.detail;
      ++agreed;
    }
  }
  EXPECT_GT(not_linked, 0u);
  EXPECT_EQ(agreed, m.measured);
  EXPECT_GT(m.measured, 0u);
  size_t listed = 0;
  for (const NotRun& n : m.not_run)
    if (n.backend == "xnnpack") {
      EXPECT_EQ(n.status, CellStatus::kNotLinked);
      EXPECT_NE(n.reason.find("XnnpackBackend"), std::string::npos) << n.reason;
      ++listed;
    }
  EXPECT_EQ(listed, 2u) << to_text(m);  // fp32 and int8-dynamic-per-channel
  for (const NotRun& n : m.not_run) EXPECT_EQ(n.status, CellStatus::kNotLinked) << n.reason;
}

}  // namespace
}  // namespace etproof
