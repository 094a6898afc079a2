// etproof/loaded_model.cpp — load a bundle's program into ExecuTorch and run it
// (etproof/bundle.h, LoadedModel).
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <limits>
#include <optional>
#include <set>

#include <executorch/extension/data_loader/buffer_data_loader.h>
#include <executorch/extension/module/module.h>
#include <executorch/extension/tensor/tensor.h>
#include <executorch/runtime/backend/interface.h>
#include <executorch/runtime/platform/runtime.h>

#include "etproof/core/backend_table.h"
#include "etproof/runtime/bundle.h"
#include "etproof/core/error.h"
#include "etproof/runtime/kernels.h"
#include "etproof/runtime/registry.h"
#include "etproof/runtime/backend_quirks.h"
#include "etproof/runtime/targets.h"
#include "etproof/runtime/runtime_log.h"
#include "runtime/bundle_files.h"
#include "core/common.h"
#include "runtime/worker.h"

namespace etproof {
namespace et = ::executorch::runtime;
using ::executorch::aten::ScalarType;
using ::executorch::extension::Module;
using detail::join;
using detail::join_or_none;
using namespace bundle_detail;  // NOLINT: shared with bundle.cpp (bundle_files.h)

namespace {

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
  // What ExecuTorch hands back is checked before it is used (a corrupted program can produce any
  // of these; fuzz/crashes/bundle): sizes that are non-negative and agree with its own element
  // count, strides for every dimension that stay inside the tensor's elements, a data pointer.
  const auto bad = [&](const std::string& why) {
    return Error(ErrorKind::kRunFailed, what + ": ExecuTorch returned " + why,
                 "re-export the bundle; if the hash matches, the program is corrupted or was written by "
                 "another ExecuTorch version");
  };
  size_t n = 1;
  for (auto s : sizes) {
    if (s < 0) throw bad("a negative size in shape " + shape_to_string(h.shape));
    if (s != 0 && n > std::numeric_limits<size_t>::max() / elem / size_t(s))
      throw bad("shape " + shape_to_string(h.shape) + ", too large to copy");
    n *= size_t(s);
  }
  if (t.numel() < 0 || size_t(t.numel()) != n)
    throw bad("shape " + shape_to_string(h.shape) + " but " + std::to_string(t.numel()) + " elements");
  if (strides.size() != sizes.size())
    throw bad(std::to_string(strides.size()) + " strides for " + std::to_string(sizes.size()) + " dimensions");
  h.data.resize(n * elem);
  if (n == 0) return h;
  int64_t last = 0;  // the offset, in elements, of the last element the strides reach
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (strides[d] < 0) throw bad("a negative stride");
    last += int64_t(sizes[d] - 1) * strides[d];  // sizes < 2^31, strides < 2^31, rank small: no overflow
  }
  if (uint64_t(last) >= n) throw bad("strides that reach outside the tensor's " + std::to_string(n) + " elements");
  const auto* src = static_cast<const uint8_t*>(t.const_data_ptr());
  if (!src) throw bad("no data for " + std::to_string(n) + " elements");
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
      return "give the input in the shape the manifest lists (-1 = any size inside that dimension's range; "
             "`etproof inspect BUNDLE` shows it), or re-export with a Dim whose range covers it";
    default:
      return "give every input the manifest lists, once, by name";
  }
}

// A dynamic dimension given a size outside its range: the manifest's (dynamic_dims), else the
// program's own upper bound (`bounds`, MethodMeta's sizes). `shape` already fits spec.shape.
std::optional<std::string> dynamic_size_problem(const TensorSpec& spec, const std::vector<int64_t>& shape,
                                                const std::vector<int64_t>& bounds) {
  for (size_t axis = 0; axis < spec.shape.size(); ++axis) {
    if (spec.shape[axis] != -1) continue;
    const int64_t size = shape[axis];
    const auto dim = std::find_if(spec.dynamic_dims.begin(), spec.dynamic_dims.end(),
                                  [&](const DynamicDim& d) { return d.axis == int64_t(axis); });
    if (dim != spec.dynamic_dims.end()) {
      if (size < dim->min || size > dim->max)
        return "dimension " + std::to_string(axis) + " ('" + dim->name + "') is " + std::to_string(size) +
               ", outside the range " + std::to_string(dim->min) + ".." + std::to_string(dim->max) +
               " the program was exported for";
    } else if (axis < bounds.size() && size > bounds[axis]) {
      return "dimension " + std::to_string(axis) + " is " + std::to_string(size) +
             ", above the program's upper bound " + std::to_string(bounds[axis]) + " (the largest size ExecuTorch "
             "planned memory for)";
    }
  }
  return std::nullopt;
}

// Whether a string ExecuTorch returned from the program (a delegate id, a method name) can be read: not in the
// first page (null, or a small offset from it), and when the program was loaded from `program`'s
// bytes, starting inside them with a NUL before their end. Flatbuffer strings always end in NUL.
bool readable_program_string(const char* p, const std::vector<uint8_t>* program) {
  if (reinterpret_cast<uintptr_t>(p) < 4096) return false;
  if (!program) return true;  // loaded by path (a program with data files): ExecuTorch's own buffer
  const char* begin = reinterpret_cast<const char*>(program->data());
  const char* end = begin + program->size();
  if (p < begin || p >= end) return false;
  return std::memchr(p, '\0', size_t(end - p)) != nullptr;
}

}  // namespace

// ---- the loaded model -------------------------------------------------------------------------

// One method of the program, as loaded: its manifest signature and what ExecuTorch records of
// its inputs.
struct LoadedMethod {
  std::string name;
  std::vector<TensorSpec> inputs;
  std::vector<TensorSpec> outputs;
  std::vector<bool> input_planned;  // per input: ExecuTorch copies it into planned memory
  // Per input: the sizes the program records (MethodMeta). For a dynamic dimension that is the
  // largest size ExecuTorch planned memory for (a dynamic-bound tensor's upper bound).
  std::vector<std::vector<int64_t>> input_bounds;
};

struct LoadedModel::Impl {
  std::string bundle;  // bundle name, for messages
  bool several = false;  // has_several_methods: messages name the method
  std::vector<LoadedMethod> methods;  // in the manifest's order
  std::vector<std::string> delegates;
  // The whole program, owned here and declared before `module` so it outlives it. ExecuTorch
  // loads from this buffer, so every segment a delegate keeps a pointer into stays valid for the
  // Module's lifetime. Measured: with Module's file or mmap loaders, the OpenVINO delegate
  // (ExecuTorch 1.5.1) segfaults executing EfficientNet-Lite0 after init frees the segment it
  // imported (ExecuTorch's Python runtime crashes the same way loading by path, not from bytes).
  // Shared with the Bundle it was loaded from (the bytes open_bundle hashed).
  std::shared_ptr<const Bytes> program;
  std::unique_ptr<Module> module;
  // Isolated (etproof/isolation.h): the worker process that loaded the program and runs it; then
  // `program` and `module` stay empty here.
  std::unique_ptr<detail::WorkerClient> worker;

  // "bundle 'B'" for messages, with "method 'M'" when the program has several methods.
  std::string where(const LoadedMethod& method) const {
    return "bundle '" + bundle + "'" + (several ? " method '" + method.name + "'" : std::string());
  }
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

std::vector<std::string> LoadedModel::method_names() const {
  require_loaded(impl_.get());
  std::vector<std::string> out;
  for (const LoadedMethod& lm : impl_->methods) out.push_back(lm.name);
  return out;
}

// A model's state before anything is loaded: its name and its methods' specs, from the manifest.
std::unique_ptr<LoadedModel::Impl> LoadedModel::impl_for(const Manifest& m) {
  auto impl = std::make_unique<Impl>();
  impl->bundle = m.name;
  impl->several = has_several_methods(m);
  for (const MethodSpec& spec : methods_of(m)) impl->methods.push_back({spec.name, spec.inputs, spec.outputs, {}, {}});
  return impl;
}

namespace {

// The target a delegate the program calls recorded in its artifact (a backend module reads it:
// etproof/runtime/backend_quirks.h), with that module; nullopt where none records one.
struct ProgramTarget {
  const BackendQuirks* quirks;
  std::string requirements;
};
std::optional<ProgramTarget> program_requirements(const std::vector<uint8_t>& program,
                                                  const std::vector<std::string>& delegates) {
  for (const std::string& id : delegates)
    if (const BackendQuirks* q = quirks_for_delegate(id); q && q->requirements_in)
      if (auto r = q->requirements_in(std::string_view(reinterpret_cast<const char*>(program.data()), program.size())))
        return ProgramTarget{q, *r};
  return std::nullopt;
}

// A failed load that a target-bound delegate explains, or that its artifact's header explains, as
// an artifact compiled for another target: the backend's own words (BackendQuirks::
// says_other_target, e.g. OpenVINO's "Cannot import compiled blob: it was built for a different
// runtime configuration"), or its import failing (import_failed_phrase) where the artifact's
// requirements differ from this machine's.
std::optional<Error> other_target_error(const Manifest& m, const BackendQuirks& q,
                                        const std::optional<std::string>& blob,
                                        const std::vector<std::string>& said, const std::string& method,
                                        uint32_t code) {
  std::string backend_said, import_failed;
  for (const std::string& line : said) {
    if (q.says_other_target && q.says_other_target(line)) backend_said = line;
    if (!q.import_failed_phrase.empty() && line.find(q.import_failed_phrase) != std::string::npos)
      import_failed = line;
  }
  if (backend_said.empty() && import_failed.empty()) return std::nullopt;
  std::string why_not;
  const std::optional<std::string> here = q.requirements_here ? q.requirements_here(why_not) : std::nullopt;
  const bool header_differs = blob && here && *blob != *here;
  if (backend_said.empty() && !header_differs) return std::nullopt;
  const Target target = m.target.value_or(Target{std::string(q.target_kind), blob.value_or(""), "", ""});
  return Error(ErrorKind::kTargetMismatch,
               "bundle '" + m.name + "': " + std::string(q.display) + " could not import its compiled blob while loading '" +
                   method + "' (" + (backend_said.empty() ? import_failed : backend_said) + ")" +
                   (blob ? "; the program's blob was compiled for '" + *blob + "'" : std::string()) +
                   (m.target ? "; the manifest records '" + m.target->requirements + "'"
                             : std::string("; the manifest records no target")) +
                   (here ? "; this machine's " + std::string(q.target_runtime) + " compiles for '" + *here + "'"
                         : std::string()),
               target_remedy(target), code);
}

}  // namespace

LoadedModel LoadedModel::load(const Bundle& bundle, const Isolation& isolation) {
  if (!isolation.enabled) return load(bundle);
  const Manifest& m = bundle.manifest;
  auto impl = impl_for(m);
  impl->worker = std::make_unique<detail::WorkerClient>(isolation, bundle.manifest_path, "bundle '" + m.name + "'");
  impl->delegates = impl->worker->load().delegates;
  return LoadedModel(std::move(impl));
}

LoadedModel LoadedModel::load(const Bundle& bundle) {
  et::runtime_init();
  const Manifest& m = bundle.manifest;
  auto impl = impl_for(m);
  std::vector<std::string> quoted;  // 'encode', 'decode' (or 'forward'), for messages
  for (const LoadedMethod& lm : impl->methods) quoted.push_back("'" + lm.name + "'");

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
  // Where the program's weights come from, for ExecuTorch's refusals (its named-data map reads them).
  const std::string with_data = data_files.empty() ? "" : " with its data file " + join(data_files, ", ");

  // Full flatbuffer verification: a truncated or corrupted program is refused here, not crashed on.
  if (const et::Error e = module.load(et::Program::Verification::InternalConsistency); e != et::Error::Ok)
    throw Error(ErrorKind::kLoadFailed,
                "ExecuTorch refused the program " + pte + with_data + ": " + et_error_text(e),
                std::string(kReexport) + "; if the hash matches, export it with the ExecuTorch version this "
                "binary links (see ExecuTorch's log above for the detail)",
                uint32_t(e));

  // Every method the manifest lists must be in the program.
  std::vector<et::MethodMeta> metas;
  for (const LoadedMethod& lm : impl->methods) {
    auto meta = module.method_meta(lm.name);
    if (meta.ok()) {
      metas.push_back(*meta);
      continue;
    }
    // The program's method names, read without Module::method_names(): that aborts the process
    // (ExecuTorch 1.5.1 calls .get() on each get_method_name Result) on a corrupted program whose
    // name table is unreadable (fuzz/crashes/bundle). Unreadable here: listed stays false.
    std::vector<std::string> names;
    bool listed = false;
    if (const auto program = module.program()) {
      listed = true;
      for (size_t i = 0; i < program->num_methods() && listed; ++i) {
        const auto name = program->get_method_name(i);
        listed = name.ok() && readable_program_string(*name, impl->program.get());
        if (listed) names.emplace_back(*name);
      }
      if (!listed) names.clear();
    }
    std::sort(names.begin(), names.end());
    const std::string methods = " (the program's methods: " + join_or_none(names) + ")";
    if (listed && std::find(names.begin(), names.end(), lm.name) == names.end())
      throw Error(ErrorKind::kArtifactMismatch,
                  "bundle '" + m.name + "': the manifest lists method '" + lm.name + "' but program " + pte +
                      " has no method of that name" + methods,
                  "re-export the bundle; its manifest does not describe its program");
    throw Error(ErrorKind::kLoadFailed,
                "program " + pte + " has no usable method '" + lm.name + "': " + et_error_text(meta.error()) +
                    (listed ? methods : std::string()),
                "export the model's " + lm.name + " method", uint32_t(meta.error()));
  }

  // The delegates the program itself contains (one entry per delegate instance, names repeat),
  // over every method.
  std::set<std::string> ids;
  for (const et::MethodMeta& meta : metas) {
    for (size_t i = 0; i < meta.num_backends(); ++i) {
      auto name = meta.get_backend_name(i);
      if (!name.ok())
        throw Error(ErrorKind::kLoadFailed,
                    "program " + pte + ": cannot read delegate " + std::to_string(i) + ": " + et_error_text(name.error()),
                    kReexport, uint32_t(name.error()));
      // ExecuTorch 1.5.1 returns the id's characters without checking that the delegate entry
      // has one: a corrupted program's entry without an id gives a pointer just past null (0x4;
      // fuzz/crashes/bundle). The pointer must lie inside the program etproof handed it (when
      // loaded from etproof's buffer), NUL-terminated there, and never in the first page.
      if (!readable_program_string(*name, impl->program.get()))
        throw Error(ErrorKind::kLoadFailed, "program " + pte + ": delegate " + std::to_string(i) + " has no readable id",
                    kReexport);
      ids.insert(*name);
    }
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
        const auto b = find_backend(id);
        missing.push_back(id + " (registered, but reports itself unavailable on this machine" +
                          (b && !b->unavailable_detail.empty() ? ": " + b->unavailable_detail : std::string()) + ")");
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

  // A target-bound artifact (an OpenVINO CPU blob) compiled for another machine: refused by name
  // before its delegate is asked to load it (etproof/runtime/targets.h). What it was compiled for:
  // the manifest's target, else (a bundle exported before the field) its program's artifact header.
  std::optional<Target> target = m.target;
  const std::optional<ProgramTarget> program_target =
      impl->program ? program_requirements(*impl->program, impl->delegates) : std::nullopt;
  const std::optional<std::string> blob =
      program_target ? std::optional<std::string>(program_target->requirements) : std::nullopt;
  if (!target && program_target) target = Target{std::string(program_target->quirks->target_kind), *blob, "", ""};
  // The backend module that can explain a failed load as another target's.
  const BackendQuirks* target_quirks = program_target ? program_target->quirks
                                       : target       ? quirks_for_target(target->kind)
                                                      : nullptr;
  for (const std::string& id : impl->delegates)
    if (const BackendQuirks* q = quirks_for_delegate(id); !target_quirks && q && q->says_other_target) target_quirks = q;
  if (target) {
    if (const TargetCheck t = check_target(*target); t.checked && !t.matches)
      throw Error(ErrorKind::kTargetMismatch,
                  "bundle '" + m.name + "': " + t.why +
                      (m.target ? std::string() : " (read from its program: the manifest records no target)"),
                  target_remedy(*target));
  }

  // The program's signature must be the manifest's, method by method.
  std::vector<std::string> disagree;
  auto check_sig = [&](const et::MethodMeta* meta, const std::string& method, bool is_input, size_t count,
                       const std::vector<TensorSpec>& specs) {
    const std::string role = (impl->several ? "method '" + method + "' " : std::string()) + (is_input ? "inputs" : "outputs");
    if (count != specs.size()) {
      disagree.push_back(role + ": the program has " + std::to_string(count) +
                         ", the manifest lists " + std::to_string(specs.size()));
      return;
    }
    for (size_t i = 0; i < count; ++i) {
      const std::string where = role + "[" + std::to_string(i) + "] '" + specs[i].name + "'";
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
  for (size_t k = 0; k < impl->methods.size(); ++k) {
    LoadedMethod& lm = impl->methods[k];
    const et::MethodMeta* meta = &metas[k];
    check_sig(meta, lm.name, true, meta->num_inputs(), lm.inputs);
    for (size_t i = 0; i < meta->num_inputs(); ++i) {
      auto info = meta->input_tensor_meta(i);
      lm.input_planned.push_back(info.ok() && info->is_memory_planned());
      lm.input_bounds.push_back(info.ok() ? std::vector<int64_t>(info->sizes().begin(), info->sizes().end())
                                          : std::vector<int64_t>{});
    }
    check_sig(meta, lm.name, false, meta->num_outputs(), lm.outputs);
  }
  if (!disagree.empty())
    throw Error(ErrorKind::kArtifactMismatch,
                "bundle '" + m.name + "': program and manifest disagree: " + join(disagree, "; "),
                "re-export the bundle; its manifest does not describe its program");

  // The memory the program plans: Module::load_method allocates every buffer the program says it
  // needs (MethodMeta::memory_planned_buffer_size) before anything runs, every method at once. A
  // corrupted program can ask for terabytes (fuzz/crashes/bundle), which would end in
  // std::bad_alloc or the OOM killer: more than this machine's physical memory is refused by name.
  {
    const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
    const uint64_t ram = pages > 0 && page > 0 ? uint64_t(pages) * uint64_t(page) : UINT64_MAX;
    uint64_t total = 0;
    for (size_t k = 0; k < impl->methods.size(); ++k) {
      const et::MethodMeta& meta = metas[k];
      for (size_t b = 0; b < meta.num_memory_planned_buffers(); ++b) {
        const auto size = meta.memory_planned_buffer_size(b);
        if (!size.ok())
          throw Error(ErrorKind::kLoadFailed,
                      "program " + pte + ": cannot read the size of planned buffer " + std::to_string(b) + " of '" +
                          impl->methods[k].name + "': " + et_error_text(size.error()),
                      kReexport, uint32_t(size.error()));
        if (*size < 0 || uint64_t(*size) > ram - total)
          throw Error(ErrorKind::kLoadFailed,
                      "bundle '" + m.name + "': program " + pte + " plans " +
                          (*size < 0 ? "a negative size (" + std::to_string(*size) + " bytes) for a buffer"
                                     : "more than " + std::to_string(ram) + " bytes of memory (this machine's RAM): " +
                                           "buffer " + std::to_string(b) + " of '" + impl->methods[k].name +
                                           "' alone is " + std::to_string(*size) + " bytes"),
                      std::string(kReexport) + "; a program that really needs that much runs only on a machine with "
                      "more memory");
        total += uint64_t(*size);
      }
    }
  }

  // Refuse by operator name, before Method::init would fail with OperatorMissing (0x14): the
  // operators the export half read from the program, asked of this binary's kernel registry.
  if (m.operators) {
    if (const auto missing = missing_kernels(*m.operators); !missing.empty())
      throw kernel_missing_error(m.name, missing,
                                 "the operators its manifest records, checked against this binary's kernel "
                                 "registry before loading " + join(quoted));
  }
  // ExecuTorch's Error lines while loading are kept: they name what failed (a bundle without
  // `operators`, a kernel for other dtypes only), so the error carries them, not "the log above".
  std::vector<std::string> said_all;
  for (const LoadedMethod& lm : impl->methods) {
    et::Error e;
    std::vector<std::string> said;
    {
      RuntimeLogCapture capture;
      e = module.load_method(lm.name);
      said = capture.lines();
    }
    if (e != et::Error::Ok) {
      // A delegate failed to import an artifact compiled for another machine: a target mismatch, not an
      // ExecuTorch version problem, whatever the manifest recorded.
      if (target_quirks)
        if (auto other = other_target_error(m, *target_quirks, blob, said, lm.name, uint32_t(e))) throw *other;
      if (e == et::Error::OperatorMissing)
        if (const auto missing = missing_operators_in_log(said); !missing.empty())
          throw kernel_missing_error(m.name, missing, "named by ExecuTorch while loading '" + lm.name + "': " + et_error_text(e),
                                     uint32_t(e));
      constexpr size_t kMaxLines = 8;
      if (said.size() > kMaxLines) {
        const size_t more = said.size() - kMaxLines;
        said.resize(kMaxLines);
        said.push_back("… " + std::to_string(more) + " more");
      }
      throw Error(ErrorKind::kLoadFailed,
                  "ExecuTorch could not load method '" + lm.name + "' of bundle '" + m.name + "'" + with_data + ": " +
                      et_error_text(e) + (said.empty() ? std::string() : "; ExecuTorch said: " + join(said, "; ")),
                  e == et::Error::OperatorMissing
                      ? "this binary lacks a kernel the program uses; link the kernel library the export needs"
                      : "re-export the bundle with the ExecuTorch version this binary links",
                  uint32_t(e));
    }
    said_all.insert(said_all.end(), said.begin(), said.end());
  }
  // Loaded: what ExecuTorch said at Error level is still shown, as its own sink would have.
  for (const auto& line : said_all) std::fprintf(stderr, "E executorch: %s\n", line.c_str());
  return LoadedModel(std::move(impl));
}

std::map<std::string, HostTensor> LoadedModel::run(const std::map<std::string, HostTensor>& inputs) {
  require_loaded(impl_.get());
  return run(impl_->methods.front().name, inputs);
}

std::map<std::string, HostTensor> LoadedModel::run(const std::string& method,
                                                   const std::map<std::string, HostTensor>& inputs) {
  require_loaded(impl_.get());
  Impl& s = *impl_;
  const auto found = std::find_if(s.methods.begin(), s.methods.end(),
                                  [&](const LoadedMethod& lm) { return lm.name == method; });
  if (found == s.methods.end()) {
    std::vector<std::string> names;
    for (const LoadedMethod& lm : s.methods) names.push_back("'" + lm.name + "'");
    throw Error(ErrorKind::kInvalidArgument,
                "bundle '" + s.bundle + "' has no method '" + method + "' (its methods: " + join(names) + ")",
                "run one of the methods its manifest lists (etproof inspect BUNDLE shows them)");
  }
  if (s.worker) return s.worker->run(method, inputs);  // the worker checks the inputs, as below
  const LoadedMethod& lm = *found;
  std::vector<Problem> problems;
  for (const auto& [name, _] : inputs)
    if (!find_spec(lm.inputs, name))
      problems.push_back({ErrorKind::kInvalidArgument,
                          "unknown input '" + name + "' (the " + (s.several ? "method's" : "program's") +
                              " inputs: " + join(spec_names(lm.inputs), ", ") + ")"});
  for (size_t i = 0; i < lm.inputs.size(); ++i) {
    const TensorSpec& spec = lm.inputs[i];
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
    else if (auto out_of_range = dynamic_size_problem(spec, t.shape, lm.input_bounds[i]))
      problems.push_back({ErrorKind::kShapeMismatch, "input '" + spec.name + "': " + *out_of_range});
    else if (t.data.size() != t.numel() * dtype_size(t.dtype))
      problems.push_back({ErrorKind::kInvalidArgument,
                          "input '" + spec.name + "': holds " + std::to_string(t.data.size()) + " bytes, its shape and dtype need " +
                              std::to_string(t.numel() * dtype_size(t.dtype))});
  }
  if (!problems.empty()) {
    std::vector<std::string> texts;
    for (const auto& p : problems) texts.push_back(p.text);
    throw Error(problems.front().kind, s.where(lm) + ": " + join(texts, "; "), remedy_for(problems.front().kind));
  }

  std::vector<::executorch::extension::TensorPtr> tensors;
  std::vector<et::EValue> values;
  tensors.reserve(lm.inputs.size());
  values.reserve(lm.inputs.size());
  for (size_t i = 0; i < lm.inputs.size(); ++i) {
    const HostTensor& t = inputs.at(lm.inputs[i].name);
    std::vector<::executorch::aten::SizesType> sizes(t.shape.begin(), t.shape.end());
    // Planned: Method::set_input copies from these bytes and never writes them (bundle.h), so a
    // view suffices. Not planned: ExecuTorch would compute on the bytes given, so give it a copy.
    tensors.push_back(lm.input_planned[i]
                          ? ::executorch::extension::make_tensor_ptr(std::move(sizes), const_cast<uint8_t*>(t.data.data()),
                                                                     {}, {}, to_scalar_type(t.dtype))
                          : ::executorch::extension::make_tensor_ptr(std::move(sizes), Bytes(t.data), {}, {},
                                                                     to_scalar_type(t.dtype)));
    values.emplace_back(*tensors.back());
  }

  auto result = s.module->execute(lm.name, values);
  if (!result.ok())
    throw Error(ErrorKind::kRunFailed,
                "ExecuTorch failed running '" + lm.name + "' of bundle '" + s.bundle + "': " + et_error_text(result.error()),
                "see ExecuTorch's log above for the failing operator or delegate", uint32_t(result.error()));
  if (result->size() != lm.outputs.size())
    throw Error(ErrorKind::kRunFailed,
                "bundle '" + s.bundle + "': '" + lm.name + "' returned " + std::to_string(result->size()) +
                    " values, the manifest lists " + std::to_string(lm.outputs.size()) + " outputs",
                "re-export the bundle; its manifest does not describe its program");

  std::map<std::string, HostTensor> out;
  for (size_t i = 0; i < lm.outputs.size(); ++i) {
    const TensorSpec& spec = lm.outputs[i];
    const et::EValue& v = (*result)[i];
    const std::string where = s.where(lm) + " output '" + spec.name + "'";
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
