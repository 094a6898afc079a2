// cpp/cli/format.h — the report format every report command takes (cpp/cli/format.cpp): --format NAME,
// its choices and their help taken from the table of renderers of the report the command prints
// (etproof/render/formats.h), and the older --json and --markdown flags kept as its aliases where
// that table has json or markdown. A new format is a row in that table; nothing here changes.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "etproof/render/formats.h"

namespace etproof_cli {

// The help's formatter: CLI11's, with each option's and subcommand's description wrapped at word
// boundaries so that every line of `--help` fits kHelpWidth columns (CLI11 2.1 does not wrap).
inline constexpr size_t kHelpWidth = 120;
class WrappingFormatter : public CLI::Formatter {
 public:
  std::string make_option_desc(const CLI::Option* opt) const override;
  std::string make_subcommand(const CLI::App* sub) const override;
  std::string make_description(const CLI::App* app) const override;
};

// One --format choice: its name and what it holds.
struct FormatChoice {
  std::string name;
  std::string help;
};

struct FormatOption {
  std::string format;   // the format to print, once parsed: the table's first (text) unless asked
  std::string name;     // --format NAME
  bool json = false;    // --json: --format json
  bool markdown = false;  // --markdown: --format markdown
};

// Adds --format NAME, NAME one of `choices` (the first, text, the default), and its aliases: --json
// where `choices` has json and --markdown where it has markdown; those two exclude each other. A
// --format that names another format than --json or --markdown is a usage error (exit 2), as is a
// NAME not among `choices`.
void add_format_option(CLI::App* sub, FormatOption& f, const std::vector<FormatChoice>& choices);

// The same, the choices being `table`'s rows.
template <class Report>
void add_format_option(CLI::App* sub, FormatOption& f, etproof::Renderers<Report> table) {
  std::vector<FormatChoice> choices;
  for (const etproof::Renderer<Report>& r : table) choices.push_back({std::string(r.name), std::string(r.help)});
  add_format_option(sub, f, choices);
}

}  // namespace etproof_cli
