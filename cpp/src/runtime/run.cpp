// `etproof run`: one program run on caller-given inputs, summarized (etproof/run.h).
#include "etproof/runtime/run.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>
#include <system_error>

#include "etproof/runtime/bundle.h"
#include "etproof/core/error.h"
#include "core/common.h"

namespace etproof {

namespace {

constexpr size_t kTopLabels = 5;
constexpr size_t kFirstValues = 8;

RunOutput summarize(const std::string& name, HostTensor tensor) {
  RunOutput o;
  o.name = name;
  const std::vector<double> v = tensor.to_double();
  double sum = 0;
  size_t counted = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    if (std::isnan(v[i])) {
      ++o.nan_count;
      continue;
    }
    if (counted == 0 || v[i] < o.min) o.min = v[i];
    if (counted == 0 || v[i] > o.max) o.max = v[i], o.argmax = i;
    sum += v[i];
    ++counted;
  }
  o.mean = counted ? sum / static_cast<double>(counted) : 0;
  o.tensor = std::move(tensor);
  return o;
}

}  // namespace

RunResult run_bundle(const std::filesystem::path& path,
                     const std::map<std::string, std::filesystem::path>& input_files,
                     const std::filesystem::path& out_dir, const std::vector<std::string>& methods) {
  const Bundle b = open_bundle(path);
  const Manifest& m = b.manifest;
  if (auto e = unknown_methods_error(m, methods)) throw *e;
  const std::vector<std::string> selected = select_methods(m, methods).selected;
  const bool several = has_several_methods(m);
  // Every selected method gets all of its inputs; every input given is some selected method's.
  std::vector<std::string> missing, known;  // missing: per method, "input 'a', 'b'"
  for (const std::string& name : selected) {
    std::vector<std::string> lacks;
    for (const TensorSpec& t : find_method(m, name).inputs) {
      if (!input_files.count(t.name)) lacks.push_back("'" + t.name + "'");
      if (std::find(known.begin(), known.end(), t.name) == known.end()) known.push_back(t.name);
    }
    if (!lacks.empty())
      missing.push_back((several ? "method '" + name + "': " : std::string()) + "input " + detail::join(lacks) +
                        " not given");
  }
  std::vector<std::string> unknown;
  for (const auto& [name, file] : input_files)
    if (std::find(known.begin(), known.end(), name) == known.end()) unknown.push_back("'" + name + "'");
  const std::string which = several ? "the methods run (" + detail::join(selected) + ")" : "the program";
  if (!unknown.empty()) {
    std::vector<std::string> quoted;
    for (const std::string& k : known) quoted.push_back("'" + k + "'");
    throw Error(ErrorKind::kInvalidArgument,
                "bundle '" + m.name + "': unknown input " + detail::join(unknown) + " (the inputs of " + which +
                    ": " + detail::join_or_none(quoted) + ")",
                "give each input by a name the manifest lists (etproof inspect BUNDLE shows them)");
  }
  if (!missing.empty())
    throw Error(ErrorKind::kInvalidArgument,
                "bundle '" + m.name + "': " + detail::join(missing, "; "),
                "give every input of each method run, once, by name (--input NAME=FILE.npy)");

  std::map<std::string, HostTensor> given;
  for (const auto& [name, file] : input_files) given[name] = read_npy(file);
  LoadedModel model = LoadedModel::load(b);

  RunResult r;
  r.bundle = m.name;
  r.backend = m.backend;
  r.delegates = model.program_delegates();
  r.methods = selected;
  r.several_methods = several;
  if (!out_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(out_dir, ec);
    if (ec)
      throw Error(ErrorKind::kIo, "cannot create " + out_dir.string() + ": " + ec.message(),
                  "pass an --out directory you can write to");
  }
  for (const std::string& name : selected) {
    const MethodSpec& method = find_method(m, name);
    std::map<std::string, HostTensor> inputs;
    for (const TensorSpec& t : method.inputs) inputs[t.name] = given.at(t.name);
    std::map<std::string, HostTensor> outputs = model.run(name, inputs);
    for (const TensorSpec& spec : method.outputs) {
      auto it = outputs.find(spec.name);
      if (it == outputs.end()) continue;
      const std::string shown = several ? name + "." + spec.name : spec.name;
      RunOutput o = summarize(shown, std::move(it->second));
      o.method = name;
      const auto& labels = m.labels;  // schema 1 only
      if (labels && labels->output == spec.name) o.top = top_k(o.tensor, labels->names, kTopLabels);
      if (!out_dir.empty()) {
        o.written = out_dir / (shown + ".npy");
        write_npy(*o.written, o.tensor);
      }
      r.outputs.push_back(std::move(o));
    }
  }
  return r;
}

nlohmann::json to_json(const RunResult& r) {
  nlohmann::json outputs = nlohmann::json::array();
  for (const RunOutput& o : r.outputs) {
    const bool all_nan = o.nan_count == o.tensor.numel();
    outputs.push_back({{"name", o.name},
                       {"method", o.method},
                       {"dtype", to_string(o.tensor.dtype)},
                       {"shape", o.tensor.shape},
                       {"min", all_nan ? nlohmann::json() : nlohmann::json(o.min)},
                       {"max", all_nan ? nlohmann::json() : nlohmann::json(o.max)},
                       {"mean", all_nan ? nlohmann::json() : nlohmann::json(o.mean)},
                       {"argmax", o.argmax},
                       {"nan_count", o.nan_count},
                       {"top", to_json(o.top)},
                       {"written", o.written ? nlohmann::json(o.written->string()) : nlohmann::json()}});
  }
  return {{"bundle", r.bundle}, {"backend", r.backend}, {"delegates", r.delegates},
          {"methods", r.methods}, {"outputs", outputs}};
}

std::string to_text(const RunResult& r) {
  std::ostringstream os;
  os << "ran " << r.bundle << " (backend " << r.backend << ", delegates "
     << detail::join_or_none(r.delegates)
     << (r.several_methods ? ", methods " + detail::join(r.methods) : std::string()) << ")\n";
  for (const RunOutput& o : r.outputs) {
    const std::vector<double> v = o.tensor.to_double();
    os << "output " << o.name << " " << to_string(o.tensor.dtype) << " "
       << shape_to_string(o.tensor.shape) << ": min " << o.min << ", max " << o.max
       << " (flat index " << o.argmax << "), mean " << o.mean;
    if (o.nan_count) os << ", " << o.nan_count << " NaN";
    os << "\n  first values:";
    for (size_t i = 0; i < std::min(v.size(), kFirstValues); ++i) os << " " << v[i];
    os << (v.size() > kFirstValues ? " …" : "") << "\n";
    for (const Ranked& t : o.top)
      os << "  " << std::fixed << std::setprecision(4) << t.probability << std::defaultfloat
         << "  " << t.label << " (" << t.index << ")\n";
    if (o.written) os << "  wrote " << o.written->string() << "\n";
  }
  return os.str();
}

}  // namespace etproof
