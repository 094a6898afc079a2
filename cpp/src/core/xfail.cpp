// etproof/xfail.cpp — expected-failure records: reading and matching (etproof/xfail.h).
#include "etproof/core/xfail.h"

#include <algorithm>
#include <fstream>
#include <iterator>

#include <nlohmann/json.hpp>

#include "etproof/core/error.h"
#include "etproof/core/schema.h"
#include "core/common.h"
#include "core/json_parse.h"

namespace etproof {

using detail::join;

std::string_view to_string(XfailResult r) {
  switch (r) {
    case XfailResult::kXfail: return "xfail";
    case XfailResult::kXpass: return "xpass";
    case XfailResult::kNotExercised: return "not-exercised";
    case XfailResult::kStale: return "stale";
  }
  return "unknown";
}

namespace {

bool valid_date(const std::string& d) { return detail::is_calendar_date(d); }

}  // namespace

std::string record_label(const XfailRecord& r) {
  return r.model + " " + r.backend + "/" + r.recipe + " (" + r.half + " half" +
         (r.cases.empty() ? "" : ", cases " + join(r.cases)) + ")";
}

std::optional<std::string> model_of_bundle(const std::string& bundle, const std::string& backend,
                                           const std::string& recipe) {
  const std::string suffix = "-" + backend + "-" + recipe;
  if (bundle.size() <= suffix.size() || !bundle.ends_with(suffix)) return std::nullopt;
  return bundle.substr(0, bundle.size() - suffix.size());
}

bool xfail_matches_column(const XfailRecord& r, const std::string& model, const std::string& bundle,
                          const std::string& backend, const std::string& recipe) {
  if (r.backend != backend || r.recipe != recipe) return false;
  return r.model == model || model_of_bundle(bundle, backend, recipe) == r.model;
}

bool xfail_covers_case(const XfailRecord& r, const std::string& case_id) {
  return r.cases.empty() || std::find(r.cases.begin(), r.cases.end(), case_id) != r.cases.end();
}

const XfailRecord* find_runtime_xfail(const std::vector<XfailRecord>& records,
                                      const std::string& model, const std::string& bundle,
                                      const std::string& backend, const std::string& recipe,
                                      const std::string& case_id) {
  for (const XfailRecord& r : records)
    if (r.half == "runtime" && xfail_matches_column(r, model, bundle, backend, recipe) &&
        xfail_covers_case(r, case_id))
      return &r;
  return nullptr;
}

namespace {

constexpr const char* kRemedy = "fix it to follow docs/xfail.md (or remove it if no failure is expected)";

// The top level's own checks (its fields, schema_version 1, a records list), problems appended;
// the records list, or null when there is none to read.
const nlohmann::json* top_level(const nlohmann::json& doc, std::vector<std::string>& problems) {
  if (!doc.is_object()) {
    problems.push_back("the top level must be an object {\"schema_version\", \"records\"}");
    return nullptr;
  }
  for (const auto& [key, v] : doc.items())
    if (key != "schema_version" && key != "records") problems.push_back(key + ": unknown field");
  if (!doc.contains("schema_version"))
    problems.push_back("schema_version: missing (must be 1)");
  else if (!doc["schema_version"].is_number_integer() || doc["schema_version"].get<int64_t>() != 1)
    problems.push_back("schema_version: must be 1, got " + doc["schema_version"].dump());
  if (!doc.contains("records")) {
    problems.push_back("records: missing (a list of records)");
    return nullptr;
  }
  if (!doc["records"].is_array()) {
    problems.push_back("records: must be a list, got " + doc["records"].dump());
    return nullptr;
  }
  return &doc["records"];
}

// The record at `at` ("records[N]"): its fields read, unknown ones named, then the checks across
// them (cases on a runtime record only, half export or runtime, recorded a calendar date).
// Problems appended; nullopt when the record cannot be used.
std::optional<XfailRecord> read_record(const nlohmann::json& r, const std::string& at,
                                       std::vector<std::string>& problems) {
  if (!r.is_object()) {
    problems.push_back(at + ": must be an object");
    return std::nullopt;
  }
  XfailRecord rec;
  const std::pair<const char*, std::string*> fields[] = {
      {"model", &rec.model},   {"backend", &rec.backend}, {"recipe", &rec.recipe},
      {"half", &rec.half},     {"reason", &rec.reason},   {"recorded", &rec.recorded}};
  for (const auto& [key, v] : r.items()) {
    bool known = key == "cases";
    for (const auto& f : fields) known = known || key == f.first;
    if (!known) problems.push_back(at + "." + key + ": unknown field");
  }
  bool ok = true;
  for (const auto& [name, slot] : fields) {
    if (!r.contains(name)) {
      problems.push_back(at + "." + name + ": missing");
      ok = false;
    } else if (!r[name].is_string() || r[name].get<std::string>().empty()) {
      problems.push_back(at + "." + name + ": must be a non-empty string, got " +
                         r[name].dump());
      ok = false;
    } else {
      *slot = r[name].get<std::string>();
    }
  }
  if (r.contains("cases")) {
    const auto& cs = r["cases"];
    bool cases_ok = cs.is_array() && !cs.empty();
    if (cases_ok)
      for (const auto& c : cs) {
        cases_ok = cases_ok && c.is_string() && !c.get<std::string>().empty();
        if (cases_ok) rec.cases.push_back(c.get<std::string>());
      }
    if (!cases_ok) {
      problems.push_back(at + ".cases: must be a non-empty list of case ids, got " +
                         cs.dump());
      ok = false;
    }
  }
  if (!ok) return std::nullopt;
  if (!rec.cases.empty() && rec.half != "runtime") {
    problems.push_back(at + ".cases: only a runtime record names cases (half is \"" +
                       rec.half + "\")");
    return std::nullopt;
  }
  if (rec.half != "export" && rec.half != "runtime") {
    problems.push_back(at + ".half: must be \"export\" or \"runtime\", got \"" + rec.half +
                       "\"");
    return std::nullopt;
  }
  if (!valid_date(rec.recorded)) {
    problems.push_back(at + ".recorded: must be a date YYYY-MM-DD, got \"" + rec.recorded +
                       "\"");
    return std::nullopt;
  }
  return rec;
}

// The schema's problems first, then those of `problems` at a field the schema did not name (a
// problem there is the same one, said once); none of `problems` when the schema rejects the
// document as a whole.
std::vector<std::string> with_schema_first(const std::vector<schema::SchemaProblem>& structure,
                                           const std::vector<std::string>& problems) {
  std::vector<std::string> all = schema::problem_lines(structure);
  const bool whole = structure.front().pointer.empty();  // not even an object: nothing else to say
  for (const std::string& p : problems) {
    const std::string field = p.substr(0, p.find(": "));
    if (!whole && std::none_of(structure.begin(), structure.end(),
                               [&](const schema::SchemaProblem& s) { return s.field() == field; }))
      all.push_back(p);
  }
  return all;
}

// The records of a parsed xfail file; every problem named at once.
std::vector<XfailRecord> read_records(const nlohmann::json& doc, const std::filesystem::path& file) {
  // The structure: schema/xfail.schema.json (the export half validates against it too); what
  // follows also checks what a schema cannot state (a record repeated, a date off the calendar,
  // cases on an export record). Every problem of both at once, the schema's first; a problem
  // below at a field the schema already named is the same one, said once.
  const std::vector<schema::SchemaProblem> structure = schema::validate(doc, schema::Document::kXfail);
  std::vector<std::string> problems;
  std::vector<XfailRecord> records;
  if (const nlohmann::json* list = top_level(doc, problems)) {
    for (size_t i = 0; i < list->size(); ++i) {
      const std::string at = "records[" + std::to_string(i) + "]";
      std::optional<XfailRecord> rec = read_record((*list)[i], at, problems);
      if (!rec) continue;
      for (size_t j = 0; j < records.size(); ++j)
        if (records[j].model == rec->model && records[j].backend == rec->backend &&
            records[j].recipe == rec->recipe && records[j].half == rec->half)
          problems.push_back(at + ": the same model/backend/recipe/half as an earlier record (" +
                             record_label(*rec) + "); keep one");
      records.push_back(std::move(*rec));
    }
  }
  if (!structure.empty()) problems = with_schema_first(structure, problems);
  if (!problems.empty())
    throw Error(ErrorKind::kXfailInvalid, file.string() + ": " + join(problems, "; "), kRemedy);
  return records;
}

}  // namespace

std::vector<XfailRecord> read_xfail(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in)
    throw Error(ErrorKind::kIo, "cannot read " + file.string(),
                "check the file's permissions, or remove it if no failure is expected");
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  if (in.bad())
    throw Error(ErrorKind::kIo, "error reading " + file.string(),
                "check the file and the file system, or remove it if no failure is expected");
  const detail::JsonSource source{ErrorKind::kXfailInvalid, file.string(), kRemedy};
  const nlohmann::json doc = detail::parse_json(text, source);
  return detail::reading_json(source, [&] { return read_records(doc, file); });
}

}  // namespace etproof
