// etproof/etproof.h — the umbrella header: every public header of the three libraries.
//
//   core      (etproof::core)      error.h status.h npy.h manifest.h bundle.h registry.h
//                                  backend_table.h runtime_log.h gate.h xfail.h replay.h
//                                  matrix.h tolerances.h backends_report.h inspect.h labels.h
//                                  run.h
//   evidence  (etproof::evidence)  ledger.h coverage.h junit.h
//   demo      (etproof::demo)      image.h classify.h
//
// etproof/gtest.h (EXPECT_PARITY) is not included: it needs GoogleTest, the caller's dependency.
// Include the headers you use to link only the part you need; this one needs etproof::etproof.
#pragma once

#include "etproof/error.h"
#include "etproof/status.h"
#include "etproof/npy.h"
#include "etproof/manifest.h"
#include "etproof/bundle.h"
#include "etproof/registry.h"
#include "etproof/backend_table.h"
#include "etproof/runtime_log.h"
#include "etproof/gate.h"
#include "etproof/xfail.h"
#include "etproof/replay.h"
#include "etproof/attribute.h"
#include "etproof/matrix.h"
#include "etproof/tolerances.h"
#include "etproof/backends_report.h"
#include "etproof/inspect.h"
#include "etproof/labels.h"
#include "etproof/run.h"

#include "etproof/ledger.h"
#include "etproof/coverage.h"
#include "etproof/junit.h"

#include "etproof/image.h"
#include "etproof/classify.h"
