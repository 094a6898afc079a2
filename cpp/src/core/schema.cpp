// etproof/schema.cpp — documents validated against the embedded schema files (etproof/core/schema.h).
//
// valijson decides; this file turns its errors into problems worded as the export half words them
// (python/etproof/schema.py, problem_message): valijson says which keyword failed and where, and
// the keyword's value (the allowed values of an enum, a minimum) is read from the schema node at
// that place, found by walking the schema along the instance's path. valijson also reports, for
// each failure, every enclosing property, item and condition that failed because of it; those
// are dropped, as jsonschema never reports them.
#include "etproof/core/schema.h"

#include <algorithm>
#include <array>
#include <locale>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <regex>

#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validation_results.hpp>
#include <valijson/validator.hpp>

#include "etproof/schema_data.h"  // generated: the schema files' text
#include "core/json_reader.h"  // type_name: a JSON value's kind in words, as the readers say it

namespace etproof::schema {
namespace {

using nlohmann::json;

struct Entry {
  Document doc;
  std::string_view name;
  const char* text;
};

constexpr std::array<Entry, 6> kEntries{{
    {Document::kManifest, "manifest", build::kSchemaManifest},
    {Document::kExportReport, "export-report", build::kSchemaExportReport},
    {Document::kXfail, "xfail", build::kSchemaXfail},
    {Document::kBackends, "backends", build::kSchemaBackends},
    {Document::kLedgerRecord, "ledger-record", build::kSchemaLedgerRecord},
    {Document::kBounds, "bounds", build::kSchemaBounds},
}};

const Entry& entry(Document d) {
  for (const Entry& e : kEntries)
    if (e.doc == d) return e;
  return kEntries[0];
}

// One schema, parsed once: its JSON (for the keywords' values) and valijson's form of it.
struct Compiled {
  json doc;
  valijson::Schema schema;
};

const Compiled& compiled(Document d) {
  static std::map<Document, std::unique_ptr<Compiled>> cache;
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  auto& slot = cache[d];
  if (!slot) {
    slot = std::make_unique<Compiled>();
    slot->doc = json::parse(entry(d).text);
    valijson::SchemaParser parser(valijson::SchemaParser::kDraft7);
    valijson::adapters::NlohmannJsonAdapter adapter(slot->doc);
    parser.populateSchema(adapter, slot->schema);
  }
  return *slot;
}

std::string escape_token(const std::string& t) {
  std::string out;
  for (char c : t) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
  }
  return out;
}

// A value in a message, as the export half renders it: a string in single quotes, anything else
// as compact JSON.
std::string render(const json& v) { return v.is_string() ? "'" + v.get<std::string>() + "'" : v.dump(); }

std::string type_words(const std::string& t) {
  static const std::map<std::string, std::string> names = {
      {"integer", "an integer"}, {"number", "a number"}, {"string", "a string"}, {"object", "an object"},
      {"array", "an array"},     {"boolean", "a boolean"}, {"null", "null"}};
  auto it = names.find(t);
  return it == names.end() ? t : it->second;
}

// Whether `inst` satisfies a condition of the form these schemas use in "if": required members,
// and members equal to a const or one of an enum. Another form: nullopt (both branches apply).
std::optional<bool> condition_holds(const json& cond, const json& inst) {
  for (const auto& [k, v] : cond.items())
    if (k != "properties" && k != "required") return std::nullopt;
  if (!inst.is_object()) return true;  // "properties" and "required" hold for a non-object
  if (auto r = cond.find("required"); r != cond.end())
    for (const json& k : *r)
      if (!k.is_string() || !inst.contains(k.get<std::string>())) return false;
  if (auto ps = cond.find("properties"); ps != cond.end())
    for (const auto& [k, s] : ps->items()) {
      if (!inst.contains(k)) continue;
      for (const auto& [kw, v] : s.items()) {
        if (kw == "const") {
          if (inst.at(k) != v || inst.at(k).is_boolean() != v.is_boolean()) return false;
        } else if (kw == "enum") {
          bool any = false;
          for (const json& e : v) any = any || (inst.at(k) == e && inst.at(k).is_boolean() == e.is_boolean());
          if (!any) return false;
        } else {
          return std::nullopt;
        }
      }
    }
  return true;
}

// The schema nodes that apply to `inst` at one place: a node, and what its $ref, allOf/anyOf/
// oneOf and the branch of its condition that holds lead to (both, where it cannot tell).
void expand(const json& root, const json& node, const json& inst, std::vector<const json*>& out, int depth = 0) {
  if (!node.is_object() || depth > 32) return;
  out.push_back(&node);
  if (auto r = node.find("$ref"); r != node.end() && r->is_string()) {
    const std::string ref = r->get<std::string>();
    if (ref.rfind("#", 0) == 0) {
      try {
        expand(root, root.at(json::json_pointer(ref.substr(1))), inst, out, depth + 1);
      } catch (const json::exception&) {
      }
    }
  }
  for (const char* k : {"allOf", "anyOf", "oneOf"})
    if (auto a = node.find(k); a != node.end() && a->is_array())
      for (const json& s : *a) expand(root, s, inst, out, depth + 1);
  if (auto cond = node.find("if"); cond != node.end()) {
    const std::optional<bool> holds = condition_holds(*cond, inst);
    if (auto s = node.find("then"); s != node.end() && holds.value_or(true)) expand(root, *s, inst, out, depth + 1);
    if (auto s = node.find("else"); s != node.end() && !holds.value_or(false)) expand(root, *s, inst, out, depth + 1);
  }
}

// The schema nodes for the value at `tokens` of `doc`.
std::vector<const json*> nodes_at(const json& root, const json& doc, const std::vector<std::string>& tokens) {
  static const json kNull;
  std::vector<const json*> cur;
  expand(root, root, doc, cur);
  const json* inst = &doc;
  for (const std::string& tok : tokens) {
    const json* child = &kNull;
    if (inst->is_object() && inst->contains(tok)) {
      child = &inst->at(tok);
    } else if (inst->is_array() && !tok.empty() && std::all_of(tok.begin(), tok.end(), ::isdigit) &&
               std::stoul(tok) < inst->size()) {
      child = &inst->at(std::stoul(tok));
    }
    std::vector<const json*> next;
    for (const json* n : cur) {
      if (inst->is_object()) {
        if (auto p = n->find("properties"); p != n->end() && p->is_object() && p->contains(tok)) {
          expand(root, p->at(tok), *child, next);
          continue;
        }
        bool matched = false;
        if (auto pp = n->find("patternProperties"); pp != n->end() && pp->is_object())
          for (const auto& [pattern, s] : pp->items())
            if (std::regex_search(tok, std::regex(pattern))) {
              matched = true;
              expand(root, s, *child, next);
            }
        if (auto ap = n->find("additionalProperties"); !matched && ap != n->end() && ap->is_object())
          expand(root, *ap, *child, next);
      } else if (inst->is_array()) {
        if (auto it = n->find("items"); it != n->end() && it->is_object()) expand(root, *it, *child, next);
      }
    }
    inst = child;
    cur = std::move(next);
  }
  return cur;
}

// The first value of `keyword` among the nodes (null when none has it), and its node.
std::pair<const json*, const json*> keyword(const std::vector<const json*>& nodes, const char* kw) {
  for (const json* n : nodes)
    if (auto it = n->find(kw); it != n->end()) return {&*it, n};
  return {nullptr, nullptr};
}

bool starts_with(const std::string& s, std::string_view p) { return s.rfind(p, 0) == 0; }

// The name valijson quotes after `marker` ("... property 'NAME'."), up to its last quote.
std::string quoted_name(const std::string& text, std::string_view marker) {
  const size_t open = text.find(marker);
  const size_t close = text.rfind('\'');
  if (open == std::string::npos || close == std::string::npos || close < open + marker.size()) return "";
  return text.substr(open + marker.size(), close - open - marker.size());
}

// The enclosing failures valijson adds for each real one (jsonschema never reports them).
bool is_enclosing_failure(const std::string& d) {
  return starts_with(d, "Failed to validate item #") || starts_with(d, "Cannot validate item #") ||
         starts_with(d, "Failed to validate against schema associated with property name") ||
         starts_with(d, "Failed to validate against schema associated with pattern") ||
         starts_with(d, "Failed to validate against additional properties schema") ||
         starts_with(d, "Failed to validate against a conditional schema") ||
         starts_with(d, "Failed to validate against child schema") ||
         starts_with(d, "Target value and comparison value are not equal");
}

// Where a valijson error is: the instance's JSON pointer, the value there (null when it does not
// exist) and the schema nodes that apply to it.
struct Place {
  std::string at;                  // JSON pointer, "" for the document
  const json* inst = nullptr;      // never null
  std::vector<const json*> nodes;  // nodes_at
  // The first value of keyword `kw` among the nodes; null when none has it.
  const json* value_of(const char* kw) const { return keyword(nodes, kw).first; }
};

Place place_of(const valijson::ValidationResults::Error& e, const json& schema_doc, const json& doc) {
  std::vector<std::string> tokens;
  for (size_t i = 1; i < e.context.size(); ++i) {
    const std::string& t = e.context[i];
    tokens.push_back(t.size() >= 2 && t.front() == '[' && t.back() == ']' ? t.substr(1, t.size() - 2) : t);
  }
  Place p;
  for (const std::string& t : tokens) p.at += "/" + escape_token(t);
  json::json_pointer ptr;
  for (const std::string& t : tokens) ptr /= t;
  static const json kNull;
  p.inst = &kNull;
  try {
    p.inst = &doc.at(ptr);
  } catch (const json::exception&) {
  }
  p.nodes = nodes_at(schema_doc, doc, tokens);
  return p;
}

// valijson names the first key a closed node does not define only: every such key of the object
// at `p`, for each closed node (a key matching none of its patternProperties is "not a valid name").
void unknown_fields(const Place& p, Document which, std::vector<SchemaProblem>& out) {
  if (!p.inst->is_object()) return;
  for (const json* n : p.nodes) {
    auto ap = n->find("additionalProperties");
    if (ap == n->end() || !ap->is_boolean() || ap->get<bool>()) continue;
    const json* props = n->contains("properties") ? &n->at("properties") : nullptr;
    const json* pps = n->contains("patternProperties") ? &n->at("patternProperties") : nullptr;
    for (const auto& [key, v] : p.inst->items()) {
      if (props && props->contains(key)) continue;
      bool matched = false;
      std::string patterns;
      if (pps)
        for (const auto& [pattern, s] : pps->items()) {
          matched = matched || std::regex_search(key, std::regex(pattern));
          patterns += (patterns.empty() ? "" : ", ") + pattern;
        }
      if (matched) continue;
      out.push_back({p.at + "/" + escape_token(key), patterns.empty()
                                                         ? "is not a field of " + file_of(which)
                                                         : "'" + key + "' is not a valid name (" + patterns + ")"});
    }
  }
}

// The message for a failed keyword (type, enum, const, pattern, the bounds on numbers, items,
// lengths and fields, not) at `p`, worded as the export half words it, the keyword's value read
// from the schema; valijson's own description for another; nullopt when it is no problem.
std::optional<std::string> keyword_problem(const std::string& d, const Place& p) {
  const json& inst = *p.inst;
  if (starts_with(d, "Value type not permitted by 'type' constraint")) {
    std::string want;
    if (const json* t = p.value_of("type")) {
      const json types = t->is_array() ? *t : json::array({*t});
      for (size_t i = 0; i < types.size(); ++i)
        want += (i ? " or " : "") + type_words(types[i].is_string() ? types[i].get<std::string>() : types[i].dump());
    }
    return "expected " + want + ", found " + detail::type_name(inst);
  }
  if (starts_with(d, "Failed to match against any enum values")) {
    std::string known;
    if (const json* en = p.value_of("enum"); en && en->is_array())
      for (size_t i = 0; i < en->size(); ++i) known += (i ? ", " : "") + render((*en)[i]);
    return "unknown value " + render(inst) + " (known: " + known + ")";
  }
  if (starts_with(d, "Failed to match expected value set by 'const'")) {
    const json* v = p.value_of("const");
    return "must be " + (v ? render(*v) : std::string("?")) + ", found " + render(inst);
  }
  if (starts_with(d, "Failed to match regex specified by 'pattern'")) {
    const json* v = p.value_of("pattern");
    return render(inst) + " does not match " + (v && v->is_string() ? v->get<std::string>() : "");
  }
  if (inst.is_number_unsigned() && inst.get<uint64_t>() > uint64_t(INT64_MAX) &&
      starts_with(d, "Expected number greater than"))
    return std::nullopt;  // valijson reads an integer above INT64_MAX as negative; it is no smaller than any minimum
  if (starts_with(d, "Expected number greater than or equal to")) {
    const json* v = p.value_of("minimum");
    return render(inst) + " is below the minimum " + (v ? render(*v) : "");
  }
  if (starts_with(d, "Expected number greater than")) {
    const json* v = p.value_of("exclusiveMinimum");
    return render(inst) + " must be greater than " + (v ? render(*v) : "");
  }
  if (starts_with(d, "Expected number less than or equal to")) {
    const json* v = p.value_of("maximum");
    return render(inst) + " is above the maximum " + (v ? render(*v) : "");
  }
  if (starts_with(d, "Expected number less than")) {
    const json* v = p.value_of("exclusiveMaximum");
    return render(inst) + " must be less than " + (v ? render(*v) : "");
  }
  if (starts_with(d, "Array should contain no fewer than")) {
    const json* v = p.value_of("minItems");
    const std::string m = v ? v->dump() : "?";
    return m == "1" ? "empty (at least one item)"
                    : "has " + std::to_string(inst.size()) + " items, expected at least " + m;
  }
  if (starts_with(d, "Array should contain no more than")) {
    const json* v = p.value_of("maxItems");
    return "has " + std::to_string(inst.size()) + " items, expected at most " + (v ? v->dump() : "?");
  }
  if (starts_with(d, "String should be no fewer than")) {
    const json* v = p.value_of("minLength");
    const std::string m = v ? v->dump() : "?";
    return m == "1" ? "empty string" : "is shorter than " + m + " characters";
  }
  if (starts_with(d, "Object should have no fewer than")) {
    const json* v = p.value_of("minProperties");
    return "has " + std::to_string(inst.size()) + " fields, expected at least " + (v ? v->dump() : "?");
  }
  if (starts_with(d, "Target should not validate against schema specified in 'not'")) {
    // The reason is the description of the schema `not` refuses.
    const json* why = nullptr;
    if (const json* no = p.value_of("not"); no && no->is_object())
      if (auto it = no->find("description"); it != no->end() && it->is_string()) why = &*it;
    return "is not allowed here" + (why ? " (" + why->get<std::string>() + ")" : std::string());
  }
  return d;
}

}  // namespace

std::string_view name(Document d) { return entry(d).name; }

std::optional<Document> document_named(std::string_view n) {
  for (const Entry& e : kEntries)
    if (e.name == n) return e.doc;
  return std::nullopt;
}

std::string file_of(Document d) { return "schema/" + std::string(name(d)) + ".schema.json"; }

const char* schema_text(Document d) { return entry(d).text; }

std::string field_path(std::string_view pointer) {
  std::string out;
  size_t pos = 0;
  while (pos < pointer.size() && pointer[pos] == '/') {
    const size_t next = pointer.find('/', pos + 1);
    std::string tok(pointer.substr(pos + 1, next == std::string_view::npos ? std::string_view::npos : next - pos - 1));
    std::string t;
    for (size_t i = 0; i < tok.size(); ++i) {
      if (tok[i] == '~' && i + 1 < tok.size() && (tok[i + 1] == '0' || tok[i + 1] == '1')) {
        t += tok[i + 1] == '0' ? '~' : '/';
        ++i;
      } else {
        t += tok[i];
      }
    }
    const bool index = !t.empty() && std::all_of(t.begin(), t.end(), ::isdigit);
    out += index ? "[" + t + "]" : (out.empty() ? t : "." + t);
    if (next == std::string_view::npos) break;
    pos = next;
  }
  return out;
}

std::string SchemaProblem::field() const { return field_path(pointer); }

std::vector<std::string> problem_lines(const std::vector<SchemaProblem>& problems) {
  std::vector<std::string> out;
  for (const SchemaProblem& p : problems) {
    const std::string f = p.field();
    out.push_back((f.empty() ? std::string("(document)") : f) + ": " + p.message);
  }
  return out;
}

namespace {

// valijson compiles each "pattern" into a std::regex at validation time, and libstdc++'s regex
// scanner reads the global locale's ctype<char>::narrow, whose per-character cache is filled
// lazily by the first call for that character: concurrent validations (matrix --jobs) race on
// that cache (ThreadSanitizer, scripts/tsan.sh). Filling the whole table once, before any
// validation, leaves only reads (ctype<char>::narrow over a range fills it: _M_narrow_init).
void fill_narrow_cache_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    std::array<char, 256> from{}, to{};
    for (size_t i = 0; i < from.size(); ++i) from[i] = static_cast<char>(i);
    std::use_facet<std::ctype<char>>(std::locale()).narrow(from.data(), from.data() + from.size(), '\0', to.data());
  });
}

}  // namespace

std::vector<SchemaProblem> validate(const json& doc, Document which) {
  fill_narrow_cache_once();
  const Compiled& c = compiled(which);
  valijson::Validator validator(valijson::Validator::kStrongTypes);
  valijson::ValidationResults results;
  valijson::adapters::NlohmannJsonAdapter target(doc);
  if (validator.validate(c.schema, target, &results)) return {};

  std::vector<SchemaProblem> out;
  valijson::ValidationResults::Error e;
  while (results.popError(e)) {
    const std::string& d = e.description;
    if (is_enclosing_failure(d)) continue;
    const Place p = place_of(e, c.doc, doc);
    if (starts_with(d, "Missing required property '"))
      out.push_back({p.at + "/" + escape_token(quoted_name(d, "property '")), "missing"});
    else if (starts_with(d, "Object contains a property that could not be validated"))
      unknown_fields(p, which, out);
    else if (std::optional<std::string> message = keyword_problem(d, p))
      out.push_back({p.at, *message});
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace etproof::schema
