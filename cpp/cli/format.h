// cpp/cli/format.h — the report format every report command takes (cpp/cli/format.cpp):
// --format text|json|markdown (the formats that command renders), with the older --json and
// --markdown flags kept as its aliases. A new format: its Format value and name here and in
// format.cpp, and its renderer call in the commands that render it.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace etproof_cli {

enum class Format { kText, kJson, kMarkdown };

std::string to_string(Format f);

struct FormatOption {
  Format format = Format::kText;  // what to print, once parsed
  std::string name;               // --format NAME
  bool json = false;              // --json: --format json
  bool markdown = false;          // --markdown: --format markdown
};

// Adds --format NAME, NAME one of `formats` (text first, the default), and its aliases: --json
// (help `json_help`) and, where `formats` has markdown, --markdown; those two exclude each other as
// before. A --format that names another format than --json or --markdown is a usage error (exit 2).
void add_format_option(CLI::App* sub, FormatOption& f, const std::vector<Format>& formats,
                       const std::string& json_help = "JSON output");

}  // namespace etproof_cli
