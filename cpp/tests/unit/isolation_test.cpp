// Worker processes (etproof/isolation.h) (unit): this build's worker is found beside the test
// binary. The crashing and limited programs run through it are integration/isolation_test.cpp's.
#include <filesystem>

#include <gtest/gtest.h>

#include "etproof/runtime/isolation.h"

namespace etproof {
namespace {

namespace fs = std::filesystem;

TEST(Isolation, FindsTheWorkerOfThisBuild) {
  const fs::path w = find_worker();
  EXPECT_EQ(w.filename(), "etproof-worker");
  EXPECT_TRUE(fs::exists(w));
}

}  // namespace
}  // namespace etproof
