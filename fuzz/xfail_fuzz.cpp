// fuzz/xfail_fuzz.cpp — the expected-failure reader (etproof/xfail.h, DIR/xfail.json) on arbitrary
// bytes; the records it accepts are then matched as the replay engine and the matrix match them.
#include "etproof/core/xfail.h"
#include "fuzz_support.h"

namespace {

void one(const uint8_t* data, size_t size) {
  static etproof::fuzz::MemFile file("xfail");
  const auto records = etproof::read_xfail(file.write(data, size));
  for (const auto& r : records) {
    (void)etproof::record_label(r);
    (void)etproof::xfail_matches_column(r, r.model, r.model + "-" + r.backend + "-" + r.recipe,
                                        r.backend, r.recipe);
    for (const auto& c : r.cases) (void)etproof::xfail_covers_case(r, c);
    (void)etproof::find_runtime_xfail(records, r.model, r.model, r.backend, r.recipe,
                                      r.cases.empty() ? "case" : r.cases.front());
    (void)etproof::model_of_bundle(r.model, r.backend, r.recipe);
  }
}

}  // namespace

ETPROOF_FUZZ_JSON_TARGET(one)
