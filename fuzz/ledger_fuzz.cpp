// fuzz/ledger_fuzz.cpp — the evidence-ledger reader (etproof/ledger.h) and the coverage page
// rendered from what it accepts (etproof/coverage.h), on arbitrary bytes.
//
// A record's `id` is a hash of its content, so almost every mutation would stop at the id
// check. When the input's first byte is odd, the harness first gives each line that parses as
// a JSON object its correct id (finalize()), so the fuzzer also reaches what lies behind that
// check: merging and the coverage page over hostile records. An even first byte: the bytes
// after it are read as they are.
#include <sstream>
#include <string>

#include "etproof/evidence/coverage.h"
#include "etproof/evidence/ledger.h"
#include "fuzz_support.h"

namespace {

std::string with_ids(const uint8_t* data, size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  std::string line, out;
  while (std::getline(in, line)) {
    nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_object())
      out += etproof::finalize(std::move(j)).dump() + "\n";
    else
      out += line + "\n";
  }
  return out;
}

void one(const uint8_t* data, size_t size) {
  if (size == 0) return;
  static etproof::fuzz::MemFile file("ledger");
  const bool fix_ids = data[0] & 1;
  std::string text = fix_ids ? with_ids(data + 1, size - 1)
                             : std::string(reinterpret_cast<const char*>(data + 1), size - 1);
  const auto records = etproof::read_ledger(
      file.write(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
  const auto merged = etproof::merge_records({records, records});
  etproof::CoverageOptions o;
  o.sources = {"fuzz.jsonl"};
  o.regenerate = "etproof coverage --ledger fuzz.jsonl";
  (void)etproof::render_coverage(merged, o);
}

}  // namespace

ETPROOF_FUZZ_JSON_TARGET(one)
