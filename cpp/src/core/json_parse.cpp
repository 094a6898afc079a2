// cpp/src/core/json_parse.cpp — parsing JSON with a depth limit; the JSON library's exceptions as
// typed errors (json_parse.h).
#include "core/json_parse.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace etproof::detail {

using nlohmann::json;

namespace {

// nlohmann's message, at most 300 bytes (its "last read" can quote a long token), cut on a UTF-8
// character boundary.
std::string message_of(const json::exception& e) {
  constexpr size_t kMax = 300;
  std::string m = e.what();
  if (m.size() <= kMax) return m;
  size_t cut = kMax;
  while (cut > 0 && (static_cast<unsigned char>(m[cut]) & 0xC0) == 0x80) --cut;
  return m.substr(0, cut) + "…";
}

Error too_deep(const JsonSource& source, size_t depth) {
  return Error(source.kind,
               source.origin + ": arrays and objects nested " + std::to_string(depth) +
                   " levels deep (at most " + std::to_string(kMaxJsonDepth) + " are read)",
               source.remedy);
}

}  // namespace

json parse_json(std::string_view text, const JsonSource& source) {
  // nlohmann's parser is iterative; only what is built from its result recurses. The callback
  // sees each array and object as it starts, with the number of containers around it: one past
  // the limit is discarded (never built, nor anything inside it), and the parse goes on only to
  // measure how deep the document goes, for the message.
  size_t deepest = 0;
  const json::parser_callback_t limit = [&deepest](int depth, json::parse_event_t event, json&) {
    if (event != json::parse_event_t::object_start && event != json::parse_event_t::array_start)
      return true;
    const size_t level = size_t(depth) + 1;
    deepest = std::max(deepest, level);
    return level <= kMaxJsonDepth;
  };
  json doc;
  try {
    doc = json::parse(text.data(), text.data() + text.size(), limit);
  } catch (const json::exception& e) {
    // A syntax error past a too-deep part still says first what made the document unreadable.
    throw Error(source.kind, source.origin + ": not valid JSON: " + message_of(e), source.remedy);
  }
  if (deepest > kMaxJsonDepth) throw too_deep(source, deepest);
  return doc;
}

size_t json_depth(const json& doc) {
  size_t deepest = 0;
  std::vector<std::pair<const json*, size_t>> todo{{&doc, 0}};
  while (!todo.empty()) {
    const auto [j, above] = todo.back();
    todo.pop_back();
    if (!j->is_structured()) continue;
    deepest = std::max(deepest, above + 1);
    for (const json& child : *j) todo.emplace_back(&child, above + 1);
  }
  return deepest;
}

void check_json_depth(const json& doc, const JsonSource& source) {
  if (const size_t d = json_depth(doc); d > kMaxJsonDepth) throw too_deep(source, d);
}

Error json_error(const JsonSource& source, const json::exception& e) {
  return Error(source.kind, source.origin + ": " + message_of(e), source.remedy);
}

}  // namespace etproof::detail
