// OpenVINO's backend module (etproof/runtime/backend_quirks.h, etproof/runtime/openvino.h): where
// its runtime library is found, what its CPU plugin computes fp32 programs in, and the target its
// compiled blob is bound to.
#include "etproof/runtime/openvino.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <sstream>

#include "etproof/build_config.h"  // generated: kOpenvinoLib
#include "etproof/runtime/export_half.h"
#include "etproof/core/manifest.h"
#include "etproof/runtime/backend_quirks.h"
#include "etproof/runtime/registry.h"
#include "runtime/openvino_c.h"

namespace etproof {

namespace {

constexpr std::string_view kMagic = "RR_UPCVO";
constexpr uint64_t kMaxText = 4096;

// The probe model OpenVINO compiles to state its requirements: float32 [1] -> ReLU -> result
// (OpenVINO IR version 11, opset1).
constexpr std::string_view kProbeIr = R"(<?xml version="1.0"?>
<net name="etproof_target_probe" version="11">
<layers>
<layer id="0" name="x" type="Parameter" version="opset1"><data shape="1" element_type="f32"/><output><port id="0" precision="FP32"><dim>1</dim></port></output></layer>
<layer id="1" name="y" type="ReLU" version="opset1"><input><port id="0" precision="FP32"><dim>1</dim></port></input><output><port id="1" precision="FP32"><dim>1</dim></port></output></layer>
<layer id="2" name="out" type="Result" version="opset1"><input><port id="0" precision="FP32"><dim>1</dim></port></input></layer>
</layers>
<edges><edge from-layer="0" from-port="0" to-layer="1" to-port="0"/><edge from-layer="1" from-port="1" to-layer="2" to-port="0"/></edges>
</net>)";

uint64_t le(std::string_view b, size_t at, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i) v |= uint64_t(static_cast<unsigned char>(b[at + i])) << (8 * i);
  return v;
}

// "meta=1.0;ov=2026.4.1;isa=Intel AVX2" -> the value of `key`, or "".
std::string field(const std::string& text, const std::string& key) {
  size_t at = 0;
  while (at <= text.size()) {
    const size_t end = std::min(text.find(';', at), text.size());
    const std::string part = text.substr(at, end - at);
    if (part.rfind(key + "=", 0) == 0) return part.substr(key.size() + 1);
    at = end + 1;
  }
  return "";
}

std::string describe(const std::string& requirements) {
  const std::string ov = field(requirements, "ov"), isa = field(requirements, "isa");
  if (ov.empty() && isa.empty()) return "'" + requirements + "'";
  return "OpenVINO " + (ov.empty() ? std::string("?") : ov) + ", ISA class '" + (isa.empty() ? std::string("?") : isa) + "'";
}

}  // namespace

std::optional<std::string> openvino_requirements_in(std::string_view bytes) {
  const size_t at = bytes.find(kMagic);
  if (at == std::string_view::npos) return std::nullopt;
  const size_t head = at + kMagic.size();
  if (bytes.size() - head < 12) return std::nullopt;
  const uint64_t size = le(bytes, head + 4, 8);
  const size_t start = head + 12;
  if (size == 0 || size > kMaxText || size > bytes.size() - start) return std::nullopt;
  std::string text(bytes.substr(start, size_t(size)));
  for (const char c : text)
    if (c < 0x20 || c > 0x7e) return std::nullopt;
  return text;
}

namespace detail {

OpenvinoCore::OpenvinoCore() {
  (void)prepare_backend_environment();
  const char* lib = std::getenv("OPENVINO_LIB_PATH");
  if (!lib || !*lib) {
    why = "OPENVINO_LIB_PATH is not set";
    return;
  }
  library = lib;
  handle_ = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  if (!handle_) {
    const char* e = dlerror();
    why = std::string("cannot load ") + lib + ": " + (e ? e : "unknown");
    return;
  }
  using Create = int (*)(void**);
  auto create = reinterpret_cast<Create>(sym("ov_core_create"));
  if (!create || !sym("ov_core_free")) {
    why = std::string(lib) + " lacks the OpenVINO C API (ov_core_create)";
    return;
  }
  if (create(&core) != 0 || !core) {
    core = nullptr;
    why = "ov_core_create failed";
  }
}

OpenvinoCore::~OpenvinoCore() {
  if (core) reinterpret_cast<void (*)(void*)>(sym("ov_core_free"))(core);
}

void* OpenvinoCore::sym(const char* name) const { return handle_ ? dlsym(handle_, name) : nullptr; }

}  // namespace detail

std::optional<std::string> openvino_cpu_requirements(std::string& why_not) {
  static detail::OpenvinoAnswer requirements;
  return requirements.get([](detail::OpenvinoCore& ov, std::string& why) -> std::optional<std::string> {
    // The C API (openvino/c/ov_core.h, ov_compiled_model.h): status 0 is OK.
    using ReadModel = int (*)(const void*, const char*, size_t, const void*, void**);
    using Compile = int (*)(const void*, const void*, const char*, size_t, void**, ...);
    using Export = int (*)(const void*, const char*);
    using FreeHandle = void (*)(void*);
    auto read_model = reinterpret_cast<ReadModel>(ov.sym("ov_core_read_model_from_memory_buffer"));
    auto compile = reinterpret_cast<Compile>(ov.sym("ov_core_compile_model"));
    auto export_model = reinterpret_cast<Export>(ov.sym("ov_compiled_model_export_model"));
    auto free_model = reinterpret_cast<FreeHandle>(ov.sym("ov_model_free"));
    auto free_compiled = reinterpret_cast<FreeHandle>(ov.sym("ov_compiled_model_free"));
    if (!read_model || !compile || !export_model || !free_model || !free_compiled) {
      why = ov.library + " lacks the OpenVINO C API functions that compile and export a model";
      return std::nullopt;
    }
    std::optional<std::string> answer;
    void* model = nullptr;
    void* compiled = nullptr;
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::path file = fs::temp_directory_path(ec) / ("etproof-openvino-target-" + std::to_string(::getpid()) + ".blob");
    if (read_model(ov.core, kProbeIr.data(), kProbeIr.size(), nullptr, &model) != 0 || !model) {
      why = "OpenVINO could not read the probe model";
    } else if (compile(ov.core, model, "CPU", size_t(0), &compiled) != 0 || !compiled) {
      why = "OpenVINO's CPU plugin could not compile the probe model";
    } else if (export_model(compiled, file.c_str()) != 0) {
      why = "OpenVINO could not export the compiled probe model to " + file.string();
    } else {
      std::ifstream in(file, std::ios::binary);
      const std::string blob((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      answer = openvino_requirements_in(blob);
      if (!answer) why = "the CPU plugin's exported blob has no runtime requirements header";
    }
    fs::remove(file, ec);
    if (compiled) free_compiled(compiled);
    if (model) free_model(model);
    return answer;
  }, why_not);
}

std::optional<std::string> openvino_inference_precision(std::string& why_not) {
  static detail::OpenvinoAnswer precision;
  return precision.get([](detail::OpenvinoCore& ov, std::string& why) -> std::optional<std::string> {
    // The C API (openvino/c/ov_core.h): ov_core_get_property, ov_free; status 0 is OK.
    using Get = int (*)(const void*, const char*, const char*, char**);
    using FreeStr = void (*)(const char*);
    auto get = reinterpret_cast<Get>(ov.sym("ov_core_get_property"));
    auto free_str = reinterpret_cast<FreeStr>(ov.sym("ov_free"));
    if (!get || !free_str) {
      why = ov.library + " lacks the OpenVINO C API (ov_core_get_property)";
      return std::nullopt;
    }
    char* value = nullptr;
    if (get(ov.core, "CPU", "INFERENCE_PRECISION_HINT", &value) != 0 || !value) {
      why = "the CPU plugin did not answer INFERENCE_PRECISION_HINT";
      return std::nullopt;
    }
    std::string answer(value);
    free_str(value);
    return answer;
  }, why_not);
}

namespace {

// OPENVINO_LIB_PATH: the delegate dlopens OpenVINO's C runtime from it; when unset, points it at
// the one found beside the executorch package at configure time (the `openvino` pip package).
std::string prepare_environment() {
  const char* cur = std::getenv("OPENVINO_LIB_PATH");
  if (cur && *cur) return std::string();
  std::error_code ec;
  if (!*build::kOpenvinoLib || !std::filesystem::exists(build::kOpenvinoLib, ec)) return std::string();
  setenv("OPENVINO_LIB_PATH", build::kOpenvinoLib, 0);
  // Through an ostringstream: appending this compile-time path to a std::string draws GCC 12's
  // -Warray-bounds false positive (GCC bug 105329).
  std::ostringstream said;
  said << "OPENVINO_LIB_PATH was unset; etproof pointed it at " << build::kOpenvinoLib
       << " (the openvino package found at configure time)";
  return said.str();
}

// The delegate is available only when it can dlopen OpenVINO's runtime: say where it looked.
std::string unavailable_hint() {
  const char* lib = std::getenv("OPENVINO_LIB_PATH");
  return "OpenVINO's runtime is loaded from OPENVINO_LIB_PATH (" +
         (lib && *lib ? std::string(lib) : std::string("unset")) +
         "): point it at libopenvino_c.so of the openvino package (pip install openvino)";
}

// INFERENCE_PRECISION_HINT values (OpenVINO's element type names) as etproof's precision names.
std::string precision_of_hint(const std::string& hint) {
  if (hint == "f32") return "float32";
  if (hint == "bf16") return "bfloat16";
  if (hint == "f16") return "float16";
  return hint;
}

std::string remedy(const Target& target) {
  return "run it on a machine whose CPU is of the ISA class it was compiled for" +
         (target.isa.empty() ? std::string() : " ('" + target.isa + "')") + " with the same OpenVINO" +
         (target.openvino.empty() ? std::string() : " (" + target.openvino + ")") +
         ", or re-export the bundle on a machine of this one's ISA class (" + etproof_command() +
         " export ... --backend openvino): an OpenVINO bundle is compiled for the CPU it is exported on";
}

bool says_other_target(std::string_view line) {
  return line.find("Cannot import compiled blob") != std::string_view::npos &&
         line.find("different runtime configuration") != std::string_view::npos;
}

}  // namespace

extern const BackendQuirks kOpenvinoQuirks;
const BackendQuirks kOpenvinoQuirks{
    .key = "openvino",
    .delegate_id = "OpenvinoBackend",
    .display = "OpenVINO",
    .prepare_environment = prepare_environment,
    .unavailable_hint = unavailable_hint,
    .precision_hint = openvino_inference_precision,
    .precision_of_hint = precision_of_hint,
    .precision_hint_source = "OpenVINO's CPU plugin here compiles with INFERENCE_PRECISION_HINT",
    .target_kind = kOpenvinoCpuTarget,
    .target_runtime = "OpenVINO CPU plugin",
    .target_artifact = "OpenVINO CPU blob",
    .requirements_in = openvino_requirements_in,
    .requirements_here = openvino_cpu_requirements,
    .describe_requirements = describe,
    .says_other_target = says_other_target,
    .import_failed_phrase = "failed to import model",
    .target_remedy = remedy,
};

}  // namespace etproof
