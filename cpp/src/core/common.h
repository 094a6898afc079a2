// cpp/src/core/common.h — private to the library: the one copy of each small helper the parts share
// (text joining and number formatting, JSON numbers, an Error's one-line text, SHA-256, atomic
// file writes). Nothing here is public API; headers under include/etproof/ never include it.
#pragma once

#include <cmath>
#include <cstddef>
#include <filesystem>
#include <functional>
#include <iomanip>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "etproof/core/error.h"

namespace etproof::detail {

// "a, b, c" (or with `sep`); "" for none.
std::string join(const std::vector<std::string>& v, std::string_view sep = ", ");

// Whether `d` is exactly a date YYYY-MM-DD of the Gregorian calendar: month 1–12, the day within
// its month (February 29 in leap years only).
bool is_calendar_date(std::string_view d);
// Whether `s` is exactly a UTC time YYYY-MM-DDTHH:MM:SSZ: a calendar date, hours 0–23, minutes
// 0–59, seconds 0–60 (60: a leap second).
bool is_utc_timestamp(std::string_view s);
// join(v), or "none" when v is empty.
std::string join_or_none(const std::vector<std::string>& v, std::string_view sep = ", ");
// The state rule as every report says it (docs/design.md §5, "State"): "fresh per case (buffers:
// a, b)", or with `shared_across_methods` "fresh per case, shared by the methods (buffers: …)".
std::string state_rule(const std::vector<std::string>& buffers, bool shared_across_methods);

// Keeps in `slot` the worse of itself and `v`: the larger when `larger_is_worse`, else the smaller.
// A NaN is the worst of all and, once kept, stays; an empty `v` changes nothing. The one rule by
// which a matrix cell, a ledger record and the coverage page summarize many measurements.
inline void keep_worst(std::optional<double>& slot, const std::optional<double>& v,
                       bool larger_is_worse) {
  if (!v || (slot && std::isnan(*slot))) return;
  if (!slot || std::isnan(*v) || (larger_is_worse ? *v > *slot : *v < *slot)) slot = v;
}

// `precision` significant digits; nan/inf spelled out.
inline std::string format_number(double v, int precision) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  std::ostringstream os;
  os << std::setprecision(precision) << v;
  return os.str();
}

// `decimals` digits after the point; nan/inf spelled out.
inline std::string fixed_number(double v, int decimals) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  std::ostringstream os;
  os << std::fixed << std::setprecision(decimals) << v;
  return os.str();
}

// An SQNR in dB with one decimal ("inf" when identical; never "-0.0").
inline std::string sqnr_text(double db) {
  if (db > -0.05 && db < 0.05) db = 0;
  return std::isfinite(db) ? fixed_number(db, 1) : format_number(db, 6);
}

// Whether cosine_text writes `c` as 1 − ε (near 1, below it).
inline bool cosine_near_one(double c) { return c > 0.999999 && c < 1; }

// Cosines near 1 are written as 1 − ε so that fp32's 1 − 3e-12 does not print as "1.000000".
inline std::string cosine_text(double c) {
  if (std::isnan(c)) return "nan";
  if (c == 1) return "1";
  if (cosine_near_one(c)) return "1-" + format_number(1 - c, 2);
  return format_number(c, 6);
}

// A number in every JSON etproof writes (reports, the ledger): finite values as JSON numbers;
// JSON has no NaN or ±inf, so those are the strings "nan", "inf", "-inf" (never null: an SQNR of
// +inf means "identical", which null would hide). read_json_number is its inverse.
nlohmann::json json_number(double v);
// Absent: null.
nlohmann::json json_number(const std::optional<double>& v);
// A number json_number wrote (a JSON number or "nan"/"inf"/"-inf"); nullopt for anything else.
std::optional<double> read_json_number(const nlohmann::json& j);

// `s` quoted for a POSIX shell: '…' with every ' written as '\''.
inline std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char ch : s) q += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return q + "'";
}

// One line for an Error: "[kind] cause (executorch error 0xNN); remedy: remedy".
std::string error_line(const Error& e);

// SHA-256 fed piece by piece (OpenSSL EVP), for bytes that arrive in steps (a file being read).
// Each call throws Error{kIo} if OpenSSL fails. Move-only.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(Sha256&&) noexcept;
  Sha256& operator=(Sha256&&) noexcept;
  void update(const void* data, size_t size);
  // 64 lower-case hex digits; the digest is finished: call once.
  std::string hex_digest();

 private:
  struct Ctx;
  std::unique_ptr<Ctx> ctx_;
};

// SHA-256 of bytes, 64 lower-case hex digits (OpenSSL EVP). Throws Error{kIo} if OpenSSL fails.
std::string sha256_hex(const void* data, size_t size);
// `s` in base64 (RFC 4648 §4, with padding): for data: URIs (RFC 2397).
std::string base64(std::string_view s);
inline std::string sha256_hex(std::string_view s) { return sha256_hex(s.data(), s.size()); }

// What `p` is (following symlinks): file_type::not_found when nothing is there (also a dangling
// symlink, or a path through a regular file). Throws Error{kIo} naming `p` and the system's reason,
// with `remedy`, when that cannot be told: a symlink loop, a name too long, a directory above it
// that cannot be searched — std::filesystem's throwing forms would escape as filesystem_error.
std::filesystem::file_status path_status(const std::filesystem::path& p, const std::string& remedy);
inline bool path_exists(const std::filesystem::path& p, const std::string& remedy) {
  return std::filesystem::exists(path_status(p, remedy));
}
inline bool is_directory_path(const std::filesystem::path& p, const std::string& remedy) {
  return std::filesystem::is_directory(path_status(p, remedy));
}

// Writes `content` to `path` atomically: a temporary file beside it, then rename, so a reader
// never sees half a file and a failed write leaves the old one. Creates the parent directory.
// Throws Error{kIo} naming the path, with the remedy.
// Why `p` is not the regular file (not_a_file_text) or the directory (not_a_directory_text) a
// caller wanted, for messages: "no such file or directory", "a directory, not a file", "a file,
// not a directory", "a symbolic link loop" (ELOOP), "not a regular file" (a device, a socket).
std::string not_a_file_text(const std::filesystem::path& p);
std::string not_a_directory_text(const std::filesystem::path& p);

void write_file_atomic(const std::filesystem::path& path, std::string_view content);

// Runs fn(0) … fn(n − 1) on up to `jobs` threads and returns when all are done; jobs ≤ 1 runs
// them in this thread, in order. fn must not throw (catch inside it) and must only write state
// of its own index: callers collect results by index, so the order of the output never depends
// on the scheduling.
void parallel_for(size_t n, size_t jobs, const std::function<void(size_t)>& fn);

// Text for an XML or HTML attribute or element (JUnit reports, the matrix's HTML page): &, <, >, " and ' escaped; control
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
