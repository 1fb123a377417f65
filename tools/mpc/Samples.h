//===- Samples.h - image outputs as sample grids and PNG files ----*- C++ -*-===//
//
// `mpc train --samples DIR` and `--tensorboard`: a model output that holds
// images (N x C x H x W with C = 1 or 3, e.g. a GAN generator's) becomes a
// grid of its first samples, encoded as PNG by libpng.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_TOOLS_MPC_SAMPLES_H
#define MPC_TOOLS_MPC_SAMPLES_H

#include "runtime/Plan.h"
#include "runtime/Tensor.h"
#include "runtime/Trainer.h"

#include "llvm/Support/CommandLine.h"

#include <string>

namespace mpc {

class TensorBoardWriter;

/// Whether an output of this shape holds images (N x C x H x W, C 1 or 3).
bool isImageBatch(const ::mpc::rt::Shape &shape);

struct SampleGrid {
  std::string png; // the encoded grid
  int width = 0, height = 0, channels = 0;
};

/// Up to 64 samples of `images` in a square-ish grid, 1-pixel borders;
/// values in [0, 1] as they are, with negatives [-1, 1] (tanh) mapped to
/// [0, 1]. False with `error` when libpng fails.
bool sampleGrid(const ::mpc::rt::Tensor &images, SampleGrid &grid,
                std::string &error);

/// `mpc train --samples DIR --sample-every N`, constructed beside the
/// subcommand (as PrecisionFlags).
struct SampleFlags {
  explicit SampleFlags(llvm::cl::SubCommand &sub);
  /// The image outputs' sample grids into `options` (--samples, and
  /// --tensorboard's images when `tb` is given); false with `error` when
  /// --samples names a model without one.
  bool setUp(const ::mpc::rt::Plan &plan, TensorBoardWriter *tb,
             ::mpc::rt::TrainerOptions &options, std::string &error) const;

  llvm::cl::opt<std::string> dir;
  llvm::cl::opt<int64_t> every;
};

/// Makes `options` sample every image output of `plan` (its forward
/// results of N x C x H x W, C 1 or 3) every `every` steps: a grid as
/// `dir`/<output>-<step>.png (atomically; no files when `dir` is empty) and
/// as a TensorBoard image "samples/<output>" (when `tb` is given). The
/// names it samples in `sampled`.
void sampleImages(const ::mpc::rt::Plan &plan, int64_t every,
                  const std::string &dir, TensorBoardWriter *tb,
                  ::mpc::rt::TrainerOptions &options,
                  std::vector<std::string> &sampled);

} // namespace mpc

#endif // MPC_TOOLS_MPC_SAMPLES_H
