// `etproof run`: one program run on caller-given inputs, summarized (etproof/run.h).
#include "etproof/run.h"

#include <cmath>
#include <iomanip>
#include <sstream>
#include <system_error>

#include "etproof/bundle.h"
#include "etproof/error.h"
#include "common.h"

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
                     const std::filesystem::path& out_dir) {
  const Bundle b = open_bundle(path);
  std::map<std::string, HostTensor> inputs;
  for (const auto& [name, file] : input_files) inputs[name] = read_npy(file);
  LoadedModel model = LoadedModel::load(b);
  std::map<std::string, HostTensor> outputs = model.run(inputs);

  RunResult r;
  r.bundle = b.manifest.name;
  r.backend = b.manifest.backend;
  r.delegates = model.program_delegates();
  if (!out_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(out_dir, ec);
    if (ec)
      throw Error(ErrorKind::kIo, "cannot create " + out_dir.string() + ": " + ec.message(),
                  "pass an --out directory you can write to");
  }
  for (const TensorSpec& spec : b.manifest.outputs) {
    auto it = outputs.find(spec.name);
    if (it == outputs.end()) continue;
    RunOutput o = summarize(spec.name, std::move(it->second));
    const auto& labels = b.manifest.labels;
    if (labels && labels->output == spec.name) o.top = top_k(o.tensor, labels->names, kTopLabels);
    if (!out_dir.empty()) {
      o.written = out_dir / (spec.name + ".npy");
      write_npy(*o.written, o.tensor);
    }
    r.outputs.push_back(std::move(o));
  }
  return r;
}

std::string to_text(const RunResult& r) {
  std::ostringstream os;
  os << "ran " << r.bundle << " (backend " << r.backend << ", delegates "
     << detail::join_or_none(r.delegates) << ")\n";
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
