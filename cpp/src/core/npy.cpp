// etproof/npy.cpp — host tensors and the .npy format, versions 1.0–3.0 (etproof/npy.h).
//
// Format (numpy.lib.format): magic "\x93NUMPY", major and minor version bytes, header length
// (uint16 LE for 1.0, uint32 LE for 2.0 and 3.0), then an ASCII (3.0: UTF-8) Python dict literal
// {'descr': …, 'fortran_order': …, 'shape': (…), } padded with spaces and ended by '\n', then
// the raw C-ordered data. The reader is strict: exactly those three keys, little-endian, C order,
// and a data section whose length is exactly what the shape and dtype say.
#include "etproof/core/npy.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <system_error>

#include "etproof/core/error.h"
#include "core/common.h"

namespace etproof {
namespace fs = std::filesystem;

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;
constexpr const char* kNpyRemedy =
    "re-export the bundle (the file was damaged or not written by etproof), or write it with "
    "numpy.save from a C-ordered little-endian array";

struct DTypeInfo {
  DType dtype;
  const char* name;
  char kind;  // numpy kind character: f, i, u, b
  size_t size;
};

constexpr DTypeInfo kDTypes[] = {
    {DType::kFloat32, "float32", 'f', 4}, {DType::kFloat16, "float16", 'f', 2},
    {DType::kFloat64, "float64", 'f', 8}, {DType::kInt8, "int8", 'i', 1},
    {DType::kUInt8, "uint8", 'u', 1},     {DType::kInt16, "int16", 'i', 2},
    {DType::kInt32, "int32", 'i', 4},     {DType::kInt64, "int64", 'i', 8},
    {DType::kBool, "bool", 'b', 1},
};

const DTypeInfo& info(DType d) {
  for (const auto& i : kDTypes)
    if (i.dtype == d) return i;
  throw Error(ErrorKind::kInvalidArgument, "unknown DType value " + std::to_string(int(d)), "");
}

// numpy's descr for a dtype: '<f4', '|i1', '|b1', …
std::string descr_of(DType d) {
  const auto& i = info(d);
  return std::string(1, i.size == 1 ? '|' : '<') + i.kind + std::to_string(i.size);
}

[[noreturn]] void invalid(const fs::path& file, const std::string& what) {
  throw Error(ErrorKind::kNpyInvalid, file.string() + ": " + what, kNpyRemedy);
}

// A strict parser for the header's Python dict literal.
class HeaderParser {
 public:
  HeaderParser(std::string_view text, const fs::path& file) : s_(text), file_(file) {}

  struct Parsed {
    std::string descr;
    bool descr_is_list = false;
    bool fortran_order = false;
    std::vector<int64_t> shape;
  };

  Parsed parse() {
    Parsed p;
    bool have_descr = false, have_fortran = false, have_shape = false;
    skip_ws();
    expect('{');
    skip_ws();
    while (peek() != '}') {
      std::string key = parse_string("a key");
      skip_ws();
      expect(':');
      skip_ws();
      if (key == "descr") {
        if (have_descr) fail("duplicate key 'descr'");
        have_descr = true;
        if (peek() == '[') {
          p.descr_is_list = true;
          skip_balanced('[', ']');
        } else {
          p.descr = parse_string("the 'descr' value");
        }
      } else if (key == "fortran_order") {
        if (have_fortran) fail("duplicate key 'fortran_order'");
        have_fortran = true;
        p.fortran_order = parse_bool();
      } else if (key == "shape") {
        if (have_shape) fail("duplicate key 'shape'");
        have_shape = true;
        p.shape = parse_shape();
      } else {
        fail("unexpected key '" + key + "' (a .npy header has exactly descr, fortran_order, shape)");
      }
      skip_ws();
      if (peek() == ',') {
        ++pos_;
        skip_ws();
      } else if (peek() != '}') {
        fail("expected ',' or '}' at offset " + std::to_string(pos_));
      }
    }
    ++pos_;  // '}'
    skip_ws();
    if (pos_ != s_.size()) fail("unexpected text after the header dict at offset " + std::to_string(pos_));
    std::string missing;
    if (!have_descr) missing += " 'descr'";
    if (!have_fortran) missing += " 'fortran_order'";
    if (!have_shape) missing += " 'shape'";
    if (!missing.empty()) fail("missing key(s):" + missing);
    return p;
  }

 private:
  [[noreturn]] void fail(const std::string& what) { invalid(file_, "header: " + what); }

  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }

  void skip_ws() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r'))
      ++pos_;
  }

  void expect(char c) {
    if (peek() != c)
      fail(std::string("expected '") + c + "' at offset " + std::to_string(pos_));
    ++pos_;
  }

  std::string parse_string(const char* what) {
    char q = peek();
    if (q != '\'' && q != '"') fail(std::string("expected a quoted string for ") + what +
                                    " at offset " + std::to_string(pos_));
    ++pos_;
    std::string out;
    while (pos_ < s_.size() && s_[pos_] != q) {
      if (s_[pos_] == '\\') fail("escape sequences are not expected in a .npy header");
      out += s_[pos_++];
    }
    if (pos_ >= s_.size()) fail(std::string("unterminated string for ") + what);
    ++pos_;
    return out;
  }

  bool parse_bool() {
    if (s_.substr(pos_, 4) == "True") { pos_ += 4; return true; }
    if (s_.substr(pos_, 5) == "False") { pos_ += 5; return false; }
    fail("'fortran_order' must be True or False");
  }

  void skip_balanced(char open, char close) {
    int depth = 0;
    while (pos_ < s_.size()) {
      char c = s_[pos_++];
      if (c == open) ++depth;
      if (c == close && --depth == 0) return;
    }
    fail("unterminated structured 'descr'");
  }

  std::vector<int64_t> parse_shape() {
    expect('(');
    std::vector<int64_t> shape;
    bool trailing_comma = false;
    skip_ws();
    while (peek() != ')') {
      if (!std::isdigit(static_cast<unsigned char>(peek())))
        fail("'shape' must be a tuple of non-negative integers (offset " + std::to_string(pos_) + ")");
      int64_t v = 0;
      while (std::isdigit(static_cast<unsigned char>(peek()))) {
        int d = s_[pos_++] - '0';
        if (v > (std::numeric_limits<int64_t>::max() - d) / 10) fail("'shape' dimension overflows int64");
        v = v * 10 + d;
      }
      shape.push_back(v);
      skip_ws();
      trailing_comma = false;
      if (peek() == ',') {
        ++pos_;
        trailing_comma = true;
        skip_ws();
      } else if (peek() != ')') {
        fail("expected ',' or ')' in 'shape' at offset " + std::to_string(pos_));
      }
    }
    ++pos_;
    // Python: "(3)" is the int 3, not a tuple; numpy writes "(3,)".
    if (shape.size() == 1 && !trailing_comma) fail("'shape' (n) is not a tuple; a 1-D shape is written (n,)");
    return shape;
  }

  std::string_view s_;
  size_t pos_ = 0;
  const fs::path& file_;
};

uint32_t read_le(const uint8_t* p, size_t n) {
  uint32_t v = 0;
  for (size_t i = 0; i < n; ++i) v |= uint32_t(p[i]) << (8 * i);
  return v;
}

std::vector<uint8_t> read_file(const fs::path& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec))
    throw Error(ErrorKind::kIo, "cannot read " + path.string() + ": " + detail::not_a_file_text(path),
                "check the path (a bundle's golden files live in NAME.goldens/ next to its manifest)");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorKind::kIo, "cannot open " + path.string() + ": " + std::strerror(errno), "check the file's permissions");
  const auto size = fs::file_size(path, ec);
  if (ec) throw Error(ErrorKind::kIo, "cannot stat " + path.string() + ": " + ec.message(), "check the file system");
  std::vector<uint8_t> bytes(size);
  in.read(reinterpret_cast<char*>(bytes.data()), std::streamsize(size));
  if (size_t(in.gcount()) != size)
    throw Error(ErrorKind::kIo, "error reading " + path.string() + " (short read)", "check the file system");
  return bytes;
}

double half_to_double(uint16_t h) {
  const int sign = h >> 15;
  const int exp = (h >> 10) & 0x1f;
  const int mant = h & 0x3ff;
  double v;
  if (exp == 0) {
    v = std::ldexp(double(mant), -24);  // zero or subnormal
  } else if (exp == 31) {
    v = mant ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  } else {
    v = std::ldexp(double(mant | 0x400), exp - 25);
  }
  return sign ? -v : v;
}

// numel * size with overflow checks; nullopt on overflow.
std::optional<uint64_t> data_bytes(const std::vector<int64_t>& shape, size_t elem) {
  uint64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) return std::nullopt;
    if (d != 0 && n > std::numeric_limits<uint64_t>::max() / uint64_t(d)) return std::nullopt;
    n *= uint64_t(d);
  }
  if (elem != 0 && n > std::numeric_limits<uint64_t>::max() / elem) return std::nullopt;
  return n * elem;
}

}  // namespace

std::string_view to_string(DType d) { return info(d).name; }

std::optional<DType> dtype_from_string(std::string_view s) {
  for (const auto& i : kDTypes)
    if (s == i.name) return i.dtype;
  return std::nullopt;
}

size_t dtype_size(DType d) { return info(d).size; }

size_t HostTensor::numel() const {
  size_t n = 1;
  for (int64_t d : shape) n *= d > 0 ? size_t(d) : 0;
  return n;
}

double HostTensor::value_as_double(size_t i) const {
  const size_t sz = dtype_size(dtype);
  if ((i + 1) * sz > data.size())
    throw Error(ErrorKind::kInvalidArgument,
                "element " + std::to_string(i) + " is outside a tensor of " +
                    std::to_string(data.size() / sz) + " elements",
                "");
  const uint8_t* p = data.data() + i * sz;
  auto load = [p](auto v) {
    std::memcpy(&v, p, sizeof(v));
    return v;
  };
  switch (dtype) {
    case DType::kFloat32: return load(float{});
    case DType::kFloat16: return half_to_double(load(uint16_t{}));
    case DType::kFloat64: return load(double{});
    case DType::kInt8: return load(int8_t{});
    case DType::kUInt8: return load(uint8_t{});
    case DType::kInt16: return load(int16_t{});
    case DType::kInt32: return load(int32_t{});
    case DType::kInt64: return double(load(int64_t{}));
    case DType::kBool: return *p != 0 ? 1.0 : 0.0;
  }
  return 0;
}

std::vector<double> HostTensor::to_double() const {
  const size_t n = std::min(numel(), data.size() / dtype_size(dtype));
  std::vector<double> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = value_as_double(i);
  return out;
}

std::string shape_to_string(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

HostTensor read_npy(const fs::path& path) {
  const std::vector<uint8_t> bytes = read_file(path);
  if (bytes.size() < kMagicLen + 2 || std::memcmp(bytes.data(), kMagic, kMagicLen) != 0)
    invalid(path, "not a .npy file (bad magic; expected \\x93NUMPY)");
  const int major = bytes[6], minor = bytes[7];
  if (major < 1 || major > 3 || minor != 0)
    invalid(path, "unsupported .npy format version " + std::to_string(major) + "." +
                      std::to_string(minor) + " (this reader knows 1.0, 2.0 and 3.0)");
  const size_t len_size = major == 1 ? 2 : 4;
  const size_t prefix = kMagicLen + 2 + len_size;
  if (bytes.size() < prefix) invalid(path, "truncated inside the header length field");
  const uint64_t header_len = read_le(bytes.data() + 8, len_size);
  if (bytes.size() < prefix + header_len)
    invalid(path, "truncated: header length says " + std::to_string(header_len) +
                      " bytes, the file has " + std::to_string(bytes.size() - prefix) + " after the prefix");
  std::string_view header(reinterpret_cast<const char*>(bytes.data() + prefix), header_len);
  if (header.empty() || header.back() != '\n') invalid(path, "header: does not end with a newline");
  for (char c : header)
    if (major < 3 && static_cast<unsigned char>(c) >= 0x80)
      invalid(path, "header: non-ASCII byte in a format " + std::to_string(major) + ".0 header");

  const auto h = HeaderParser(header, path).parse();
  if (h.descr_is_list)
    throw Error(ErrorKind::kDtypeUnsupported,
                path.string() + ": structured dtype (a record 'descr' list) is not supported",
                "save one plain array per tensor");
  if (h.fortran_order)
    invalid(path, "fortran_order True is not supported (C order only); save np.ascontiguousarray(a)");
  const char order = h.descr.empty() ? '\0' : h.descr[0];
  if (order == '>')
    invalid(path, "big-endian data ('" + h.descr + "') is not supported; save a.astype(a.dtype.newbyteorder('<'))");
  if (order != '<' && order != '|' && order != '=')
    invalid(path, "header: 'descr' '" + h.descr + "' has no byte-order character");
  const std::string_view rest = std::string_view(h.descr).substr(1);
  std::optional<DType> dtype;
  for (const auto& i : kDTypes) {
    if (rest == std::string(1, i.kind) + std::to_string(i.size)) dtype = i.dtype;
  }
  if (!dtype)
    throw Error(ErrorKind::kDtypeUnsupported,
                path.string() + ": dtype '" + h.descr + "' is not one etproof carries (float32, "
                "float16, float64, int8, uint8, int16, int32, int64, bool)",
                "convert the array to one of those dtypes before saving");
  const size_t elem = dtype_size(*dtype);
  if (elem > 1 && order != '<')
    invalid(path, "header: multi-byte 'descr' '" + h.descr + "' must be little-endian ('<')");
  if (order == '=')  // native order is little-endian on every machine etproof supports
    invalid(path, "header: 'descr' '" + h.descr + "' uses native order '='; numpy writes '<' or '|'");

  const auto need = data_bytes(h.shape, elem);
  if (!need) invalid(path, "header: shape " + shape_to_string(h.shape) + " overflows");
  const uint64_t have = bytes.size() - prefix - header_len;
  if (have < *need)
    invalid(path, "truncated: shape " + shape_to_string(h.shape) + " of " +
                      std::string(to_string(*dtype)) + " needs " + std::to_string(*need) +
                      " bytes of data, the file has " + std::to_string(have));
  if (have > *need)
    invalid(path, "header does not match the data: shape " + shape_to_string(h.shape) + " of " +
                      std::string(to_string(*dtype)) + " needs " + std::to_string(*need) +
                      " bytes of data, the file has " + std::to_string(have) + " (" +
                      std::to_string(have - *need) + " extra)");

  HostTensor t;
  t.dtype = *dtype;
  t.shape = h.shape;
  t.data.assign(bytes.begin() + prefix + header_len, bytes.end());
  return t;
}

void write_npy(const fs::path& path, const HostTensor& t) {
  const auto need = data_bytes(t.shape, dtype_size(t.dtype));
  if (!need || *need != t.data.size())
    throw Error(ErrorKind::kInvalidArgument,
                "cannot write " + path.string() + ": tensor of shape " + shape_to_string(t.shape) +
                    " and dtype " + std::string(to_string(t.dtype)) + " holds " +
                    std::to_string(t.data.size()) + " bytes",
                "give the tensor numel() * dtype_size(dtype) bytes");

  std::string dict = "{'descr': '" + descr_of(t.dtype) + "', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < t.shape.size(); ++i) {
    if (i) dict += ", ";
    dict += std::to_string(t.shape[i]);
  }
  if (t.shape.size() == 1) dict += ",";
  dict += "), }";
  // Byte for byte what numpy.save writes (numpy.lib.format._write_array_header / _wrap_header):
  // spare spaces so the first dimension can grow in place (GROWTH_AXIS_MAX_DIGITS = 21), then
  // padding so magic + version + length + header is a multiple of 64 (ARRAY_ALIGN), ending in
  // '\n'. Format 1.0 unless the header outgrows its uint16 length.
  if (!t.shape.empty()) {
    const size_t digits = std::to_string(t.shape[0]).size();
    if (digits < 21) dict += std::string(21 - digits, ' ');
  }
  int major = 1;
  size_t prefix = kMagicLen + 2 + 2;
  const size_t hlen = dict.size() + 1;
  size_t padlen = 64 - (prefix + hlen) % 64;
  if (hlen + padlen > 0xffff) {
    major = 2;
    prefix = kMagicLen + 2 + 4;
    padlen = 64 - (prefix + hlen) % 64;
  }
  std::string header = dict + std::string(padlen, ' ') + "\n";

  std::string out(kMagic, kMagicLen);
  out += char(major);
  out += char(0);
  const size_t hl = header.size();
  out += char(hl & 0xff);
  out += char((hl >> 8) & 0xff);
  if (major == 2) {
    out += char((hl >> 16) & 0xff);
    out += char((hl >> 24) & 0xff);
  }
  out += header;

  static std::atomic<unsigned> counter{0};
  fs::path tmp = path;
  tmp += ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f)
      throw Error(ErrorKind::kIo, "cannot write " + tmp.string() + ": " + std::strerror(errno),
                  "check that the directory exists and is writable");
    f.write(out.data(), std::streamsize(out.size()));
    f.write(reinterpret_cast<const char*>(t.data.data()), std::streamsize(t.data.size()));
    f.flush();
    if (!f) {
      std::error_code ec;
      fs::remove(tmp, ec);
      throw Error(ErrorKind::kIo, "error writing " + tmp.string(), "check free space on the file system");
    }
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    std::error_code ec2;
    fs::remove(tmp, ec2);
    throw Error(ErrorKind::kIo, "cannot rename " + tmp.string() + " to " + path.string() + ": " + ec.message(),
                "check that the destination directory is writable");
  }
}

}  // namespace etproof
