// etproof/backend_table.cpp — data/backends.json, embedded at configure time (CMakeLists.txt).
#include "etproof/core/backend_table.h"

#include <algorithm>

#include "etproof/core/error.h"
#include "etproof/core/schema.h"
#include "etproof/backend_table_data.h"  // generated: kBackendTableJson
#include "core/common.h"
#include "core/json_parse.h"

namespace etproof {
namespace {

using nlohmann::json;

constexpr const char* kRemedy = "fix data/backends.json (see docs/backends.md) and rebuild";

[[noreturn]] void bad(const std::string& origin, const std::string& where, const std::string& what) {
  throw Error(ErrorKind::kManifestInvalid, origin + ": " + where + ": " + what, kRemedy);
}

const json& field(const json& obj, const char* name, const std::string& origin,
                  const std::string& where) {
  if (!obj.is_object()) bad(origin, where, "is not an object");
  auto it = obj.find(name);
  if (it == obj.end()) bad(origin, where, std::string("missing field '") + name + "'");
  return *it;
}

std::string str(const json& v, const std::string& origin, const std::string& where) {
  if (!v.is_string()) bad(origin, where, "is not a string");
  return v.get<std::string>();
}

std::optional<std::string> opt_str(const json& v, const std::string& origin,
                                   const std::string& where) {
  if (v.is_null()) return std::nullopt;
  return str(v, origin, where);
}

std::vector<std::string> strs(const json& v, const std::string& origin, const std::string& where) {
  if (!v.is_array()) bad(origin, where, "is not a list");
  std::vector<std::string> out;
  for (size_t i = 0; i < v.size(); ++i)
    out.push_back(str(v[i], origin, where + "[" + std::to_string(i) + "]"));
  return out;
}

// The structure: schema/backends.schema.json (the export half validates against it too), every
// problem at once (Error{kManifestInvalid}); each problem inside a backend's entry also names the
// backend (its key, where readable).
void check_schema(const json& doc, const std::string& origin) {
  const auto problems = schema::validate(doc, schema::Document::kBackends);
  if (problems.empty()) return;
  std::vector<std::string> lines = schema::problem_lines(problems);
  for (size_t i = 0; i < problems.size(); ++i) {
    const std::string& p = problems[i].pointer;
    if (p.rfind("/backends/", 0) != 0) continue;
    const size_t end = p.find('/', 10);
    const std::string index = p.substr(10, end == std::string::npos ? std::string::npos : end - 10);
    if (index.empty() || !std::all_of(index.begin(), index.end(), ::isdigit)) continue;
    const size_t n = std::stoul(index);
    if (doc.is_object() && doc.contains("backends") && doc["backends"].is_array() && n < doc["backends"].size() &&
        doc["backends"][n].is_object() && doc["backends"][n].contains("key") && doc["backends"][n]["key"].is_string())
      lines[i] = "backend '" + doc["backends"][n]["key"].get<std::string>() + "': " + lines[i];
  }
  throw Error(ErrorKind::kManifestInvalid, origin + ": " + detail::join(lines, "; "), kRemedy);
}

// One entry of a backend's recipes, as the schema already checked it; `precisions` defaults to
// [precision].
RecipeEntry read_recipe(const json& r) {
  RecipeEntry re;
  re.recipe = r.at("recipe").get<std::string>();
  re.precision = r.at("precision").get<std::string>();
  re.quantized = r.at("quantized").get<bool>();
  if (r.contains("precisions"))
    re.precisions = r.at("precisions").get<std::vector<std::string>>();
  else
    re.precisions = {re.precision};
  if (r.contains("compute_unit")) re.compute_unit = r.at("compute_unit").get<std::string>();
  re.planned = r.value("planned", false);
  return re;
}

// The backend at `where` ("backends[N]"); a key one of `earlier` already has, a kind or upstream
// status outside its words, or a field missing or mistyped is Error{kManifestInvalid}.
BackendEntry read_backend(const json& b, const std::string& where, const std::string& origin,
                          const std::vector<BackendEntry>& earlier) {
  BackendEntry e;
  e.key = str(field(b, "key", origin, where), origin, where + ".key");
  const std::string w = "backend '" + e.key + "'";
  for (const auto& prev : earlier)
    if (prev.key == e.key) bad(origin, w, "is listed twice");
  e.name = str(field(b, "name", origin, w), origin, w + ".name");
  e.kind = str(field(b, "kind", origin, w), origin, w + ".kind");
  if (e.kind != "delegate" && e.kind != "portable" && e.kind != "operators")
    bad(origin, w + ".kind", "'" + e.kind + "' is not delegate, portable or operators");
  e.runtime_ids = strs(field(b, "runtime_ids", origin, w), origin, w + ".runtime_ids");
  const json& rn = field(b, "runtime_needs", origin, w);
  const std::string wr = w + ".runtime_needs";
  e.wheel_component = opt_str(field(rn, "wheel_component", origin, wr), origin, wr + ".wheel_component");
  e.build_flag = opt_str(field(rn, "build_flag", origin, wr), origin, wr + ".build_flag");
  e.runtime_os = strs(field(rn, "os", origin, wr), origin, wr + ".os");
  e.hardware = opt_str(field(rn, "hardware", origin, wr), origin, wr + ".hardware").value_or("");
  e.runtime_env = strs(field(rn, "env", origin, wr), origin, wr + ".env");
  const json& up = field(b, "upstream", origin, w);
  e.upstream_status = str(field(up, "status", origin, w + ".upstream"), origin, w + ".upstream.status");
  if (e.upstream_status != "active" && e.upstream_status != "removed")
    bad(origin, w + ".upstream.status", "'" + e.upstream_status + "' is not active or removed");
  if (up.contains("since")) e.upstream_since = str(up["since"], origin, w + ".upstream.since");
  if (up.contains("note")) e.upstream_note = str(up["note"], origin, w + ".upstream.note");
  e.notes = strs(field(b, "notes", origin, w), origin, w + ".notes");
  for (const json& r : field(b, "recipes", origin, w)) e.recipes.push_back(read_recipe(r));
  return e;
}

// t.kernel_libraries from the table's list: one entry per operator namespace
// (Error{kManifestInvalid} for a namespace listed twice, or a field missing or mistyped).
void read_kernel_libraries(const json& doc, const std::string& origin, BackendTable& t) {
  const json& libs = field(doc, "kernel_libraries", origin, "table");
  if (!libs.is_array()) bad(origin, "kernel_libraries", "is not a list");
  for (size_t i = 0; i < libs.size(); ++i) {
    const std::string w = "kernel_libraries[" + std::to_string(i) + "]";
    KernelLibraryEntry k;
    k.name_space = str(field(libs[i], "namespace", origin, w), origin, w + ".namespace");
    k.library = str(field(libs[i], "library", origin, w), origin, w + ".library");
    k.wheel_component = opt_str(field(libs[i], "wheel_component", origin, w), origin, w + ".wheel_component");
    for (const auto& prev : t.kernel_libraries)
      if (prev.name_space == k.name_space) bad(origin, w, "namespace '" + k.name_space + "' is listed twice");
    t.kernel_libraries.push_back(std::move(k));
  }
}

BackendTable read_table(const json& doc, const std::string& origin) {
  // The schema first (check_schema); the checks below are what a schema cannot state (a key
  // listed twice).
  check_schema(doc, origin);
  BackendTable t;
  const json& sv = field(doc, "schema_version", origin, "table");
  if (!sv.is_number_integer() || sv.get<int>() != 1)
    bad(origin, "schema_version", "is not 1 (this binary reads schema 1)");
  t.schema_version = 1;
  t.executorch = str(field(doc, "executorch", origin, "table"), origin, "executorch");
  const json& list = field(doc, "backends", origin, "table");
  if (!list.is_array()) bad(origin, "backends", "is not a list");
  for (size_t i = 0; i < list.size(); ++i)
    t.backends.push_back(read_backend(list[i], "backends[" + std::to_string(i) + "]", origin, t.backends));
  read_kernel_libraries(doc, origin, t);
  return t;
}

}  // namespace

BackendTable parse_backend_table(const json& doc, const std::string& origin) {
  // A document built by the caller: refused before anything copies it when it nests too deep.
  detail::check_json_depth(doc, {ErrorKind::kManifestInvalid, origin, kRemedy});
  BackendTable t = detail::reading_json({ErrorKind::kManifestInvalid, origin, kRemedy},
                                        [&] { return read_table(doc, origin); });
  t.raw = doc;
  return t;
}

const char* embedded_backend_table_json() { return build::kBackendTableJson; }

const BackendTable& backend_table() {
  static const BackendTable table = [] {
    json doc = detail::parse_json(build::kBackendTableJson,
                                  {ErrorKind::kManifestInvalid, build::kBackendTablePath, kRemedy});
    BackendTable t = detail::reading_json({ErrorKind::kManifestInvalid, build::kBackendTablePath, kRemedy},
                                          [&] { return read_table(doc, build::kBackendTablePath); });
    t.raw = std::move(doc);
    return t;
  }();
  return table;
}

const BackendEntry* find_backend_entry(const std::string& key) {
  for (const auto& e : backend_table().backends)
    if (e.key == key) return &e;
  return nullptr;
}

const RecipeEntry* find_recipe_entry(const std::string& backend, const std::string& recipe) {
  if (const BackendEntry* e = find_backend_entry(backend))
    for (const RecipeEntry& r : e->recipes)
      if (r.recipe == recipe) return &r;
  return nullptr;
}

std::vector<const BackendEntry*> entries_for_runtime_id(const std::string& id) {
  std::vector<const BackendEntry*> out;
  for (const auto& e : backend_table().backends)
    for (const auto& r : e.runtime_ids)
      if (r == id) {
        out.push_back(&e);
        break;
      }
  return out;
}

std::string runtime_needs_text(const std::string& id, const std::string& backend_key) {
  const auto entries = entries_for_runtime_id(id);
  if (entries.empty()) return "";
  const BackendEntry* chosen = entries.front();
  for (const BackendEntry* e : entries)
    if (e->key == backend_key) chosen = e;
  std::string os;
  for (const auto& o : chosen->runtime_os) os += (os.empty() ? "" : "/") + o;
  std::string text = id + " runs on " + (os.empty() ? "any OS" : os);
  if (!chosen->hardware.empty()) text += " (" + chosen->hardware + ")";
  if (chosen->wheel_component)
    text += ", component executorch::" + *chosen->wheel_component;
  else if (chosen->build_flag)
    text += ", no wheel ships it: build ExecuTorch with " + *chosen->build_flag + "=ON";
  return text;
}

}  // namespace etproof
