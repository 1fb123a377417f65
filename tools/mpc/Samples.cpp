//===- Samples.cpp - sample grids, encoded by libpng ----------------------===//

#include "Samples.h"
#include "TensorBoard.h"

#include "runtime/PlanIO.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <png.h>

#include <algorithm>
#include <cmath>
#include <cctype>
#include <cstdio>
#include <vector>

namespace mpc {

bool isImageBatch(const rt::Shape &shape) {
  return shape.size() == 4 && (shape[1] == 1 || shape[1] == 3) &&
         shape[0] > 0 && shape[2] > 0 && shape[3] > 0;
}

namespace {

void appendBytes(png_structp png, png_bytep data, png_size_t size) {
  static_cast<std::string *>(png_get_io_ptr(png))
      ->append(reinterpret_cast<const char *>(data), size);
}

void flushNothing(png_structp) {}

/// libpng's errors longjmp; the message is kept for the caller.
void onError(png_structp png, png_const_charp message) {
  *static_cast<std::string *>(png_get_error_ptr(png)) = message;
  png_longjmp(png, 1);
}

void onWarning(png_structp, png_const_charp) {}

/// The libpng calls writing `rows` to `out`; false where libpng reported
/// an error. Its longjmp lands here, where only plain locals are live (a
/// C++ object changed after setjmp may be clobbered).
bool writePng(png_structp png, png_infop info, png_bytep *rows, int width,
              int height, int channels, std::string *out) {
  if (setjmp(png_jmpbuf(png)))
    return false;
  png_set_write_fn(png, out, appendBytes, flushNothing);
  png_set_IHDR(png, info, width, height, 8,
               channels == 1 ? PNG_COLOR_TYPE_GRAY : PNG_COLOR_TYPE_RGB,
               PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
               PNG_FILTER_TYPE_DEFAULT);
  png_set_rows(png, info, rows);
  png_write_png(png, info, PNG_TRANSFORM_IDENTITY, nullptr);
  return true;
}

bool encode(const std::vector<uint8_t> &pixels, int width, int height,
            int channels, std::string &out, std::string &error) {
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &error,
                                            onError, onWarning);
  png_infop info = png ? png_create_info_struct(png) : nullptr;
  if (!info) {
    png_destroy_write_struct(&png, nullptr);
    return (error = "libpng: out of memory", false);
  }
  std::vector<png_bytep> rows(height);
  for (int y = 0; y < height; ++y)
    rows[y] = const_cast<png_bytep>(pixels.data()) +
              (size_t)y * width * channels;
  bool ok = writePng(png, info, rows.data(), width, height, channels, &out);
  png_destroy_write_struct(&png, &info);
  return ok || (error = "libpng: " + error, false);
}

} // namespace

bool sampleGrid(const rt::Tensor &images, SampleGrid &grid,
                std::string &error) {
  const rt::Shape &s = images.shape();
  int64_t n = std::min<int64_t>(s[0], 64), c = s[1], h = s[2], w = s[3];
  int64_t cols = (int64_t)std::ceil(std::sqrt((double)n));
  int64_t rows = (n + cols - 1) / cols;
  grid.width = (int)(cols * (w + 1) + 1);
  grid.height = (int)(rows * (h + 1) + 1);
  grid.channels = (int)c;
  bool signedRange = false;
  for (int64_t i = 0; i < n * c * h * w && !signedRange; ++i)
    signedRange = images.getFloat(i) < 0;
  std::vector<uint8_t> pixels((size_t)grid.width * grid.height * c, 0);
  for (int64_t k = 0; k < n; ++k)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t y = 0; y < h; ++y)
        for (int64_t x = 0; x < w; ++x) {
          float v = images.getFloat(((k * c + ch) * h + y) * w + x);
          if (signedRange)
            v = (v + 1) / 2;
          v = std::isfinite(v) ? std::clamp(v, 0.0f, 1.0f) : 0.0f;
          int64_t py = k / cols * (h + 1) + 1 + y, px = k % cols * (w + 1) + 1 + x;
          pixels[(size_t)(py * grid.width + px) * c + ch] =
              (uint8_t)std::lround(v * 255);
        }
  return encode(pixels, grid.width, grid.height, grid.channels, grid.png,
                error);
}

void sampleImages(const rt::Plan &plan, int64_t every, const std::string &dir,
                  TensorBoardWriter *tb, rt::TrainerOptions &options,
                  std::vector<std::string> &sampled) {
  // The forward's results: not the gradients (a 1-channel conv's filter
  // gradient is N x 1 x H x W too) nor the step's state.
  std::vector<bool> gradient(plan.outputs.size(), false);
  if (plan.train)
    for (const auto &[index, param] : plan.train->gradients)
      gradient[index] = true;
  for (size_t i = 0; i < plan.outputs.size(); ++i)
    if (!gradient[i] && plan.outputs[i].name.rfind("mpc.", 0) != 0 &&
        isImageBatch(plan.values[plan.outputs[i].value].shape))
      sampled.push_back(plan.outputs[i].name);
  if (sampled.empty() || (dir.empty() && !tb))
    return;
  options.sampleOutputs = sampled;
  options.sampleEvery = every;
  options.onSample = [dir, tb](int64_t step, const std::string &name,
                               const rt::Tensor &images, std::string &error) {
    SampleGrid grid;
    if (!sampleGrid(images, grid, error))
      return (error = "samples of '" + name + "': " + error, false);
    if (tb)
      tb->image("samples/" + name, step, grid.png, grid.width, grid.height,
                grid.channels);
    if (dir.empty())
      return true;
    std::string file = name;
    for (char &c : file) // output names may hold '/' or ':'
      if (!std::isalnum((unsigned char)c) && c != '-' && c != '_' && c != '.')
        c = '_';
    char suffix[32];
    std::snprintf(suffix, sizeof suffix, "-%06lld.png", (long long)step);
    return rt::writeFileAtomically(dir + "/" + file + suffix, grid.png,
                                   error);
  };
}

SampleFlags::SampleFlags(llvm::cl::SubCommand &sub)
    : dir("samples",
          llvm::cl::desc(
              "Write a grid of each image output (N x C x H x W, C 1 or 3: a "
              "GAN generator's samples) as DIR/<output>-<step>.png after "
              "step 1, every --sample-every steps and the last; "
              "--tensorboard shows the same grids"),
          llvm::cl::value_desc("dir"), llvm::cl::sub(sub)),
      every("sample-every", llvm::cl::desc("Steps between sample grids"),
            llvm::cl::init(100), llvm::cl::sub(sub)) {}

bool SampleFlags::setUp(const rt::Plan &plan, TensorBoardWriter *tb,
                        rt::TrainerOptions &options,
                        std::string &error) const {
  if (every <= 0)
    return (error = "--sample-every must be positive", false);
  if (!dir.empty() && llvm::sys::fs::create_directories(dir.getValue()))
    return (error = "cannot create --samples directory " + dir, false);
  std::vector<std::string> sampled;
  sampleImages(plan, every, dir, tb, options, sampled);
  if (sampled.empty() && !dir.empty())
    return (error = "--samples: the model has no image output (N x C x H x "
                    "W with C 1 or 3) to sample; export the generator's "
                    "images as a graph output",
            false);
  if (!sampled.empty() && !dir.empty())
    llvm::outs() << "samples: " << llvm::join(sampled, ", ") << " every "
                 << every << " steps into " << dir << "\n";
  return true;
}

} // namespace mpc
