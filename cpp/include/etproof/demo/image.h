// etproof/demo/image.h — the classification demo's C++ side: decode a photo, apply the manifest's
// preprocessing. Ranking labels (top_k) is core: etproof/labels.h.
//
// The preprocessing reproduces the export half's (python/etproof/demo/efficientnet_lite0.py, python/etproof/goldens/*.py `preprocess`:
// PIL Image.open(...).convert("RGB"), Image.resize(BILINEAR), centre crop, numpy float32
// (pixel − mean) / std) bit for bit: JPEG is decoded by libjpeg-turbo as Pillow does, the resize is
// Pillow's 8-bit fixed-point resampler, the normalization float32 arithmetic as numpy's.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "etproof/core/labels.h"  // Ranked, top_k (core)
#include "etproof/core/manifest.h"
#include "etproof/core/npy.h"

namespace etproof {

// An 8-bit RGB image in memory: row-major, height rows of width×3 bytes (R, G, B), no padding.
struct Rgb8Image {
  int width = 0;
  int height = 0;
  std::vector<uint8_t> pixels;  // width × height × 3 bytes
};

// Decodes a file to 8-bit RGB, as PIL's Image.open(file).convert("RGB") does. The format is told
// by the file's first bytes, not its name: JPEG (FF D8 FF) through libjpeg-turbo with its default
// settings (as Pillow; grayscale is replicated to RGB, CMYK/YCCK converted as Pillow converts an
// Adobe-inverted CMYK image), anything else through stb_image (PNG, BMP, TGA, GIF's first frame,
// …; alpha dropped, 16-bit samples cut to their high byte). No EXIF rotation, no colour
// management — neither does the export half. One known difference: a 16-bit grayscale PNG, which
// Pillow opens as "I;16" and convert("RGB") clips at 255 (near-white), here keeps its high byte.
// Throws Error{kIo}: the file cannot be read (missing: the remedy says so), or cannot be decoded
// (the cause carries libjpeg's or stb_image's reason; a truncated JPEG is refused, as Pillow
// refuses it, rather than padded with grey).
Rgb8Image decode_image(const std::filesystem::path& image);

// The manifest's preprocessing applied to an RGB8 buffer already in memory (what load_image does
// after decoding): `rgb` is height rows of width×3 bytes, no padding. Resizes the shorter side to
// pp.resize_shorter (the longer side height·s/width rounded half to even, as Python's round(), at
// least 1) with Pillow's BILINEAR resampler, centre-crops pp.crop_h × pp.crop_w (offsets
// floor((size − crop) / 2)), maps each channel k to
//   x = (v − float(mean[k])) / float(std[k]),  v = float(value_min + (value_max − value_min)·p/255)
// in float32 arithmetic, and lays it out as `spec` says: float32 [3, crop_h, crop_w] (nchw) or
// [crop_h, crop_w, 3] (nhwc), with a leading batch dimension of 1 when the spec's rank is 4. The
// layout is the spec's recorded one, else whichever of its channel axes alone has size 3.
// Throws Error{kInvalidArgument} (rgb is null, width or height not positive),
// Error{kDtypeUnsupported} (the spec is not float32), Error{kManifestInvalid} (non-positive resize
// or crop sizes), Error{kShapeMismatch} (the spec is not rank 3 or 4, its layout is neither nchw
// nor nhwc or cannot be told, its shape differs from what the preprocessing produces, or the
// resized image is smaller than the crop).
HostTensor preprocess_rgb8(const uint8_t* rgb, int width, int height, const ImagePreprocessing& pp,
                           const TensorSpec& spec);

// decode_image + preprocess_rgb8; the spec is checked before the file is decoded.
// Throws what both throw.
HostTensor load_image(const std::filesystem::path& image, const ImagePreprocessing& pp,
                      const TensorSpec& spec);

}  // namespace etproof
