// fuzz/manifest_fuzz.cpp — the manifest reader (etproof/manifest.h) on arbitrary bytes.
//
// read_manifest parses and validates the document; what it accepts then goes through what every
// command does with a manifest: its methods and case names, canonical re-serialization, and
// open_bundle's checks against the backend table (the manifest written as NAME.etproof.json in a
// scratch directory; the artifact is not verified, so no .pte is needed), and the tapped twin's
// `taps` record (etproof/attribute.h read_taps) as `etproof attribute` reads it.
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "etproof/replay/attribute.h"
#include "etproof/render/attribute.h"
#include "etproof/runtime/bundle.h"
#include "etproof/core/manifest.h"
#include "fuzz_support.h"

namespace fs = std::filesystem;

namespace {

const fs::path& scratch() {
  static const fs::path dir = [] {
    fs::path d = fs::temp_directory_path() / ("etproof-fuzz-manifest-" + std::to_string(::getpid()));
    fs::create_directories(d);
    return d;
  }();
  return dir;
}

void one(const uint8_t* data, size_t size) {
  static etproof::fuzz::MemFile file("manifest");
  const etproof::Manifest m = etproof::read_manifest(file.write(data, size));
  (void)etproof::to_canonical_json(m.raw);
  (void)etproof::has_several_methods(m);
  for (const auto& c : m.goldens) (void)etproof::case_label(m, c);
  for (const auto& method : m.methods) (void)etproof::find_method(m, method.name);
  (void)etproof::select_methods(m, {"forward", "encode"});
  (void)etproof::unknown_methods_error(m, {"forward"});
  try {
    (void)etproof::read_taps(m);  // most manifests have no taps record: a typed refusal
  } catch (const etproof::Error&) {
  }
  // open_bundle: the file name must be NAME.etproof.json (the reader refuses a name with a
  // path separator, so NAME stays inside the scratch directory).
  const fs::path path = scratch() / (m.name + ".etproof.json");
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), std::streamsize(size));
  }
  struct Remove {
    const fs::path& p;
    ~Remove() {
      std::error_code ec;
      fs::remove(p, ec);
    }
  } remove{path};
  (void)etproof::open_bundle(path, {.verify_artifact = false});
}

}  // namespace

ETPROOF_FUZZ_JSON_TARGET(one)
