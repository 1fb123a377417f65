//===- TensorBoard.h - TensorBoard event files ---------------------*- C++ -*-===//
//
// `mpc train --tensorboard DIR` writes what TensorBoard reads: an
// events.out.tfevents.* file of Event records (TensorBoard's own event.proto,
// generated at build time from the tensorboard package's descriptors:
// scripts/tensorboard_descriptors.py), each framed as TFRecord does (length,
// masked CRC32C of the length, data, masked CRC32C of the data).
//
//===----------------------------------------------------------------------===//

#ifndef MPC_TOOLS_TENSORBOARD_H
#define MPC_TOOLS_TENSORBOARD_H

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>

#include "runtime/Trainer.h"

namespace mpc {

/// CRC-32C (Castagnoli), as TFRecord frames use.
uint32_t crc32c(const void *data, size_t size);

class TensorBoardWriter {
public:
  TensorBoardWriter() = default;
  TensorBoardWriter(const TensorBoardWriter &) = delete;
  TensorBoardWriter &operator=(const TensorBoardWriter &) = delete;
  ~TensorBoardWriter();

  /// Creates `dir` if needed and a new event file in it (a run directory of
  /// its own: TensorBoard shows every file of a directory as one run).
  bool open(const std::string &dir, std::string &error);
  /// One scalar at `step`. Records are appended as they come (TensorBoard
  /// reads a run while it trains); `flush` pushes them to the file.
  void scalar(const std::string &tag, int64_t step, double value);
  /// One image at `step`: `png` encoded, `channels` 1 (grey), 3 or 4.
  void image(const std::string &tag, int64_t step, const std::string &png,
             int width, int height, int channels);
  bool flush(std::string &error);
  const std::string &path() const { return path_; }

private:
  void record(const std::string &bytes);
  std::FILE *file_ = nullptr;
  std::string path_;
  bool failed_ = false;
};

/// The scalars `mpc train --tensorboard` logs after each step into `tb`,
/// tags prefixed by `prefix` (a phase's "d_loss/"); `lr` where the step
/// has no scheduled rate; write errors land in `error`.
std::function<void(const ::mpc::rt::StepRecord &, double)>
trainScalars(TensorBoardWriter &tb, std::string prefix, double lr,
             std::string &error);

} // namespace mpc

#endif // MPC_TOOLS_TENSORBOARD_H
