// Private: a bundle's identity as its manifest records it, copied into a report (ParityReport,
// BenchReport): one copy of the fields the ledger's records and the renderers read.
#pragma once

#include "etproof/core/manifest.h"

namespace etproof::detail {

template <class Report>
void copy_identity(Report& r, const Manifest& m) {
  r.bundle = m.name;
  r.model = m.model;
  r.backend = m.backend;
  r.recipe = m.recipe;
  r.precision = m.precision;
  r.bundle_sha256 = m.artifact.sha256;
  r.bundle_created_utc = m.created_utc;
  r.bundle_toolchain = m.toolchain;
  r.delegates = m.delegates;
}

}  // namespace etproof::detail
