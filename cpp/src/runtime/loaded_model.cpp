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
#include "runtime/load_checks.h"
#include "runtime/worker.h"

namespace etproof {
namespace et = ::executorch::runtime;
using ::executorch::aten::ScalarType;
using ::executorch::extension::Module;
using detail::join;
using detail::join_or_none;
using namespace bundle_detail;  // NOLINT: shared with bundle.cpp (bundle_files.h)
using namespace load_detail;    // NOLINT: the load stages and conversions (load_checks.h)

namespace {

// ---- ExecuTorch <-> etproof -------------------------------------------------------------------





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


}  // namespace

// ---- the loaded model -------------------------------------------------------------------------


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
  // A program whose methods share its state (state.shared_across_methods) gets one set of planned
  // arenas for all of them: a write through one method is what the next reads. load_methods
  // loads every method here, before any runs: a method loaded later initializes the shared
  // buffers again (measured in ExecuTorch 1.5.1's Python runtime, which shares its arenas the
  // same way: accumulator_chain's read loaded after forward ran answers 0.29 off its golden).
  if (data_files.empty()) {
    if (!impl->program)  // read again, and no longer the manifest's size
      throw Error(ErrorKind::kArtifactMismatch,
                  "bundle '" + m.name + "': " + pte + " is not the " + std::to_string(m.artifact.bytes) +
                      " bytes the manifest says",
                  kReexport);
    impl->module = std::make_unique<Module>(
        std::make_unique<::executorch::extension::BufferDataLoader>(impl->program->data(), impl->program->size()),
        nullptr, nullptr, nullptr, nullptr, m.state_shared_across_methods);
  } else {
    impl->module = std::make_unique<Module>(pte, data_files, Module::LoadMode::File, nullptr, nullptr, nullptr,
                                            m.state_shared_across_methods);
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

  const Bytes* program = impl->program.get();
  const std::vector<et::MethodMeta> metas = method_metas(module, impl->methods, program, m, pte);
  impl->delegates = read_program_delegates(metas, program, m, pte);
  // Refuse by name, before ExecuTorch's Method::init would fail with NotFound (0x20).
  refuse_unavailable_delegates(impl->delegates, m);
  // A target-bound artifact (an OpenVINO CPU blob) compiled for another machine: refused by name
  // before its delegate is asked to load it.
  const TargetPlan target = check_program_target(m, program, impl->delegates);
  check_signature(impl->methods, impl->several, metas, m);
  check_planned_memory(impl->methods, metas, m, pte);
  load_methods(module, impl->methods, m, target, with_data, quoted);
  return LoadedModel(std::move(impl));
}

std::map<std::string, HostTensor> LoadedModel::run(const std::map<std::string, HostTensor>& inputs) {
  require_loaded(impl_.get());
  return run(impl_->methods.front().name, inputs);
}

namespace {

// Every problem of `inputs` against `lm`'s manifest specs: an unknown or missing input, a dtype or
// shape the manifest does not give, a size outside the program's dynamic bounds or what ExecuTorch
// carries, a byte count its shape and dtype do not need.
std::vector<Problem> input_problems(const LoadedMethod& lm, bool several,
                                    const std::map<std::string, HostTensor>& inputs) {
  std::vector<Problem> problems;
  for (const auto& [name, _] : inputs)
    if (!find_spec(lm.inputs, name))
      problems.push_back({ErrorKind::kInvalidArgument,
                          "unknown input '" + name + "' (the " + (several ? "method's" : "program's") +
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
  return problems;
}

// The inputs as ExecuTorch values, in the method's order (inputs already checked); `tensors` owns
// what the values point at and must outlive the call.
std::vector<et::EValue> input_values(const LoadedMethod& lm, const std::map<std::string, HostTensor>& inputs,
                                     std::vector<::executorch::extension::TensorPtr>& tensors) {
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
  return values;
}

// The size each named dynamic dimension was given by `inputs` (the method's inputs' dynamic_dims).
std::map<std::string, int64_t> given_dim_sizes(const LoadedMethod& lm, const std::map<std::string, HostTensor>& inputs) {
  std::map<std::string, int64_t> sizes;
  for (const TensorSpec& spec : lm.inputs) {
    auto it = inputs.find(spec.name);
    if (it == inputs.end()) continue;
    for (const DynamicDim& d : spec.dynamic_dims)
      if (size_t(d.axis) < it->second.shape.size()) sizes.emplace(d.name, it->second.shape[size_t(d.axis)]);
  }
  return sizes;
}

// Why `shape` is not the output `spec` declares for inputs that gave `dims` (given_dim_sizes): a
// rank or static size other than spec.shape's, or a dimension that is an input's Dim at another
// size than that input had ("with axis 0 the inputs' dimension 'batch', given 1"); nullopt when
// it fits.
std::optional<std::string> output_shape_problem(const TensorSpec& spec, const std::vector<int64_t>& shape,
                                                const std::map<std::string, int64_t>& dims) {
  if (!shape_matches(shape, spec.shape)) return "the manifest says " + shape_to_string(spec.shape);
  for (const DynamicDim& d : spec.dynamic_dims) {
    auto it = dims.find(d.name);
    if (it != dims.end() && shape[size_t(d.axis)] != it->second)
      return "the manifest says " + shape_to_string(spec.shape) + " with axis " + std::to_string(d.axis) +
             " the inputs' dimension '" + d.name + "', given " + std::to_string(it->second);
  }
  return std::nullopt;
}

// One output value as a host tensor named `where`; Error{kRunFailed, kDtypeMismatch} when it is not
// a tensor of the manifest's dtype, Error{kOutputShapeMismatch} when its shape is not the one
// output_shape_problem expects. The program's own method metadata agreed with the manifest at
// load (check_signature), so a shape that differs here was computed by the program as it ran:
// the backend's fault (`delegates`), not the bundle's.
HostTensor output_tensor(const et::EValue& v, const TensorSpec& spec, const std::string& where,
                         const std::map<std::string, int64_t>& dims, const std::vector<std::string>& delegates) {
  constexpr const char* kReexport = "re-export the bundle; its manifest does not describe its program";
  if (!v.isTensor()) throw Error(ErrorKind::kRunFailed, where + ": not a tensor", kReexport);
  HostTensor h = to_host(v.toTensor(), where);
  if (h.dtype != spec.dtype)
    throw Error(ErrorKind::kDtypeMismatch,
                where + ": dtype " + std::string(to_string(h.dtype)) + " produced, the manifest says " +
                    std::string(to_string(spec.dtype)),
                kReexport);
  if (auto problem = output_shape_problem(spec, h.shape, dims))
    throw Error(ErrorKind::kOutputShapeMismatch,
                where + ": shape " + shape_to_string(h.shape) + " produced, " + *problem +
                    " (the program ran and computed another shape" +
                    (delegates.empty() ? std::string(", on portable kernels")
                                       : "; delegate " + join(delegates) + ": the backend's, not the bundle's") +
                    ")",
                delegates.empty()
                    ? "report it to ExecuTorch with this bundle: the program's metadata matched its manifest at "
                      "load, so re-exporting gives the same program"
                    : "report it to the backend with this bundle (the program's metadata matched its manifest at "
                      "load, so re-exporting gives the same program); judge the model on another backend meanwhile");
  return h;
}

}  // namespace

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
  const std::vector<Problem> problems = input_problems(lm, s.several, inputs);
  if (!problems.empty()) {
    std::vector<std::string> texts;
    for (const auto& p : problems) texts.push_back(p.text);
    throw Error(problems.front().kind, s.where(lm) + ": " + join(texts, "; "), remedy_for(problems.front().kind));
  }

  std::vector<::executorch::extension::TensorPtr> tensors;
  auto result = s.module->execute(lm.name, input_values(lm, inputs, tensors));
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
  const std::map<std::string, int64_t> dims = given_dim_sizes(lm, inputs);
  for (size_t i = 0; i < lm.outputs.size(); ++i) {
    const TensorSpec& spec = lm.outputs[i];
    out.emplace(spec.name, output_tensor((*result)[i], spec, s.where(lm) + " output '" + spec.name + "'", dims,
                                         s.delegates));
  }
  return out;
}

}  // namespace etproof
