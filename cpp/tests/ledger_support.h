// Shared by the unit and integration halves of ledger_test.cpp: a fixed record context and a
// ledger's line count.
#pragma once

#include <cstddef>
#include <filesystem>
#include <fstream>
#include <string>

#include "etproof/evidence/ledger.h"

namespace etproof::testing {

// A RecordContext with fixed, recognisable values (time `time`, a made-up machine and commit).
inline RecordContext ctx(const std::string& time = "2026-11-29T10:00:00Z") {
  RecordContext c;
  c.time_utc = time;
  c.command = "etproof matrix build/demo/bundles";
  c.kind = "matrix";
  c.machine = {{"os", "Debian GNU/Linux 12 (bookworm)"}, {"kernel", "Linux 6.1"},
               {"cpu", "Test CPU"}, {"cores", 2}, {"arch", "x86_64"}};
  c.toolchain = {{"etproof", "0.1.0"}, {"executorch", "1.5.1"}};
  c.commit = "0123456789ab";
  c.commit_source = "git";
  return c;
}

// The non-empty lines of file `p` (a ledger: one record per line).
inline size_t count_lines(const std::filesystem::path& p) {
  size_t n = 0;
  std::ifstream in(p);
  for (std::string l; std::getline(in, l);)
    if (!l.empty()) ++n;
  return n;
}

}  // namespace etproof::testing
