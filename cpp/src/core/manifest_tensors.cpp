// etproof/manifest_tensors.cpp — a manifest's inputs and outputs, and the fields that name one
// (preprocessing, labels), read from a document the schema has accepted (core/manifest_reader.h).
// The checks here are those schema/manifest.schema.json cannot state: distinct names, axes and
// layouts against the shape, bounds against another field, names of inputs and outputs.
#include <algorithm>
#include <set>

#include "core/common.h"
#include "core/manifest_reader.h"

namespace etproof::detail {

// outputs[i].slice_axis (below the rank, or null: -1) and outputs[i].integer_atol (integer and
// bool outputs only).
void ManifestReader::output_options(const json& e, const std::string& path, TensorSpec& t) {
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
    const bool integer = t.dtype != DType::kFloat32 && t.dtype != DType::kFloat16 && t.dtype != DType::kFloat64;
    if (!integer)
      problem(at(path, "integer_atol"), "is only defined for integer and bool outputs; '" + t.name + "' is " +
                                            std::string(to_string(t.dtype)));
    else
      t.integer_atol = it->get<double>();
  }
}

// inputs[i].dynamic_dims, outputs[i].dynamic_dims: sorted by axis, each a -1 of the shape, min <= max.
void ManifestReader::dynamic_dims(const json& e, const std::string& path, TensorSpec& t) {
  auto arr = e.find("dynamic_dims");
  if (arr == e.end()) return;
  const std::string dp = at(path, "dynamic_dims");
  for (size_t k = 0; k < arr->size(); ++k) {
    const json& d = (*arr)[k];
    const std::string kp = at(dp, k);
    auto axis = int_at(d, kp, "axis", true, 0);
    auto lo = int_at(d, kp, "min", true, 0);
    auto hi = int_at(d, kp, "max", true, 0);
    if (!axis || !lo || !hi) continue;
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
    t.dynamic_dims.push_back(DynamicDim{*axis, d.at("name").get<std::string>(), *lo, *hi});
  }
}

std::vector<TensorSpec> ManifestReader::tensor_specs(const json& obj, const std::string& parent, const char* key) {
  std::vector<TensorSpec> specs;
  auto arr = obj.find(key);
  if (arr == obj.end()) return specs;
  std::set<std::string> seen;
  const bool outputs = std::string(key) == "outputs";
  for (size_t i = 0; i < arr->size(); ++i) {
    const json& e = (*arr)[i];
    const std::string path = at(at(parent, key), i);
    TensorSpec t;
    t.name = e.at("name").get<std::string>();
    if (!seen.insert(t.name).second) problem(at(path, "name"), "duplicate name " + squote(t.name));
    t.dtype = dtype_from_string(e.at("dtype").get<std::string>()).value_or(DType::kFloat32);
    const json& sh = e.at("shape");
    for (size_t k = 0; k < sh.size(); ++k)
      if (auto v = int_value(sh[k], at(at(path, "shape"), k), -1)) t.shape.push_back(*v);
    if (auto l = e.find("layout"); l != e.end()) {
      if (t.shape.size() != 4)
        problem(at(path, "layout"), "layout is only recorded for rank-4 tensors, this one has rank " +
                                        std::to_string(t.shape.size()));
      else
        t.layout = l->get<std::string>();
    }
    if (outputs) {
      if (auto q = e.find("quantization"); q != e.end()) {
        if (auto z = int_value(q->at("zero_point"), at(at(path, "quantization"), "zero_point"), INT64_MIN)) {
          OutputQuantization oq;
          oq.scale = q->at("scale").get<double>();
          oq.zero_point = *z;
          oq.dtype = q->at("dtype").get<std::string>();
          t.quantization = oq;
        }
      }
      output_options(e, path, t);
    }
    dynamic_dims(e, path, t);
    specs.push_back(std::move(t));
  }
  return specs;
}

void ManifestReader::output_dims_named(const std::vector<TensorSpec>& inputs, const std::vector<TensorSpec>& outputs,
                                       const std::string& parent) {
  std::set<std::string> names;
  for (const TensorSpec& t : inputs)
    for (const DynamicDim& d : t.dynamic_dims) names.insert(d.name);
  std::vector<std::string> known;
  for (const std::string& n : names) known.push_back(squote(n));
  for (size_t i = 0; i < outputs.size(); ++i)
    for (size_t k = 0; k < outputs[i].dynamic_dims.size(); ++k)
      if (!names.count(outputs[i].dynamic_dims[k].name))
        problem(at(at(at(at(at(parent, "outputs"), i), "dynamic_dims"), k), "name"),
                squote(outputs[i].dynamic_dims[k].name) + " is no input's dynamic dimension (the inputs': " +
                    join_or_none(known) + ")");
}

std::optional<ImagePreprocessing> ManifestReader::preprocessing(const json& doc,
                                                                const std::vector<TensorSpec>& inputs) {
  const char* P = "preprocessing";
  auto p = doc.find(P);
  if (p == doc.end()) return std::nullopt;
  ImagePreprocessing pp;
  pp.input = p->at("input").get<std::string>();
  if (!names_one_of(inputs, pp.input)) problem(at(P, "input"), squote(pp.input) + " is not one of the inputs");
  pp.color = p->at("color").get<std::string>();
  if (auto r = int_at(*p, P, "resize_shorter", true, 1)) pp.resize_shorter = *r;
  pp.interpolation = p->at("interpolation").get<std::string>();
  const json& crop = p->at("crop");
  pp.crop_h = int_value(crop[0], at(at(P, "crop"), 0), 1).value_or(0);
  pp.crop_w = int_value(crop[1], at(at(P, "crop"), 1), 1).value_or(0);
  for (size_t i = 0; i < 3; ++i) {
    pp.mean[i] = p->at("mean")[i].get<double>();
    pp.std[i] = p->at("std")[i].get<double>();
  }
  const double lo = p->at("value_range")[0].get<double>(), hi = p->at("value_range")[1].get<double>();
  if (!(lo < hi)) {
    problem(at(P, "value_range"), "min must be below max");
  } else {
    pp.value_min = lo;
    pp.value_max = hi;
  }
  return pp;
}

std::optional<Labels> ManifestReader::labels(const json& doc, const std::vector<TensorSpec>& outputs) {
  auto l = doc.find("labels");
  if (l == doc.end()) return std::nullopt;
  Labels out;
  out.output = l->at("output").get<std::string>();
  if (!names_one_of(outputs, out.output)) problem("labels.output", squote(out.output) + " is not one of the outputs");
  out.source = l->at("source").get<std::string>();
  out.names = l->at("names").get<std::vector<std::string>>();
  return out;
}

}  // namespace etproof::detail
