// cpp/src/core/common.cpp — the shared small helpers (common.h).
#include "core/common.h"

#include <openssl/evp.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <fstream>
#include <thread>
#include <memory>

namespace etproof::detail {
namespace fs = std::filesystem;

std::string join(const std::vector<std::string>& v, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) out += sep;
    out += v[i];
  }
  return out;
}

std::string join_or_none(const std::vector<std::string>& v, std::string_view sep) {
  return v.empty() ? std::string("none") : join(v, sep);
}

std::string state_rule(const std::vector<std::string>& buffers, bool shared_across_methods) {
  return std::string("fresh per case") + (shared_across_methods ? ", shared by the methods" : "") +
         " (buffers: " + join(buffers) + ")";
}

nlohmann::json json_number(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

nlohmann::json json_number(const std::optional<double>& v) {
  return v ? json_number(*v) : nlohmann::json(nullptr);
}

std::optional<double> read_json_number(const nlohmann::json& j) {
  if (j.is_number()) return j.get<double>();
  if (j.is_string()) {
    const std::string& s = j.get_ref<const std::string&>();
    if (s == "inf") return INFINITY;
    if (s == "-inf") return -INFINITY;
    if (s == "nan") return NAN;
  }
  return std::nullopt;
}

std::string error_line(const Error& e) {
  std::string s = "[" + std::string(to_string(e.kind())) + "] " + e.cause();
  if (e.et_error()) {
    std::ostringstream os;
    os << " (executorch error 0x" << std::hex << std::setw(2) << std::setfill('0') << *e.et_error()
       << ")";
    s += os.str();
  }
  if (!e.remedy().empty()) s += "; remedy: " + e.remedy();
  return s;
}

struct Sha256::Ctx {
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> md{EVP_MD_CTX_new(), &EVP_MD_CTX_free};
};

Sha256::Sha256() : ctx_(std::make_unique<Ctx>()) {
  if (!ctx_->md || EVP_DigestInit_ex(ctx_->md.get(), EVP_sha256(), nullptr) != 1)
    throw Error(ErrorKind::kIo, "OpenSSL could not start a SHA-256 digest", "check the OpenSSL installation");
}
Sha256::~Sha256() = default;
Sha256::Sha256(Sha256&&) noexcept = default;
Sha256& Sha256::operator=(Sha256&&) noexcept = default;

void Sha256::update(const void* data, size_t size) {
  if (size > 0 && EVP_DigestUpdate(ctx_->md.get(), data, size) != 1)
    throw Error(ErrorKind::kIo, "OpenSSL SHA-256 update failed", "check the OpenSSL installation");
}

std::string Sha256::hex_digest() {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_DigestFinal_ex(ctx_->md.get(), md, &len) != 1)
    throw Error(ErrorKind::kIo, "OpenSSL SHA-256 final failed", "check the OpenSSL installation");
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * len);
  for (unsigned i = 0; i < len; ++i) {
    out += kHex[md[i] >> 4];
    out += kHex[md[i] & 15];
  }
  return out;
}

std::string base64(std::string_view s) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((s.size() + 2) / 3 * 4);
  for (size_t i = 0; i < s.size(); i += 3) {
    const size_t n = std::min<size_t>(3, s.size() - i);
    uint32_t v = uint32_t(uint8_t(s[i])) << 16;
    if (n > 1) v |= uint32_t(uint8_t(s[i + 1])) << 8;
    if (n > 2) v |= uint32_t(uint8_t(s[i + 2]));
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += n > 1 ? kAlphabet[(v >> 6) & 63] : '=';
    out += n > 2 ? kAlphabet[v & 63] : '=';
  }
  return out;
}

std::string sha256_hex(const void* data, size_t size) {
  Sha256 sha;
  sha.update(data, size);
  return sha.hex_digest();
}

fs::file_status path_status(const fs::path& p, const std::string& remedy) {
  std::error_code ec;
  const fs::file_status st = fs::status(p, ec);
  // libstdc++ sets ec for a path that is not there too (ENOENT, ENOTDIR), with the type not_found.
  if (ec && st.type() != fs::file_type::not_found)
    throw Error(ErrorKind::kIo, "cannot examine " + p.string() + ": " + ec.message(), remedy);
  return st;
}

void write_file_atomic(const fs::path& path, std::string_view content) {
  std::error_code ec;
  if (path.has_parent_path()) fs::create_directories(path.parent_path(), ec);
  const fs::path tmp = path.string() + ".tmp." + std::to_string(getpid());
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f.write(content.data(), std::streamsize(content.size()));
    f.flush();
    if (!f) {
      fs::remove(tmp, ec);
      throw Error(ErrorKind::kIo, "cannot write " + tmp.string(),
                  "check that the directory exists, is writable and has free space");
    }
  }
  fs::rename(tmp, path, ec);
  if (ec) {
    std::error_code ec2;
    fs::remove(tmp, ec2);
    throw Error(ErrorKind::kIo, "cannot replace " + path.string() + ": " + ec.message(),
                "check the path and its permissions");
  }
}

void parallel_for(size_t n, size_t jobs, const std::function<void(size_t)>& fn) {
  if (jobs <= 1 || n <= 1) {
    for (size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i = next++; i < n; i = next++) fn(i);
  };
  std::vector<std::thread> threads;
  for (size_t t = 1; t < std::min(jobs, n); ++t) threads.emplace_back(worker);
  worker();
  for (auto& t : threads) t.join();
}

namespace {
bool digits_at(std::string_view s, std::initializer_list<size_t> at) {
  for (size_t i : at)
    if (i >= s.size() || s[i] < '0' || s[i] > '9') return false;
  return true;
}
int number_at(std::string_view s, size_t pos, size_t len) {
  int v = 0;
  for (size_t i = pos; i < pos + len; ++i) v = v * 10 + (s[i] - '0');
  return v;
}
}  // namespace

bool is_calendar_date(std::string_view d) {
  if (d.size() != 10 || d[4] != '-' || d[7] != '-' || !digits_at(d, {0, 1, 2, 3, 5, 6, 8, 9})) return false;
  const int y = number_at(d, 0, 4), m = number_at(d, 5, 2), day = number_at(d, 8, 2);
  if (m < 1 || m > 12 || day < 1) return false;
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  return day <= kDays[m - 1] + (m == 2 && leap ? 1 : 0);
}

bool is_utc_timestamp(std::string_view s) {
  if (s.size() != 20 || s[10] != 'T' || s[13] != ':' || s[16] != ':' || s[19] != 'Z') return false;
  if (!is_calendar_date(s.substr(0, 10)) || !digits_at(s, {11, 12, 14, 15, 17, 18})) return false;
  return number_at(s, 11, 2) <= 23 && number_at(s, 14, 2) <= 59 && number_at(s, 17, 2) <= 60;
}

namespace {
// What is at `p`, for messages: nullopt when it is of the kind wanted.
std::string what_is_at(const std::filesystem::path& p) {
  std::error_code ec;
  const auto st = std::filesystem::status(p, ec);
  if (ec && ec.value() == ELOOP) return "a symbolic link loop";
  if (ec || st.type() == std::filesystem::file_type::not_found) {
    std::error_code lec;
    if (std::filesystem::is_symlink(std::filesystem::symlink_status(p, lec)))
      return "a symbolic link to nothing";
    return "no such file or directory";
  }
  if (std::filesystem::is_directory(st)) return "a directory";
  if (std::filesystem::is_regular_file(st)) return "a file";
  return "not a regular file";
}
}  // namespace

std::string not_a_file_text(const std::filesystem::path& p) {
  const std::string what = what_is_at(p);
  return what == "a directory" ? "a directory, not a file" : what;
}

std::string not_a_directory_text(const std::filesystem::path& p) {
  const std::string what = what_is_at(p);
  return what == "a file" ? "a file, not a directory" : what;
}

}  // namespace etproof::detail
