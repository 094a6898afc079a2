// Ranking a classifier's output by its labels (etproof/labels.h).
#include "etproof/core/labels.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "etproof/core/error.h"

namespace etproof {

std::vector<Ranked> top_k(const HostTensor& logits, const std::vector<std::string>& names,
                          size_t k) {
  const auto& sh = logits.shape;
  const bool ok = sh.size() == 1 || (sh.size() == 2 && sh[0] == 1);
  if (!ok)
    throw Error(ErrorKind::kShapeMismatch,
                "logits " + shape_to_string(sh) + " are not [N] or [1, N]",
                "rank the output of a single-image classifier");
  const std::vector<double> v = logits.to_double();
  if (v.empty()) return {};
  // Numerically stable softmax: subtract the largest logit before exponentiating.
  double mx = -std::numeric_limits<double>::infinity();
  for (double x : v)
    if (!std::isnan(x)) mx = std::max(mx, x);
  std::vector<double> p(v.size());
  double sum = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    if (std::isnan(v[i]))
      p[i] = 0;
    else if (std::isinf(mx))  // +inf logits share the mass; all -inf: nothing to rank
      p[i] = (mx > 0 && v[i] == mx) ? 1.0 : 0.0;
    else
      p[i] = std::exp(v[i] - mx);
    sum += p[i];
  }
  std::vector<size_t> order(v.size());
  std::iota(order.begin(), order.end(), size_t{0});
  const size_t n = std::min(k, v.size());
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(n), order.end(),
                    [&](size_t a, size_t b) { return p[a] > p[b] || (p[a] == p[b] && a < b); });
  std::vector<Ranked> out;
  for (size_t i = 0; i < n; ++i) {
    const size_t idx = order[i];
    Ranked r;
    r.index = idx;
    r.label = idx < names.size() ? names[idx] : "class " + std::to_string(idx);
    r.probability = sum > 0 ? p[idx] / sum : 0;
    out.push_back(std::move(r));
  }
  return out;
}

nlohmann::json to_json(const std::vector<Ranked>& ranked) {
  nlohmann::json out = nlohmann::json::array();
  for (const Ranked& t : ranked) out.push_back({{"label", t.label}, {"index", t.index}, {"probability", t.probability}});
  return out;
}

}  // namespace etproof
