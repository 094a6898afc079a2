// etproof/manifest.cpp — reader of the bundle manifest, schema_version 1 and 2 (docs/manifest.md).
//
// The document is first validated against schema/manifest.schema.json (etproof/core/schema.h: the
// file the export half validates against too), then read field by field with the checks a schema
// cannot state; every problem found is reported at once, each with its field path
// ("inputs[0].dtype: …"). Keys the schema does not define are refused (docs/manifest.md).
#include "etproof/core/manifest.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <system_error>

#include "etproof/core/error.h"
#include "etproof/core/schema.h"
#include "core/common.h"
#include "core/json_parse.h"
#include "core/json_reader.h"

namespace etproof {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* kRemedy =
    "re-export the bundle with etproof's export half (python -m etproof export); the manifest "
    "must follow docs/manifest.md, schema_version 1 (2 for a program with several methods)";

using detail::file_name_problem;
using detail::is_hex64;
using detail::is_safe_name;
using detail::is_utc_timestamp;
using detail::squote;
using detail::type_name;

// The manifest schema (docs/manifest.md) over the generic field reader.
class Reader : public detail::JsonReader {
 public:
  // outputs[i].quantization: {"scale": float > 0, "zero_point": int, "dtype": "int8"|"uint8"}.
  std::optional<OutputQuantization> output_quantization(const json& e, const std::string& path) {
    const json* q = object_at(e, path, "quantization", /*required=*/false);
    if (!q) return std::nullopt;
    const std::string qp = at(path, "quantization");
    for (const auto& [k, v] : q->items())
      if (k != "scale" && k != "zero_point" && k != "dtype")
        problem(at(qp, k), "is not defined by schema_version 1");
    OutputQuantization out;
    bool ok = true;
    if (const json* s = member(*q, qp, "scale", true)) {
      auto v = number_value(*s, at(qp, "scale"));
      if (v && !(*v > 0 && std::isfinite(*v))) {
        problem(at(qp, "scale"), "must be a positive finite number");
        v.reset();
      }
      ok = ok && v.has_value();
      if (v) out.scale = *v;
    } else {
      ok = false;
    }
    const json* zp = member(*q, qp, "zero_point", true);
    auto z = zp ? int_value(*zp, at(qp, "zero_point"), INT64_MIN) : std::nullopt;
    ok = ok && z.has_value();
    if (z) out.zero_point = *z;
    auto d = string_at(*q, qp, "dtype");
    if (d && *d != "int8" && *d != "uint8") {
      problem(at(qp, "dtype"), "unknown dtype " + squote(*d) + " (known: int8, uint8)");
      d.reset();
    }
    ok = ok && d.has_value();
    if (d) out.dtype = *d;
    if (!ok) return std::nullopt;
    return out;
  }

  // outputs[i].slice_axis (int >= 0 below the rank, or null: -1) and outputs[i].integer_atol
  // (number >= 0, integer and bool outputs only).
  void output_options(const json& e, const std::string& path, TensorSpec& t) {
    if (auto it = e.find("slice_axis"); it != e.end()) {
      const std::string sp = at(path, "slice_axis");
      if (it->is_null()) {
        t.slice_axis = -1;
      } else if (auto v = int_value(*it, sp, 0)) {
        if (*v >= int64_t(t.shape.size()))
          problem(sp, std::to_string(*v) + " is not an axis of this output (rank " + std::to_string(t.shape.size()) +
                          "); give an axis below the rank, or null for none");
        else
          t.slice_axis = *v;
      }
    }
    if (auto it = e.find("integer_atol"); it != e.end()) {
      const std::string ap = at(path, "integer_atol");
      auto v = number_value(*it, ap);
      const bool integer = t.dtype != DType::kFloat32 && t.dtype != DType::kFloat16 && t.dtype != DType::kFloat64;
      if (v && !(*v >= 0 && std::isfinite(*v)))
        problem(ap, "must be a finite number >= 0");
      else if (v && !integer)
        problem(ap, "is only defined for integer and bool outputs; '" + t.name + "' is " +
                        std::string(to_string(t.dtype)));
      else if (v)
        t.integer_atol = *v;
    }
  }

  // quantization: {"scheme": str, "quantizer": str, "skipped": [{"module": str, "reason": str}]}.
  std::optional<RecipeQuantization> recipe_quantization(const json& doc) {
    const json* q = object_at(doc, "", "quantization", /*required=*/false);
    if (!q) return std::nullopt;
    RecipeQuantization out;
    out.scheme = string_at(*q, "quantization", "scheme").value_or("");
    out.quantizer = string_at(*q, "quantization", "quantizer").value_or("");
    if (const json* sk = array_at(*q, "quantization", "skipped", /*required=*/false)) {
      for (size_t i = 0; i < sk->size(); ++i) {
        const std::string path = at("quantization.skipped", i);
        if (!expect_type((*sk)[i], path, (*sk)[i].is_object(), "an object")) continue;
        SkippedModule m;
        m.module = string_at((*sk)[i], path, "module").value_or("");
        m.reason = string_at((*sk)[i], path, "reason").value_or("");
        out.skipped.push_back(std::move(m));
      }
    }
    return out;
  }

  // references[NAME].program_at_export: {"cases": int ≥ 1, "outputs": int ≥ 1, "max_steps"?:
  // number ≥ 0 | null, "max_range_error"?: number ≥ 0 | null, "matched": bool, "machine": str}.
  std::optional<ProgramAtExport> program_at_export(const json& ref, const std::string& ref_path) {
    const json* p = object_at(ref, ref_path, "program_at_export", /*required=*/true);
    if (!p) return std::nullopt;
    const std::string path = at(ref_path, "program_at_export");
    ProgramAtExport out;
    bool ok = true;
    for (const char* key : {"cases", "outputs"}) {
      const json* n = member(*p, path, key, true);
      if (!n || !expect_type(*n, at(path, key), n->is_number_unsigned() && n->get<uint64_t>() >= 1,
                             "an integer ≥ 1")) {
        ok = false;
        continue;
      }
      (std::string(key) == "cases" ? out.cases : out.outputs) = n->get<size_t>();
    }
    for (const char* key : {"max_steps", "max_range_error"}) {
      if (!p->contains(key)) continue;
      const json& x = p->at(key);
      if (x.is_null()) {
        (std::string(key) == "max_steps" ? out.max_steps : out.max_range_error) =
            std::numeric_limits<double>::infinity();
      } else if (expect_type(x, at(path, key), x.is_number() && x.get<double>() >= 0,
                             "a number ≥ 0 or null")) {
        (std::string(key) == "max_steps" ? out.max_steps : out.max_range_error) = x.get<double>();
      } else {
        ok = false;
      }
    }
    const json* matched = member(*p, path, "matched", true);
    if (!matched || !expect_type(*matched, at(path, "matched"), matched->is_boolean(),
                                 "true or false"))
      ok = false;
    else
      out.matched = matched->get<bool>();
    out.machine = string_at(*p, path, "machine").value_or("");
    for (const auto& [key, v] : p->items())
      if (key != "cases" && key != "outputs" && key != "max_steps" && key != "max_range_error" &&
          key != "matched" && key != "machine")
        problem(at(path, key), "is not defined by schema_version 1");
    if (!ok) return std::nullopt;
    return out;
  }

  // references: {NAME: {"captured": true, "description": str, "emulates"?: "pt2e" |
  // "xnnpack-qd8", "program_at_export"?: {…}} | {"captured": false, "reason": str}}.
  std::map<std::string, ReferenceInfo> references(const json& doc) {
    std::map<std::string, ReferenceInfo> out;
    const json* r = object_at(doc, "", "references", /*required=*/false);
    if (!r) return out;
    for (const auto& [name, e] : r->items()) {
      const std::string path = at("references", name);
      if (!is_safe_name(name)) {
        problem(path, squote(name) + " is not a reference name ([A-Za-z0-9._-]+)");
        continue;
      }
      if (!expect_type(e, path, e.is_object(), "an object")) continue;
      const json* c = member(e, path, "captured", true);
      if (!c || !expect_type(*c, at(path, "captured"), c->is_boolean(), "true or false")) continue;
      ReferenceInfo info;
      info.captured = c->get<bool>();
      const char* needed = info.captured ? "description" : "reason";
      const char* other = info.captured ? "reason" : "description";
      if (e.contains(other))
        problem(at(path, other), std::string("is only defined for a reference ") +
                                     (info.captured ? "not captured" : "captured"));
      (info.captured ? info.description : info.reason) = string_at(e, path, needed).value_or("");
      if (e.contains("emulates")) {
        if (!info.captured)
          problem(at(path, "emulates"), "is only defined for a reference captured");
        else if (auto v = string_at(e, path, "emulates"); v && *v != "pt2e" && *v != "xnnpack-qd8")
          problem(at(path, "emulates"), "must be \"pt2e\" or \"xnnpack-qd8\", got " + squote(*v));
        else if (v)
          info.emulates = *v;
      }
      if (e.contains("program_at_export")) {
        if (!info.captured)
          problem(at(path, "program_at_export"), "is only defined for a reference captured");
        else
          info.program_at_export = program_at_export(e, path);
      }
      out.emplace(name, std::move(info));
    }
    return out;
  }

  // operators (optional): ["NAMESPACE::NAME.OVERLOAD", ...] as ExecuTorch's kernel registry names
  // them, sorted and distinct; [] for a program that calls none outside its delegates.
  std::optional<std::vector<std::string>> operators(const json& doc) {
    const json* a = array_at(doc, "", "operators", /*required=*/false);
    if (!a) return std::nullopt;
    std::vector<std::string> ops;
    for (size_t i = 0; i < a->size(); ++i) {
      const json& e = (*a)[i];
      const std::string path = at("operators", i);
      if (!expect_type(e, path, e.is_string(), "a string")) continue;
      auto s = e.get<std::string>();
      const size_t sep = s.find("::");
      if (sep == std::string::npos || sep == 0 || sep + 2 == s.size() ||
          s.find_first_of(" \t\n\r\f\v") != std::string::npos || s.find(':') < sep)
        problem(path, squote(s) + " is not an operator name NAMESPACE::NAME[.OVERLOAD] (e.g. aten::add.out)");
      if (!ops.empty() && !(ops.back() < s))
        problem(path, squote(s) + " is out of order or repeated (operators are distinct and sorted)");
      ops.push_back(std::move(s));
    }
    return ops;
  }

  // budget: {"min_sqnr_db"?: number, "min_cosine"?: number in [-1, 1], "top1_agreement"?: [0, 1]}.
  std::optional<Budget> budget(const json& doc) {
    const json* b = object_at(doc, "", "budget", /*required=*/false);
    if (!b) return std::nullopt;
    Budget out;
    for (const auto& [k, v] : b->items())
      if (k != "min_sqnr_db" && k != "min_cosine" && k != "top1_agreement")
        problem(at("budget", k), "is not defined by schema_version 1 (known: min_sqnr_db, min_cosine, top1_agreement)");
    auto bounded = [&](const char* key, double lo, double hi, const char* range) -> std::optional<double> {
      const json* j = member(*b, "budget", key, false);
      if (!j) return std::nullopt;
      auto v = number_value(*j, at("budget", key));
      if (v && !(std::isfinite(*v) && *v >= lo && *v <= hi)) {
        problem(at("budget", key), std::string("must be a finite number") + (*range ? std::string(" in ") + range : ""));
        return std::nullopt;
      }
      return v;
    };
    out.min_sqnr_db = bounded("min_sqnr_db", -INFINITY, INFINITY, "");
    out.min_cosine = bounded("min_cosine", -1, 1, "[-1, 1]");
    out.top1_agreement = bounded("top1_agreement", 0, 1, "[0, 1]");
    if (b->empty()) problem("budget", "sets no bound; give at least one of min_sqnr_db, min_cosine, top1_agreement");
    return out;
  }

  // goldens[i].references: {NAME: {OUTPUT: file_ref}}, for exactly the captured references.
  std::map<std::string, std::map<std::string, FileRef>> golden_references(
      const json& g, const std::string& path, const std::map<std::string, ReferenceInfo>& refs,
      const std::vector<TensorSpec>& outputs) {
    std::map<std::string, std::map<std::string, FileRef>> out;
    const std::string rpath = at(path, "references");
    const json* r = object_at(g, path, "references", /*required=*/false);
    if (r) {
      for (const auto& [name, files] : r->items()) {
        const std::string npath = at(rpath, name);
        auto it = refs.find(name);
        if (it == refs.end() || !it->second.captured) {
          problem(npath, "names no reference the manifest's references record as captured");
          continue;
        }
        if (!expect_type(files, npath, files.is_object(), "an object")) continue;
        auto& per_output = out[name];
        for (const auto& [output, ref] : files.items()) {
          const std::string opath = at(npath, output);
          if (std::none_of(outputs.begin(), outputs.end(), [&](const TensorSpec& t) { return t.name == output; })) {
            problem(opath, squote(output) + " is not one of the outputs");
            continue;
          }
          per_output[output] = file_ref(ref, opath);
        }
        for (const auto& t : outputs)
          if (!t.name.empty() && !files.contains(t.name)) problem(npath, "no file for output " + squote(t.name));
      }
    }
    for (const auto& [name, info] : refs)
      if (info.captured && !(r && r->contains(name)))
        problem(at(rpath, name), "missing (references records it as captured)");
    return out;
  }

  // inputs[i].dynamic_dims: [{"axis", "name", "min", "max"}], sorted by axis, each a -1 of the
  // shape, 0 <= min <= max.
  void dynamic_dims(const json& e, const std::string& path, TensorSpec& t) {
    const json* arr = array_at(e, path, "dynamic_dims", /*required=*/false);
    if (!arr) return;
    const std::string dp = at(path, "dynamic_dims");
    if (arr->empty()) problem(dp, "lists no dimension; omit it when none is dynamic");
    for (size_t k = 0; k < arr->size(); ++k) {
      const json& d = (*arr)[k];
      const std::string kp = at(dp, k);
      if (!expect_type(d, kp, d.is_object(), "an object")) continue;
      DynamicDim dim;
      auto axis = int_at(d, kp, "axis", true, 0);
      auto name = string_at(d, kp, "name");
      auto lo = int_at(d, kp, "min", true, 0);
      auto hi = int_at(d, kp, "max", true, 0);
      if (!axis || !name || !lo || !hi) continue;
      if (*axis >= int64_t(t.shape.size()) || t.shape[size_t(*axis)] != -1) {
        problem(at(kp, "axis"), std::to_string(*axis) + " is not a -1 (dynamic) entry of shape " +
                                    shape_to_string(t.shape));
        continue;
      }
      if (!t.dynamic_dims.empty() && *axis <= t.dynamic_dims.back().axis) {
        problem(at(kp, "axis"), "must be sorted and distinct");
        continue;
      }
      if (*hi < *lo) {
        problem(at(kp, "max"), std::to_string(*hi) + " is below min " + std::to_string(*lo));
        continue;
      }
      dim.axis = *axis;
      dim.name = *name;
      dim.min = *lo;
      dim.max = *hi;
      t.dynamic_dims.push_back(std::move(dim));
    }
  }

  // `key` ("inputs" or "outputs") of `obj`, whose field path is `parent` ("" at the top level,
  // "methods[1]" within a schema-2 method).
  std::vector<TensorSpec> tensor_specs(const json& obj, const std::string& parent, const char* key) {
    std::vector<TensorSpec> specs;
    const json* arr = array_at(obj, parent, key);
    if (!arr) return specs;
    std::set<std::string> seen;
    for (size_t i = 0; i < arr->size(); ++i) {
      const json& e = (*arr)[i];
      const std::string path = at(at(parent, key), i);
      if (!expect_type(e, path, e.is_object(), "an object")) continue;
      TensorSpec t;
      if (auto n = string_at(e, path, "name")) {
        t.name = *n;
        if (!seen.insert(*n).second) problem(at(path, "name"), "duplicate name " + squote(*n));
      }
      if (auto d = string_at(e, path, "dtype")) {
        if (auto dt = dtype_from_string(*d))
          t.dtype = *dt;
        else
          problem(at(path, "dtype"), "unknown dtype " + squote(*d) +
                                         " (known: float32, float16, float64, int8, uint8, int16, "
                                         "int32, int64, bool)");
      }
      if (const json* sh = array_at(e, path, "shape")) {
        for (size_t k = 0; k < sh->size(); ++k) {
          const std::string dpath = at(at(path, "shape"), k);
          auto v = int_value((*sh)[k], dpath, -1);
          if (v) t.shape.push_back(*v);
        }
      }
      if (auto l = string_at(e, path, "layout", /*required=*/false)) {
        if (*l != "nchw" && *l != "nhwc")
          problem(at(path, "layout"), "unknown layout " + squote(*l) + " (known: nchw, nhwc)");
        else if (t.shape.size() != 4)
          problem(at(path, "layout"), "layout is only recorded for rank-4 tensors, this one has rank " +
                                          std::to_string(t.shape.size()));
        else
          t.layout = *l;
      }
      if (std::string(key) == "outputs") {
        t.quantization = output_quantization(e, path);
        output_options(e, path, t);
        if (e.contains("dynamic_dims")) problem(at(path, "dynamic_dims"), "is only defined for inputs");
      } else {
        dynamic_dims(e, path, t);
        for (const char* k : {"quantization", "slice_axis", "integer_atol"})
          if (e.contains(k)) problem(at(path, k), "is only defined for outputs");
      }
      specs.push_back(std::move(t));
    }
    return specs;
  }

  std::optional<Delegation> delegation(const json& doc) {
    const json* d = object_at(doc, "", "delegation", /*required=*/false);
    if (!d) return std::nullopt;
    Delegation out;
    out.delegated_nodes = int_at(*d, "delegation", "delegated_nodes").value_or(0);
    out.non_delegated_nodes = int_at(*d, "delegation", "non_delegated_nodes").value_or(0);
    if (const json* ops = array_at(*d, "delegation", "by_operator")) {
      for (size_t i = 0; i < ops->size(); ++i) {
        const json& e = (*ops)[i];
        const std::string path = at("delegation.by_operator", i);
        if (!expect_type(e, path, e.is_object(), "an object")) continue;
        OperatorDelegation o;
        o.op = string_at(e, path, "op").value_or("");
        o.delegated = int_at(e, path, "delegated").value_or(0);
        o.non_delegated = int_at(e, path, "non_delegated").value_or(0);
        if (const auto r = e.find("reasons"); r != e.end()) {
          if (!r->is_array()) {
            problem(at(path, "reasons"), "must be an array of strings");
          } else {
            for (const json& reason : *r) {
              if (reason.is_string()) o.reasons.push_back(reason.get<std::string>());
              else problem(at(path, "reasons"), "must be an array of strings");
            }
          }
        }
        if (!out.by_operator.empty() && !o.op.empty() && !(out.by_operator.back().op < o.op))
          problem(at(path, "op"), squote(o.op) + " is out of order or repeated (by_operator is sorted by op)");
        out.by_operator.push_back(std::move(o));
      }
    }
    return out;
  }

  std::optional<ImagePreprocessing> preprocessing(const json& doc, const std::vector<TensorSpec>& inputs) {
    const char* P = "preprocessing";
    const json* p = object_at(doc, "", P, /*required=*/false);
    if (!p) return std::nullopt;
    auto kind = string_at(*p, P, "kind");
    if (!kind) return std::nullopt;
    if (*kind != "image") {
      problem(at(P, "kind"), "unknown kind " + squote(*kind) + " (known: image)");
      return std::nullopt;
    }
    ImagePreprocessing pp;
    if (auto in = string_at(*p, P, "input")) {
      pp.input = *in;
      if (std::none_of(inputs.begin(), inputs.end(), [&](const TensorSpec& t) { return t.name == *in; }))
        problem(at(P, "input"), squote(*in) + " is not one of the inputs");
    }
    if (auto c = string_at(*p, P, "color")) {
      pp.color = *c;
      if (*c != "rgb") problem(at(P, "color"), "unknown color order " + squote(*c) + " (known: rgb)");
    }
    if (auto r = int_at(*p, P, "resize_shorter", true, 1)) pp.resize_shorter = *r;
    if (auto i = string_at(*p, P, "interpolation")) {
      pp.interpolation = *i;
      if (*i != "bilinear")
        problem(at(P, "interpolation"), "unknown interpolation " + squote(*i) + " (known: bilinear)");
    }
    if (const json* crop = array_at(*p, P, "crop")) {
      if (crop->size() != 2) {
        problem(at(P, "crop"), "expected [h, w], found " + std::to_string(crop->size()) + " values");
      } else {
        pp.crop_h = int_value((*crop)[0], at(at(P, "crop"), 0), 1).value_or(0);
        pp.crop_w = int_value((*crop)[1], at(at(P, "crop"), 1), 1).value_or(0);
      }
    }
    auto triple = [&](const char* key, double* out, bool nonzero) {
      const json* a = array_at(*p, P, key);
      if (!a) return;
      if (a->size() != 3) {
        problem(at(P, key), "expected 3 numbers (one per channel), found " + std::to_string(a->size()));
        return;
      }
      for (size_t i = 0; i < 3; ++i) {
        if (auto v = number_value((*a)[i], at(at(P, key), i))) {
          if (nonzero && *v <= 0)
            problem(at(at(P, key), i), "must be positive");
          else
            out[i] = *v;
        }
      }
    };
    triple("mean", pp.mean, false);
    triple("std", pp.std, true);
    if (const json* vr = array_at(*p, P, "value_range")) {
      if (vr->size() != 2) {
        problem(at(P, "value_range"), "expected [min, max], found " + std::to_string(vr->size()) + " values");
      } else {
        auto lo = number_value((*vr)[0], at(at(P, "value_range"), 0));
        auto hi = number_value((*vr)[1], at(at(P, "value_range"), 1));
        if (lo && hi && !(*lo < *hi))
          problem(at(P, "value_range"), "min must be below max");
        else if (lo && hi) {
          pp.value_min = *lo;
          pp.value_max = *hi;
        }
      }
    }
    return pp;
  }

  std::optional<Labels> labels(const json& doc, const std::vector<TensorSpec>& outputs) {
    const char* L = "labels";
    const json* l = object_at(doc, "", L, /*required=*/false);
    if (!l) return std::nullopt;
    Labels out;
    if (auto o = string_at(*l, L, "output")) {
      out.output = *o;
      if (std::none_of(outputs.begin(), outputs.end(), [&](const TensorSpec& t) { return t.name == *o; }))
        problem(at(L, "output"), squote(*o) + " is not one of the outputs");
    }
    out.source = string_at(*l, L, "source").value_or("");
    if (const json* names = array_at(*l, L, "names")) {
      for (size_t i = 0; i < names->size(); ++i) {
        const json& n = (*names)[i];
        if (expect_type(n, at(at(L, "names"), i), n.is_string(), "a string"))
          out.names.push_back(n.get<std::string>());
      }
    }
    return out;
  }

  std::optional<Weights> weights(const json& doc) {
    const char* W = "weights";
    const json* w = object_at(doc, "", W, /*required=*/false);
    if (!w) return std::nullopt;
    Weights out;
    if (auto k = string_at(*w, W, "kind")) {
      out.kind = *k;
      if (*k != "pretrained" && *k != "seeded")
        problem(at(W, "kind"), "unknown value " + squote(*k) + " (known: pretrained, seeded)");
    }
    out.source = string_at(*w, W, "source").value_or("");
    return out;
  }

  std::map<std::string, std::string> golden_files(const json& g, const std::string& path, const char* key,
                                                   const std::vector<TensorSpec>& specs) {
    std::map<std::string, std::string> out;
    const json* m = object_at(g, path, key);
    if (!m) return out;
    const std::string mpath = at(path, key);
    for (const auto& [name, file] : m->items()) {
      const std::string fpath = at(mpath, name);
      if (std::none_of(specs.begin(), specs.end(), [&](const TensorSpec& t) { return t.name == name; }))
        problem(fpath, squote(name) + " is not one of the " + key);
      if (!expect_type(file, fpath, file.is_string(), "a string")) continue;
      const auto f = file.get<std::string>();
      if (auto p = file_name_problem(f)) {
        problem(fpath, *p);
        continue;
      }
      out[name] = f;
    }
    for (const auto& t : specs)
      if (!t.name.empty() && !out.count(t.name) && !m->contains(t.name))
        problem(mpath, "no file for " + std::string(key).substr(0, std::string(key).size() - 1) + " " +
                           squote(t.name));
    return out;
  }

  // goldens[i].files (optional within schema 1): a file_ref for exactly the files the case's inputs
  // and outputs name, each once.
  std::vector<FileRef> golden_hashes(const json& g, const std::string& path, const GoldenCase& c) {
    std::vector<FileRef> out;
    const json* arr = array_at(g, path, "files", /*required=*/false);
    if (!arr) return out;
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

  // `goldens` of `obj` (field path `parent`, as tensor_specs), the cases of `method`.
  std::vector<GoldenCase> goldens(const json& obj, const std::string& parent, const std::string& method,
                                  const std::vector<TensorSpec>& inputs,
                                  const std::vector<TensorSpec>& outputs,
                                  const std::map<std::string, ReferenceInfo>& refs) {
    std::vector<GoldenCase> out;
    const json* arr = array_at(obj, parent, "goldens");
    if (!arr) return out;
    std::set<std::string> ids;
    for (size_t i = 0; i < arr->size(); ++i) {
      const json& g = (*arr)[i];
      const std::string path = at(at(parent, "goldens"), i);
      if (!expect_type(g, path, g.is_object(), "an object")) continue;
      GoldenCase c;
      c.method = method;
      if (auto id = string_at(g, path, "id")) {
        c.id = *id;
        if (!ids.insert(*id).second) problem(at(path, "id"), "duplicate id " + squote(*id));
      }
      if (auto d = string_at(g, path, "data")) {
        c.data = *d;
        if (*d != "real" && *d != "synthetic")
          problem(at(path, "data"), "unknown value " + squote(*d) + " (known: real, synthetic)");
      }
      c.origin = string_at(g, path, "origin").value_or("");
      c.inputs = golden_files(g, path, "inputs", inputs);
      c.outputs = golden_files(g, path, "outputs", outputs);
      c.references = golden_references(g, path, refs, outputs);
      c.files = golden_hashes(g, path, c);
      out.push_back(std::move(c));
    }
    return out;
  }

  // Schema 2's methods: [{"name", "inputs", "outputs", "goldens"}], each as schema 1's top-level
  // fields, with its field path methods[i]. Needs m.references (the goldens' references).
  void methods(const json& doc, Manifest& m) {
    const json* arr = array_at(doc, "", "methods");
    if (!arr) return;
    if (arr->empty()) problem("methods", "empty; a program has at least one method");
    std::set<std::string> names;
    for (size_t i = 0; i < arr->size(); ++i) {
      const json& e = (*arr)[i];
      const std::string path = at("methods", i);
      if (!expect_type(e, path, e.is_object(), "an object")) continue;
      MethodSpec spec;
      if (auto n = string_at(e, path, "name")) {
        spec.name = *n;
        if (!is_method_name(*n))
          problem(at(path, "name"), squote(*n) + " is not a method name ([A-Za-z_][A-Za-z0-9_]*)");
        else if (!names.insert(*n).second)
          problem(at(path, "name"), "duplicate method name " + squote(*n));
      }
      spec.inputs = tensor_specs(e, path, "inputs");
      spec.outputs = tensor_specs(e, path, "outputs");
      if (e.contains("outputs") && e["outputs"].is_array() && e["outputs"].empty())
        problem(at(path, "outputs"), "empty; a method without outputs cannot be checked");
      for (GoldenCase& c : goldens(e, path, spec.name, spec.inputs, spec.outputs, m.references))
        m.goldens.push_back(std::move(c));
      m.methods.push_back(std::move(spec));
    }
  }

  static bool is_method_name(const std::string& s) {
    if (s.empty() || (s[0] >= '0' && s[0] <= '9')) return false;
    return std::all_of(s.begin(), s.end(), [](char c) {
      return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
    });
  }
};

// The manifest `doc` describes, without `raw` (its caller sets it: moved or copied).
Manifest read_fields(const json& doc, const std::string& origin) {
  auto fail = [&](const std::vector<std::string>& problems, const std::string& remedy) -> Error {
    return Error(ErrorKind::kManifestInvalid, origin + ": " + detail::join(problems, "; "), remedy);
  };
  if (!doc.is_object()) throw fail({std::string("expected a JSON object, found ") + type_name(doc)}, kRemedy);

  Reader r;
  Manifest m;

  // schema_version first: a document of another version may mean other things by the same keys.
  if (auto v = r.int_at(doc, "", "schema_version", true, INT64_MIN)) {
    if (*v < kSchemaVersion || *v > kMaxSchemaVersion) {
      const std::string versions = std::to_string(kSchemaVersion) + " to " + std::to_string(kMaxSchemaVersion);
      const std::string remedy =
          *v > kMaxSchemaVersion
              ? "this etproof reads schema_version " + versions +
                    "; upgrade etproof's runtime half to one that reads schema_version " + std::to_string(*v) +
                    ", or re-export the bundle with an etproof that writes version " + std::to_string(kSchemaVersion) +
                    " or " + std::to_string(kMaxSchemaVersion)
              : std::string(kRemedy);
      throw fail({"schema_version: " + std::to_string(*v) + " is not supported (this reader reads " + versions + ")"},
                 remedy);
    }
    m.schema_version = int(*v);
  }
  // The structure (types, required and unknown keys, values): schema/manifest.schema.json, the file
  // the export half validates against too; every problem at once. What follows reads the fields
  // and checks what a schema cannot state (sorted lists, names that refer to other fields).
  if (auto problems = schema::validate(doc, schema::Document::kManifest); !problems.empty())
    throw fail(schema::problem_lines(problems), kRemedy);
  // Without a readable version (a problem already recorded), read it as schema 1.
  const bool several = m.schema_version >= 2;

  if (auto n = r.string_at(doc, "", "name")) {
    if (is_safe_name(*n))
      m.name = *n;
    else
      r.problem("name", squote(*n) + " must match [A-Za-z0-9._-]+ and not be '.' or '..'");
  }
  m.model = r.string_at(doc, "", "model").value_or("");
  if (const json* e = r.object_at(doc, "", "engine")) {
    m.engine_name = r.string_at(*e, "engine", "name").value_or("");
    m.engine_version = r.string_at(*e, "engine", "version").value_or("");
    if (!m.engine_name.empty() && m.engine_name != "executorch")
      r.problem("engine.name", squote(m.engine_name) + " is not an engine this runtime loads (executorch)");
  }
  if (const json* a = r.member(doc, "", "artifact", true)) m.artifact = r.file_ref(*a, "artifact");
  if (const json* df = r.array_at(doc, "", "data_files", /*required=*/false)) {
    for (size_t i = 0; i < df->size(); ++i) m.data_files.push_back(r.file_ref((*df)[i], Reader::at("data_files", i)));
  }
  m.backend = r.string_at(doc, "", "backend").value_or("");
  if (const json* d = r.array_at(doc, "", "delegates")) {
    for (size_t i = 0; i < d->size(); ++i) {
      const json& e = (*d)[i];
      const std::string path = Reader::at("delegates", i);
      if (!r.expect_type(e, path, e.is_string(), "a string")) continue;
      auto s = e.get<std::string>();
      if (s.empty()) r.problem(path, "empty string");
      if (!m.delegates.empty() && !(m.delegates.back() < s))
        r.problem(path, squote(s) + " is out of order or repeated (delegates are distinct and sorted)");
      m.delegates.push_back(std::move(s));
    }
  }
  m.operators = r.operators(doc);
  m.delegation = r.delegation(doc);
  m.recipe = r.string_at(doc, "", "recipe").value_or("");
  m.precision = r.string_at(doc, "", "precision").value_or("");
  m.compute_unit = r.string_at(doc, "", "compute_unit", /*required=*/false);
  if (const json* t = r.object_at(doc, "", "target", /*required=*/false)) {
    Target target;
    target.kind = r.string_at(*t, "target", "kind").value_or("");
    target.requirements = r.string_at(*t, "target", "requirements").value_or("");
    target.openvino = r.string_at(*t, "target", "openvino", false).value_or("");
    target.isa = r.string_at(*t, "target", "isa", false).value_or("");
    m.target = std::move(target);
  }
  m.quantization = r.recipe_quantization(doc);
  if (!several) {
    if (doc.contains("methods"))
      r.problem("methods", "is only defined for schema_version 2 (a program with several methods); "
                           "schema_version 1 has top-level inputs, outputs and goldens");
    MethodSpec forward{"forward", r.tensor_specs(doc, "", "inputs"), r.tensor_specs(doc, "", "outputs")};
    if (doc.contains("outputs") && doc["outputs"].is_array() && doc["outputs"].empty())
      r.problem("outputs", "empty; a program without outputs cannot be checked");
    m.preprocessing = r.preprocessing(doc, forward.inputs);
    m.labels = r.labels(doc, forward.outputs);
    m.weights = r.weights(doc);
    m.references = r.references(doc);
    m.budget = r.budget(doc);
    m.goldens = r.goldens(doc, "", forward.name, forward.inputs, forward.outputs, m.references);
    m.methods.push_back(std::move(forward));
  } else {
    for (const char* key : {"inputs", "outputs", "goldens"})
      if (doc.contains(key))
        r.problem(key, "is not defined at the top level by schema_version 2 (each method has its own, "
                       "in methods[])");
    for (const char* key : {"labels", "preprocessing"})
      if (doc.contains(key))
        r.problem(key, "is not defined by schema_version 2 (it names one input or output of one method)");
    m.weights = r.weights(doc);
    m.references = r.references(doc);
    m.budget = r.budget(doc);
    r.methods(doc, m);
  }
  if (!m.methods.empty()) {
    m.inputs = m.methods.front().inputs;
    m.outputs = m.methods.front().outputs;
  }
  if (const json* t = r.object_at(doc, "", "toolchain")) {
    for (const auto& [k, v] : t->items()) {
      if (r.expect_type(v, Reader::at("toolchain", k), v.is_string(), "a string"))
        m.toolchain[k] = v.get<std::string>();
    }
  }
  if (auto c = r.string_at(doc, "", "created_utc")) {
    if (is_utc_timestamp(*c))
      m.created_utc = *c;
    else
      r.problem("created_utc", squote(*c) + " is not YYYY-MM-DDTHH:MM:SSZ");
  }

  if (!r.problems.empty()) throw fail(r.problems, kRemedy);
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
                "give a bundle directory or its NAME.etproof.json; export one with python -m etproof export");
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
