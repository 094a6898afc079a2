// Private to the library: number formatting shared by the gate's and the matrix's reports.
#pragma once

#include <cmath>
#include <iomanip>
#include <sstream>
#include <string>

namespace etproof::detail {

// `precision` significant digits; nan/inf spelled out.
inline std::string format_number(double v, int precision) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  std::ostringstream os;
  os << std::setprecision(precision) << v;
  return os.str();
}

// Cosines near 1 are written as 1 − ε so that fp32's 1 − 3e-12 does not print as "1.000000".
inline std::string cosine_text(double c) {
  if (std::isnan(c)) return "nan";
  if (c == 1) return "1";
  if (c > 0.999999 && c < 1) return "1-" + format_number(1 - c, 2);
  return format_number(c, 6);
}

// Text for an XML attribute or element (JUnit reports): &, <, >, " and ' escaped; control
// characters other than tab/newline dropped (XML 1.0 forbids them).
inline std::string xml_escape(const std::string& s) {
  std::string out;
  for (unsigned char ch : s) {
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        if (ch < 0x20 && ch != '\t' && ch != '\n') break;
        out += static_cast<char>(ch);
    }
  }
  return out;
}

}  // namespace etproof::detail
