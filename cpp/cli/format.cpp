// etproof CLI — the shared --format option and its --json / --markdown aliases (cpp/cli/format.h).
#include "format.h"

#include <algorithm>
#include <utility>

namespace etproof_cli {
namespace {

const FormatChoice* find(const std::vector<FormatChoice>& choices, const std::string& name) {
  for (const FormatChoice& c : choices)
    if (c.name == name) return &c;
  return nullptr;
}

// "output format: text (default): …; json: …; markdown: …; --json and --markdown are short for
// --format json and --format markdown".
std::string format_help(const std::vector<FormatChoice>& choices) {
  std::string help = "output format:";
  for (size_t i = 0; i < choices.size(); ++i)
    help += (i ? "; " : " ") + choices[i].name + (i == 0 ? " (default)" : "") + ": " + choices[i].help;
  const bool markdown = find(choices, "markdown") != nullptr;
  if (find(choices, "json"))
    help += markdown ? "; --json and --markdown are short for --format json and --format markdown"
                     : "; --json is short for --format json";
  return help;
}

// What --format, --json and --markdown together ask for; two different formats are refused.
void resolve(FormatOption& f, const std::string& default_format) {
  std::vector<std::pair<std::string, std::string>> asked;  // (flag as typed, format)
  if (!f.name.empty()) asked.emplace_back("--format " + f.name, f.name);
  if (f.json) asked.emplace_back("--json", "json");
  if (f.markdown) asked.emplace_back("--markdown", "markdown");
  for (const auto& [flag, format] : asked)
    if (format != asked.front().second) throw CLI::ExcludesError(asked.front().first, flag);
  f.format = asked.empty() ? default_format : asked.front().second;
}

}  // namespace

void add_format_option(CLI::App* sub, FormatOption& f, const std::vector<FormatChoice>& choices) {
  std::vector<std::string> names;
  for (const FormatChoice& c : choices) names.push_back(c.name);
  sub->add_option("--format", f.name, format_help(choices))->type_name("FORMAT")->check(CLI::IsMember(names));
  CLI::Option* json = nullptr;
  if (const FormatChoice* c = find(choices, "json"))
    json = sub->add_flag("--json", f.json, "short for --format json: " + c->help);
  if (const FormatChoice* c = find(choices, "markdown")) {
    CLI::Option* markdown = sub->add_flag("--markdown", f.markdown, "short for --format markdown: " + c->help);
    if (json) json->excludes(markdown);
  }
  sub->final_callback([&f, first = names.front()] { resolve(f, first); });
}

}  // namespace etproof_cli
