// LoadedModel::load's stages (runtime/load_checks.h).
#include "runtime/load_checks.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <set>

#include "etproof/core/backend_table.h"
#include "etproof/core/error.h"
#include "etproof/runtime/kernels.h"
#include "etproof/runtime/registry.h"
#include "etproof/runtime/runtime_log.h"
#include "etproof/runtime/targets.h"
#include "core/common.h"

namespace etproof::load_detail {
using detail::join;
using detail::join_or_none;
using namespace bundle_detail;  // NOLINT: kReexport, shape_matches (bundle_files.h)

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

// Whether a string ExecuTorch returned from the program (a delegate id, a method name) can be read: not in the
// first page (null, or a small offset from it), and when the program was loaded from `program`'s
// bytes, starting inside them with a NUL before their end. Flatbuffer strings always end in NUL.
bool readable_program_string(const char* p, const Bytes* program) {
  if (reinterpret_cast<uintptr_t>(p) < 4096) return false;
  if (!program) return true;  // loaded by path (a program with data files): ExecuTorch's own buffer
  const char* begin = reinterpret_cast<const char*>(program->data());
  const char* end = begin + program->size();
  if (p < begin || p >= end) return false;
  return std::memchr(p, '\0', size_t(end - p)) != nullptr;
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

std::vector<et::MethodMeta> method_metas(Module& module, const std::vector<LoadedMethod>& methods,
                                         const Bytes* bytes, const Manifest& m, const std::string& pte) {
  // Every method the manifest lists must be in the program.
  std::vector<et::MethodMeta> metas;
  for (const LoadedMethod& lm : methods) {
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
        listed = name.ok() && readable_program_string(*name, bytes);
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

  return metas;
}

std::vector<std::string> read_program_delegates(const std::vector<et::MethodMeta>& metas, const Bytes* program,
                                                const Manifest& m, const std::string& pte) {
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
      if (!readable_program_string(*name, program))
        throw Error(ErrorKind::kLoadFailed, "program " + pte + ": delegate " + std::to_string(i) + " has no readable id",
                    kReexport);
      ids.insert(*name);
    }
  }
  std::vector<std::string> delegates(ids.begin(), ids.end());
  if (delegates != m.delegates)
    throw Error(ErrorKind::kArtifactMismatch,
                "bundle '" + m.name + "': the manifest records delegates [" + join_or_none(m.delegates) +
                    "] but the program contains [" + join_or_none(delegates) + "]",
                "re-export the bundle; its manifest does not describe its program");

  return delegates;
}

void refuse_unavailable_delegates(const std::vector<std::string>& delegates, const Manifest& m) {
  // Refuse by name, before ExecuTorch's Method::init would fail with NotFound (0x20).
  if (const DelegateAvailability avail = delegate_availability(delegates); !avail.ok()) {
    const auto has = [](const std::vector<std::string>& v, const std::string& id) {
      return std::find(v.begin(), v.end(), id) != v.end();
    };
    std::vector<std::string> missing, needs;
    for (const auto& id : delegates) {
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

}

TargetPlan check_program_target(const Manifest& m, const Bytes* program, const std::vector<std::string>& delegates) {
  // A target-bound artifact (an OpenVINO CPU blob) compiled for another machine: refused by name
  // before its delegate is asked to load it (etproof/runtime/targets.h). What it was compiled for:
  // the manifest's target, else (a bundle exported before the field) its program's artifact header.
  std::optional<Target> target = m.target;
  const std::optional<ProgramTarget> program_target =
      program ? program_requirements(*program, delegates) : std::nullopt;
  const std::optional<std::string> blob =
      program_target ? std::optional<std::string>(program_target->requirements) : std::nullopt;
  if (!target && program_target) target = Target{std::string(program_target->quirks->target_kind), *blob, "", ""};
  // The backend module that can explain a failed load as another target's.
  const BackendQuirks* target_quirks = program_target ? program_target->quirks
                                       : target       ? quirks_for_target(target->kind)
                                                      : nullptr;
  for (const std::string& id : delegates)
    if (const BackendQuirks* q = quirks_for_delegate(id); !target_quirks && q && q->says_other_target) target_quirks = q;
  if (target) {
    if (const TargetCheck t = check_target(*target); t.checked && !t.matches)
      throw Error(ErrorKind::kTargetMismatch,
                  "bundle '" + m.name + "': " + t.why +
                      (m.target ? std::string() : " (read from its program: the manifest records no target)"),
                  target_remedy(*target));
  }

  return TargetPlan{blob, target_quirks};
}

void check_signature(std::vector<LoadedMethod>& methods, bool several, const std::vector<et::MethodMeta>& metas,
                     const Manifest& m) {
  // The program's signature must be the manifest's, method by method.
  std::vector<std::string> disagree;
  auto check_sig = [&](const et::MethodMeta* meta, const std::string& method, bool is_input, size_t count,
                       const std::vector<TensorSpec>& specs) {
    const std::string role = (several ? "method '" + method + "' " : std::string()) + (is_input ? "inputs" : "outputs");
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
  for (size_t k = 0; k < methods.size(); ++k) {
    LoadedMethod& lm = methods[k];
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

}

void check_planned_memory(const std::vector<LoadedMethod>& methods, const std::vector<et::MethodMeta>& metas,
                          const Manifest& m, const std::string& pte) {
  // The memory the program plans: Module::load_method allocates every buffer the program says it
  // needs (MethodMeta::memory_planned_buffer_size) before anything runs, every method at once. A
  // corrupted program can ask for terabytes (fuzz/crashes/bundle), which would end in
  // std::bad_alloc or the OOM killer: more than this machine's physical memory is refused by name.
  {
    const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
    const uint64_t ram = pages > 0 && page > 0 ? uint64_t(pages) * uint64_t(page) : UINT64_MAX;
    uint64_t total = 0;
    for (size_t k = 0; k < methods.size(); ++k) {
      const et::MethodMeta& meta = metas[k];
      for (size_t b = 0; b < meta.num_memory_planned_buffers(); ++b) {
        const auto size = meta.memory_planned_buffer_size(b);
        if (!size.ok())
          throw Error(ErrorKind::kLoadFailed,
                      "program " + pte + ": cannot read the size of planned buffer " + std::to_string(b) + " of '" +
                          methods[k].name + "': " + et_error_text(size.error()),
                      kReexport, uint32_t(size.error()));
        if (*size < 0 || uint64_t(*size) > ram - total)
          throw Error(ErrorKind::kLoadFailed,
                      "bundle '" + m.name + "': program " + pte + " plans " +
                          (*size < 0 ? "a negative size (" + std::to_string(*size) + " bytes) for a buffer"
                                     : "more than " + std::to_string(ram) + " bytes of memory (this machine's RAM): " +
                                           "buffer " + std::to_string(b) + " of '" + methods[k].name +
                                           "' alone is " + std::to_string(*size) + " bytes"),
                      std::string(kReexport) + "; a program that really needs that much runs only on a machine with "
                      "more memory");
        total += uint64_t(*size);
      }
    }
  }

}

void load_methods(Module& module, const std::vector<LoadedMethod>& methods, const Manifest& m,
                  const TargetPlan& target, const std::string& with_data, const std::vector<std::string>& quoted) {
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
  for (const LoadedMethod& lm : methods) {
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
      if (target.quirks)
        if (auto other = other_target_error(m, *target.quirks, target.blob, said, lm.name, uint32_t(e))) throw *other;
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
                  : e == et::Error::DelegateInvalidCompatibility
                      // The delegate refused its compiled artifact: another target or another backend
                      // version can each say so, and the code does not tell which.
                      ? "the delegate refused the artifact compiled for it: compiled for another target (a CPU "
                        "ISA class, a GPU or OS; the manifest's target says which) or by another version of the "
                        "backend than this binary links (the manifest's toolchain): re-export the bundle on this "
                        "machine's kind with the versions this binary links (etproof backends lists them)"
                      : "re-export the bundle with the ExecuTorch version this binary links",
                  uint32_t(e));
    }
    said_all.insert(said_all.end(), said.begin(), said.end());
  }
  // Loaded: what ExecuTorch said at Error level is still shown, as its own sink would have.
  for (const auto& line : said_all) std::fprintf(stderr, "E executorch: %s\n", line.c_str());
}

}  // namespace etproof::load_detail
