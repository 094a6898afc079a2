// etproof/render_attribute.cpp — an attribution as text and JSON (etproof/attribute.h), and what
// `etproof attribute` prints (etproof/render/attribute.h: attribute_renderers).
#include <algorithm>
#include <sstream>

#include "etproof/render/attribute.h"
#include "etproof/render/formats.h"
#include "etproof/replay/matrix.h"
#include "etproof/replay/attribute.h"
#include "core/common.h"

namespace etproof {
namespace {
using detail::cosine_text;
using detail::json_number;
using detail::sqnr_text;

std::string module_text(const TapPoint& p) {
  if (p.module_path.empty()) return p.module_class.empty() ? "-" : p.module_class;
  return p.module_class.empty() ? p.module_path : p.module_path + " (" + p.module_class + ")";
}

std::string source_text(const TapPoint& p) {
  return p.source ? p.source->file + ":" + std::to_string(p.source->line) : "-";
}

// Columns padded to their widest cell.
std::string table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width;
  for (const auto& r : rows)
    for (size_t i = 0; i < r.size(); ++i) {
      if (width.size() <= i) width.push_back(0);
      width[i] = std::max(width[i], r[i].size());
    }
  std::ostringstream os;
  for (const auto& r : rows) {
    std::string line;
    for (size_t i = 0; i < r.size(); ++i) {
      line += r[i];
      if (i + 1 < r.size()) line += std::string(width[i] - r[i].size() + 2, ' ');
    }
    os << "  " << line << "\n";
  }
  return os.str();
}

}  // namespace

std::string to_text(const Attribution& a) {
  std::ostringstream os;
  os << "attribute: " << a.bundle << "  backend " << a.backend << ", recipe " << a.recipe << ", precision "
     << a.precision << "\n";
  os << "twin: " << a.twin << "  (" << a.taps.points.size() << " taps of " << a.taps.eligible << " eligible nodes, "
     << a.taps.selection << "; delegate calls: shipped " << a.taps.shipped_delegate_calls << ", twin "
     << a.taps.twin_delegate_calls << ")\n";
  if (!a.taps.delegation_matches)
    os << "note: the twin's delegation differs from the shipped program's (taps can stop a delegate fusing "
          "operators); rows marked * are operators delegated differently, and their numbers may not be the "
          "shipped program's\n";
  os << "bound: " << describe_bound(a.twin_report.bound) << "\n";
  if (!a.twin_report.judgement.empty()) os << "judged: " << a.twin_report.judgement << "\n";
  if (!a.output.empty()) os << "output: " << a.output << "  (only the taps whose value reaches it)\n";
  if (a.taps.range)
    os << "narrowed: taps among the eligible nodes " << a.taps.range->first << ".." << a.taps.range->second << "\n";
  os << "case: " << a.case_id;
  if (a.cases.size() > 1) os << "  (of " << detail::join(a.cases) << "; --case picks another)";
  os << "\n\n";
  // The recipe's cost per tap, where the twin carries it: the emulation's SQNR against the golden.
  const bool costs = std::any_of(a.layers.begin(), a.layers.end(), [](const LayerRow& l) { return l.cost.has_value(); });
  std::vector<std::string> head{"#", "operator", "module", "source", "max abs error", "cosine", "SQNR dB", "step dB"};
  if (costs) head.push_back("cost SQNR dB");
  head.push_back("verdict");
  std::vector<std::vector<std::string>> rows{head};
  for (size_t i = 0; i < a.layers.size(); ++i) {
    const LayerRow& l = a.layers[i];
    std::string verdict = l.report.passed ? "agrees" : "DRIFTS";
    if (a.earliest_drift == i) verdict += a.culprit ? "  <- earliest drift (culprit)" : "  <- crosses the bound first";
    if (a.largest_growth == i && a.earliest_drift != i) verdict += "  <- largest growth";
    if (a.costliest == i) verdict += "  <- the recipe's cost grows most";
    std::vector<std::string> row{std::to_string(l.point.eligible_index.value_or(l.point.index)) +
                                     (l.point.delegation_matches ? "" : "*"),
                                 l.point.op,
                                 module_text(l.point),
                                 source_text(l.point),
                                 detail::format_number(l.report.max_abs_error, 3),
                                 cosine_text(l.report.cosine),
                                 sqnr_text(l.report.sqnr_db),
                                 sqnr_text(l.step_db)};
    if (costs) row.push_back(l.cost ? sqnr_text(l.cost->sqnr_db) : "-");
    row.push_back(verdict);
    rows.push_back(std::move(row));
  }
  os << table(rows) << "\n";
  if (costs)
    os << "cost: the recipe's own emulation against the float32 golden at each tap: what the recipe costs, "
          "whatever the backend\n";
  for (const TensorReport& t : a.outputs)
    os << "output " << t.output << ": " << (t.passed ? "agrees" : "DRIFTS") << "  (max abs error "
       << detail::format_number(t.max_abs_error, 3) << ", cosine " << cosine_text(t.cosine) << ", SQNR "
       << sqnr_text(t.sqnr_db) << " dB)\n";
  if (a.earliest_drift) {
    const LayerRow& l = a.layers[*a.earliest_drift];
    if (l.point.source && !l.point.source->code.empty())
      os << "earliest drift's source: " << l.point.source->file << ":" << l.point.source->line << ": "
         << l.point.source->code << "\n";
  }
  os << fit_text("summary: " + a.summary + "\n");
  return os.str();
}

nlohmann::json to_json(const Attribution& a) {
  const auto index = [](const std::optional<size_t>& i) { return i ? nlohmann::json(*i) : nlohmann::json(nullptr); };
  nlohmann::json layers = nlohmann::json::array();
  for (const LayerRow& l : a.layers) {
    nlohmann::json p = {{"output", l.point.output},
                        {"index", l.point.index},
                        {"eligible_index", index(l.point.eligible_index)},
                        {"node", l.point.node},
                        {"op", l.point.op},
                        {"module_path", l.point.module_path},
                        {"module_class", l.point.module_class},
                        {"delegated", l.point.delegated},
                        {"delegation_matches", l.point.delegation_matches},
                        {"step_db", json_number(l.step_db)},
                        {"min_sqnr_db", json_number(l.report.min_sqnr_db)},
                        {"min_cosine", json_number(l.report.min_cosine)},
                        {"report", to_json(l.report)}};
    if (l.point.source)
      p["source"] = {{"file", l.point.source->file}, {"line", l.point.source->line}, {"code", l.point.source->code}};
    if (l.cost)
      p["cost"] = {{"reference", l.cost->reference},
                   {"max_abs_error", json_number(l.cost->max_abs_error)},
                   {"cosine", json_number(l.cost->cosine)},
                   {"sqnr_db", json_number(l.cost->sqnr_db)},
                   {"step_db", json_number(l.cost_step_db)}};
    layers.push_back(std::move(p));
  }
  nlohmann::json outputs = nlohmann::json::array();
  for (const TensorReport& t : a.outputs) outputs.push_back(to_json(t));
  nlohmann::json range = a.taps.range ? nlohmann::json::array({a.taps.range->first, a.taps.range->second})
                                      : nlohmann::json(nullptr);
  return {{"bundle", a.bundle},
          {"model", a.model},
          {"twin", a.twin},
          {"backend", a.backend},
          {"recipe", a.recipe},
          {"precision", a.precision},
          {"case", a.case_id},
          {"output", a.output.empty() ? nlohmann::json(nullptr) : nlohmann::json(a.output)},
          {"cases", a.cases},
          {"bound", describe_bound(a.twin_report.bound)},
          {"judgement", a.twin_report.judgement},
          {"taps", {{"selection", a.taps.selection},
                    {"eligible", a.taps.eligible},
                    {"range", range},
                    {"delegation_matches", a.taps.delegation_matches},
                    {"delegate_calls", {{"shipped", a.taps.shipped_delegate_calls}, {"twin", a.taps.twin_delegate_calls}}}}},
          {"layers", std::move(layers)},
          {"outputs", std::move(outputs)},
          {"outputs_passed", a.outputs_passed},
          {"earliest_drift", index(a.earliest_drift)},
          {"largest_growth", index(a.largest_growth)},
          {"culprit", a.culprit},
          {"costliest", index(a.costliest)},
          {"culprit_drop_db", kCulpritDropDb},
          {"summary", a.summary}};
}

namespace {
std::string eligible_text(const std::optional<size_t>& i) { return i ? std::to_string(*i) : "-"; }
}  // namespace

std::string to_text(const Bisection& b) {
  std::ostringstream os;
  os << "bisect: " << b.rounds.size() << (b.rounds.size() == 1 ? " twin" : " twins") << "\n";
  std::vector<std::vector<std::string>> rows{{"round", "taps", "eligible nodes", "last agreeing", "earliest drift", "twin"}};
  for (size_t i = 0; i < b.rounds.size(); ++i) {
    const BisectRound& r = b.rounds[i];
    rows.push_back({std::to_string(i), std::to_string(r.taps),
                    r.range ? std::to_string(r.range->first) + ".." + std::to_string(r.range->second) : "all",
                    eligible_text(r.before_eligible), eligible_text(r.drift_eligible), r.twin});
  }
  os << table(rows);
  os << (b.resolved ? "resolved: " : "not resolved: ") << b.stopped << "\n";
  if (b.rounds.size() > 1 && b.kept.empty())
    os << "(the narrowed twins were exported into a temporary directory, now removed: --bisect-out DIR keeps them)\n";
  os << "\n";
  os << to_text(b.final);
  return os.str();
}

nlohmann::json to_json(const Bisection& b) {
  const auto index = [](const std::optional<size_t>& i) { return i ? nlohmann::json(*i) : nlohmann::json(nullptr); };
  nlohmann::json rounds = nlohmann::json::array();
  for (const BisectRound& r : b.rounds)
    rounds.push_back({{"twin", r.twin},
                      {"taps", r.taps},
                      {"range", r.range ? nlohmann::json::array({r.range->first, r.range->second}) : nlohmann::json(nullptr)},
                      {"last_agreeing_eligible", index(r.before_eligible)},
                      {"earliest_drift_eligible", index(r.drift_eligible)}});
  nlohmann::json doc = to_json(b.final);
  doc["bisect"] = {{"rounds", std::move(rounds)},
                   {"resolved", b.resolved},
                   {"stopped", b.stopped},
                   {"kept", b.kept.empty() ? nlohmann::json(nullptr) : nlohmann::json(b.kept)}};
  return doc;
}

const Attribution& AttributePrintout::attribution(size_t i) const {
  const auto& r = results.at(i);
  return std::holds_alternative<Bisection>(r) ? std::get<Bisection>(r).final : std::get<Attribution>(r);
}

nlohmann::json AttributePrintout::docs() const {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& r : results) out.push_back(std::visit([](const auto& x) { return to_json(x); }, r));
  return out;
}

namespace {

std::string text_printout(const AttributePrintout& p) {
  std::string out;
  for (size_t i = 0; i < p.results.size(); ++i)
    out += (i ? "\n" : "") + std::visit([](const auto& x) { return to_text(x); }, p.results[i]);
  return out;
}

std::string json_printout(const AttributePrintout& p) {
  const nlohmann::json docs = p.docs();
  return json_report(docs.size() == 1 ? docs[0] : docs);
}

constexpr Renderer<AttributePrintout> kAttributeRenderers[] = {
    {"text", text_printout, "per bundle: one row per tap in graph order, the earliest drift, the summary"},
    {"json", json_printout, "the same with every number (a list for several bundles), for tools"},
};

}  // namespace

Renderers<AttributePrintout> attribute_renderers() { return kAttributeRenderers; }

}  // namespace etproof
