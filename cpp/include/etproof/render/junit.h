// etproof/render/junit.h — JUnit XML reports for CI systems (the render layer, etproof::render):
// the matrix and measure-tolerances, each as suites of test cases a CI page can show.
#pragma once

#include <string>

#include "etproof/replay/matrix.h"
#include "etproof/replay/tolerances.h"

namespace etproof {

// JUnit XML (docs/design.md §8): one testsuite per column ("MODEL BACKEND/RECIPE"), one testcase per
// cell — failure when its status fails the run (drifted, xpass, bundle-invalid, load-failed,
// run-failed, no-bound), skipped for xfail and for columns not runnable here (not-linked,
// unavailable) — plus a "not run" testsuite with one testcase per not-run line.
[[nodiscard]] std::string to_junit(const Matrix& m);

// JUnit XML: one testsuite per (recipe, precision) with one testcase per output (failure when the
// gate failed it, skipped when xfail) plus one "coverage" testcase (failure when not covered).
[[nodiscard]] std::string to_junit(const ToleranceReport& r);

}  // namespace etproof
