// replay/repeat.cpp — runs that must repeat, compared byte for byte (replay/repeat.h).
#include "replay/repeat.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <set>

#include "core/common.h"

namespace etproof::detail {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// FNV-1a over every output's name, dtype, shape and bytes: a fingerprint of one run's outputs, for
// counting the distinct ones (a collision could only under-count: the judged run's comparison,
// byte for byte, still decides whether the case is nondeterministic).
uint64_t fingerprint(const std::map<std::string, HostTensor>& outputs) {
  uint64_t h = 1469598103934665603ULL;
  auto mix = [&h](const void* p, size_t n) {
    const auto* b = static_cast<const unsigned char*>(p);
    for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ULL;
  };
  for (const auto& [name, t] : outputs) {
    mix(name.data(), name.size());
    mix(&t.dtype, sizeof t.dtype);
    mix(t.shape.data(), t.shape.size() * sizeof(int64_t));
    mix(t.data.data(), t.data.size());
  }
  return h;
}

// The largest |a - b| over the elements of two outputs of one shape: NaN against NaN and an
// infinity against the same infinity are no difference; NaN against a number is infinite.
double max_abs_difference(const HostTensor& a, const HostTensor& b) {
  if (a.dtype != b.dtype || a.shape != b.shape) return kInf;
  double worst = 0;
  for (size_t i = 0; i < a.numel(); ++i) {
    const double x = a.value_as_double(i), y = b.value_as_double(i);
    if (std::isnan(x) && std::isnan(y)) continue;
    if (x == y) continue;  // equal infinities included
    const double d = std::isnan(x) || std::isnan(y) ? kInf : std::fabs(x - y);
    worst = std::max(worst, std::isnan(d) ? kInf : d);
  }
  return worst;
}

// One later run of a case compared with its judged run: RepeatReport's output and largest
// difference updated where any output is not byte for byte the same.
void compare_run(RepeatReport& p, const std::map<std::string, HostTensor>& judged,
                 const std::map<std::string, HostTensor>& later) {
  for (const auto& [name, t] : judged) {
    auto it = later.find(name);
    const bool same = it != later.end() && it->second.dtype == t.dtype && it->second.shape == t.shape &&
                      it->second.data == t.data;
    if (same) continue;
    if (p.output.empty()) p.output = name;
    p.max_abs_difference = std::max(p.max_abs_difference,
                                    it == later.end() ? kInf : max_abs_difference(t, it->second));
  }
}

// What the repeats of one case collect while they run.
struct CaseRepeats {
  RepeatReport report;
  std::set<uint64_t> seen;
};

// One pass over the case runs on `model` (or, where `load_each`, on a program loaded afresh for
// each case run): every step whose judged run ran runs again and is compared; `where` names the
// pass in a failure ("run 2, same load").
void one_pass(std::vector<CaseRepeats>& acc, const Bundle& b, LoadedModel* model, const Isolation& iso,
              const std::vector<ReplayedRun>& runs, bool load_each, bool fresh, const std::string& where) {
  for (const ReplayedRun& run : runs) {
    std::optional<LoadedModel> own;
    if (load_each) {
      try {
        own.emplace(LoadedModel::load(b, iso));
      } catch (const Error& e) {
        for (size_t i = 0; i < run.steps.size(); ++i) {
          CaseRepeats& a = acc[run.first + i];
          if (run.judged[i] && a.report.failed.empty())
            a.report.failed = where + ", loading the program afresh: " + error_line(e);
        }
        continue;
      }
    }
    LoadedModel& m = own ? *own : *model;
    for (size_t i = 0; i < run.steps.size() && run.judged[i]; ++i) {
      CaseRepeats& a = acc[run.first + i];
      const GoldenCase& g = *run.steps[i];
      ++a.report.runs;
      if (fresh) ++a.report.fresh_loads;
      try {
        const auto out = g.method.empty() ? m.run(run.judged[i]->inputs) : m.run(g.method, run.judged[i]->inputs);
        compare_run(a.report, run.judged[i]->outputs, out);
        a.seen.insert(fingerprint(out));
      } catch (const Error& e) {
        if (a.report.failed.empty()) a.report.failed = where + ": " + error_line(e);
        break;  // a sequence's later steps continue this one's state
      }
    }
  }
}

}  // namespace

void repeat_runs(ParityReport& r, const Bundle& b, LoadedModel& model, const ReplayOptions& o,
                 const std::vector<ReplayedRun>& runs, bool fresh_state) {
  std::vector<CaseRepeats> acc(r.cases.size());
  for (const ReplayedRun& run : runs)
    for (size_t i = 0; i < run.steps.size(); ++i)
      if (run.judged[i]) acc[run.first + i].seen.insert(fingerprint(run.judged[i]->outputs));
  for (size_t k = 1; k < o.repetition.repeat; ++k)
    one_pass(acc, b, &model, o.isolation, runs, fresh_state, fresh_state,
             "run " + std::to_string(k + 1) + (fresh_state ? ", a fresh load" : ", the same load"));
  for (size_t k = 0; k < o.repetition.fresh_loads; ++k) {
    const std::string where = "run " + std::to_string(o.repetition.repeat + k + 1) + ", a fresh load";
    std::optional<LoadedModel> fresh;
    if (!fresh_state) {
      try {
        fresh.emplace(LoadedModel::load(b, o.isolation));
      } catch (const Error& e) {
        for (CaseRepeats& a : acc)
          if (!a.seen.empty() && a.report.failed.empty())
            a.report.failed = where + ", loading the program: " + error_line(e);
        continue;
      }
    }
    one_pass(acc, b, fresh ? &*fresh : nullptr, o.isolation, runs, fresh_state, true, where);
  }
  for (size_t i = 0; i < acc.size(); ++i) {
    if (acc[i].seen.empty()) continue;  // the case did not run: nothing to repeat
    acc[i].report.distinct = acc[i].seen.size();
    // A byte difference the fingerprints missed still counts as a second output.
    if (acc[i].report.distinct == 1 && !acc[i].report.output.empty()) acc[i].report.distinct = 2;
    r.cases[i].repeats = acc[i].report;
  }
}

void judge_repeats(ParityReport& r) {
  for (CaseReport& c : r.cases) {
    if (!c.repeats || c.repeats->identical()) continue;
    const std::string first = std::string(to_string(c.status)) + (c.detail.empty() ? "" : ": " + c.detail);
    c.repeats->first = c.status;
    c.status = Status::kNondeterministic;
    c.passed = false;
    c.detail = "not the same across runs: " + repeat_text(*c.repeats) + "; the first run alone: " + first;
  }
}

}  // namespace etproof::detail

namespace etproof {

std::string repeat_text(const RepeatReport& p) {
  std::string s = std::to_string(p.runs) + " runs";
  if (p.fresh_loads) s += " (" + std::to_string(p.fresh_loads) + " on a fresh load)";
  if (p.distinct == 1)
    s += ": bit-identical";
  else
    s += ": " + std::to_string(p.distinct) + " distinct outputs, largest difference " +
         detail::format_number(p.max_abs_difference, 3) + " (" + p.output + ")";
  if (!p.failed.empty()) s += "; " + p.failed;
  return s;
}

nlohmann::json to_json(const RepeatReport& p) {
  nlohmann::json j = {{"runs", p.runs}, {"fresh_loads", p.fresh_loads}, {"distinct", p.distinct},
                      {"identical", p.identical()}};
  j["max_abs_difference"] = std::isfinite(p.max_abs_difference) ? nlohmann::json(p.max_abs_difference) : nlohmann::json();
  if (!p.output.empty()) j["output"] = p.output;
  if (!p.failed.empty()) j["failed"] = p.failed;
  return j;
}

}  // namespace etproof
