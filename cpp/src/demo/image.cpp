// The classification demo's C++ side: decode, resize, center-crop, normalize per the manifest's
// preprocessing, bit for bit as the export half's PIL + numpy preprocessing
// (python/etproof/demo/efficientnet_lite0.py, python/etproof/goldens/*.py `preprocess`):
//   decode     JPEG (told by its first bytes FF D8 FF) through libjpeg-turbo with its default
//              settings, the library Pillow decodes JPEG with; anything else through stb_image
//              (libstb provides its implementation; this file only includes its declarations).
//   resize     Pillow's 8-bit BILINEAR resampler (Pillow src/libImaging/Resample.c), not
//              stb_image_resize: its triangle filter aborts the process on an assertion
//              (stbir__normalize_downsample_coefficients, `total < 1.1f`) for ordinary downscales
//              such as chelsea.png's 451×300 → 385×256 (Debian libstb 0.0~git20220908), and a
//              double-precision resampler lands one 8-bit level away from Pillow's fixed point.
//   normalize  float32 arithmetic, as numpy's (px - mean) / std on float32 arrays.
#include "etproof/demo/image.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <memory>

#include <jpeglib.h>  // after <cstdio>: it uses FILE and size_t without including their headers
#include <jerror.h>   // JWRN_JPEG_EOF
#include <stb_image.h>

#include "etproof/core/error.h"

namespace etproof {

namespace {

// Which axis of the spec holds the channels: "nchw" / "nhwc" from the manifest, or derived from
// the shape when the manifest does not say and only one reading of the shape is possible.
bool channels_first(const TensorSpec& spec, size_t rank) {
  if (spec.layout) {
    if (*spec.layout == "nchw") return true;
    if (*spec.layout == "nhwc") return false;
    throw Error(ErrorKind::kShapeMismatch,
                "input \"" + spec.name + "\" has layout \"" + *spec.layout +
                    "\"; image preprocessing knows nchw and nhwc",
                "re-export the bundle with an nchw or nhwc image input");
  }
  const int64_t first = spec.shape[rank - 3];
  const int64_t last = spec.shape[rank - 1];
  if (first == 3 && last != 3) return true;
  if (last == 3 && first != 3) return false;
  throw Error(ErrorKind::kShapeMismatch,
              "input \"" + spec.name + "\" " + shape_to_string(spec.shape) +
                  " has no recorded layout and its shape does not say where the channels are",
              "re-export the bundle so the manifest records the input's layout (nchw or nhwc)");
}

// What the preprocessing produces for `spec`: its shape and layout, checked against the spec.
struct OutputPlan {
  std::vector<int64_t> shape;
  bool nchw = true;
};

OutputPlan plan_output(const ImagePreprocessing& pp, const TensorSpec& spec) {
  if (spec.dtype != DType::kFloat32)
    throw Error(ErrorKind::kDtypeUnsupported,
                "input \"" + spec.name + "\" is " + std::string(to_string(spec.dtype)) +
                    "; image preprocessing produces float32",
                "use a bundle whose image input is float32");
  const size_t rank = spec.shape.size();
  if (rank != 3 && rank != 4)
    throw Error(ErrorKind::kShapeMismatch,
                "input \"" + spec.name + "\" " + shape_to_string(spec.shape) +
                    " is not an image tensor (rank 3 or 4)",
                "use a bundle whose image input is [N, C, H, W] or [N, H, W, C]");
  constexpr int64_t kMaxSide = std::numeric_limits<int>::max() / 4;
  if (pp.resize_shorter <= 0 || pp.crop_h <= 0 || pp.crop_w <= 0 ||
      pp.resize_shorter > kMaxSide || pp.crop_h > kMaxSide || pp.crop_w > kMaxSide)
    throw Error(ErrorKind::kManifestInvalid,
                "image preprocessing has resize_shorter " + std::to_string(pp.resize_shorter) +
                    ", crop " + std::to_string(pp.crop_h) + "x" + std::to_string(pp.crop_w),
                "re-export the bundle with positive resize and crop sizes");
  OutputPlan plan;
  plan.nchw = channels_first(spec, rank);
  if (rank == 4) plan.shape.push_back(1);
  if (plan.nchw)
    plan.shape.insert(plan.shape.end(), {3, pp.crop_h, pp.crop_w});
  else
    plan.shape.insert(plan.shape.end(), {pp.crop_h, pp.crop_w, 3});
  for (size_t i = 0; i < rank; ++i)
    if (spec.shape[i] != -1 && spec.shape[i] != plan.shape[i])
      throw Error(ErrorKind::kShapeMismatch,
                  "input \"" + spec.name + "\" is " + shape_to_string(spec.shape) +
                      " but the manifest's preprocessing produces " + shape_to_string(plan.shape),
                  "re-export the bundle; its preprocessing and input shape disagree");
  return plan;
}

// ---- decoding ---------------------------------------------------------------------------------

std::vector<unsigned char> read_file(const std::filesystem::path& image) {
  std::error_code ec;
  std::ifstream in(image, std::ios::binary);
  if (!in) {
    const int err = errno;
    const bool exists = std::filesystem::exists(image, ec);
    throw Error(ErrorKind::kIo,
                "cannot open image " + image.string() + ": " +
                    (exists ? std::strerror(err) : "no such file"),
                exists ? "check the file's permissions" : "check the path; the file does not exist");
  }
  std::vector<unsigned char> bytes((std::istreambuf_iterator<char>(in)),
                                   std::istreambuf_iterator<char>());
  if (in.bad())
    throw Error(ErrorKind::kIo, "cannot read image " + image.string(),
                "check the file and the disk it is on");
  return bytes;
}

// libjpeg reports fatal errors through error_exit, which must not return: this one longjmps back
// into the function that called libjpeg (jpeg_header, jpeg_start, jpeg_rows below), with the message kept.
// Those functions hold no C++ object, so the jump skips no destructor. Warnings (corrupt data
// libjpeg can step over) are ignored as Pillow ignores them, except a premature end of the data:
// libjpeg would pad the picture with grey, Pillow refuses the file ("image file is truncated").
struct JpegErrors {
  jpeg_error_mgr pub;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

[[noreturn]] void jpeg_fail(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<JpegErrors*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, err->message);
  std::longjmp(err->jump, 1);
}

void jpeg_warning(j_common_ptr cinfo, int msg_level) {
  if (msg_level < 0 && cinfo->err->msg_code == JWRN_JPEG_EOF) jpeg_fail(cinfo);
  if (msg_level < 0) ++cinfo->err->num_warnings;  // otherwise silent, as Pillow's decoder
}

void jpeg_silent(j_common_ptr) {}

// The header, and the colour space asked for: RGB (libjpeg converts YCbCr, RGB and grayscale to
// it), or CMYK for CMYK and YCCK pictures, converted below as Pillow converts them.
bool jpeg_header(jpeg_decompress_struct* cinfo, JpegErrors* err, unsigned char* data,
                 unsigned long size) {
  if (setjmp(err->jump)) return false;
  jpeg_mem_src(cinfo, data, size);
  jpeg_read_header(cinfo, TRUE);
  cinfo->out_color_space =
      (cinfo->jpeg_color_space == JCS_CMYK || cinfo->jpeg_color_space == JCS_YCCK) ? JCS_CMYK
                                                                                   : JCS_RGB;
  return true;
}

bool jpeg_start(jpeg_decompress_struct* cinfo, JpegErrors* err) {
  if (setjmp(err->jump)) return false;
  jpeg_start_decompress(cinfo);
  return true;
}

// Every scanline into `out` (output_width × output_components bytes a row, no padding).
bool jpeg_rows(jpeg_decompress_struct* cinfo, JpegErrors* err, unsigned char* out) {
  if (setjmp(err->jump)) return false;
  const size_t stride = static_cast<size_t>(cinfo->output_width) * cinfo->output_components;
  while (cinfo->output_scanline < cinfo->output_height) {
    JSAMPROW row = out + cinfo->output_scanline * stride;
    if (jpeg_read_scanlines(cinfo, &row, 1) != 1) break;
  }
  jpeg_finish_decompress(cinfo);
  return true;
}

bool jpeg_abort_quietly(jpeg_decompress_struct* cinfo, JpegErrors* err) {
  if (setjmp(err->jump)) return false;
  jpeg_destroy_decompress(cinfo);
  return true;
}

// Pillow refuses images of more than 2 × Image.MAX_IMAGE_PIXELS pixels (DecompressionBombError);
// so does this, before allocating them (a JPEG header may claim 65500 × 65500).
constexpr int64_t kMaxPixels = 2 * (int64_t{1024} * 1024 * 1024 / 4 / 3);

// Sizes as a header declares them: stb_image's info gives a top-down BMP a negative height (found
// by fuzz_image: 254 x -2097153 passed a signed check, then decoded to 1.6 GB), so both are taken
// by magnitude.
void check_pixel_count(const std::filesystem::path& image, int64_t w, int64_t h) {
  w = w < 0 ? -w : w;
  h = h < 0 ? -h : h;
  if (w * h > kMaxPixels)
    throw Error(ErrorKind::kIo,
                "image " + image.string() + " is " + std::to_string(w) + "x" + std::to_string(h) +
                    " pixels, more than the " + std::to_string(kMaxPixels) +
                    " Pillow accepts (a decompression bomb?)",
                "downscale the image before classifying it");
}

[[noreturn]] void undecodable(const std::filesystem::path& image, const std::string& why) {
  throw Error(ErrorKind::kIo, "cannot decode image " + image.string() + ": " + why,
              "pass an intact JPEG, PNG, BMP, TGA or GIF file (re-save or re-download this one)");
}

Rgb8Image decode_jpeg(const std::filesystem::path& image, std::vector<unsigned char>& bytes) {
  // Heap-held so its address stays fixed for the callbacks and nothing in it needs destroying.
  auto err = std::make_unique<JpegErrors>();
  auto cinfo = std::make_unique<jpeg_decompress_struct>();
  cinfo->err = jpeg_std_error(&err->pub);
  err->pub.error_exit = jpeg_fail;
  err->pub.emit_message = jpeg_warning;
  err->pub.output_message = jpeg_silent;
  err->message[0] = '\0';
  jpeg_create_decompress(cinfo.get());
  std::vector<unsigned char> raw;
  bool ok = jpeg_header(cinfo.get(), err.get(), bytes.data(), static_cast<unsigned long>(bytes.size()));
  if (ok) {
    try {  // before libjpeg allocates anything the size of the picture
      check_pixel_count(image, cinfo->image_width, cinfo->image_height);
    } catch (...) {
      jpeg_abort_quietly(cinfo.get(), err.get());
      throw;
    }
    ok = jpeg_start(cinfo.get(), err.get());
  }
  const int w = ok ? static_cast<int>(cinfo->output_width) : 0;
  const int h = ok ? static_cast<int>(cinfo->output_height) : 0;
  const int n = ok ? cinfo->output_components : 0;
  if (ok && (w <= 0 || h <= 0 || (n != 3 && n != 4))) {
    ok = false;
    std::snprintf(err->message, sizeof err->message, "unexpected output %dx%d with %d components",
                  w, h, n);
  }
  if (ok) {
    try {
      raw.resize(static_cast<size_t>(w) * h * n);
    } catch (const std::bad_alloc&) {
      jpeg_abort_quietly(cinfo.get(), err.get());
      throw Error(ErrorKind::kOutOfMemory,
                  "image " + image.string() + " is " + std::to_string(w) + "x" +
                      std::to_string(h) + " pixels: no memory to decode it",
                  "pass a smaller image");
    }
    ok = jpeg_rows(cinfo.get(), err.get(), raw.data());
  }
  const std::string why = err->message;
  jpeg_abort_quietly(cinfo.get(), err.get());
  if (!ok) undecodable(image, why.empty() ? "libjpeg failed" : why);

  Rgb8Image out;
  out.width = w;
  out.height = h;
  if (n == 3) {
    out.pixels = std::move(raw);
    return out;
  }
  // CMYK: Pillow reads a CMYK JPEG as Adobe-inverted ("CMYK;I": every sample s becomes 255 − s),
  // then convert("RGB") is Pillow's cmyk2rgb (libImaging/Convert.c):
  //   nk = 255 − k;  r = clip8(nk − MULDIV255(c, nk)),  MULDIV255(a, b) = ((t >> 8) + t) >> 8,
  //   t = a·b + 128.
  out.pixels.resize(static_cast<size_t>(w) * h * 3);
  for (size_t i = 0, px = static_cast<size_t>(w) * h; i < px; ++i) {
    const unsigned char* s = &raw[i * 4];
    const int nk = s[3];  // 255 − (255 − k)
    for (int c = 0; c < 3; ++c) {
      const int t = (255 - s[c]) * nk + 128;
      out.pixels[i * 3 + c] = static_cast<uint8_t>(std::clamp(nk - (((t >> 8) + t) >> 8), 0, 255));
    }
  }
  return out;
}

struct StbFree {
  void operator()(unsigned char* p) const { stbi_image_free(p); }
};

Rgb8Image decode_stb(const std::filesystem::path& image, const std::vector<unsigned char>& bytes) {
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max()))
    undecodable(image, "file too large");
  int w = 0, h = 0, c = 0;
  if (stbi_info_from_memory(bytes.data(), static_cast<int>(bytes.size()), &w, &h, &c))
    check_pixel_count(image, w, h);
  std::unique_ptr<unsigned char, StbFree> pixels(stbi_load_from_memory(
      bytes.data(), static_cast<int>(bytes.size()), &w, &h, &c, 3));
  if (!pixels) {
    const char* why = stbi_failure_reason();
    undecodable(image, why ? why : "unknown reason");
  }
  // stb_image accepts a BMP header of zero height (found by fuzz_image): an image without pixels
  // is no photo, whichever decoder let it through.
  if (w <= 0 || h <= 0)
    undecodable(image, "it decodes to " + std::to_string(w) + "x" + std::to_string(h) +
                           " pixels (an empty image)");
  Rgb8Image out;
  out.width = w;
  out.height = h;
  out.pixels.assign(pixels.get(), pixels.get() + static_cast<size_t>(w) * h * 3);
  return out;
}

// ---- resizing: Pillow's ImagingResample for 8-bit images, BILINEAR ---------------------------
// A port of Pillow src/libImaging/Resample.c (precompute_coeffs, normalize_coeffs_8bpc,
// ImagingResampleHorizontal_8bpc / Vertical_8bpc, ImagingResampleInner), the same arithmetic in
// the same order, so the result is Pillow's byte for byte.

constexpr int kPrecisionBits = 32 - 8 - 2;  // PRECISION_BITS

struct Coeffs {
  int ksize = 0;
  std::vector<int> bounds;     // per output pixel: xmin, count
  std::vector<int32_t> k;      // per output pixel: ksize fixed-point weights
};

double bilinear_filter(double x) {
  if (x < 0.0) x = -x;
  if (x < 1.0) return 1.0 - x;
  return 0.0;
}

// precompute_coeffs(inSize, in0 = 0, in1 = inSize, outSize, BILINEAR) + normalize_coeffs_8bpc.
Coeffs precompute_coeffs(int in_size, int out_size) {
  const float in0 = 0.0f, in1 = static_cast<float>(in_size);  // Pillow's float box
  double filterscale, scale;
  filterscale = scale = static_cast<double>(in1 - in0) / out_size;
  if (filterscale < 1.0) filterscale = 1.0;
  const double support = 1.0 * filterscale;  // BILINEAR's support is 1.0
  Coeffs c;
  c.ksize = static_cast<int>(std::ceil(support)) * 2 + 1;
  c.bounds.resize(static_cast<size_t>(out_size) * 2);
  c.k.assign(static_cast<size_t>(out_size) * c.ksize, 0);
  std::vector<double> kk(static_cast<size_t>(c.ksize));
  for (int xx = 0; xx < out_size; ++xx) {
    const double center = in0 + (xx + 0.5) * scale;
    double ww = 0.0;
    const double ss = 1.0 / filterscale;
    int xmin = static_cast<int>(center - support + 0.5);
    if (xmin < 0) xmin = 0;
    int xmax = static_cast<int>(center + support + 0.5);
    if (xmax > in_size) xmax = in_size;
    xmax -= xmin;
    for (int x = 0; x < xmax; ++x) {
      const double w = bilinear_filter((x + xmin - center + 0.5) * ss);
      kk[static_cast<size_t>(x)] = w;
      ww += w;
    }
    for (int x = 0; x < xmax; ++x)
      if (ww != 0.0) kk[static_cast<size_t>(x)] /= ww;
    int32_t* k = &c.k[static_cast<size_t>(xx) * c.ksize];
    for (int x = 0; x < xmax; ++x) {  // normalize_coeffs_8bpc (the rest stay 0)
      const double v = kk[static_cast<size_t>(x)];
      k[x] = v < 0 ? static_cast<int>(-0.5 + v * (1 << kPrecisionBits))
                   : static_cast<int>(0.5 + v * (1 << kPrecisionBits));
    }
    c.bounds[static_cast<size_t>(xx) * 2] = xmin;
    c.bounds[static_cast<size_t>(xx) * 2 + 1] = xmax;
  }
  return c;
}

inline uint8_t clip8(int in) {  // Pillow's clip8: its lookup table is this clamp
  return static_cast<uint8_t>(std::clamp(in >> kPrecisionBits, 0, 255));
}

// One output pixel of either pass: `n` source pixels `stride` bytes apart weighted by `k`, the
// accumulators starting at 1 << (PRECISION_BITS − 1) (rounding), clipped to 8 bits.
inline void weighted_pixel(const uint8_t* p, size_t stride, const int32_t* k, int n, uint8_t* out) {
  int ss0 = 1 << (kPrecisionBits - 1), ss1 = ss0, ss2 = ss0;
  for (int i = 0; i < n; ++i, p += stride) {
    ss0 += p[0] * k[i];
    ss1 += p[1] * k[i];
    ss2 += p[2] * k[i];
  }
  out[0] = clip8(ss0);
  out[1] = clip8(ss1);
  out[2] = clip8(ss2);
}

// One horizontal pass (ImagingResampleHorizontal_8bpc): `rows` rows of `src` (width w) starting
// at row `row0` -> rows × out_w.
std::vector<uint8_t> horizontal_pass(const uint8_t* src, int w, int row0, int rows, int out_w,
                                     const Coeffs& c) {
  std::vector<uint8_t> out(static_cast<size_t>(out_w) * rows * 3);
  for (int yy = 0; yy < rows; ++yy) {
    const uint8_t* line = src + static_cast<size_t>(yy + row0) * w * 3;
    uint8_t* o = &out[static_cast<size_t>(yy) * out_w * 3];
    for (int xx = 0; xx < out_w; ++xx) {
      const int xmin = c.bounds[static_cast<size_t>(xx) * 2];
      const int xmax = c.bounds[static_cast<size_t>(xx) * 2 + 1];
      weighted_pixel(line + static_cast<size_t>(xmin) * 3, 3, &c.k[static_cast<size_t>(xx) * c.ksize],
                     xmax, o + static_cast<size_t>(xx) * 3);
    }
  }
  return out;
}

// One vertical pass (ImagingResampleVertical_8bpc): `src` (width w) -> out_h × w; source row y of
// the coefficients is src's row y − row0 (the horizontal pass kept only the rows needed).
std::vector<uint8_t> vertical_pass(const uint8_t* src, int w, int row0, int out_h,
                                   const Coeffs& c) {
  std::vector<uint8_t> out(static_cast<size_t>(w) * out_h * 3);
  for (int yy = 0; yy < out_h; ++yy) {
    const int32_t* k = &c.k[static_cast<size_t>(yy) * c.ksize];
    const int ymin = c.bounds[static_cast<size_t>(yy) * 2] - row0;
    const int ymax = c.bounds[static_cast<size_t>(yy) * 2 + 1];
    uint8_t* o = &out[static_cast<size_t>(yy) * w * 3];
    for (int xx = 0; xx < w; ++xx)
      weighted_pixel(src + (static_cast<size_t>(ymin) * w + xx) * 3, static_cast<size_t>(w) * 3, k,
                     ymax, o + static_cast<size_t>(xx) * 3);
  }
  return out;
}

// RGB8 w×h -> RGB8 rw×rh, as Pillow's ImagingResampleInner: each pass only when its size changes
// (need_horizontal / need_vertical), each rounding to 8 bits, so their order matters.
// Pillow <= 12 always runs the horizontal pass first, over only the source rows the vertical pass
// reads. Pillow 13 (python-pillow/Pillow#9549, "If height is scaled down significantly more than
// width, resize vertically first") runs the vertical pass first when the height shrinks by more
// than twice as many pixels as the width: rh < h && h − rh > 2·(w − rw). That condition was
// measured against Pillow 13.0.0 (one-pass result = which two-pass order, thousands of random
// sizes and every case on its boundary), not read from its source. The demo photos and any
// picture no taller than twice its width resize horizontally first under both versions.
std::vector<uint8_t> resize_bilinear(const uint8_t* src, int w, int h, int rw, int rh) {
  const bool need_horizontal = rw != w;
  const bool need_vertical = rh != h;
  if (!need_horizontal && !need_vertical)
    return std::vector<uint8_t>(src, src + static_cast<size_t>(w) * h * 3);
  if (!need_horizontal) return vertical_pass(src, w, 0, rh, precompute_coeffs(h, rh));
  if (!need_vertical) return horizontal_pass(src, w, 0, h, rw, precompute_coeffs(w, rw));
  const Coeffs vert = precompute_coeffs(h, rh);
  const Coeffs horiz = precompute_coeffs(w, rw);
  const bool vertical_first = rh < h && int64_t{h} - rh > 2 * (int64_t{w} - rw);
  if (vertical_first) {
    const std::vector<uint8_t> temp = vertical_pass(src, w, 0, rh, vert);
    return horizontal_pass(temp.data(), w, 0, rh, rw, horiz);
  }
  // First and one-past-last source rows the vertical pass reads.
  const int ybox_first = vert.bounds[0];
  const int ybox_last = vert.bounds[static_cast<size_t>(rh) * 2 - 2] +
                        vert.bounds[static_cast<size_t>(rh) * 2 - 1];
  const std::vector<uint8_t> temp =
      horizontal_pass(src, w, ybox_first, ybox_last - ybox_first, rw, horiz);
  return vertical_pass(temp.data(), rw, ybox_first, rh, vert);
}

// Python's round() on a double: the nearest integer, ties to even.
int64_t round_half_even(double x) {
  const double f = std::floor(x);
  const double d = x - f;
  if (d > 0.5) return static_cast<int64_t>(f) + 1;
  if (d < 0.5) return static_cast<int64_t>(f);
  const auto i = static_cast<int64_t>(f);
  return i % 2 == 0 ? i : i + 1;
}

}  // namespace

Rgb8Image decode_image(const std::filesystem::path& image) {
  std::vector<unsigned char> bytes = read_file(image);
  if (bytes.size() >= 3 && bytes[0] == 0xFF && bytes[1] == 0xD8 && bytes[2] == 0xFF)
    return decode_jpeg(image, bytes);
  return decode_stb(image, bytes);
}

HostTensor preprocess_rgb8(const uint8_t* rgb, int width, int height, const ImagePreprocessing& pp,
                           const TensorSpec& spec) {
  if (rgb == nullptr || width <= 0 || height <= 0)
    throw Error(ErrorKind::kInvalidArgument,
                "preprocess_rgb8 was given " + std::string(rgb ? "a buffer" : "a null buffer") +
                    " of " + std::to_string(width) + "x" + std::to_string(height) + " pixels",
                "pass a non-null RGB8 buffer of width x height x 3 bytes, width and height > 0");
  const OutputPlan plan = plan_output(pp, spec);

  // Shorter side -> resize_shorter, aspect kept, the longer side rounded as the export half's
  // int(round(h * s / w)) (the quotient correctly rounded, then half to even).
  const int64_t s = pp.resize_shorter;
  int64_t rw, rh;
  if (width <= height) {
    rw = s;
    rh = std::max<int64_t>(1, round_half_even(static_cast<double>(height) * s / width));
  } else {
    rh = s;
    rw = std::max<int64_t>(1, round_half_even(static_cast<double>(width) * s / height));
  }
  if (rw < pp.crop_w || rh < pp.crop_h)
    throw Error(ErrorKind::kShapeMismatch,
                "resized image " + std::to_string(rw) + "x" + std::to_string(rh) +
                    " is smaller than the crop " + std::to_string(pp.crop_w) + "x" +
                    std::to_string(pp.crop_h),
                "re-export the bundle; resize_shorter must be at least the crop size");
  if (rw > std::numeric_limits<int>::max() / 4 || rh > std::numeric_limits<int>::max() / 4)
    throw Error(ErrorKind::kInvalidArgument,
                "a " + std::to_string(width) + "x" + std::to_string(height) +
                    " image resized to " + std::to_string(rw) + "x" + std::to_string(rh) +
                    " pixels is too large",
                "pass an image whose aspect ratio is less extreme");
  const std::vector<uint8_t> resized =
      resize_bilinear(rgb, width, height, static_cast<int>(rw), static_cast<int>(rh));

  // Center crop, offsets floor((size - crop) / 2).
  const int ch = static_cast<int>(pp.crop_h), cw = static_cast<int>(pp.crop_w);
  const int top = static_cast<int>((rh - ch) / 2);
  const int left = static_cast<int>((rw - cw) / 2);

  // numpy: px (float32, the 8-bit value) then (px - float32(mean)) / float32(std), each operation
  // rounded to float32. For the usual value range [0, 255] v is the pixel value itself.
  float lut[3][256];
  for (int k = 0; k < 3; ++k) {
    const float mean = static_cast<float>(pp.mean[k]);
    const float sd = static_cast<float>(pp.std[k]);
    for (int p = 0; p < 256; ++p) {
      const float v =
          static_cast<float>(pp.value_min + (pp.value_max - pp.value_min) * p / 255.0);
      volatile float centred = v - mean;  // no contraction or excess precision: numpy's two steps
      lut[k][p] = centred / sd;
    }
  }

  HostTensor t;
  t.dtype = DType::kFloat32;
  t.shape = plan.shape;
  t.data.resize(static_cast<size_t>(ch) * cw * 3 * sizeof(float));
  auto* out = reinterpret_cast<float*>(t.data.data());
  for (int y = 0; y < ch; ++y)
    for (int x = 0; x < cw; ++x)
      for (int k = 0; k < 3; ++k) {
        const uint8_t p = resized[(static_cast<size_t>(top + y) * rw + (left + x)) * 3 + k];
        const size_t idx = plan.nchw ? (static_cast<size_t>(k) * ch + y) * cw + x
                                     : (static_cast<size_t>(y) * cw + x) * 3 + k;
        out[idx] = lut[k][p];
      }
  return t;
}

HostTensor load_image(const std::filesystem::path& image, const ImagePreprocessing& pp,
                      const TensorSpec& spec) {
  plan_output(pp, spec);  // refuse a spec the preprocessing cannot fill before decoding anything
  const Rgb8Image rgb = decode_image(image);
  return preprocess_rgb8(rgb.pixels.data(), rgb.width, rgb.height, pp, spec);
}

}  // namespace etproof
