// etproof/bundle.cpp — open a bundle and check it against its manifest; its goldens
// (etproof/bundle.h). Loading and running it: loaded_model.cpp.
#include "etproof/runtime/bundle.h"
#include "etproof/runtime/bpte.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <climits>
#include <cstring>
#include <optional>
#include <set>
#include <system_error>

#include <executorch/extension/data_loader/buffer_data_loader.h>
#include <executorch/extension/module/module.h>
#include <executorch/extension/tensor/tensor.h>
#include <executorch/runtime/backend/interface.h>
#include <executorch/runtime/platform/runtime.h>

#include "etproof/core/backend_table.h"
#include "etproof/core/error.h"
#include "etproof/runtime/registry.h"
#include "runtime/bundle_files.h"
#include "core/common.h"

namespace etproof {
namespace fs = std::filesystem;
namespace et = ::executorch::runtime;
using ::executorch::aten::ScalarType;
using ::executorch::extension::Module;
using detail::join;
using detail::join_or_none;

namespace bundle_detail {

constexpr const char* kManifestSuffix = ".etproof.json";
constexpr const char* kManifestEdited =
    "re-export the bundle; its manifest no longer says what the export wrote (edited or damaged)";
constexpr const char* kEditedGoldens =
    "re-export the bundle: its goldens were changed, truncated or replaced after export (a bundle's "
    "goldens are what certifies it); to see the numbers against the edited goldens anyway, run "
    "`etproof parity --allow-edited-goldens` (those cases are then reported as drifted, never agreed)";

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}


// An open file descriptor, closed on scope exit.
class File {
 public:
  explicit File(const fs::path& path) : path_(path), fd_(::open(path.c_str(), O_RDONLY | O_CLOEXEC)) {
    if (fd_ < 0)
      throw Error(ErrorKind::kIo, "cannot read " + path.string() + ": " + std::strerror(errno),
                  "check the file's permissions");
  }
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  ~File() { ::close(fd_); }
  // Up to n bytes into p (fewer only at end of file); retries interrupted reads.
  size_t read(uint8_t* p, size_t n) {
    size_t got = 0;
    while (got < n) {
      const ssize_t r = ::read(fd_, p + got, n - got);
      if (r == 0) break;
      if (r < 0) {
        if (errno == EINTR) continue;
        throw Error(ErrorKind::kIo, "error reading " + path_.string() + ": " + std::strerror(errno),
                    "check the file system");
      }
      got += size_t(r);
    }
    return got;
  }

 private:
  fs::path path_;
  int fd_;
};


// Reads a file once, in 1 MiB steps, hashing each step while it is in cache. With `keep`, into
// one buffer of `expected` bytes (the manifest's size, which stat already agreed with) that is
// returned; otherwise through one buffer of at most 1 MiB. Stops one byte past `expected`.
FileRead read_file(const fs::path& path, uint64_t expected, bool keep, bool hash) {
  constexpr size_t kStep = size_t(1) << 20;
  File f(path);
  FileRead r;
  std::optional<detail::Sha256> sha;
  if (hash) sha.emplace();
  if (keep) {
    r.kept = std::make_shared<Bytes>(size_t(expected));
    uint8_t* const base = r.kept->data();
    while (r.bytes < expected) {
      const size_t got = f.read(base + r.bytes, size_t(std::min<uint64_t>(kStep, expected - r.bytes)));
      if (sha) sha->update(base + r.bytes, got);
      r.bytes += got;
      if (got == 0) break;
    }
    uint8_t extra;
    r.bytes += f.read(&extra, 1);  // the file grew since stat: not the bytes the manifest names
    if (r.bytes != expected) r.kept.reset();
  } else {
    // Sized to the file (one read, then end of file) up to 1 MiB: a golden of a few hundred
    // bytes no longer allocates and zeroes a whole step (profiled in fuzz_bundle: 1 MiB per
    // golden file and case was a third of a replay's time under ASan).
    Bytes buf(size_t(std::min<uint64_t>(kStep - 1, expected)) + 1);
    for (size_t got; (got = f.read(buf.data(), buf.size())) > 0;) {
      if (sha) sha->update(buf.data(), got);
      r.bytes += got;
    }
  }
  if (sha) r.sha256 = sha->hex_digest();
  return r;
}

// Checks one file against its manifest entry: appends what is wrong to `problems`. Reads the file
// once (when stat agrees on its size); returns its bytes, exactly as hashed, when `keep` and it
// matched.
std::shared_ptr<const Bytes> check_file(const fs::path& dir, const FileRef& ref, const char* what,
                                        std::vector<std::string>& problems, bool keep) {
  const fs::path p = dir / ref.file;
  std::error_code ec;
  if (fs::is_symlink(fs::symlink_status(p, ec))) {
    problems.push_back(p.string() + ": a symbolic link (the manifest names it as the " + what +
                       "; a bundle's files must be its own, not links to files elsewhere)");
    return nullptr;
  }
  if (!fs::is_regular_file(p, ec)) {
    const std::string there = detail::not_a_file_text(p);
    problems.push_back(p.string() + ": " + (there == "no such file or directory" ? std::string("missing") : there) +
                       " (the manifest names it as the " + what + ")");
    return nullptr;
  }
  const uint64_t size = fs::file_size(p, ec);
  if (ec) {
    problems.push_back(p.string() + ": cannot stat: " + ec.message());
    return nullptr;
  }
  const auto wrong_size = [&](const std::string& got) {
    problems.push_back(p.string() + ": " + got + " bytes, the manifest says " + std::to_string(ref.bytes));
    return nullptr;
  };
  if (size != ref.bytes) return wrong_size(std::to_string(size));
  FileRead r = read_file(p, ref.bytes, keep, /*hash=*/true);
  if (r.bytes < ref.bytes) return wrong_size(std::to_string(r.bytes));  // changed since stat
  if (r.bytes > ref.bytes) return wrong_size("more than " + std::to_string(ref.bytes));
  if (r.sha256 != ref.sha256) {
    problems.push_back(p.string() + ": SHA-256 " + r.sha256 + ", the manifest says " + ref.sha256);
    return nullptr;
  }
  return r.kept;
}

// The artifact and every data file against the manifest (every problem at once,
// Error{kArtifactMismatch}); the program's bytes when the bundle has no data files.
std::shared_ptr<const Bytes> check_artifacts(const Bundle& b) {
  std::vector<std::string> problems;
  auto program = check_file(b.dir, b.manifest.artifact, "artifact", problems, b.manifest.data_files.empty());
  for (const auto& df : b.manifest.data_files) check_file(b.dir, df, "data file", problems, false);
  if (!problems.empty())
    throw Error(ErrorKind::kArtifactMismatch,
                "bundle '" + b.manifest.name + "' does not match its manifest: " + join(problems, "; "),
                kReexport);
  return program;
}

fs::path normalized(const fs::path& p) {
  fs::path n = fs::absolute(p).lexically_normal();
  if (n.filename().empty() && n.has_parent_path()) n = n.parent_path();  // "dir/" -> "dir"
  return n;
}

bool shape_matches(const std::vector<int64_t>& given, const std::vector<int64_t>& spec) {
  if (given.size() != spec.size()) return false;
  for (size_t i = 0; i < spec.size(); ++i)
    if (spec[i] != -1 && spec[i] != given[i]) return false;
  return true;
}

const TensorSpec* find_spec(const std::vector<TensorSpec>& specs, const std::string& name) {
  for (const auto& s : specs)
    if (s.name == name) return &s;
  return nullptr;
}

std::vector<std::string> spec_names(const std::vector<TensorSpec>& specs) {
  std::vector<std::string> v;
  for (const auto& s : specs) v.push_back("'" + s.name + "'");
  return v;
}

std::vector<MethodSpec> methods_of(const Manifest& m) {
  if (!m.methods.empty()) return m.methods;
  return {MethodSpec{"forward", m.inputs, m.outputs}};
}

const std::vector<TensorSpec>& case_specs(const Bundle& b, const GoldenCase& c, bool inputs) {
  const Manifest& m = b.manifest;
  if (c.method.empty() || m.methods.empty()) return inputs ? m.inputs : m.outputs;
  for (const MethodSpec& s : m.methods)
    if (s.name == c.method) return inputs ? s.inputs : s.outputs;
  std::vector<std::string> names;
  for (const MethodSpec& s : m.methods) names.push_back("'" + s.name + "'");
  throw Error(ErrorKind::kManifestInvalid,
              b.manifest_path.string() + ": golden case '" + c.id + "' belongs to method '" + c.method +
                  "', which the manifest does not list (its methods: " + join(names) + ")",
              kReexport);
}

std::map<std::string, HostTensor> read_goldens(const Bundle& b, const GoldenCase& c, bool inputs,
                                               GoldenCheck check) {
  if (check == GoldenCheck::kHashes) {
    const auto problems = golden_file_problems(b, c);
    if (!problems.empty()) {
      // Every golden file absent (the directory missing or emptied): the bundle was copied without
      // NAME.goldens/, not tampered with. Say that, not "edited".
      std::error_code ec;
      const fs::path gdir = b.dir / (b.manifest.name + ".goldens");
      const bool copied_without = !fs::is_directory(gdir, ec) || fs::is_empty(gdir, ec);
      throw Error(ErrorKind::kArtifactMismatch,
                  "bundle '" + b.manifest.name + "': golden case '" + case_label(b.manifest, c) +
                      "' does not match its manifest: " + join(problems, "; "),
                  copied_without ? "the bundle's goldens directory " + gdir.string() +
                                       " is missing or empty: a bundle is its whole directory (the .pte, "
                                       "the manifest and NAME.goldens/); copy it whole, or re-export it"
                                 : std::string(kEditedGoldens));
    }
  }
  const auto& files = inputs ? c.inputs : c.outputs;
  const auto& specs = case_specs(b, c, inputs);
  const char* role = inputs ? "input" : "output";
  const std::string label = case_label(b.manifest, c);
  std::map<std::string, HostTensor> out;
  for (const auto& [name, file] : files) {
    const TensorSpec* spec = find_spec(specs, name);
    if (!spec)
      throw Error(ErrorKind::kManifestInvalid,
                  b.manifest_path.string() + ": golden case '" + label + "' names " + role + " '" + name +
                      "', which the manifest does not list",
                  kReexport);
    const fs::path path = b.goldens_dir / file;
    HostTensor t = read_npy(path);
    const std::string where = "golden case '" + label + "' " + role + " '" + name + "' (" + path.string() + ")";
    if (t.dtype != spec->dtype)
      throw Error(ErrorKind::kDtypeMismatch,
                  where + ": dtype " + std::string(to_string(t.dtype)) + ", the manifest says " +
                      std::string(to_string(spec->dtype)),
                  "re-export the bundle; its goldens disagree with its manifest");
    if (!shape_matches(t.shape, spec->shape))
      throw Error(ErrorKind::kShapeMismatch,
                  where + ": shape " + shape_to_string(t.shape) + ", the manifest says " +
                      shape_to_string(spec->shape) + " (-1 = any)",
                  "re-export the bundle; its goldens disagree with its manifest");
    out.emplace(name, std::move(t));
  }
  return out;
}

}  // namespace bundle_detail

using namespace bundle_detail;  // NOLINT: this file's own helpers (bundle_files.h)

// ---- bundles ----------------------------------------------------------------------------------

// The manifest's backend, recipe and precision must be ones the backend table knows, and a quantized recipe
// must carry its quantization record (a float one must not): an edited label would otherwise pick
// another, looser bound. Whether a recipe is quantized is the table's `quantized` (data/backends.json).
void check_against_backend_table(const Bundle& b) {
  const Manifest& m = b.manifest;
  const std::string where = b.manifest_path.string() + ": ";
  const BackendEntry* entry = find_backend_entry(m.backend);
  if (entry == nullptr) {
    std::vector<std::string> keys;
    for (const auto& e : backend_table().backends) keys.push_back(e.key);
    throw Error(ErrorKind::kManifestInvalid,
                where + "backend: '" + m.backend + "' is not a backend etproof knows (known: " + join(keys, ", ") + ")",
                kManifestEdited);
  }
  std::vector<std::string> recipes;
  for (const RecipeEntry& r : entry->recipes) recipes.push_back(r.recipe);
  const RecipeEntry* recipe = find_recipe_entry(m.backend, m.recipe);
  // the precisions the delegate may compute this recipe in
  const std::vector<std::string> precisions = recipe ? recipe->precisions : std::vector<std::string>{};
  if (std::find(recipes.begin(), recipes.end(), m.recipe) == recipes.end())
    throw Error(ErrorKind::kManifestInvalid,
                where + "recipe: '" + m.recipe + "' is not a recipe of backend '" + m.backend + "' (its recipes: " +
                    join_or_none(recipes) + ")",
                kManifestEdited);
  // The precision picks the bound's precision term: it must be one the delegate computes this
  // recipe in (data/backends.json), so an edited label cannot choose a looser bound.
  if (std::find(precisions.begin(), precisions.end(), m.precision) == precisions.end())
    throw Error(ErrorKind::kManifestInvalid,
                where + "precision: '" + m.precision + "' is not a precision backend '" + m.backend +
                    "' computes recipe '" + m.recipe + "' in (data/backends.json: " +
                    join_or_none(precisions) + ")",
                kManifestEdited);
  const bool float_recipe = !recipe->quantized;  // the table's fact, as the export half reads it
  if (float_recipe == m.quantization.has_value())
    throw Error(ErrorKind::kManifestInvalid,
                where + "recipe: '" + m.recipe + "' " +
                    (float_recipe ? "is a float recipe but the manifest records a quantization"
                                  : "is quantized but the manifest records no quantization") ,
                kManifestEdited);
}

namespace {

// The manifest in a bundle directory: DIR/DIR.etproof.json, else its only *.etproof.json. Throws
// Error{kIo} when the directory cannot be listed, Error{kManifestInvalid} when it holds no manifest
// (saying when it is a folder of bundles instead) or several and none is the preferred one.
fs::path find_manifest(const fs::path& dir) {
  std::error_code ec;
  const fs::path preferred = dir / (dir.filename().string() + kManifestSuffix);
  if (fs::is_regular_file(preferred, ec)) return preferred;
  std::vector<fs::path> found;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (std::error_code e_ec; e.is_regular_file(e_ec) && ends_with(e.path().filename().string(), kManifestSuffix))
      found.push_back(e.path());
  if (ec)
    throw Error(ErrorKind::kIo, "cannot list " + dir.string() + ": " + ec.message(), "check permissions");
  if (found.empty()) {
    // A folder of bundles (export's OUT) is what `matrix` takes: say so rather than only
    // "not a bundle".
    size_t bundles = 0;
    for (const auto& e : fs::directory_iterator(dir, ec))
      if (std::error_code d_ec; e.is_directory(d_ec) &&
                                fs::is_regular_file(e.path() / (e.path().filename().string() + kManifestSuffix), d_ec))
        ++bundles;
    throw Error(ErrorKind::kManifestInvalid,
                dir.string() + ": no manifest (*" + kManifestSuffix + ") in this directory" +
                    (bundles ? " (it holds " + std::to_string(bundles) + (bundles == 1 ? " bundle" : " bundles") + ")"
                             : ""),
                bundles ? "this is a folder of bundles: etproof matrix " + dir.string() +
                              " judges them all; parity takes one of them (" + dir.string() + "/NAME)"
                        : "give a bundle directory written by etproof export");
  }
  if (found.size() > 1) {
    std::sort(found.begin(), found.end());
    std::vector<std::string> names;
    for (const auto& f : found) names.push_back(f.filename().string());
    throw Error(ErrorKind::kManifestInvalid,
                dir.string() + ": several manifests (" + join(names, ", ") + ") and none is " +
                    preferred.filename().string(),
                "give the manifest path itself");
  }
  return found.front();
}

// b.dir and b.manifest_path from what the caller gave: the bundle directory, its manifest, or
// another file inside it (the .pte, most often), which names its bundle. Throws Error{kIo} when
// nothing is there, and find_manifest's errors.
void locate_bundle(Bundle& b, const fs::path& given) {
  std::error_code ec;
  if (!fs::exists(given, ec))
    throw Error(ErrorKind::kIo, "no bundle at " + given.string() + ": " + detail::not_a_file_text(given),
                "give a bundle directory or its NAME.etproof.json");
  // ExecuTorch's BundledProgram: the bundle it describes (etproof/runtime/bpte.h).
  const fs::path path = is_bpte_path(given) && !fs::is_directory(given, ec) ? materialize_bpte(given) : given;
  const bool inner_file = !fs::is_directory(path, ec) &&
                          !ends_with(path.filename().string(), kManifestSuffix);
  if (fs::is_directory(path, ec) || inner_file) {
    b.dir = normalized(inner_file ? normalized(path).parent_path() : path);
    b.manifest_path = find_manifest(b.dir);
  } else {
    b.manifest_path = normalized(path);
    b.dir = b.manifest_path.parent_path();
  }
}

// b.manifest read from b.manifest_path, which must be a file of its own (not a symbolic link)
// named after the manifest's `name`: Error{kManifestInvalid} otherwise, and read_manifest's errors.
void read_own_manifest(Bundle& b) {
  std::error_code ec;
  if (fs::is_symlink(fs::symlink_status(b.manifest_path, ec)))
    throw Error(ErrorKind::kManifestInvalid,
                b.manifest_path.string() + ": a symbolic link; a bundle's manifest (and every file it names) "
                "must be its own, not a link to a file elsewhere",
                "copy the bundle directory whole (cp -r, not links), or give the directory the link points into");
  b.manifest = read_manifest(b.manifest_path);
  const std::string expected_file = b.manifest.name + kManifestSuffix;
  if (b.manifest_path.filename().string() != expected_file)
    throw Error(ErrorKind::kManifestInvalid,
                b.manifest_path.string() + ": name: '" + b.manifest.name +
                    "' does not match the manifest's file name (" + expected_file + " expected)",
                kReexport);
}

// The backend the manifest claims must be able to own the delegates it records: a bundle
// relabelled "portable" while its program carries XnnpackBackend would otherwise pass as a
// claim about portable kernels (Error{kManifestInvalid}). LoadedModel::load checks the recorded
// delegates against the program itself.
void check_delegates_owned(const Bundle& b) {
  const auto owned = runtime_ids_for_backend(b.manifest.backend);
  if (!owned) return;
  for (const auto& id : b.manifest.delegates)
    if (std::find(owned->begin(), owned->end(), id) == owned->end())
      throw Error(ErrorKind::kManifestInvalid,
                  b.manifest_path.string() + ": backend: '" + b.manifest.backend +
                      "' cannot own delegate " + id + " (its runtime ids: [" +
                      join_or_none(*owned) + "]); the manifest was edited or is wrong",
                  kManifestEdited);
}

}  // namespace

Bundle open_bundle(const fs::path& path, const OpenOptions& options) {
  Bundle b;
  locate_bundle(b, path);
  read_own_manifest(b);
  check_against_backend_table(b);
  check_delegates_owned(b);
  b.artifact_path = b.dir / b.manifest.artifact.file;
  b.goldens_dir = b.dir / (b.manifest.name + ".goldens");

  if (options.verify_artifact) verify_artifact(b);
  return b;
}

void verify_artifact(Bundle& b) {
  if (b.artifact_verified) return;
  b.program = check_artifacts(b);
  b.artifact_verified = true;
}

std::vector<fs::path> find_bundles(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw Error(ErrorKind::kIo, "no directory at " + dir.string(), "give the directory the bundles were exported to");
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    // A dot directory is never a bundle: the export half stages a bundle in OUT/.NAME.tmp-PID-*
    // and renames it into place; one left by a killed export is not a column.
    // An entry whose type cannot be read (a symlink loop) is no bundle directory, as a file is not.
    std::error_code ec2;
    if (e.path().filename().string().starts_with(".")) continue;
    if (is_bpte_path(e.path()) && e.is_regular_file(ec2)) {  // ExecuTorch's BundledProgram, a column too
      out.push_back(e.path());
      continue;
    }
    if (!e.is_directory(ec2)) continue;
    for (const auto& f : fs::directory_iterator(e.path(), ec2)) {
      if (std::error_code ec3; f.is_regular_file(ec3) && ends_with(f.path().filename().string(), kManifestSuffix)) {
        out.push_back(e.path());
        break;
      }
    }
  }
  if (ec) throw Error(ErrorKind::kIo, "cannot list " + dir.string() + ": " + ec.message(), "check permissions");
  std::sort(out.begin(), out.end(), [](const fs::path& a, const fs::path& b) { return a.filename() < b.filename(); });
  return out;
}

std::vector<std::string> golden_file_problems(const Bundle& b, const GoldenCase& c) {
  std::vector<std::string> problems;
  const std::string label = case_label(b.manifest, c);
  std::error_code ec;
  if (fs::is_symlink(fs::symlink_status(b.goldens_dir, ec))) {
    problems.push_back(b.goldens_dir.string() + ": a symbolic link (a bundle's goldens must be its own)");
    return problems;
  }
  for (const FileRef& ref : c.files)
    check_file(b.goldens_dir, ref, ("golden file of case '" + label + "'").c_str(), problems, /*keep=*/false);
  if (c.files.empty())  // a bundle that predates goldens[i].files: no hashes, still no links
    for (const auto* part : {&c.inputs, &c.outputs})
      for (const auto& [name, file] : *part)
        if (fs::is_symlink(fs::symlink_status(b.goldens_dir / file, ec)))
          problems.push_back((b.goldens_dir / file).string() + ": a symbolic link (a bundle's goldens must be its own)");
  return problems;
}

std::map<std::string, HostTensor> read_golden_inputs(const Bundle& b, const GoldenCase& c, GoldenCheck check) {
  return read_goldens(b, c, true, check);
}

std::map<std::string, HostTensor> read_golden_outputs(const Bundle& b, const GoldenCase& c, GoldenCheck check) {
  return read_goldens(b, c, false, check);
}

std::map<std::string, HostTensor> read_golden_reference(const Bundle& b, const GoldenCase& c,
                                                        const std::string& name) {
  std::map<std::string, HostTensor> out;
  const auto it = c.references.find(name);
  if (it == c.references.end()) return out;
  constexpr const char* kRemedy =
      "re-export the bundle; its references were changed or truncated after export";
  const auto& outputs = case_specs(b, c, /*inputs=*/false);
  const std::string label = case_label(b.manifest, c);
  for (const auto& [output, ref] : it->second) {
    const TensorSpec* spec = find_spec(outputs, output);
    if (!spec)  // the reader checks this; a Manifest built by hand may not be
      throw Error(ErrorKind::kManifestInvalid,
                  b.manifest_path.string() + ": golden case '" + label + "' reference '" + name + "' names output '" +
                      output + "', which the manifest does not list",
                  kRemedy);
    const std::string what = "reference '" + name + "' of output '" + output + "' in golden case '" + label + "'";
    std::vector<std::string> problems;
    check_file(b.goldens_dir, ref, what.c_str(), problems, /*keep=*/false);
    if (!problems.empty())
      throw Error(ErrorKind::kArtifactMismatch,
                  "bundle '" + b.manifest.name + "': " + what + " does not match its manifest: " + join(problems, "; "),
                  kRemedy);
    const fs::path path = b.goldens_dir / ref.file;
    HostTensor t = read_npy(path);
    const std::string where = what + " (" + path.string() + ")";
    const auto is_float = [](DType d) { return d == DType::kFloat32 || d == DType::kFloat16 || d == DType::kFloat64; };
    if (is_float(spec->dtype) ? !is_float(t.dtype) : t.dtype != spec->dtype)
      throw Error(ErrorKind::kDtypeMismatch,
                  where + ": dtype " + std::string(to_string(t.dtype)) + ", the output is " +
                      std::string(to_string(spec->dtype)) +
                      (is_float(spec->dtype) ? " (a floating reference may be float16, float32 or float64)" : ""),
                  kRemedy);
    if (!shape_matches(t.shape, spec->shape))
      throw Error(ErrorKind::kShapeMismatch,
                  where + ": shape " + shape_to_string(t.shape) + ", the manifest says " +
                      shape_to_string(spec->shape) + " (-1 = any)",
                  kRemedy);
    out.emplace(output, std::move(t));
  }
  return out;
}

}  // namespace etproof
