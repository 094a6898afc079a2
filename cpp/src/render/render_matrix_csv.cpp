// etproof/render_matrix_csv.cpp — the matrix as CSV (etproof/render/matrix.h: to_csv).
#include <sstream>

#include "etproof/render/matrix.h"
#include "etproof/replay/matrix.h"
#include "render/render_matrix.h"

namespace etproof {
using namespace render;  // NOLINT: the private helpers of render_matrix.h
namespace {

// A field as RFC 4180 writes it: quoted (its quotes doubled) when it holds a comma, a quote or a
// line break; as it is otherwise.
std::string field(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char ch : s) out += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return out + "\"";
}

// A number as --json writes it (the shortest text that reads back to the same double; nan, inf,
// -inf spelled out); empty when not measured (--json's null).
std::string number(const std::optional<double>& v) {
  const nlohmann::json j = opt_num(v);
  return j.is_null() ? std::string() : j.is_string() ? j.get<std::string>() : j.dump();
}

}  // namespace

std::string to_csv(const Matrix& m) {
  std::ostringstream os;
  os << "model,case,column,backend,recipe,bundle,dir,status,max_abs_error,cosine,sqnr_db,headroom,"
        "range_error,atol,cost_sqnr_db,detail\n";
  for (const Cell& c : m.cells) {
    const Column& col = m.columns[c.column];
    for (const std::string& f : {col.model, c.case_id, column_label(col), col.backend, col.recipe, col.bundle, col.dir,
                                 std::string(to_string(c.status))})
      os << field(f) << ",";
    for (const std::optional<double>& v : {c.max_abs_error, c.cosine, c.sqnr_db, c.headroom, c.range_error, c.atol,
                                           c.cost_sqnr_db})
      os << number(v) << ",";
    os << field(c.detail) << "\n";
  }
  return os.str();
}

}  // namespace etproof
