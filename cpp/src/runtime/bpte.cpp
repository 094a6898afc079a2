// etproof/runtime/bpte.cpp — ExecuTorch's BundledProgram opened as a bundle (etproof/runtime/bpte.h).
#include "etproof/runtime/bpte.h"

#include "etproof/core/error.h"

namespace etproof {
bool is_bpte_path(const std::filesystem::path& path) { return path.extension() == ".bpte"; }
}  // namespace etproof

#ifndef ETPROOF_HAVE_BPTE  // the cross-built worker (CMakeLists.txt): its parent materializes the .bpte
namespace etproof {
std::filesystem::path materialize_bpte(const std::filesystem::path& bpte, const BpteOptions&) {
  throw Error(ErrorKind::kCapabilityUnavailable, bpte.string() + ": this build reads no .bpte (the worker-only build)",
              "open it with the etproof CLI, which hands the worker the bundle it describes");
}
}  // namespace etproof
#else

#include <unistd.h>

#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iterator>
#include <map>
#include <utility>
#include <set>
#include <vector>

#include <executorch/extension/data_loader/buffer_data_loader.h>
#include <executorch/runtime/executor/program.h>
#include <executorch/runtime/platform/runtime.h>
#include <nlohmann/json.hpp>

#include "etproof/core/backend_table.h"
#include "etproof/core/error.h"
#include "etproof/core/npy.h"
#include "core/common.h"
#include "runtime/bpte_schema.h"
#include "runtime/load_checks.h"

namespace etproof {
namespace fs = std::filesystem;
namespace bp = bpte_detail;
namespace et = ::executorch::runtime;
using load_detail::from_scalar_type;
using load_detail::ScalarType;

namespace {

constexpr const char* kUnknown = "unknown (not recorded in a BundledProgram)";
constexpr const char* kRemedy =
    "write the .bpte with ExecuTorch's serialize_from_bundled_program_to_flatbuffer "
    "(executorch.devtools.bundled_program.serialize), or etproof export --bpte";

Error not_bundled(const fs::path& p, const std::string& why) {
  return Error(ErrorKind::kManifestInvalid, p.string() + ": not a BundledProgram etproof can judge: " + why, kRemedy);
}

std::vector<uint8_t> read_whole(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw Error(ErrorKind::kIo, "cannot read " + p.string() + ": " + detail::not_a_file_text(p), "check the path");
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw Error(ErrorKind::kIo, "cannot read " + p.string(), "check the file and its permissions");
  return bytes;
}

fs::path default_cache() {
  if (const char* d = std::getenv("ETPROOF_BPTE_CACHE"); d && *d) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return fs::path(x) / "etproof" / "bpte";
  if (const char* h = std::getenv("HOME"); h && *h) return fs::path(h) / ".cache" / "etproof" / "bpte";
  return fs::temp_directory_path() / "etproof-bpte";
}

std::string safe_name(const std::string& stem) {
  std::string out;
  for (char c : stem)
    out += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-') ? c : '_';
  if (out.empty() || out == "." || out == "..") out = "bundled";
  return out;
}

// The backend key a program's delegate ids imply: portable for none, else the first table entry
// that registers the (one) id.
std::string backend_for(const std::set<std::string>& ids, const fs::path& p) {
  if (ids.empty()) return "portable";
  if (ids.size() > 1)
    throw not_bundled(p, "its program calls several delegates (" + detail::join(std::vector<std::string>(ids.begin(), ids.end())) +
                             "); etproof judges one backend per bundle");
  const auto entries = entries_for_runtime_id(*ids.begin());
  if (entries.empty()) throw not_bundled(p, "its delegate " + *ids.begin() + " is not in etproof's backend table");
  return entries.front()->key;
}

struct TensorView {
  DType dtype;
  std::vector<int64_t> shape;
  const bp::Value* v;
};

// A test value as a tensor etproof carries, its bytes checked against its dtype and sizes.
TensorView tensor_of(const bp::Value& v, const fs::path& p, const std::string& where) {
  if (!v.is_tensor) throw not_bundled(p, where + " is not a tensor (etproof carries tensors only)");
  const auto dtype = from_scalar_type(static_cast<ScalarType>(v.scalar_type));
  if (!dtype) throw not_bundled(p, where + " has a dtype etproof does not carry (ScalarType " +
                                       std::to_string(int(v.scalar_type)) + ")");
  TensorView out{*dtype, {}, &v};
  size_t numel = 1;
  for (int64_t s : v.sizes) {
    if (s < 0) throw not_bundled(p, where + " has a negative size");
    out.shape.push_back(s);
    numel *= size_t(s);
  }
  if (v.bytes != numel * dtype_size(*dtype))
    throw not_bundled(p, where + " holds " + std::to_string(v.bytes) + " bytes for " + std::to_string(numel) + " " +
                             std::string(to_string(*dtype)) + " elements of shape " + shape_to_string(out.shape));
  return out;
}

nlohmann::json file_ref(const fs::path& dir, const std::string& file) {
  const std::vector<uint8_t> bytes = read_whole(dir / file);
  return {{"file", file}, {"bytes", bytes.size()}, {"sha256", detail::sha256_hex(bytes.data(), bytes.size())}};
}

std::string write_golden(const fs::path& gdir, const std::string& file, const TensorView& v) {
  HostTensor h{v.dtype, v.shape, std::vector<uint8_t>(v.v->data, v.v->data + v.v->bytes)};
  write_npy(gdir / file, h);
  return file;
}

std::string now_utc() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// One method's part of the manifest: its specs from the program, its goldens from the test suite.
nlohmann::json method_part(const bp::Suite& suite, const et::Program& program,
                           const std::vector<uint8_t>& bytes, const fs::path& gdir, bool several,
                           const fs::path& src, std::set<std::string>& delegates) {
  const std::string& method = suite.method;
  auto meta = program.method_meta(method.c_str());
  if (!meta.ok())
    throw Error(ErrorKind::kLoadFailed,
                src.string() + ": its test suite names method '" + method + "', which its program cannot describe: " +
                    load_detail::et_error_text(meta.error()),
                kRemedy);
  for (size_t i = 0; i < meta->num_backends(); ++i) {
    auto id = meta->get_backend_name(i);
    if (!id.ok() || !load_detail::readable_program_string(*id, &bytes))
      throw Error(ErrorKind::kLoadFailed, src.string() + ": a delegate of method " + method + " has no readable id", kRemedy);
    delegates.insert(*id);
  }
  nlohmann::json part = {{"inputs", nlohmann::json::array()}, {"outputs", nlohmann::json::array()},
                         {"goldens", nlohmann::json::array()}};
  if (several) part["name"] = method;
  const auto specs = [&](size_t n, auto tag_of, auto meta_of, const char* what, nlohmann::json& into) {
    for (size_t i = 0; i < n; ++i) {
      const std::string where = "method " + method + " " + what + " " + std::to_string(i);
      auto tag = tag_of(i);
      if (!tag.ok() || *tag != et::Tag::Tensor) throw not_bundled(src, where + " is not a tensor (etproof carries tensors only)");
      auto tm = meta_of(i);
      const auto dtype = tm.ok() ? from_scalar_type(tm->scalar_type()) : std::nullopt;
      if (!dtype) throw not_bundled(src, where + " has a dtype etproof does not carry");
      std::vector<int64_t> shape(tm->sizes().begin(), tm->sizes().end());
      into.push_back({{"name", std::string(what) + std::to_string(i)}, {"dtype", to_string(*dtype)}, {"shape", shape}});
    }
  };
  specs(meta->num_inputs(), [&](size_t i) { return meta->input_tag(i); },
        [&](size_t i) { return meta->input_tensor_meta(i); }, "input", part["inputs"]);
  specs(meta->num_outputs(), [&](size_t i) { return meta->output_tag(i); },
        [&](size_t i) { return meta->output_tensor_meta(i); }, "output", part["outputs"]);
  for (size_t k = 0; k < suite.cases.size(); ++k) {
    const bp::Case& c = suite.cases[k];
    if (c.expected_outputs.empty()) continue;  // a case for profiling only
    const std::string id = (several ? method + "." : std::string()) + "case" + std::to_string(k);
    const std::string where = "method " + method + " test case " + std::to_string(k);
    if (c.inputs.size() != part["inputs"].size() || c.expected_outputs.size() != part["outputs"].size())
      throw not_bundled(src, where + " has " + std::to_string(c.inputs.size()) + " inputs and " +
                                 std::to_string(c.expected_outputs.size()) + " expected outputs; the method takes " +
                                 std::to_string(part["inputs"].size()) + " and returns " + std::to_string(part["outputs"].size()));
    nlohmann::json g = {{"id", id}, {"data", "synthetic"},
                        {"origin", src.filename().string() + ", method " + method + ", test case " + std::to_string(k)},
                        {"inputs", nlohmann::json::object()}, {"outputs", nlohmann::json::object()},
                        {"files", nlohmann::json::array()}};
    const auto put = [&](const std::vector<bp::Value>& values, const nlohmann::json& names, const char* io,
                         const char* kind) {
      for (size_t i = 0; i < values.size(); ++i) {
        const std::string name = names[i]["name"];
        const std::string file = id + "." + io + "." + name + ".npy";
        write_golden(gdir, file, tensor_of(values[i], src, where + " " + kind + " " + std::to_string(i)));
        g[io == std::string("in") ? "inputs" : "outputs"][name] = file;
        g["files"].push_back(file_ref(gdir, file));
      }
    };
    put(c.inputs, part["inputs"], "in", "input");
    put(c.expected_outputs, part["outputs"], "out", "expected output");
    part["goldens"].push_back(std::move(g));
  }
  return part;
}

// The recipe to judge by and where it came from: the caller's, else $ETPROOF_BPTE_RECIPE, else fp32.
std::pair<std::string, std::string> chosen_recipe(const BpteOptions& options) {
  if (!options.recipe.empty()) return {options.recipe, "given"};
  if (const char* r = std::getenv("ETPROOF_BPTE_RECIPE"); r && *r) return {r, "given (ETPROOF_BPTE_RECIPE)"};
  return {"fp32", "assumed, none given (ETPROOF_BPTE_RECIPE names one)"};
}

// The table's entry of (backend, recipe); Error{kInvalidArgument} for one the backend has not, or a
// quantized one (its bound needs the quantization record a BundledProgram does not carry).
const RecipeEntry* checked_recipe(const std::string& backend, const std::string& recipe, const fs::path& bpte) {
  const RecipeEntry* entry = find_recipe_entry(backend, recipe);
  if (!entry || entry->planned) {
    std::vector<std::string> known;
    if (const BackendEntry* b = find_backend_entry(backend))
      for (const auto& r : b->recipes)
        if (!r.planned) known.push_back(r.recipe);
    throw Error(ErrorKind::kInvalidArgument, "recipe '" + recipe + "' is not one of backend " + backend + "'s",
                "give one of: " + detail::join(known));
  }
  if (entry->quantized)
    throw Error(ErrorKind::kInvalidArgument,
                bpte.string() + ": recipe '" + recipe + "' is quantized: its bound needs the quantization "
                "(scheme, granularity) the export records, which a BundledProgram does not carry",
                "judge it with a caller bound: etproof parity FILE.bpte --atol A --rtol R --min-cosine C");
  return entry;
}

}  // namespace

fs::path materialize_bpte(const fs::path& bpte, const BpteOptions& options) {
  const std::vector<uint8_t> file = read_whole(bpte);
  const bp::Parsed parsed = bp::parse_bpte(file, bpte.string());

  const auto [recipe, recipe_source] = chosen_recipe(options);
  const std::string name = safe_name(bpte.stem().string());
  const fs::path cache = options.cache_dir.empty() ? default_cache() : options.cache_dir;
  const fs::path home = cache / (detail::sha256_hex(file.data(), file.size()).substr(0, 16) + "-" + safe_name(recipe));
  const fs::path dir = home / name;
  std::error_code ec;
  if (fs::is_regular_file(dir / (name + ".etproof.json"), ec)) return dir;
  const std::vector<uint8_t> program_bytes(parsed.program, parsed.program + parsed.program_size);
  et::runtime_init();
  ::executorch::extension::BufferDataLoader loader(program_bytes.data(), program_bytes.size());
  auto program = et::Program::load(&loader, et::Program::Verification::InternalConsistency);
  if (!program.ok())
    throw Error(ErrorKind::kLoadFailed,
                bpte.string() + ": ExecuTorch refused its program: " + load_detail::et_error_text(program.error()),
                "write the .bpte with the ExecuTorch release this binary links", uint32_t(program.error()));

  fs::create_directories(home, ec);
  const fs::path stage = home / ("." + name + ".tmp-" + std::to_string(::getpid()));
  fs::remove_all(stage, ec);
  struct RemoveStage {  // whatever is refused below leaves nothing in the cache
    const fs::path& p;
    ~RemoveStage() {
      std::error_code e;
      fs::remove_all(p, e);
    }
  } remove_stage{stage};
  const fs::path gdir = stage / (name + ".goldens");
  if (!fs::create_directories(gdir, ec) && ec)
    throw Error(ErrorKind::kIo, "cannot create " + gdir.string() + ": " + ec.message(),
                "set ETPROOF_BPTE_CACHE to a writable directory");
  const bool several = parsed.suites.size() > 1;
  std::set<std::string> delegates;
  std::vector<nlohmann::json> parts;
  size_t cases = 0;
  for (const bp::Suite& suite : parsed.suites) {
    parts.push_back(method_part(suite, *program, program_bytes, gdir, several, bpte, delegates));
    cases += parts.back()["goldens"].size();
  }
  if (cases == 0) throw not_bundled(bpte, "none of its test cases has expected outputs");
  const std::string backend = backend_for(delegates, bpte);
  const RecipeEntry* entry = checked_recipe(backend, recipe, bpte);
  detail::write_file_atomic(stage / (name + ".pte"),
                            std::string_view(reinterpret_cast<const char*>(program_bytes.data()), program_bytes.size()));
  nlohmann::json doc = {
      {"schema_version", several ? 2 : 1},
      {"name", name},
      {"model", bpte.filename().string() + " (ExecuTorch BundledProgram; recipe " + recipe + ": " + recipe_source + ")"},
      {"engine", {{"name", "executorch"}, {"version", kUnknown}}},
      {"artifact", file_ref(stage, name + ".pte")},
      {"backend", backend},
      {"delegates", std::vector<std::string>(delegates.begin(), delegates.end())},
      {"recipe", recipe},
      {"precision", entry->precision},
      {"toolchain", {{"python", kUnknown}, {"torch", kUnknown}, {"executorch", kUnknown}, {"torchao", kUnknown},
                     {"numpy", kUnknown}, {"etproof", kUnknown}}},
      {"created_utc", now_utc()}};
  if (several) {
    doc["methods"] = parts;
  } else {
    for (const char* k : {"inputs", "outputs", "goldens"}) doc[k] = parts[0][k];
  }
  detail::write_file_atomic(stage / (name + ".etproof.json"), doc.dump(2) + "\n");
  fs::rename(stage, dir, ec);
  if (ec) {
    fs::remove_all(stage, ec);
    if (!fs::is_directory(dir, ec))  // another process materialized it first: theirs is the same
      throw Error(ErrorKind::kIo, "cannot write the bundle of " + bpte.string() + " into " + dir.string(),
                  "set ETPROOF_BPTE_CACHE to a writable directory");
  }
  return dir;
}

}  // namespace etproof
#endif  // ETPROOF_HAVE_BPTE
