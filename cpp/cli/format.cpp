// etproof CLI — the shared --format option and its --json / --markdown aliases (cpp/cli/format.h).
#include "format.h"

#include <algorithm>

namespace etproof_cli {

std::string to_string(Format f) {
  switch (f) {
    case Format::kText: return "text";
    case Format::kJson: return "json";
    case Format::kMarkdown: return "markdown";
  }
  return "text";
}

namespace {

bool has(const std::vector<Format>& formats, Format f) {
  return std::find(formats.begin(), formats.end(), f) != formats.end();
}

std::string format_help(const std::vector<Format>& formats) {
  std::string names;
  for (size_t i = 0; i < formats.size(); ++i)
    names += (i == 0 ? "" : i + 1 == formats.size() ? " or " : ", ") + to_string(formats[i]) +
             (formats[i] == Format::kText ? " (default)" : "");
  return "output format: " + names + "; " +
         (has(formats, Format::kMarkdown) ? "--json and --markdown are short for --format json and --format markdown"
                                          : "--json is short for --format json");
}

// What --format, --json and --markdown together ask for; two different formats are refused.
void resolve(FormatOption& f, const std::vector<Format>& formats) {
  std::vector<std::pair<std::string, Format>> asked;
  if (!f.name.empty())
    for (Format g : formats)
      if (to_string(g) == f.name) asked.emplace_back("--format " + f.name, g);
  if (f.json) asked.emplace_back("--json", Format::kJson);
  if (f.markdown) asked.emplace_back("--markdown", Format::kMarkdown);
  for (const auto& [flag, g] : asked)
    if (g != asked.front().second) throw CLI::ExcludesError(asked.front().first, flag);
  f.format = asked.empty() ? Format::kText : asked.front().second;
}

}  // namespace

void add_format_option(CLI::App* sub, FormatOption& f, const std::vector<Format>& formats,
                       const std::string& json_help) {
  std::vector<std::string> names;
  for (Format g : formats) names.push_back(to_string(g));
  sub->add_option("--format", f.name, format_help(formats))->type_name("FORMAT")->check(CLI::IsMember(names));
  auto* json = sub->add_flag("--json", f.json, json_help);
  if (has(formats, Format::kMarkdown)) json->excludes(sub->add_flag("--markdown", f.markdown, "Markdown output"));
  sub->final_callback([&f, formats] { resolve(f, formats); });
}

}  // namespace etproof_cli
