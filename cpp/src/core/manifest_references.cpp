// etproof/manifest_references.cpp — a manifest's references, budget, golden cases and (schema 2)
// methods, read from a document the schema has accepted (core/manifest_reader.h). The checks
// here are those schema/manifest.schema.json cannot state: reference names, distinct ids and
// method names, the files of a case against its method's inputs, outputs and references.
#include <algorithm>
#include <limits>
#include <set>

#include "core/manifest_reader.h"

namespace etproof::detail {

// references[NAME].program_at_export (`p`); null bounds are infinite.
std::optional<ProgramAtExport> ManifestReader::program_at_export(const json& p) {
  ProgramAtExport out;
  out.cases = p.at("cases").get<size_t>();
  out.outputs = p.at("outputs").get<size_t>();
  for (const char* key : {"max_steps", "max_range_error"}) {
    auto x = p.find(key);
    if (x == p.end()) continue;
    (std::string(key) == "max_steps" ? out.max_steps : out.max_range_error) =
        x->is_null() ? std::numeric_limits<double>::infinity() : x->get<double>();
  }
  out.matched = p.at("matched").get<bool>();
  out.machine = p.at("machine").get<std::string>();
  return out;
}

// references: {NAME: reference}; NAME a safe name (the schema keys them by any name).
std::map<std::string, ReferenceInfo> ManifestReader::references(const json& doc) {
  std::map<std::string, ReferenceInfo> out;
  auto r = doc.find("references");
  if (r == doc.end()) return out;
  for (const auto& [name, e] : r->items()) {
    const std::string path = at("references", name);
    if (!is_safe_name(name)) {
      problem(path, squote(name) + " is not a reference name ([A-Za-z0-9._-]+)");
      continue;
    }
    ReferenceInfo info;
    info.captured = e.at("captured").get<bool>();
    (info.captured ? info.description : info.reason) = e.at(info.captured ? "description" : "reason").get<std::string>();
    if (auto em = e.find("emulates"); em != e.end()) info.emulates = em->get<std::string>();
    if (auto p = e.find("program_at_export"); p != e.end())
      info.program_at_export = program_at_export(*p);
    out.emplace(name, std::move(info));
  }
  return out;
}

std::optional<Budget> ManifestReader::budget(const json& doc) {
  auto b = doc.find("budget");
  if (b == doc.end()) return std::nullopt;
  auto bound = [&](const char* key) -> std::optional<double> {
    auto j = b->find(key);
    return j == b->end() ? std::nullopt : std::optional<double>(j->get<double>());
  };
  Budget out;
  out.min_sqnr_db = bound("min_sqnr_db");
  out.min_cosine = bound("min_cosine");
  out.top1_agreement = bound("top1_agreement");
  if (auto g = b->find("min_greedy_tokens"); g != b->end()) out.min_greedy_tokens = g->get<int64_t>();
  return out;
}

void ManifestReader::greedy(const json& doc, Manifest& m) {
  auto g = doc.find("greedy");
  if (g == doc.end()) return;
  m.greedy_output = g->at("output").get<std::string>();
  std::set<std::string> with_steps;  // the methods a sequence step runs through
  for (const GoldenCase& c : m.goldens)
    if (c.sequence) with_steps.insert(c.method);
  for (const MethodSpec& s : m.methods) {
    if (!with_steps.empty() && !with_steps.count(s.name)) continue;
    const std::string where = m.schema_version >= 2 ? " of method " + squote(s.name) : "";
    auto o = std::find_if(s.outputs.begin(), s.outputs.end(), [&](const TensorSpec& t) { return t.name == m.greedy_output; });
    if (o == s.outputs.end()) {
      problem("greedy.output", "names no output" + where + " (" + squote(m.greedy_output) + ")");
    } else if ((o->dtype != DType::kFloat32 && o->dtype != DType::kFloat16 && o->dtype != DType::kFloat64) ||
               o->shape.size() < 2) {
      problem("greedy.output", squote(m.greedy_output) + where + " is " + std::string(to_string(o->dtype)) +
                                   " of rank " + std::to_string(o->shape.size()) +
                                   ": logits are floating, of rank >= 2 (positions, vocabulary)");
    }
  }
}

// goldens[i].references: {NAME: {OUTPUT: file_ref}}, for exactly the captured references.
std::map<std::string, std::map<std::string, FileRef>> ManifestReader::golden_references(
    const json& g, const std::string& path, const std::map<std::string, ReferenceInfo>& refs,
    const std::vector<TensorSpec>& outputs) {
  std::map<std::string, std::map<std::string, FileRef>> out;
  const std::string rpath = at(path, "references");
  static const json kNone = json::object();
  auto r = g.find("references");
  const json& given = r != g.end() ? *r : kNone;
  for (const auto& [name, files] : given.items()) {
    const std::string npath = at(rpath, name);
    auto it = refs.find(name);
    if (it == refs.end() || !it->second.captured) {
      problem(npath, "names no reference the manifest's references record as captured");
      continue;
    }
    auto& per_output = out[name];
    for (const auto& [output, ref] : files.items()) {
      const std::string opath = at(npath, output);
      if (!names_one_of(outputs, output)) {
        problem(opath, squote(output) + " is not one of the outputs");
        continue;
      }
      per_output[output] = file_ref(ref, opath);
    }
    for (const auto& t : outputs)
      if (!files.contains(t.name)) problem(npath, "no file for output " + squote(t.name));
  }
  for (const auto& [name, info] : refs)
    if (info.captured && !given.contains(name))
      problem(at(rpath, name), "missing (references records it as captured)");
  return out;
}

// goldens[i].inputs / .outputs: {TENSOR: FILE}, a file for exactly the method's `key`.
std::map<std::string, std::string> ManifestReader::golden_files(const json& g, const std::string& path,
                                                                const char* key,
                                                                const std::vector<TensorSpec>& specs) {
  std::map<std::string, std::string> out;
  const json& m = g.at(key);
  const std::string mpath = at(path, key);
  for (const auto& [name, file] : m.items()) {
    if (!names_one_of(specs, name)) problem(at(mpath, name), squote(name) + " is not one of the " + key);
    out[name] = file.get<std::string>();
  }
  const std::string singular = std::string(key).substr(0, std::string(key).size() - 1);
  for (const auto& t : specs)
    if (!out.count(t.name)) problem(mpath, "no file for " + singular + " " + squote(t.name));
  return out;
}

// goldens[i].files (optional): a file_ref for exactly the files the case's inputs and outputs
// name, each once.
std::vector<FileRef> ManifestReader::golden_hashes(const json& g, const std::string& path, const GoldenCase& c) {
  std::vector<FileRef> out;
  auto arr = g.find("files");
  if (arr == g.end()) return out;
  const std::string fpath = at(path, "files");
  std::multiset<std::string> named, listed;
  for (const auto* part : {&c.inputs, &c.outputs})
    for (const auto& [name, file] : *part) named.insert(file);
  for (size_t k = 0; k < arr->size(); ++k) {
    out.push_back(file_ref((*arr)[k], at(fpath, k)));
    listed.insert(out.back().file);
  }
  if (listed != named) problem(fpath, "must list exactly the case's input and output files, each once");
  return out;
}

std::vector<GoldenCase> ManifestReader::goldens(const json& obj, const std::string& parent, const std::string& method,
                                                const std::vector<TensorSpec>& inputs,
                                                const std::vector<TensorSpec>& outputs,
                                                const std::map<std::string, ReferenceInfo>& refs) {
  std::vector<GoldenCase> out;
  auto arr = obj.find("goldens");
  if (arr == obj.end()) return out;
  std::set<std::string> ids;
  for (size_t i = 0; i < arr->size(); ++i) {
    const json& g = (*arr)[i];
    const std::string path = at(at(parent, "goldens"), i);
    GoldenCase c;
    c.method = method;
    c.id = g.at("id").get<std::string>();
    if (!ids.insert(c.id).second) problem(at(path, "id"), "duplicate id " + squote(c.id));
    c.data = g.at("data").get<std::string>();
    c.origin = g.at("origin").get<std::string>();
    c.inputs = golden_files(g, path, "inputs", inputs);
    c.outputs = golden_files(g, path, "outputs", outputs);
    c.references = golden_references(g, path, refs, outputs);
    c.files = golden_hashes(g, path, c);
    if (auto q = g.find("sequence"); q != g.end())
      c.sequence = GoldenCase::Step{q->at("case").get<std::string>(), q->at("step").get<int64_t>()};
    out.push_back(std::move(c));
  }
  return out;
}

void ManifestReader::methods(const json& doc, Manifest& m) {
  const json& arr = doc.at("methods");
  std::set<std::string> names;
  for (size_t i = 0; i < arr.size(); ++i) {
    const json& e = arr[i];
    const std::string path = at("methods", i);
    MethodSpec spec;
    spec.name = e.at("name").get<std::string>();
    if (!names.insert(spec.name).second) problem(at(path, "name"), "duplicate method name " + squote(spec.name));
    spec.inputs = tensor_specs(e, path, "inputs");
    spec.outputs = tensor_specs(e, path, "outputs");
    output_dims_named(spec.inputs, spec.outputs, path);
    for (GoldenCase& c : goldens(e, path, spec.name, spec.inputs, spec.outputs, m.references))
      m.goldens.push_back(std::move(c));
    m.methods.push_back(std::move(spec));
  }
}

void ManifestReader::sequences(const Manifest& m) {
  // case -> step -> where it is listed (the field path of its sequence)
  std::map<std::string, std::map<int64_t, std::string>> steps;
  std::map<std::string, size_t> index;  // golden index within its method
  const bool several = m.schema_version >= 2;
  for (const GoldenCase& g : m.goldens) {
    const size_t i = index[g.method]++;
    if (!g.sequence) continue;
    size_t mi = 0;
    while (several && mi < m.methods.size() && m.methods[mi].name != g.method) ++mi;
    const std::string path =
        at(at(several ? at("methods", mi) : std::string(), "goldens"), i) + ".sequence";
    const auto& [case_id, k] = *g.sequence;
    auto& seen = steps[case_id];
    if (!seen.emplace(k, path).second)
      problem(at(path, "step"), "repeats step " + std::to_string(k) + " of sequence " + squote(case_id) +
                                    " (also " + seen.at(k) + ")");
    if (several && std::any_of(m.methods.begin(), m.methods.end(),
                               [&](const MethodSpec& s) { return s.name == case_id; }))
      problem(at(path, "case"), "is the name of a method (" + squote(case_id) + ")");
  }
  for (const auto& [case_id, seen] : steps) {
    const int64_t last = seen.rbegin()->first;
    for (int64_t k = 0; k < last; ++k)
      if (!seen.count(k)) {
        problem(seen.rbegin()->second, "sequence " + squote(case_id) + " has step " + std::to_string(last) +
                                           " but not step " + std::to_string(k) + " (steps are numbered 0..n-1)");
        break;
      }
  }
}

}  // namespace etproof::detail
