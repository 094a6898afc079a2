// .npy reader/writer: round trips, numpy's own bytes, and every malformed file refused by name.
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "etproof/core/error.h"
#include "etproof/core/npy.h"
#include "test_support.h"

namespace etproof {
namespace {
namespace fs = std::filesystem;

std::vector<uint8_t> from_hex(const std::string& h) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i + 1 < h.size(); i += 2) out.push_back(uint8_t(std::stoi(h.substr(i, 2), nullptr, 16)));
  return out;
}

std::vector<uint8_t> slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void spit(const fs::path& p, const std::vector<uint8_t>& bytes) {
  std::ofstream out(p, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
}

// A .npy file with a hand-written header dict (format 1.0, padded as numpy pads).
std::vector<uint8_t> npy_bytes(const std::string& dict, const std::vector<uint8_t>& data) {
  std::string header = dict;
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string prefix("\x93NUMPY\x01\x00", 8);
  prefix += char(header.size() & 0xff);
  prefix += char(header.size() >> 8);
  const std::string all = prefix + header + std::string(data.begin(), data.end());
  return std::vector<uint8_t>(all.begin(), all.end());
}

// Expects read_npy to throw `kind`, with the file name and `needle` in the cause.
void expect_refused(const fs::path& p, ErrorKind kind, const std::string& needle) {
  try {
    read_npy(p);
    ADD_FAILURE() << "read_npy accepted " << p;
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    EXPECT_NE(e.cause().find(p.filename().string()), std::string::npos) << e.cause();
    EXPECT_NE(e.cause().find(needle), std::string::npos) << "expected '" << needle << "' in: " << e.cause();
    EXPECT_FALSE(e.remedy().empty());
  }
}

// numpy 2.4.6: np.save(f, np.array([1, -2.5, 65504, 2**-24, inf, -inf, nan, 0], dtype=float16))
const char* kNumpyF16 =
    "934e554d5059010076007b276465736372273a20273c6632272c2027666f727472616e5f6f72646572273a2046616c73"
    "652c20277368617065273a2028382c292c207d2020202020202020202020202020202020202020202020202020202020"
    "202020202020202020202020202020202020202020202020202020202020200a003c00c1ff7b0100007c00fc007e0000";
// numpy.lib.format.write_array(f, np.arange(6, dtype='<i4').reshape(2, 3), version=(2, 0))
const char* kNumpyV2I32 =
    "934e554d50590200740000007b276465736372273a20273c6934272c2027666f727472616e5f6f72646572273a204661"
    "6c73652c20277368617065273a2028322c2033292c207d20202020202020202020202020202020202020202020202020"
    "202020202020202020202020202020202020202020202020202020202020200a00000000010000000200000003000000"
    "0400000005000000";
// numpy.lib.format.write_array(f, np.array([[True, False]]), version=(3, 0))
const char* kNumpyV3Bool =
    "934e554d50590300740000007b276465736372273a20277c6231272c2027666f727472616e5f6f72646572273a204661"
    "6c73652c20277368617065273a2028312c2032292c207d20202020202020202020202020202020202020202020202020"
    "202020202020202020202020202020202020202020202020202020202020200a0100";

TEST(Npy, RoundTripsEveryDtype) {
  const auto dir = testing::scratch_dir();
  const std::vector<DType> all = {DType::kFloat32, DType::kFloat16, DType::kFloat64, DType::kInt8, DType::kUInt8,
                                  DType::kInt16,   DType::kInt32,   DType::kInt64,   DType::kBool};
  for (DType d : all) {
    HostTensor t;
    t.dtype = d;
    t.shape = {2, 3, 1};
    t.data.resize(t.numel() * dtype_size(d));
    for (size_t i = 0; i < t.data.size(); ++i) t.data[i] = uint8_t(d == DType::kBool ? i % 2 : (i * 37 + 11) & 0xff);
    const fs::path p = dir / (std::string(to_string(d)) + ".npy");
    write_npy(p, t);
    const HostTensor r = read_npy(p);
    EXPECT_EQ(r.dtype, d) << to_string(d);
    EXPECT_EQ(r.shape, t.shape) << to_string(d);
    EXPECT_EQ(r.data, t.data) << to_string(d);
    EXPECT_EQ(dtype_from_string(to_string(d)), d);
  }
  // Nothing but the written files remains: the temporary files were renamed into place.
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), long(all.size()));
}

TEST(Npy, RoundTripsScalarsAndEmptyTensors) {
  const auto dir = testing::scratch_dir();
  for (std::vector<int64_t> shape : {std::vector<int64_t>{}, {0, 4}, {5}, {1, 1, 1, 1, 1}}) {
    HostTensor t;
    t.dtype = DType::kFloat64;
    t.shape = shape;
    t.data.resize(t.numel() * 8);
    for (size_t i = 0; i < t.numel(); ++i) {
      double v = 0.25 * double(i) - 1;
      std::memcpy(t.data.data() + i * 8, &v, 8);
    }
    write_npy(dir / "t.npy", t);
    const HostTensor r = read_npy(dir / "t.npy");
    EXPECT_EQ(r.shape, shape) << shape_to_string(shape);
    EXPECT_EQ(r.to_double(), t.to_double()) << shape_to_string(shape);
  }
}

TEST(Npy, WritesExactlyWhatNumpyWrites) {
  const auto dir = testing::scratch_dir();
  const auto numpy_bytes = from_hex(kNumpyF16);
  spit(dir / "numpy.npy", numpy_bytes);
  const HostTensor t = read_npy(dir / "numpy.npy");
  write_npy(dir / "ours.npy", t);
  EXPECT_EQ(slurp(dir / "ours.npy"), numpy_bytes);
}

TEST(Npy, DecodesFloat16) {
  const auto dir = testing::scratch_dir();
  spit(dir / "f16.npy", from_hex(kNumpyF16));
  const HostTensor t = read_npy(dir / "f16.npy");
  ASSERT_EQ(t.dtype, DType::kFloat16);
  ASSERT_EQ(t.shape, std::vector<int64_t>{8});
  const auto v = t.to_double();
  EXPECT_EQ(v[0], 1.0);
  EXPECT_EQ(v[1], -2.5);
  EXPECT_EQ(v[2], 65504.0);                 // largest finite half
  EXPECT_EQ(v[3], std::ldexp(1.0, -24));    // smallest subnormal
  EXPECT_EQ(v[4], INFINITY);
  EXPECT_EQ(v[5], -INFINITY);
  EXPECT_TRUE(std::isnan(v[6]));
  EXPECT_EQ(v[7], 0.0);
  EXPECT_EQ(t.value_as_double(1), -2.5);
}

TEST(Npy, ReadsFormatVersions2And3) {
  const auto dir = testing::scratch_dir();
  spit(dir / "v2.npy", from_hex(kNumpyV2I32));
  const HostTensor a = read_npy(dir / "v2.npy");
  EXPECT_EQ(a.dtype, DType::kInt32);
  EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(a.to_double(), (std::vector<double>{0, 1, 2, 3, 4, 5}));

  spit(dir / "v3.npy", from_hex(kNumpyV3Bool));
  const HostTensor b = read_npy(dir / "v3.npy");
  EXPECT_EQ(b.dtype, DType::kBool);
  EXPECT_EQ(b.shape, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(b.to_double(), (std::vector<double>{1, 0}));
}

TEST(Npy, RefusesTruncatedData) {
  const auto dir = testing::scratch_dir();
  auto bytes = from_hex(kNumpyF16);
  bytes.pop_back();
  spit(dir / "short.npy", bytes);
  expect_refused(dir / "short.npy", ErrorKind::kNpyInvalid, "truncated");
}

TEST(Npy, RefusesTruncatedHeader) {
  const auto dir = testing::scratch_dir();
  auto bytes = from_hex(kNumpyF16);
  bytes.resize(40);
  spit(dir / "header.npy", bytes);
  expect_refused(dir / "header.npy", ErrorKind::kNpyInvalid, "truncated");
  spit(dir / "tiny.npy", {0x93, 'N', 'U'});
  expect_refused(dir / "tiny.npy", ErrorKind::kNpyInvalid, "magic");
}

TEST(Npy, RefusesBadMagic) {
  const auto dir = testing::scratch_dir();
  auto bytes = from_hex(kNumpyF16);
  bytes[1] = 'X';
  spit(dir / "magic.npy", bytes);
  expect_refused(dir / "magic.npy", ErrorKind::kNpyInvalid, "magic");
}

TEST(Npy, RefusesUnknownFormatVersion) {
  const auto dir = testing::scratch_dir();
  auto bytes = from_hex(kNumpyF16);
  bytes[6] = 4;
  spit(dir / "v4.npy", bytes);
  expect_refused(dir / "v4.npy", ErrorKind::kNpyInvalid, "version 4.0");
}

TEST(Npy, RefusesBigEndian) {
  const auto dir = testing::scratch_dir();
  spit(dir / "be.npy", npy_bytes("{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }", {0, 0, 128, 63}));
  expect_refused(dir / "be.npy", ErrorKind::kNpyInvalid, "big-endian");
}

TEST(Npy, RefusesFortranOrder) {
  const auto dir = testing::scratch_dir();
  spit(dir / "f.npy", npy_bytes("{'descr': '|u1', 'fortran_order': True, 'shape': (2, 2), }", {1, 2, 3, 4}));
  expect_refused(dir / "f.npy", ErrorKind::kNpyInvalid, "fortran_order");
}

TEST(Npy, RefusesHeaderThatLiesAboutTheData) {
  const auto dir = testing::scratch_dir();
  // Shape says 3 int16 (6 bytes); 8 bytes follow.
  spit(dir / "lie.npy", npy_bytes("{'descr': '<i2', 'fortran_order': False, 'shape': (3,), }", {1, 0, 2, 0, 3, 0, 4, 0}));
  expect_refused(dir / "lie.npy", ErrorKind::kNpyInvalid, "2 extra");
  // Shape says 4 int16; 6 bytes follow.
  spit(dir / "short.npy", npy_bytes("{'descr': '<i2', 'fortran_order': False, 'shape': (4,), }", {1, 0, 2, 0, 3, 0}));
  expect_refused(dir / "short.npy", ErrorKind::kNpyInvalid, "needs 8 bytes");
}

TEST(Npy, RefusesMalformedHeaders) {
  const auto dir = testing::scratch_dir();
  struct Case {
    const char* dict;
    const char* needle;
  };
  const Case cases[] = {
      {"{'descr': '<f4', 'shape': (1,), }", "missing key(s): 'fortran_order'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1), }", "not a tuple"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }", "non-negative"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'extra': 1, }", "unexpected key 'extra'"},
      {"{'descr': '<f4', 'fortran_order': 0, 'shape': (1,), }", "True or False"},
      {"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", "duplicate key"},
      {"{'descr': 'f4', 'fortran_order': False, 'shape': (1,), }", "byte-order"},
      {"{'descr': '|f4', 'fortran_order': False, 'shape': (1,), }", "little-endian"},
      {"['descr', '<f4']", "expected '{'"},
  };
  int i = 0;
  for (const auto& c : cases) {
    const fs::path p = dir / ("bad" + std::to_string(i++) + ".npy");
    spit(p, npy_bytes(c.dict, {0, 0, 128, 63}));
    SCOPED_TRACE(c.dict);
    expect_refused(p, ErrorKind::kNpyInvalid, c.needle);
  }
}

TEST(Npy, RefusesDtypesOutsideTheManifestSet) {
  const auto dir = testing::scratch_dir();
  spit(dir / "c8.npy", npy_bytes("{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }", std::vector<uint8_t>(8)));
  expect_refused(dir / "c8.npy", ErrorKind::kDtypeUnsupported, "'<c8'");
  spit(dir / "u2.npy", npy_bytes("{'descr': '<u2', 'fortran_order': False, 'shape': (1,), }", std::vector<uint8_t>(2)));
  expect_refused(dir / "u2.npy", ErrorKind::kDtypeUnsupported, "'<u2'");
}

TEST(Npy, MissingFileIsAnIoError) {
  const auto dir = testing::scratch_dir();
  expect_refused(dir / "absent.npy", ErrorKind::kIo, "no such file");
}

TEST(Npy, WriteRefusesInconsistentTensorAndUnwritableDirectory) {
  const auto dir = testing::scratch_dir();
  HostTensor t;
  t.dtype = DType::kFloat32;
  t.shape = {2};
  t.data.resize(4);  // needs 8
  EXPECT_THROW(
      try { write_npy(dir / "x.npy", t); } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
        throw;
      },
      Error);
  t.data.resize(8);
  try {
    write_npy(dir / "no-such-dir" / "x.npy", t);
    ADD_FAILURE() << "wrote into a missing directory";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kIo);
  }
  EXPECT_TRUE(fs::is_empty(dir));
}

TEST(Npy, ShapeToString) {
  EXPECT_EQ(shape_to_string({1, 3, 224, 224}), "[1, 3, 224, 224]");
  EXPECT_EQ(shape_to_string({}), "[]");
  EXPECT_EQ(shape_to_string({-1, 4}), "[-1, 4]");
}

}  // namespace
}  // namespace etproof
