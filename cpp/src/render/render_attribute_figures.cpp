// etproof/render_attribute_figures.cpp — attributions as pictures: the export half's matplotlib draws
// them (plot_attributions), and the matrix's HTML page embeds them (attach_attributions).
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <system_error>

#include "etproof/render/attribute.h"
#include "etproof/runtime/bundle.h"
#include "etproof/runtime/export_half.h"
#include "core/common.h"

namespace etproof {

namespace fs = std::filesystem;

int plot_attributions(const nlohmann::json& reports, const fs::path& file, bool stdout_to_stderr) {
  const fs::path tmp =
      fs::temp_directory_path() / ("etproof-attribute-" + std::to_string(::getpid()) + "-" +
                                   detail::sha256_hex(file.string()).substr(0, 8) + ".json");
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << reports.dump(2);
    if (!out)
      throw Error(ErrorKind::kIo, "cannot write " + tmp.string() + " for the plot: " + std::strerror(errno),
                  "check the temporary directory's free space and permissions (TMPDIR)");
  }
  int rc = 2;
  try {
    rc = run_export_half_command("plot-attribution", {tmp.string(), "--out", file.string()}, stdout_to_stderr);
  } catch (...) {
    std::error_code ec;
    fs::remove(tmp, ec);
    throw;
  }
  std::error_code ec;
  fs::remove(tmp, ec);
  return rc;
}

void attach_attributions(Matrix& m, const AttributeOptions& options) {
  std::map<std::string, AttributionFigure> by_model;
  std::map<std::string, nlohmann::json> reports;
  std::vector<std::string> order;
  for (size_t col = 0; col < m.columns.size(); ++col) {
    const Column& c = m.columns[col];
    if (c.path.empty()) continue;
    std::error_code ec;
    const fs::path twin = twin_dir(c.path, c.bundle);
    if (!fs::is_directory(fs::symlink_status(twin, ec))) continue;
    if (!by_model.count(c.model)) {
      order.push_back(c.model);
      by_model[c.model].model = c.model;
      reports[c.model] = nlohmann::json::array();
    }
    AttributionFigure& f = by_model[c.model];
    try {
      const Attribution a = attribute(c.path, options);
      f.lines.emplace_back(col, a.summary);
      reports[c.model].push_back(to_json(a));
    } catch (const Error& e) {
      f.lines.emplace_back(col, "not attributed: " + detail::error_line(e));
    }
  }
  for (const std::string& model : order) {
    AttributionFigure f = std::move(by_model[model]);
    if (reports[model].empty()) {
      f.why_not = "no column of this model could be attributed";
    } else {
      std::string tmpl = (fs::temp_directory_path() / "etproof-figure-XXXXXX").string();
      if (!::mkdtemp(tmpl.data())) {
        f.why_not = std::string("cannot create a temporary directory: ") + std::strerror(errno);
      } else {
        const fs::path svg = fs::path(tmpl) / "attribution.svg";
        try {
          const int rc = plot_attributions(reports[model], svg, /*stdout_to_stderr=*/true);
          std::ifstream in(svg, std::ios::binary);
          const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
          if (rc == 0 && !bytes.empty())
            f.image = "data:image/svg+xml;base64," + detail::base64(bytes);
          else
            f.why_not = "the export half could not draw it (" + export_half_command("plot-attribution") + ", exit " +
                        std::to_string(rc) + ")";
        } catch (const Error& e) {
          f.why_not = detail::error_line(e);
        }
        std::error_code ec;
        fs::remove_all(tmpl, ec);
      }
    }
    m.attributions.push_back(std::move(f));
  }
}

}  // namespace etproof
