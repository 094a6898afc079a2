// etproof_c.cpp — the C ABI (etproof_c.h) over etproof's core: the runtime binding (bundle.h),
// the replay engine (replay.h) and the one Error type (error.h). Every entry point catches
// everything (guard below) and turns it into the thread's last error: nothing is thrown across
// the boundary. Built into libetproof_c.so with hidden visibility and a version script
// (etproof_c.map): only the etproof_* functions are exported.
#include "etproof_c.h"

#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "etproof/runtime/bundle.h"
#include "etproof/core/error.h"
#include "etproof/core/manifest.h"
#include "etproof/core/npy.h"
#include "etproof/runtime/registry.h"
#include "etproof/render/parity.h"
#include "etproof/replay/replay.h"
#include "etproof/runtime/runtime_log.h"
#include "etproof/core/status.h"
#include "core/common.h"

#ifndef ETPROOF_VERSION
#define ETPROOF_VERSION "unknown"
#endif

using etproof::DType;
using etproof::Error;
using etproof::ErrorKind;
using etproof::HostTensor;
using etproof::MethodSpec;
using etproof::TensorSpec;

// The handle. Everything a describing call returns is built at open and never changes after, so
// those calls need no lock; run and gate mutate the loaded program and hold `mu`.
struct etproof_model {
  etproof::Bundle bundle;
  etproof::LoadedModel model;
  std::map<std::string, std::string> properties;
  std::mutex mu;                 // run and gate, one at a time
  std::string gate_text;         // the last gate's reports (etproof_gate_result)
  std::string gate_json;

  etproof_model(etproof::Bundle b, etproof::LoadedModel m)
      : bundle(std::move(b)), model(std::move(m)) {}
};

namespace {

// ---- the thread's last error -------------------------------------------------------------------

struct LastError {
  char kind[32] = {0};  // fixed: setting the kind can never fail
  std::string message;
  std::string remedy;
  uint32_t et_code = 0;
};
thread_local LastError t_error;

void set_kind(const char* kind) noexcept {
  std::strncpy(t_error.kind, kind, sizeof t_error.kind - 1);
  t_error.kind[sizeof t_error.kind - 1] = '\0';
}

void set_error(const char* kind, const std::string& message, const std::string& remedy,
               uint32_t et_code = 0) noexcept {
  set_kind(kind);
  t_error.et_code = et_code;
  try {
    t_error.message = message;
    t_error.remedy = remedy;
  } catch (...) {  // no memory even for the text: the kind says it
    set_kind("out-of-memory");
    t_error.message.clear();
    t_error.remedy.clear();
  }
}

void set_error(const Error& e) noexcept {
  const std::string_view kind = etproof::to_string(e.kind());
  char buf[32] = {0};
  std::memcpy(buf, kind.data(), std::min(kind.size(), sizeof buf - 1));
  set_error(buf, e.cause(), e.remedy(), e.et_error().value_or(0));
}

// Runs `f`, turning whatever it throws into the last error (the CLI's main does the same for its
// exit: cpp/cli/main.cpp). True when it returned.
template <class F>
bool guarded(F&& f) noexcept {
  try {
    f();
    return true;
  } catch (const Error& e) {
    set_error(e);
  } catch (const std::bad_alloc&) {
    set_error("out-of-memory", "out of memory (an allocation failed: std::bad_alloc)",
              "free memory or raise the process's limit, then retry");
  } catch (const std::filesystem::filesystem_error& e) {
    std::string paths;
    try {
      paths = e.path1().string();
    } catch (...) {
    }
    set_error("io", (paths.empty() ? "" : paths + ": ") + e.code().message(),
              "check the path, its permissions and free space");
  } catch (const std::exception& e) {
    set_error("internal", std::string("unexpected exception: ") + e.what(),
              "this is a bug in etproof; please report it with the call that failed");
  } catch (...) {
    set_error("internal", "unknown exception",
              "this is a bug in etproof; please report it with the call that failed");
  }
  return false;
}

[[noreturn]] void invalid(const std::string& what, const std::string& remedy) {
  throw Error(ErrorKind::kInvalidArgument, what, remedy);
}

template <class T>
void need(const T* p, const char* function, const char* name) {
  if (!p)
    invalid(std::string(function) + ": " + name + " is NULL",
            std::string("pass a valid ") + name + " (see etproof_c.h)");
}

std::optional<DType> dtype_of(int32_t v) {
  switch (v) {
    case ETPROOF_DTYPE_FLOAT32: return DType::kFloat32;
    case ETPROOF_DTYPE_FLOAT16: return DType::kFloat16;
    case ETPROOF_DTYPE_FLOAT64: return DType::kFloat64;
    case ETPROOF_DTYPE_INT8: return DType::kInt8;
    case ETPROOF_DTYPE_UINT8: return DType::kUInt8;
    case ETPROOF_DTYPE_INT16: return DType::kInt16;
    case ETPROOF_DTYPE_INT32: return DType::kInt32;
    case ETPROOF_DTYPE_INT64: return DType::kInt64;
    case ETPROOF_DTYPE_BOOL: return DType::kBool;
    default: return std::nullopt;
  }
}

int32_t c_dtype(DType d) {
  switch (d) {
    case DType::kFloat32: return ETPROOF_DTYPE_FLOAT32;
    case DType::kFloat16: return ETPROOF_DTYPE_FLOAT16;
    case DType::kFloat64: return ETPROOF_DTYPE_FLOAT64;
    case DType::kInt8: return ETPROOF_DTYPE_INT8;
    case DType::kUInt8: return ETPROOF_DTYPE_UINT8;
    case DType::kInt16: return ETPROOF_DTYPE_INT16;
    case DType::kInt32: return ETPROOF_DTYPE_INT32;
    case DType::kInt64: return ETPROOF_DTYPE_INT64;
    case DType::kBool: return ETPROOF_DTYPE_BOOL;
  }
  return -1;
}

// "ETPROOF_DTYPE_FLOAT32", …: how etproof_c.h spells a dtype.
std::string dtype_constant(DType d) {
  std::string s = "ETPROOF_DTYPE_";
  for (char c : etproof::to_string(d)) s += static_cast<char>(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c);
  return s;
}

// The static name of a dtype, NUL-terminated (etproof::to_string views string literals).
const char* dtype_name(DType d) { return etproof::to_string(d).data(); }

DType dtype_arg(int32_t v, const std::string& what) {
  auto d = dtype_of(v);
  if (!d)
    throw Error(ErrorKind::kDtypeUnsupported,
                what + ": dtype " + std::to_string(v) + " is no etproof_dtype (0.." +
                    std::to_string(ETPROOF_DTYPE_BOOL) + ")",
                "use an ETPROOF_DTYPE_* value from etproof_c.h");
  return *d;
}

const MethodSpec& method_arg(const etproof_model* m, const char* method) {
  if (!method) return m->bundle.manifest.methods.front();
  return etproof::find_method(m->bundle.manifest, method);  // invalid-argument naming the methods
}

// "method 'encode': " for a bundle with several methods, else "".
std::string method_prefix(const etproof_model* m, const MethodSpec& s) {
  return etproof::has_several_methods(m->bundle.manifest) ? "method '" + s.name + "': " : "";
}

// Elements of `shape`, refusing a negative dimension and an overflow of size_t bytes.
size_t checked_bytes(const std::vector<int64_t>& shape, DType d, const std::string& what) {
  size_t n = 1;
  for (int64_t x : shape) {
    if (x < 0)
      invalid(what + ": dimension " + std::to_string(x) + " in " + etproof::shape_to_string(shape) +
                  " is negative",
              "give the tensor's actual shape, every dimension >= 0");
    if (x != 0 && n > std::numeric_limits<size_t>::max() / static_cast<size_t>(x))
      invalid(what + ": shape " + etproof::shape_to_string(shape) + " has more elements than fit "
                  "in memory", "give the tensor's actual shape");
    n *= static_cast<size_t>(x);
  }
  const size_t size = etproof::dtype_size(d);
  if (n > std::numeric_limits<size_t>::max() / size)
    invalid(what + ": shape " + etproof::shape_to_string(shape) + " has more bytes than fit in "
                "memory", "give the tensor's actual shape");
  return n * size;
}

bool is_static(const std::vector<int64_t>& shape) {
  for (int64_t x : shape)
    if (x < 0) return false;
  return true;
}

void fill_info(const TensorSpec& s, etproof_tensor_info* info) {
  info->name = s.name.c_str();
  info->dtype = c_dtype(s.dtype);
  info->rank = s.shape.size();
  info->shape = s.shape.empty() ? nullptr : s.shape.data();
  info->nbytes = is_static(s.shape) ? checked_bytes(s.shape, s.dtype, s.name) : 0;
}

void init_once() {
  static const bool done = [] {
    (void)etproof::install_runtime_log_filter();
    (void)etproof::prepare_backend_environment();
    etproof::prepare_for_threads();
    return true;
  }();
  (void)done;
}

using etproof::detail::join;

// The inputs of etproof_run, named: each buffer consistent with its own dtype and shape;
// LoadedModel::run then checks them against the manifest (dtype-mismatch, shape-mismatch) before
// anything runs. `where` prefixes each message ("etproof_run: method 'm': ").
std::map<std::string, HostTensor> read_inputs(const MethodSpec& s, const std::string& where,
                                              const etproof_input* inputs, size_t n_inputs) {
  std::map<std::string, HostTensor> named;
  for (size_t i = 0; i < n_inputs; ++i) {
    const etproof_input& x = inputs[i];
    const std::string what = where + "input " + std::to_string(i) + " '" + s.inputs[i].name + "'";
    HostTensor t;
    t.dtype = dtype_arg(x.dtype, what);
    if (x.rank && !x.shape)
      invalid(what + ": shape is NULL with rank " + std::to_string(x.rank),
              "point shape at rank dimensions");
    if (x.rank > ETPROOF_MAX_RANK)
      throw Error(ErrorKind::kShapeMismatch,
                  what + ": rank " + std::to_string(x.rank) + ", more than any program takes (" +
                      std::to_string(ETPROOF_MAX_RANK) + ")",
                  "give the shape etproof_input_info says");
    t.shape.assign(x.shape, x.shape + x.rank);
    const size_t bytes = checked_bytes(t.shape, t.dtype, what);
    if (x.nbytes != bytes)
      invalid(what + ": " + std::to_string(x.nbytes) + " bytes given, but " +
                  dtype_name(t.dtype) + " " + etproof::shape_to_string(t.shape) + " is " +
                  std::to_string(bytes) + " bytes",
              "give a dense C-order buffer of product(shape) * etproof_dtype_size(dtype) bytes");
    if (bytes && !x.data) invalid(what + ": data is NULL", "point data at the tensor's bytes");
    const auto* p = static_cast<const uint8_t*>(x.data);
    t.data.assign(p, p + bytes);
    named.emplace(s.inputs[i].name, std::move(t));
  }
  return named;
}

// The output buffers, as far as the manifest tells before running: their dtype, and their size
// where the output's shape is static (a short buffer's nbytes, rank and shape then say what it
// needs). Throws Error{kDtypeMismatch} or the invalid-argument error for the first short buffer.
void check_output_buffers(const MethodSpec& s, const std::string& where, etproof_output* outputs,
                          size_t n_outputs) {
  bool short_buffer = false;
  std::string short_what;
  for (size_t i = 0; i < n_outputs; ++i) {
    etproof_output& o = outputs[i];
    const TensorSpec& spec = s.outputs[i];
    const std::string what = where + "output " + std::to_string(i) + " '" + spec.name + "'";
    const DType d = dtype_arg(o.dtype, what);
    if (d != spec.dtype)
      throw Error(ErrorKind::kDtypeMismatch,
                  what + ": the buffer is " + dtype_name(d) + ", the output is " +
                      dtype_name(spec.dtype),
                  std::string("give a ") + dtype_name(spec.dtype) + " buffer, dtype " +
                      dtype_constant(spec.dtype) + " (etproof_output_info says each output's)");
    if (is_static(spec.shape)) {
      const size_t bytes = checked_bytes(spec.shape, spec.dtype, what);
      if (o.capacity < bytes) {
        o.nbytes = bytes;
        o.rank = spec.shape.size();
        for (size_t k = 0; k < o.rank && k < ETPROOF_MAX_RANK; ++k) o.shape[k] = spec.shape[k];
        if (!short_buffer)
          short_what = what + ": the buffer holds " + std::to_string(o.capacity) +
                       " bytes, the output needs " + std::to_string(bytes);
        short_buffer = true;
      }
    }
    if (o.capacity && !o.data) invalid(what + ": data is NULL", "point data at the buffer");
  }
  if (short_buffer)
    invalid(short_what, "give each output a buffer of at least etproof_output_info's nbytes "
                        "(each short output's nbytes now says what it needs)");
}

// The program's result for each output buffer, every one checked before any is written (nothing
// is written unless all fit): present, of the manifest's dtype, of a rank the ABI carries, and no
// larger than its buffer (a short buffer's nbytes, rank and shape then say what it needs). Throws
// Error{kRunFailed}, {kDtypeMismatch}, {kShapeMismatch}, or the invalid-argument error for the
// first short buffer.
std::vector<const HostTensor*> fit_outputs(const MethodSpec& s, const std::string& where,
                                           etproof_output* outputs, size_t n_outputs,
                                           const std::map<std::string, HostTensor>& results) {
  bool short_buffer = false;
  std::string short_what;
  std::vector<const HostTensor*> got(n_outputs, nullptr);
  for (size_t i = 0; i < n_outputs; ++i) {
    etproof_output& o = outputs[i];
    const TensorSpec& spec = s.outputs[i];
    const std::string what = where + "output " + std::to_string(i) + " '" + spec.name + "'";
    auto it = results.find(spec.name);
    if (it == results.end())
      throw Error(ErrorKind::kRunFailed, what + ": the program returned no such output",
                  "re-export the bundle; its program and manifest disagree");
    const HostTensor& t = it->second;
    if (t.dtype != spec.dtype)
      throw Error(ErrorKind::kDtypeMismatch,
                  what + ": the program returned " + std::string(dtype_name(t.dtype)) +
                      ", the manifest says " + dtype_name(spec.dtype),
                  "re-export the bundle; its program and manifest disagree");
    if (t.shape.size() > ETPROOF_MAX_RANK)
      throw Error(ErrorKind::kShapeMismatch,
                  what + ": rank " + std::to_string(t.shape.size()) + " exceeds ETPROOF_MAX_RANK",
                  "this output cannot be returned through the C ABI");
    if (o.capacity < t.data.size()) {
      o.nbytes = t.data.size();
      o.rank = t.shape.size();
      for (size_t k = 0; k < o.rank; ++k) o.shape[k] = t.shape[k];
      if (!short_buffer)
        short_what = what + ": the buffer holds " + std::to_string(o.capacity) +
                     " bytes, the output is " + std::to_string(t.data.size()) + " (" +
                     etproof::shape_to_string(t.shape) + ")";
      short_buffer = true;
    }
    got[i] = &t;
  }
  if (short_buffer)
    invalid(short_what, "give each output a buffer of at least the nbytes it now says "
                        "(a dynamic output's size is known once it ran)");
  return got;
}

}  // namespace

extern "C" {

// ---- version -----------------------------------------------------------------------------------

const char* etproof_version(void) { return ETPROOF_VERSION; }
int etproof_abi_version(void) { return ETPROOF_C_ABI_VERSION; }

// ---- errors ------------------------------------------------------------------------------------

const char* etproof_last_error_kind(void) { return t_error.kind; }
const char* etproof_last_error_message(void) { return t_error.message.c_str(); }
const char* etproof_last_error_remedy(void) { return t_error.remedy.c_str(); }
uint32_t etproof_last_error_executorch_code(void) { return t_error.et_code; }
void etproof_clear_error(void) {
  t_error.kind[0] = '\0';
  t_error.message.clear();
  t_error.remedy.clear();
  t_error.et_code = 0;
}

// ---- dtypes ------------------------------------------------------------------------------------

const char* etproof_dtype_name(int32_t dtype) {
  const char* name = nullptr;
  guarded([&] { name = dtype_name(dtype_arg(dtype, "etproof_dtype_name")); });
  return name;
}

size_t etproof_dtype_size(int32_t dtype) {
  size_t size = 0;
  guarded([&] { size = etproof::dtype_size(dtype_arg(dtype, "etproof_dtype_size")); });
  return size;
}

// ---- open and close ----------------------------------------------------------------------------

etproof_model* etproof_open(const char* path) {
  etproof_model* out = nullptr;
  guarded([&] {
    need(path, "etproof_open", "path");
    init_once();
    etproof::Prepared p = etproof::prepare(path);
    if (p.error) throw *p.error;
    if (!p.bundle || !p.model)
      throw Error(ErrorKind::kLoadFailed, std::string("bundle '") + path + "' was not loaded",
                  "this is a bug in etproof; please report it");
    auto m = std::make_unique<etproof_model>(std::move(*p.bundle), std::move(*p.model));
    const etproof::Manifest& mf = m->bundle.manifest;
    m->properties = {
        {"name", mf.name},
        {"model", mf.model},
        {"backend", mf.backend},
        {"recipe", mf.recipe},
        {"precision", mf.precision},
        {"compute_unit", mf.compute_unit.value_or("")},
        {"sha256", mf.artifact.sha256},
        {"delegates", join(m->model.program_delegates(), ",")},
        {"path", m->bundle.dir.string()},
        {"labels_output", mf.labels ? mf.labels->output : ""},
    };
    out = m.release();
  });
  return out;
}

void etproof_close(etproof_model* model) {
  // A destructor that throws (none should) must not cross the boundary either.
  guarded([&] { delete model; });
}

// ---- describe ----------------------------------------------------------------------------------

const char* etproof_model_property(const etproof_model* model, const char* key) {
  const char* out = nullptr;
  guarded([&] {
    need(model, "etproof_model_property", "model");
    need(key, "etproof_model_property", "key");
    auto it = model->properties.find(key);
    if (it == model->properties.end()) {
      std::vector<std::string> keys;
      for (const auto& [k, v] : model->properties) keys.push_back(k);
      invalid(std::string("etproof_model_property: no property '") + key + "'",
              "ask for one of: " + join(keys, ", "));
    }
    out = it->second.c_str();
  });
  return out;
}

int etproof_method_count(const etproof_model* model, size_t* count) {
  return guarded([&] {
    need(model, "etproof_method_count", "model");
    need(count, "etproof_method_count", "count");
    *count = model->bundle.manifest.methods.size();
  }) ? 0 : -1;
}

const char* etproof_method_name(const etproof_model* model, size_t index) {
  const char* out = nullptr;
  guarded([&] {
    need(model, "etproof_method_name", "model");
    const auto& methods = model->bundle.manifest.methods;
    if (index >= methods.size())
      invalid("etproof_method_name: index " + std::to_string(index) + " past the " +
                  std::to_string(methods.size()) + " method(s)",
              "ask etproof_method_count first");
    out = methods[index].name.c_str();
  });
  return out;
}

static int tensor_count(const char* fn, const etproof_model* model, const char* method,
                        size_t* count, bool inputs) {
  return guarded([&] {
    need(model, fn, "model");
    need(count, fn, "count");
    const MethodSpec& s = method_arg(model, method);
    *count = inputs ? s.inputs.size() : s.outputs.size();
  }) ? 0 : -1;
}

static int tensor_info(const char* fn, const etproof_model* model, const char* method,
                       size_t index, etproof_tensor_info* info, bool inputs) {
  return guarded([&] {
    need(model, fn, "model");
    need(info, fn, "info");
    const MethodSpec& s = method_arg(model, method);
    const auto& specs = inputs ? s.inputs : s.outputs;
    if (index >= specs.size())
      invalid(std::string(fn) + ": " + method_prefix(model, s) + "index " + std::to_string(index) +
                  " past the " + std::to_string(specs.size()) + (inputs ? " input(s)" : " output(s)"),
              inputs ? "ask etproof_input_count first" : "ask etproof_output_count first");
    fill_info(specs[index], info);
  }) ? 0 : -1;
}

int etproof_input_count(const etproof_model* model, const char* method, size_t* count) {
  return tensor_count("etproof_input_count", model, method, count, true);
}
int etproof_output_count(const etproof_model* model, const char* method, size_t* count) {
  return tensor_count("etproof_output_count", model, method, count, false);
}
int etproof_input_info(const etproof_model* model, const char* method, size_t index,
                       etproof_tensor_info* info) {
  return tensor_info("etproof_input_info", model, method, index, info, true);
}
int etproof_output_info(const etproof_model* model, const char* method, size_t index,
                        etproof_tensor_info* info) {
  return tensor_info("etproof_output_info", model, method, index, info, false);
}

int etproof_label_count(const etproof_model* model, size_t* count) {
  return guarded([&] {
    need(model, "etproof_label_count", "model");
    need(count, "etproof_label_count", "count");
    const auto& labels = model->bundle.manifest.labels;
    *count = labels ? labels->names.size() : 0;
  }) ? 0 : -1;
}

const char* etproof_label(const etproof_model* model, size_t index) {
  const char* out = nullptr;
  guarded([&] {
    need(model, "etproof_label", "model");
    const auto& labels = model->bundle.manifest.labels;
    const size_t n = labels ? labels->names.size() : 0;
    if (index >= n)
      invalid("etproof_label: index " + std::to_string(index) + " past the " + std::to_string(n) +
                  " label(s) of bundle '" + model->bundle.manifest.name + "'",
              "ask etproof_label_count first");
    out = labels->names[index].c_str();
  });
  return out;
}

// ---- run ---------------------------------------------------------------------------------------

int etproof_run(etproof_model* model, const char* method, const etproof_input* inputs,
                size_t n_inputs, etproof_output* outputs, size_t n_outputs) {
  return guarded([&] {
    need(model, "etproof_run", "model");
    const MethodSpec& s = method_arg(model, method);
    const std::string where = "etproof_run: " + method_prefix(model, s);
    if (n_inputs != s.inputs.size())
      invalid(where + std::to_string(n_inputs) + " input(s) given, the program takes " +
                  std::to_string(s.inputs.size()),
              "give every input, in the order etproof_input_info lists them");
    if (n_outputs != s.outputs.size())
      invalid(where + std::to_string(n_outputs) + " output buffer(s) given, the program returns " +
                  std::to_string(s.outputs.size()),
              "give one buffer per output, in the order etproof_output_info lists them");
    if (n_inputs) need(inputs, "etproof_run", "inputs");
    if (n_outputs) need(outputs, "etproof_run", "outputs");
    const std::map<std::string, HostTensor> named = read_inputs(s, where, inputs, n_inputs);
    check_output_buffers(s, where, outputs, n_outputs);
    std::map<std::string, HostTensor> results;
    {
      std::lock_guard<std::mutex> lock(model->mu);
      results = model->model.run(s.name, named);
    }
    const std::vector<const HostTensor*> got = fit_outputs(s, where, outputs, n_outputs, results);
    for (size_t i = 0; i < n_outputs; ++i) {
      etproof_output& o = outputs[i];
      const HostTensor& t = *got[i];
      if (!t.data.empty()) std::memcpy(o.data, t.data.data(), t.data.size());
      o.nbytes = t.data.size();
      o.rank = t.shape.size();
      for (size_t k = 0; k < o.rank; ++k) o.shape[k] = t.shape[k];
    }
  }) ? 0 : -1;
}

// ---- gate --------------------------------------------------------------------------------------

int etproof_gate(etproof_model* model, etproof_gate_result* result) {
  return guarded([&] {
    need(model, "etproof_gate", "model");
    need(result, "etproof_gate", "result");
    std::lock_guard<std::mutex> lock(model->mu);
    const etproof::ParityReport r = etproof::replay(model->bundle, model->model);
    std::string text = etproof::to_text(r);
    std::string json = etproof::to_json(r).dump(2);
    etproof_gate_result out{};
    out.passed = r.passed ? 1 : 0;
    out.cases = r.cases.size();
    for (const auto& c : r.cases) {
      if (etproof::is_agreement(c.status))
        ++out.agreed;
      else if (c.status == etproof::Status::kDrifted)
        ++out.drifted;
      else
        ++out.other;
    }
    model->gate_text = std::move(text);
    model->gate_json = std::move(json);
    out.report_text = model->gate_text.c_str();
    out.report_json = model->gate_json.c_str();
    *result = out;
  }) ? 0 : -1;
}

}  // extern "C"
