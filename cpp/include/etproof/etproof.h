// etproof/etproof.h — the umbrella header: every public header, layer by layer in the order data
// flows (docs/layout.md). Each folder etproof/LAYER/ is one library, etproof::LAYER, which links the
// layers below it; etproof::etproof is all of them. CTest layers.include_direction holds this list
// to the tree.
//
// etproof/gtest.h (EXPECT_PARITY) is not included: it needs GoogleTest, the caller's dependency.
// Include the headers you use to link only the layers you need; this one needs etproof::etproof.
#pragma once

// core (etproof::core)
#include "etproof/core/backend_table.h"
#include "etproof/core/error.h"
#include "etproof/core/labels.h"
#include "etproof/core/manifest.h"
#include "etproof/core/npy.h"
#include "etproof/core/schema.h"
#include "etproof/core/status.h"
#include "etproof/core/xfail.h"

// runtime (etproof::runtime)
#include "etproof/runtime/backend_quirks.h"
#include "etproof/runtime/bpte.h"
#include "etproof/runtime/bundle.h"
#include "etproof/runtime/emulation.h"
#include "etproof/runtime/export_half.h"
#include "etproof/runtime/isolation.h"
#include "etproof/runtime/kernels.h"
#include "etproof/runtime/openvino.h"
#include "etproof/runtime/registry.h"
#include "etproof/runtime/run.h"
#include "etproof/runtime/runtime_log.h"
#include "etproof/runtime/targets.h"

// gate (etproof::gate)
#include "etproof/gate/gate.h"
#include "etproof/gate/references.h"

// replay (etproof::replay)
#include "etproof/replay/attribute.h"
#include "etproof/replay/backends_report.h"
#include "etproof/replay/bench.h"
#include "etproof/replay/inspect.h"
#include "etproof/replay/matrix.h"
#include "etproof/replay/replay.h"
#include "etproof/replay/tolerances.h"

// evidence (etproof::evidence)
#include "etproof/evidence/coverage.h"
#include "etproof/evidence/ledger.h"
#include "etproof/evidence/rejudge.h"

// render (etproof::render)
#include "etproof/render/attribute.h"
#include "etproof/render/backends.h"
#include "etproof/render/bench.h"
#include "etproof/render/formats.h"
#include "etproof/render/inspect.h"
#include "etproof/render/junit.h"
#include "etproof/render/matrix.h"
#include "etproof/render/parity.h"
#include "etproof/render/tolerances.h"

// demo (etproof::demo)
#include "etproof/demo/classify.h"
#include "etproof/demo/image.h"

// codegen (etproof::codegen)
#include "etproof/codegen/codegen.h"
#include "etproof/codegen/typed.h"
