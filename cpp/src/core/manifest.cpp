// etproof/manifest.cpp — reader of the bundle manifest, schema_version 1 and 2 (docs/manifest.md):
// entry points and the top-level fields.
//
// The document is first validated against schema/manifest.schema.json (etproof/core/schema.h: the
// file the export half validates against too), which states its structure — types, required and
// unknown keys, values, ranges — and lists every problem. The typed Manifest is then extracted
// from the accepted document with the checks a schema cannot state (core/manifest_reader.h; the
// tensors in manifest_tensors.cpp, references, goldens and methods in manifest_references.cpp),
// every problem at once, each with its field path ("inputs[0].name: …").
#include "etproof/core/manifest.h"

#include <cerrno>
#include <climits>
#include <cstring>
#include <fstream>
#include <sstream>
#include <system_error>

#include "etproof/core/error.h"
#include "etproof/core/schema.h"
#include "core/common.h"
#include "core/json_parse.h"
#include "core/manifest_reader.h"

namespace etproof {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* kRemedy =
    "re-export the bundle with etproof's export half (etproof export); the manifest "
    "must follow docs/manifest.md, schema_version 1 (2 for a program with several methods)";

using detail::is_utc_timestamp;
using detail::squote;
using detail::type_name;
using Reader = detail::ManifestReader;

Error invalid(const std::string& origin, const std::vector<std::string>& problems, const std::string& remedy) {
  return Error(ErrorKind::kManifestInvalid, origin + ": " + detail::join(problems, "; "), remedy);
}

// schema_version first: a document of another version may mean other things by the same keys.
// Returns the version (1 when absent or not an integer: the schema then reports it).
int read_version(const json& doc, const std::string& origin) {
  auto it = doc.find("schema_version");
  if (it == doc.end() || !it->is_number_integer()) return kSchemaVersion;
  if (it->is_number_unsigned() && it->get<uint64_t>() > uint64_t(INT64_MAX)) return kSchemaVersion;
  const int64_t v = it->get<int64_t>();
  if (v >= kSchemaVersion && v <= kMaxSchemaVersion) return int(v);
  const std::string versions = std::to_string(kSchemaVersion) + " to " + std::to_string(kMaxSchemaVersion);
  const std::string remedy =
      v > kMaxSchemaVersion
          ? "this etproof reads schema_version " + versions +
                "; upgrade etproof's runtime half to one that reads schema_version " + std::to_string(v) +
                ", or re-export the bundle with an etproof that writes version " + std::to_string(kSchemaVersion) +
                " or " + std::to_string(kMaxSchemaVersion)
          : std::string(kRemedy);
  throw invalid(origin, {"schema_version: " + std::to_string(v) + " is not supported (this reader reads " + versions + ")"},
                remedy);
}

// A list of strings that must be sorted and distinct (delegates, operators).
std::vector<std::string> sorted_strings(Reader& r, const json& a, const char* key) {
  std::vector<std::string> out;
  for (size_t i = 0; i < a.size(); ++i) {
    auto s = a[i].get<std::string>();
    if (!out.empty() && !(out.back() < s))
      r.problem(Reader::at(key, i), squote(s) + " is out of order or repeated (" + key + " are distinct and sorted)");
    out.push_back(std::move(s));
  }
  return out;
}

// delegation: the counts, by_operator sorted by op.
Delegation read_delegation(Reader& r, const json& d) {
  Delegation out;
  out.delegated_nodes = r.int_at(d, "delegation", "delegated_nodes").value_or(0);
  out.non_delegated_nodes = r.int_at(d, "delegation", "non_delegated_nodes").value_or(0);
  const json& ops = d.at("by_operator");
  for (size_t i = 0; i < ops.size(); ++i) {
    const json& e = ops[i];
    const std::string path = Reader::at("delegation.by_operator", i);
    OperatorDelegation o;
    o.op = e.at("op").get<std::string>();
    o.delegated = r.int_at(e, path, "delegated").value_or(0);
    o.non_delegated = r.int_at(e, path, "non_delegated").value_or(0);
    if (auto reasons = e.find("reasons"); reasons != e.end()) o.reasons = reasons->get<std::vector<std::string>>();
    if (!out.by_operator.empty() && !(out.by_operator.back().op < o.op))
      r.problem(Reader::at(path, "op"), squote(o.op) + " is out of order or repeated (by_operator is sorted by op)");
    out.by_operator.push_back(std::move(o));
  }
  return out;
}

// What the export ran: engine, files, backend and its recipe, target, quantization.
void read_program(Reader& r, const json& doc, Manifest& m) {
  m.name = doc.at("name").get<std::string>();
  m.model = doc.at("model").get<std::string>();
  m.engine_name = doc.at("engine").at("name").get<std::string>();
  m.engine_version = doc.at("engine").at("version").get<std::string>();
  m.artifact = r.file_ref(doc.at("artifact"), "artifact");
  if (auto df = doc.find("data_files"); df != doc.end())
    for (size_t i = 0; i < df->size(); ++i) m.data_files.push_back(r.file_ref((*df)[i], Reader::at("data_files", i)));
  if (auto st = doc.find("state"); st != doc.end()) {
    m.mutable_buffers = st->at("mutable_buffers").get<std::vector<std::string>>();
    m.state_shared_across_methods = st->value("shared_across_methods", false);
  }
  m.backend = doc.at("backend").get<std::string>();
  m.delegates = sorted_strings(r, doc.at("delegates"), "delegates");
  if (auto ops = doc.find("operators"); ops != doc.end()) m.operators = sorted_strings(r, *ops, "operators");
  if (auto d = doc.find("delegation"); d != doc.end()) m.delegation = read_delegation(r, *d);
  m.recipe = doc.at("recipe").get<std::string>();
  m.precision = doc.at("precision").get<std::string>();
  if (auto c = doc.find("compute_unit"); c != doc.end()) m.compute_unit = c->get<std::string>();
  if (auto t = doc.find("target"); t != doc.end()) {
    Target target;
    target.kind = t->at("kind").get<std::string>();
    target.requirements = t->at("requirements").get<std::string>();
    target.openvino = t->value("openvino", "");
    target.isa = t->value("isa", "");
    m.target = std::move(target);
  }
  if (auto q = doc.find("quantization"); q != doc.end()) {
    RecipeQuantization rq;
    rq.scheme = q->at("scheme").get<std::string>();
    rq.quantizer = q->at("quantizer").get<std::string>();
    for (const json& s : q->at("skipped"))
      rq.skipped.push_back(SkippedModule{s.at("module").get<std::string>(), s.at("reason").get<std::string>()});
    if (auto g = q->find("group_size"); g != q->end()) rq.group_size = g->get<int64_t>();
    m.quantization = std::move(rq);
  }
}

// The tensors, goldens and what names them: schema 1's top level, or schema 2's methods.
void read_methods(Reader& r, const json& doc, Manifest& m) {
  auto common = [&] {
    if (auto w = doc.find("weights"); w != doc.end())
      m.weights = Weights{w->at("kind").get<std::string>(), w->at("source").get<std::string>()};
    m.references = r.references(doc);
    m.budget = r.budget(doc);
  };
  if (m.schema_version >= 2) {
    common();
    r.methods(doc, m);
  } else {
    MethodSpec forward{"forward", r.tensor_specs(doc, "", "inputs"), r.tensor_specs(doc, "", "outputs")};
    r.output_dims_named(forward.inputs, forward.outputs, "");
    m.preprocessing = r.preprocessing(doc, forward.inputs);
    m.labels = r.labels(doc, forward.outputs);
    common();
    m.goldens = r.goldens(doc, "", forward.name, forward.inputs, forward.outputs, m.references);
    m.methods.push_back(std::move(forward));
  }
  r.sequences(m);
  r.greedy(doc, m);
  if (!m.methods.empty()) {
    m.inputs = m.methods.front().inputs;
    m.outputs = m.methods.front().outputs;
  }
}

// The manifest `doc` describes, without `raw` (its caller sets it: moved or copied).
Manifest read_fields(const json& doc, const std::string& origin) {
  if (!doc.is_object())
    throw invalid(origin, {std::string("expected a JSON object, found ") + type_name(doc)}, kRemedy);
  Manifest m;
  m.schema_version = read_version(doc, origin);
  if (auto problems = schema::validate(doc, schema::Document::kManifest); !problems.empty())
    throw invalid(origin, schema::problem_lines(problems), kRemedy);
  Reader r;
  read_program(r, doc, m);
  read_methods(r, doc, m);
  // A bundle is its program and its golden cases: with none, replay has nothing to judge (the
  // export writes one per golden input; methods each list theirs, one of them may list none).
  if (m.goldens.empty())
    r.problem(m.schema_version >= 2 ? "methods" : "goldens",
              "no golden case: a bundle carries at least one, or there is nothing to replay or judge");
  m.toolchain = doc.at("toolchain").get<std::map<std::string, std::string>>();
  m.created_utc = doc.at("created_utc").get<std::string>();
  if (!is_utc_timestamp(m.created_utc)) {
    r.problem("created_utc", squote(m.created_utc) + " is not YYYY-MM-DDTHH:MM:SSZ");
    m.created_utc.clear();
  }
  if (!r.problems.empty()) throw invalid(origin, r.problems, kRemedy);
  return m;
}

// read_fields, any exception of the JSON library taking values out of `doc` (the Reader checks
// each type first, so one would be a lapse here) a manifest-invalid Error all the same.
Manifest read_manifest_fields(const json& doc, const std::string& origin) {
  return detail::reading_json({ErrorKind::kManifestInvalid, origin, kRemedy},
                              [&] { return read_fields(doc, origin); });
}

}  // namespace

Manifest parse_manifest(const json& doc, const std::string& origin) {
  // A document built by the caller: refused before anything copies it when it nests too deep.
  detail::check_json_depth(doc, {ErrorKind::kManifestInvalid, origin, kRemedy});
  Manifest m = read_manifest_fields(doc, origin);
  m.raw = doc;
  return m;
}

Manifest read_manifest(const fs::path& path) {
  std::error_code ec;
  if (!fs::exists(path, ec))
    throw Error(ErrorKind::kManifestInvalid, path.string() + ": no manifest at this path",
                "give a bundle directory or its NAME.etproof.json; export one with etproof export");
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw Error(ErrorKind::kIo, "cannot read " + path.string() + ": " + std::strerror(errno),
                "check the file's permissions");
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw Error(ErrorKind::kIo, "error reading " + path.string(), "check the file system");
  json doc = detail::parse_json(ss.str(), {ErrorKind::kManifestInvalid, path.string(), kRemedy});
  Manifest m = read_manifest_fields(doc, path.string());
  m.raw = std::move(doc);  // the parsed document itself, never copied
  return m;
}

std::string to_canonical_json(const json& doc) { return doc.dump(2) + "\n"; }

}  // namespace etproof
