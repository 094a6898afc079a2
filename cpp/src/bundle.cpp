// etproof/bundle.cpp — open a bundle, check it, load it into ExecuTorch, run it (etproof/bundle.h).
#include "etproof/bundle.h"

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

#include "etproof/backend_table.h"
#include "etproof/error.h"
#include "etproof/registry.h"
#include "common.h"

namespace etproof {
namespace fs = std::filesystem;
namespace et = ::executorch::runtime;
using ::executorch::aten::ScalarType;
using ::executorch::extension::Module;
using detail::join;
using detail::join_or_none;

namespace {

constexpr const char* kManifestSuffix = ".etproof.json";
constexpr const char* kReexport = "re-export the bundle; the .pte was changed or truncated after export";
constexpr const char* kManifestEdited =
    "re-export the bundle; its manifest no longer says what the export wrote (edited or damaged)";

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

using Bytes = std::vector<uint8_t>;

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

// What one pass over a file found.
struct FileRead {
  uint64_t bytes = 0;          // read until end of file, or `expected` + 1 when it is longer
  std::string sha256;          // of those bytes, lower-case hex ("" when not hashed)
  std::shared_ptr<Bytes> kept; // the bytes, when asked to keep them and there were `expected`
};

// Reads a file once, in 1 MiB steps, hashing each step while it is in cache. With `keep`, into
// one buffer of `expected` bytes (the manifest's size, which stat already agreed with) that is
// returned; otherwise through a reusable 1 MiB buffer. Stops one byte past `expected`.
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
    Bytes buf(kStep);
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
  if (!fs::is_regular_file(p, ec)) {
    problems.push_back(p.string() + ": missing (the manifest names it as the " + what + ")");
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

std::map<std::string, HostTensor> read_goldens(const Bundle& b, const GoldenCase& c, bool inputs) {
  const auto& files = inputs ? c.inputs : c.outputs;
  const auto& specs = inputs ? b.manifest.inputs : b.manifest.outputs;
  const char* role = inputs ? "input" : "output";
  std::map<std::string, HostTensor> out;
  for (const auto& [name, file] : files) {
    const TensorSpec* spec = find_spec(specs, name);
    if (!spec)
      throw Error(ErrorKind::kManifestInvalid,
                  b.manifest_path.string() + ": golden case '" + c.id + "' names " + role + " '" + name +
                      "', which the manifest does not list",
                  kReexport);
    const fs::path path = b.goldens_dir / file;
    HostTensor t = read_npy(path);
    const std::string where = "golden case '" + c.id + "' " + role + " '" + name + "' (" + path.string() + ")";
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

// ---- ExecuTorch <-> etproof -------------------------------------------------------------------

std::string et_error_text(et::Error e) {
  char code[16];
  std::snprintf(code, sizeof code, "0x%02x", unsigned(e));
  return std::string(et::to_string(e)) + " (" + code + ")";
}

ScalarType to_scalar_type(DType d) {
  switch (d) {
    case DType::kFloat32: return ScalarType::Float;
    case DType::kFloat16: return ScalarType::Half;
    case DType::kFloat64: return ScalarType::Double;
    case DType::kInt8: return ScalarType::Char;
    case DType::kUInt8: return ScalarType::Byte;
    case DType::kInt16: return ScalarType::Short;
    case DType::kInt32: return ScalarType::Int;
    case DType::kInt64: return ScalarType::Long;
    case DType::kBool: return ScalarType::Bool;
  }
  return ScalarType::Undefined;
}

std::optional<DType> from_scalar_type(ScalarType t) {
  switch (t) {
    case ScalarType::Float: return DType::kFloat32;
    case ScalarType::Half: return DType::kFloat16;
    case ScalarType::Double: return DType::kFloat64;
    case ScalarType::Char: return DType::kInt8;
    case ScalarType::Byte: return DType::kUInt8;
    case ScalarType::Short: return DType::kInt16;
    case ScalarType::Int: return DType::kInt32;
    case ScalarType::Long: return DType::kInt64;
    case ScalarType::Bool: return DType::kBool;
    default: return std::nullopt;
  }
}

std::string scalar_type_name(ScalarType t) {
  if (auto d = from_scalar_type(t)) return std::string(to_string(*d));
  return "ExecuTorch ScalarType " + std::to_string(int(t));
}

// Copies an ExecuTorch tensor into a dense C-ordered HostTensor (honouring its strides).
HostTensor to_host(const ::executorch::aten::Tensor& t, const std::string& what) {
  const auto dtype = from_scalar_type(t.scalar_type());
  if (!dtype)
    throw Error(ErrorKind::kDtypeUnsupported,
                what + ": " + scalar_type_name(t.scalar_type()) + " is not a dtype etproof carries",
                "export the model with outputs in float32, float16, float64, int8, uint8, int16, int32, "
                "int64 or bool");
  HostTensor h;
  h.dtype = *dtype;
  const auto sizes = t.sizes();
  const auto strides = t.strides();
  for (auto s : sizes) h.shape.push_back(s);
  const size_t elem = dtype_size(*dtype);
  const size_t n = h.numel();
  h.data.resize(n * elem);
  if (n == 0) return h;
  const auto* src = static_cast<const uint8_t*>(t.const_data_ptr());
  // Contiguous (C order) unless a stride says otherwise.
  bool contiguous = true;
  int64_t expect = 1;
  for (ssize_t d = ssize_t(sizes.size()) - 1; d >= 0; --d) {
    if (sizes[d] != 1 && strides[d] != expect) contiguous = false;
    expect *= sizes[d];
  }
  if (contiguous) {
    std::memcpy(h.data.data(), src, n * elem);
    return h;
  }
  std::vector<int64_t> idx(sizes.size(), 0);
  for (size_t i = 0; i < n; ++i) {
    int64_t off = 0;
    for (size_t d = 0; d < idx.size(); ++d) off += idx[d] * strides[d];
    std::memcpy(h.data.data() + i * elem, src + off * int64_t(elem), elem);
    for (ssize_t d = ssize_t(idx.size()) - 1; d >= 0; --d) {
      if (++idx[d] < sizes[d]) break;
      idx[d] = 0;
    }
  }
  return h;
}

// One problem of a refusal, with the kind it would be reported as on its own.
struct Problem {
  ErrorKind kind;
  std::string text;
};

const char* remedy_for(ErrorKind k) {
  switch (k) {
    case ErrorKind::kDtypeMismatch:
      return "convert the input to the dtype the manifest lists (etproof never casts silently)";
    case ErrorKind::kShapeMismatch:
      return "give the input in the shape the manifest lists (-1 = any size in that dimension)";
    default:
      return "give every input the manifest lists, once, by name";
  }
}

}  // namespace

// ---- bundles ----------------------------------------------------------------------------------

// The manifest's backend, recipe and precision must be ones the backend table knows, and a quantized recipe
// must carry its quantization record (a float one must not): an edited label would otherwise pick
// another, looser bound. Recipe names starting with "fp" are the float recipes (data/backends.json).
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
  std::vector<std::string> precisions;  // the precisions the delegate may compute this recipe in
  for (const auto& doc : backend_table().raw.at("backends"))
    if (doc.value("key", "") == m.backend)
      for (const auto& r : doc.value("recipes", nlohmann::json::array())) {
        recipes.push_back(r.value("recipe", ""));
        if (r.value("recipe", "") != m.recipe) continue;
        if (r.contains("precisions"))
          for (const auto& p : r.at("precisions")) precisions.push_back(p.get<std::string>());
        else
          precisions.push_back(r.value("precision", ""));
      }
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
  const bool float_recipe = m.recipe.rfind("fp", 0) == 0;
  if (float_recipe == m.quantization.has_value())
    throw Error(ErrorKind::kManifestInvalid,
                where + "recipe: '" + m.recipe + "' " +
                    (float_recipe ? "is a float recipe but the manifest records a quantization"
                                  : "is quantized but the manifest records no quantization") ,
                kManifestEdited);
}

Bundle open_bundle(const fs::path& path, const OpenOptions& options) {
  std::error_code ec;
  if (!fs::exists(path, ec))
    throw Error(ErrorKind::kIo, "no bundle at " + path.string() + ": no such file or directory",
                "give a bundle directory or its NAME.etproof.json");
  Bundle b;
  // A file inside the bundle that is not its manifest (the .pte, most often) names its bundle.
  const bool inner_file = !fs::is_directory(path, ec) &&
                          !ends_with(path.filename().string(), kManifestSuffix);
  if (fs::is_directory(path, ec) || inner_file) {
    b.dir = normalized(inner_file ? normalized(path).parent_path() : path);
    const fs::path preferred = b.dir / (b.dir.filename().string() + kManifestSuffix);
    if (fs::is_regular_file(preferred, ec)) {
      b.manifest_path = preferred;
    } else {
      std::vector<fs::path> found;
      for (const auto& e : fs::directory_iterator(b.dir, ec))
        if (e.is_regular_file() && ends_with(e.path().filename().string(), kManifestSuffix)) found.push_back(e.path());
      if (ec)
        throw Error(ErrorKind::kIo, "cannot list " + b.dir.string() + ": " + ec.message(), "check permissions");
      if (found.empty())
        throw Error(ErrorKind::kManifestInvalid,
                    b.dir.string() + ": no manifest (*" + kManifestSuffix + ") in this directory",
                    "give a bundle directory written by python -m etproof export");
      if (found.size() > 1) {
        std::sort(found.begin(), found.end());
        std::vector<std::string> names;
        for (const auto& f : found) names.push_back(f.filename().string());
        throw Error(ErrorKind::kManifestInvalid,
                    b.dir.string() + ": several manifests (" + join(names, ", ") + ") and none is " +
                        preferred.filename().string(),
                    "give the manifest path itself");
      }
      b.manifest_path = found.front();
    }
  } else {
    b.manifest_path = normalized(path);
    b.dir = b.manifest_path.parent_path();
  }

  b.manifest = read_manifest(b.manifest_path);
  const std::string expected_file = b.manifest.name + kManifestSuffix;
  if (b.manifest_path.filename().string() != expected_file)
    throw Error(ErrorKind::kManifestInvalid,
                b.manifest_path.string() + ": name: '" + b.manifest.name + "' does not match the manifest's file name (" +
                    expected_file + " expected)",
                kReexport);
  check_against_backend_table(b);
  // The backend the manifest claims must be able to own the delegates it records: a bundle
  // relabelled "portable" while its program carries XnnpackBackend would otherwise pass as a
  // claim about portable kernels. (LoadedModel::load checks the recorded delegates against the
  // program itself.)
  if (const auto owned = runtime_ids_for_backend(b.manifest.backend)) {
    for (const auto& id : b.manifest.delegates)
      if (std::find(owned->begin(), owned->end(), id) == owned->end())
        throw Error(ErrorKind::kManifestInvalid,
                    b.manifest_path.string() + ": backend: '" + b.manifest.backend +
                        "' cannot own delegate " + id + " (its runtime ids: [" +
                        join_or_none(*owned) + "]); the manifest was edited or is wrong",
                    kManifestEdited);
  }
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
    if (!e.is_directory()) continue;
    std::error_code ec2;
    for (const auto& f : fs::directory_iterator(e.path(), ec2)) {
      if (f.is_regular_file() && ends_with(f.path().filename().string(), kManifestSuffix)) {
        out.push_back(e.path());
        break;
      }
    }
  }
  if (ec) throw Error(ErrorKind::kIo, "cannot list " + dir.string() + ": " + ec.message(), "check permissions");
  std::sort(out.begin(), out.end(), [](const fs::path& a, const fs::path& b) { return a.filename() < b.filename(); });
  return out;
}

std::map<std::string, HostTensor> read_golden_inputs(const Bundle& b, const GoldenCase& c) {
  return read_goldens(b, c, true);
}

std::map<std::string, HostTensor> read_golden_outputs(const Bundle& b, const GoldenCase& c) {
  return read_goldens(b, c, false);
}

// ---- the loaded model -------------------------------------------------------------------------

struct LoadedModel::Impl {
  std::string bundle;  // bundle name, for messages
  std::vector<TensorSpec> inputs;
  std::vector<TensorSpec> outputs;
  std::vector<std::string> delegates;
  // The whole program, owned here and declared before `module` so it outlives it. ExecuTorch
  // loads from this buffer, so every segment a delegate keeps a pointer into stays valid for the
  // Module's lifetime. Measured: with Module's file or mmap loaders, the OpenVINO delegate
  // (ExecuTorch 1.5.1) segfaults executing EfficientNet-Lite0 after init frees the segment it
  // imported (ExecuTorch's Python runtime crashes the same way loading by path, not from bytes).
  // Shared with the Bundle it was loaded from (the bytes open_bundle hashed).
  std::shared_ptr<const Bytes> program;
  std::unique_ptr<Module> module;
  std::vector<bool> input_planned;  // per input: ExecuTorch copies it into planned memory
};

LoadedModel::LoadedModel(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
LoadedModel::LoadedModel(LoadedModel&&) noexcept = default;
LoadedModel& LoadedModel::operator=(LoadedModel&&) noexcept = default;
LoadedModel::~LoadedModel() = default;

namespace {
void require_loaded(const void* impl) {
  if (!impl)
    throw Error(ErrorKind::kInvalidArgument, "this LoadedModel was moved from", "use the LoadedModel it was moved to");
}
}  // namespace

const std::vector<std::string>& LoadedModel::program_delegates() const {
  require_loaded(impl_.get());
  return impl_->delegates;
}

LoadedModel LoadedModel::load(const Bundle& bundle) {
  et::runtime_init();
  const Manifest& m = bundle.manifest;
  auto impl = std::make_unique<Impl>();
  impl->bundle = m.name;
  impl->inputs = m.inputs;
  impl->outputs = m.outputs;

  const std::string pte = bundle.artifact_path.string();
  std::vector<std::string> data_files;
  for (const auto& df : m.data_files) data_files.push_back((bundle.dir / df.file).string());
  if (!bundle.artifact_verified)
    impl->program = check_artifacts(bundle);  // read once, hashed, kept for the loader
  else if (data_files.empty())  // verified; its bytes dropped (bundle.h): read again, unhashed
    impl->program = bundle.program ? bundle.program
                                   : read_file(bundle.artifact_path, m.artifact.bytes, true, false).kept;
  if (data_files.empty()) {
    if (!impl->program)  // read again, and no longer the manifest's size
      throw Error(ErrorKind::kArtifactMismatch,
                  "bundle '" + m.name + "': " + pte + " is not the " + std::to_string(m.artifact.bytes) +
                      " bytes the manifest says",
                  kReexport);
    impl->module = std::make_unique<Module>(
        std::make_unique<::executorch::extension::BufferDataLoader>(impl->program->data(), impl->program->size()));
  } else {
    impl->module = std::make_unique<Module>(pte, data_files, Module::LoadMode::File);
  }
  Module& module = *impl->module;

  // Full flatbuffer verification: a truncated or corrupted program is refused here, not crashed on.
  if (const et::Error e = module.load(et::Program::Verification::InternalConsistency); e != et::Error::Ok)
    throw Error(ErrorKind::kLoadFailed,
                "ExecuTorch refused the program " + pte + ": " + et_error_text(e),
                std::string(kReexport) + "; if the hash matches, export it with the ExecuTorch version this "
                "binary links (see ExecuTorch's log above for the detail)",
                uint32_t(e));

  auto meta = module.method_meta("forward");
  if (!meta.ok()) {
    std::string methods;
    if (auto names = module.method_names(); names.ok())
      methods = " (methods: " + join_or_none(std::vector<std::string>(names->begin(), names->end())) + ")";
    throw Error(ErrorKind::kLoadFailed,
                "program " + pte + " has no usable method 'forward': " + et_error_text(meta.error()) + methods,
                "export the model's forward method", uint32_t(meta.error()));
  }

  // The delegates the program itself contains (one entry per delegate instance, names repeat).
  std::set<std::string> ids;
  for (size_t i = 0; i < meta->num_backends(); ++i) {
    auto name = meta->get_backend_name(i);
    if (!name.ok())
      throw Error(ErrorKind::kLoadFailed,
                  "program " + pte + ": cannot read delegate " + std::to_string(i) + ": " + et_error_text(name.error()),
                  kReexport, uint32_t(name.error()));
    ids.insert(*name);
  }
  impl->delegates.assign(ids.begin(), ids.end());
  if (impl->delegates != m.delegates)
    throw Error(ErrorKind::kArtifactMismatch,
                "bundle '" + m.name + "': the manifest records delegates [" + join_or_none(m.delegates) +
                    "] but the program contains [" + join_or_none(impl->delegates) + "]",
                "re-export the bundle; its manifest does not describe its program");

  // Refuse by name, before ExecuTorch's Method::init would fail with NotFound (0x20).
  if (const DelegateAvailability avail = delegate_availability(impl->delegates); !avail.ok()) {
    const auto has = [](const std::vector<std::string>& v, const std::string& id) {
      return std::find(v.begin(), v.end(), id) != v.end();
    };
    std::vector<std::string> missing, needs;
    for (const auto& id : impl->delegates) {
      if (has(avail.not_linked, id)) {
        missing.push_back(id + " (not registered in this binary: its runtime library is not linked)");
        if (auto t = runtime_needs_text(id, m.backend); !t.empty()) needs.push_back(t);
      } else if (has(avail.unavailable, id)) {
        missing.push_back(id + " (registered, but reports itself unavailable on this machine)");
      }
    }
    throw Error(avail.not_linked.empty() ? ErrorKind::kBackendUnavailable : ErrorKind::kBackendNotLinked,
                "bundle '" + m.name + "' needs " + join(missing, ", ") + "; registered here: " +
                    join_or_none(avail.registered),
                !avail.not_linked.empty()
                    ? "run it where its runtime is linked (" + (needs.empty() ? std::string("link the "
                      "ExecuTorch delegate library that registers it") : join(needs, "; ")) +
                      "), or use a bundle exported for a backend registered here"
                    : "run on a machine where the backend is available, or use a bundle exported for "
                      "an available backend");
  }

  // The program's signature must be the manifest's.
  std::vector<std::string> disagree;
  auto check_sig = [&](bool is_input, size_t count, const std::vector<TensorSpec>& specs) {
    const char* role = is_input ? "inputs" : "outputs";
    if (count != specs.size()) {
      disagree.push_back(std::string(role) + ": the program has " + std::to_string(count) +
                         ", the manifest lists " + std::to_string(specs.size()));
      return;
    }
    for (size_t i = 0; i < count; ++i) {
      const std::string where = std::string(role) + "[" + std::to_string(i) + "] '" + specs[i].name + "'";
      auto tag = is_input ? meta->input_tag(i) : meta->output_tag(i);
      if (!tag.ok() || *tag != et::Tag::Tensor) {
        disagree.push_back(where + ": not a tensor in the program");
        continue;
      }
      auto info = is_input ? meta->input_tensor_meta(i) : meta->output_tensor_meta(i);
      if (!info.ok()) {
        disagree.push_back(where + ": unreadable tensor metadata (" + et_error_text(info.error()) + ")");
        continue;
      }
      if (info->scalar_type() != to_scalar_type(specs[i].dtype))
        disagree.push_back(where + ": dtype " + scalar_type_name(info->scalar_type()) + " in the program, " +
                           std::string(to_string(specs[i].dtype)) + " in the manifest");
      std::vector<int64_t> sizes(info->sizes().begin(), info->sizes().end());
      if (!shape_matches(sizes, specs[i].shape))
        disagree.push_back(where + ": shape " + shape_to_string(sizes) + " in the program, " +
                           shape_to_string(specs[i].shape) + " in the manifest");
    }
  };
  check_sig(true, meta->num_inputs(), m.inputs);
  for (size_t i = 0; i < meta->num_inputs(); ++i) {
    auto info = meta->input_tensor_meta(i);
    impl->input_planned.push_back(info.ok() && info->is_memory_planned());
  }
  check_sig(false, meta->num_outputs(), m.outputs);
  if (!disagree.empty())
    throw Error(ErrorKind::kArtifactMismatch,
                "bundle '" + m.name + "': program and manifest disagree: " + join(disagree, "; "),
                "re-export the bundle; its manifest does not describe its program");

  if (const et::Error e = module.load_method("forward"); e != et::Error::Ok)
    throw Error(ErrorKind::kLoadFailed,
                "ExecuTorch could not load method 'forward' of bundle '" + m.name + "': " + et_error_text(e),
                e == et::Error::OperatorMissing
                    ? "this binary lacks a kernel the program uses; link the kernel library the export "
                      "needs (see ExecuTorch's log above for the operator)"
                    : "see ExecuTorch's log above for the detail; re-export the bundle with the ExecuTorch "
                      "version this binary links",
                uint32_t(e));
  return LoadedModel(std::move(impl));
}

std::map<std::string, HostTensor> LoadedModel::run(const std::map<std::string, HostTensor>& inputs) {
  require_loaded(impl_.get());
  Impl& s = *impl_;
  std::vector<Problem> problems;
  for (const auto& [name, _] : inputs)
    if (!find_spec(s.inputs, name))
      problems.push_back({ErrorKind::kInvalidArgument,
                          "unknown input '" + name + "' (the program's inputs: " + join(spec_names(s.inputs), ", ") + ")"});
  for (const auto& spec : s.inputs) {
    auto it = inputs.find(spec.name);
    if (it == inputs.end()) {
      problems.push_back({ErrorKind::kInvalidArgument, "input '" + spec.name + "' not given"});
      continue;
    }
    const HostTensor& t = it->second;
    if (t.dtype != spec.dtype)
      problems.push_back({ErrorKind::kDtypeMismatch, "input '" + spec.name + "': dtype " +
                                                         std::string(to_string(t.dtype)) + " given, the manifest says " +
                                                         std::string(to_string(spec.dtype))});
    if (!shape_matches(t.shape, spec.shape))
      problems.push_back({ErrorKind::kShapeMismatch, "input '" + spec.name + "': shape " + shape_to_string(t.shape) +
                                                         " given, the manifest says " + shape_to_string(spec.shape)});
    else if (std::any_of(t.shape.begin(), t.shape.end(), [](int64_t d) { return d < 0 || d > INT32_MAX; }))
      problems.push_back({ErrorKind::kShapeMismatch,
                          "input '" + spec.name + "': shape " + shape_to_string(t.shape) + " is outside what ExecuTorch carries"});
    else if (t.data.size() != t.numel() * dtype_size(t.dtype))
      problems.push_back({ErrorKind::kInvalidArgument,
                          "input '" + spec.name + "': holds " + std::to_string(t.data.size()) + " bytes, its shape and dtype need " +
                              std::to_string(t.numel() * dtype_size(t.dtype))});
  }
  if (!problems.empty()) {
    std::vector<std::string> texts;
    for (const auto& p : problems) texts.push_back(p.text);
    throw Error(problems.front().kind, "bundle '" + s.bundle + "': " + join(texts, "; "), remedy_for(problems.front().kind));
  }

  std::vector<::executorch::extension::TensorPtr> tensors;
  std::vector<et::EValue> values;
  tensors.reserve(s.inputs.size());
  values.reserve(s.inputs.size());
  for (size_t i = 0; i < s.inputs.size(); ++i) {
    const HostTensor& t = inputs.at(s.inputs[i].name);
    std::vector<::executorch::aten::SizesType> sizes(t.shape.begin(), t.shape.end());
    // Planned: Method::set_input copies from these bytes and never writes them (bundle.h), so a
    // view suffices. Not planned: ExecuTorch would compute on the bytes given, so give it a copy.
    tensors.push_back(s.input_planned[i]
                          ? ::executorch::extension::make_tensor_ptr(std::move(sizes), const_cast<uint8_t*>(t.data.data()),
                                                                     {}, {}, to_scalar_type(t.dtype))
                          : ::executorch::extension::make_tensor_ptr(std::move(sizes), Bytes(t.data), {}, {},
                                                                     to_scalar_type(t.dtype)));
    values.emplace_back(*tensors.back());
  }

  auto result = s.module->forward(values);
  if (!result.ok())
    throw Error(ErrorKind::kRunFailed,
                "ExecuTorch failed running 'forward' of bundle '" + s.bundle + "': " + et_error_text(result.error()),
                "see ExecuTorch's log above for the failing operator or delegate", uint32_t(result.error()));
  if (result->size() != s.outputs.size())
    throw Error(ErrorKind::kRunFailed,
                "bundle '" + s.bundle + "': 'forward' returned " + std::to_string(result->size()) +
                    " values, the manifest lists " + std::to_string(s.outputs.size()) + " outputs",
                "re-export the bundle; its manifest does not describe its program");

  std::map<std::string, HostTensor> out;
  for (size_t i = 0; i < s.outputs.size(); ++i) {
    const TensorSpec& spec = s.outputs[i];
    const et::EValue& v = (*result)[i];
    const std::string where = "bundle '" + s.bundle + "' output '" + spec.name + "'";
    if (!v.isTensor())
      throw Error(ErrorKind::kRunFailed, where + ": not a tensor", "re-export the bundle; its manifest does not describe its program");
    HostTensor h = to_host(v.toTensor(), where);
    if (h.dtype != spec.dtype)
      throw Error(ErrorKind::kDtypeMismatch,
                  where + ": dtype " + std::string(to_string(h.dtype)) + " produced, the manifest says " +
                      std::string(to_string(spec.dtype)),
                  "re-export the bundle; its manifest does not describe its program");
    if (!shape_matches(h.shape, spec.shape))
      throw Error(ErrorKind::kShapeMismatch,
                  where + ": shape " + shape_to_string(h.shape) + " produced, the manifest says " + shape_to_string(spec.shape),
                  "re-export the bundle; its manifest does not describe its program");
    out.emplace(spec.name, std::move(h));
  }
  return out;
}

}  // namespace etproof
