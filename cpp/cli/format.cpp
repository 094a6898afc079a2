// etproof CLI — the shared --format option and its --json / --markdown aliases (cpp/cli/format.h).
#include "format.h"

#include <algorithm>
#include <sstream>
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

namespace {
// `text` with a newline at the last space before each line would pass `width` columns (code
// points, not bytes); newlines already in it are kept. A word longer than `width` stays whole.
std::string wrap_words(const std::string& text, size_t width) {
  std::string out;
  size_t col = 0, last_space = std::string::npos, col_at_space = 0;
  for (char ch : text) {
    if (ch == '\n') {
      out += ch;
      col = 0;
      last_space = std::string::npos;
      continue;
    }
    if (ch == ' ') {
      last_space = out.size();
      col_at_space = col;
    }
    out += ch;
    if ((static_cast<unsigned char>(ch) & 0xC0) != 0x80) ++col;
    if (col > width && last_space != std::string::npos) {
      out[last_space] = '\n';
      col -= col_at_space + 1;
      last_space = std::string::npos;
    }
  }
  return out;
}
}  // namespace

std::string WrappingFormatter::make_option_desc(const CLI::Option* opt) const {
  return wrap_words(CLI::Formatter::make_option_desc(opt), kHelpWidth - get_column_width());
}

std::string WrappingFormatter::make_subcommand(const CLI::App* sub) const {
  std::stringstream out;
  CLI::detail::format_help(out, sub->get_display_name(), wrap_words(sub->get_description(), kHelpWidth - get_column_width()),
                           get_column_width());
  return out.str();
}

std::string WrappingFormatter::make_description(const CLI::App* app) const {
  return wrap_words(CLI::Formatter::make_description(app), kHelpWidth);
}

}  // namespace etproof_cli
