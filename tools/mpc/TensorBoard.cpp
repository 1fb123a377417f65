//===- TensorBoard.cpp - TensorBoard event files -----------------------===//

#include "TensorBoard.h"

#include "tensorboard/compat/proto/event.pb.h"

#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <unistd.h>

namespace mpc {
namespace {

double wallTime() {
  return std::chrono::duration<double>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

/// TFRecord's masking, so a CRC stored in data is not itself a valid CRC.
uint32_t masked(uint32_t crc) {
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

} // namespace

uint32_t crc32c(const void *data, size_t size) {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k)
        c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1; // reflected Castagnoli
      t[i] = c;
    }
    return t;
  }();
  uint32_t crc = ~0u;
  auto *p = static_cast<const unsigned char *>(data);
  for (size_t i = 0; i < size; ++i)
    crc = table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
  return ~crc;
}

TensorBoardWriter::~TensorBoardWriter() {
  if (file_)
    std::fclose(file_);
}

bool TensorBoardWriter::open(const std::string &dir, std::string &error) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    return (error = "cannot create --tensorboard directory " + dir + ": " +
                    ec.message(),
            false);
  char host[256] = "localhost";
  gethostname(host, sizeof host - 1);
  // TensorBoard's naming: events.out.tfevents.<seconds>.<host>[.<suffix>].
  path_ = dir + "/events.out.tfevents." +
          std::to_string((long long)wallTime()) + "." + host + "." +
          std::to_string(getpid()) + ".mpc";
  file_ = std::fopen(path_.c_str(), "wbx"); // never replace a file
  if (!file_)
    return (error = "cannot create " + path_ + ": " + std::strerror(errno),
            false);
  tensorboard::Event version;
  version.set_wall_time(wallTime());
  version.set_file_version("brain.Event:2");
  record(version.SerializeAsString());
  return flush(error);
}

void TensorBoardWriter::scalar(const std::string &tag, int64_t step,
                               double value) {
  tensorboard::Event event;
  event.set_wall_time(wallTime());
  event.set_step(step);
  tensorboard::Summary::Value *v = event.mutable_summary()->add_value();
  v->set_tag(tag);
  v->set_simple_value((float)value);
  record(event.SerializeAsString());
}

void TensorBoardWriter::image(const std::string &tag, int64_t step,
                              const std::string &png, int width, int height,
                              int channels) {
  tensorboard::Event event;
  event.set_wall_time(wallTime());
  event.set_step(step);
  tensorboard::Summary::Value *v = event.mutable_summary()->add_value();
  v->set_tag(tag);
  tensorboard::Summary::Image *image = v->mutable_image();
  image->set_width(width);
  image->set_height(height);
  image->set_colorspace(channels);
  image->set_encoded_image_string(png);
  record(event.SerializeAsString());
}

void TensorBoardWriter::record(const std::string &bytes) {
  if (!file_)
    return;
  uint64_t length = bytes.size(); // little-endian on every mpc host
  uint32_t lengthCrc = masked(crc32c(&length, sizeof length));
  uint32_t dataCrc = masked(crc32c(bytes.data(), bytes.size()));
  failed_ |= std::fwrite(&length, sizeof length, 1, file_) != 1 ||
             std::fwrite(&lengthCrc, sizeof lengthCrc, 1, file_) != 1 ||
             std::fwrite(bytes.data(), 1, bytes.size(), file_) != bytes.size() ||
             std::fwrite(&dataCrc, sizeof dataCrc, 1, file_) != 1;
}

bool TensorBoardWriter::flush(std::string &error) {
  if (file_ && std::fflush(file_) != 0)
    failed_ = true;
  if (failed_)
    return (error = "cannot write " + path_ + ": " + std::strerror(errno),
            false);
  return true;
}

std::function<void(const ::mpc::rt::StepRecord &, double)>
trainScalars(TensorBoardWriter &tb, std::string prefix, double lr,
             std::string &error) {
  int64_t skippedSteps = 0;
  return [&tb, prefix, lr, &error, skippedSteps](
             const ::mpc::rt::StepRecord &r, double samplesPerSecond) mutable {
    skippedSteps += r.skipped;
    tb.scalar(prefix + "loss", r.step, r.loss);
    tb.scalar(prefix + "loss_scale", r.step, r.lossScale);
    tb.scalar(prefix + "skipped_steps", r.step, (double)skippedSteps);
    tb.scalar(prefix + "grad_underflow", r.step, (double)r.underflow);
    tb.scalar(prefix + "grad_overflow", r.step, (double)r.overflow);
    tb.scalar(prefix + "learning_rate", r.step, r.lr.value_or(lr));
    if (r.gradNorm)
      tb.scalar(prefix + "grad_norm", r.step, *r.gradNorm);
    if (r.emaDecay)
      tb.scalar(prefix + "ema_decay", r.step, *r.emaDecay);
    if (r.evalLoss)
      tb.scalar(prefix + "eval_loss", r.step, *r.evalLoss);
    if (r.evalLossEma)
      tb.scalar(prefix + "eval_loss_ema", r.step, *r.evalLossEma);
    if (r.evalAccuracy)
      tb.scalar(prefix + "eval_accuracy", r.step, *r.evalAccuracy);
    if (r.evalAccuracyEma)
      tb.scalar(prefix + "eval_accuracy_ema", r.step, *r.evalAccuracyEma);
    const std::string topK = r.topKAccuracyKey();
    if (r.evalTopKAccuracy)
      tb.scalar(prefix + topK, r.step, *r.evalTopKAccuracy);
    if (r.evalTopKAccuracyEma)
      tb.scalar(prefix + topK + "_ema", r.step, *r.evalTopKAccuracyEma);
    tb.scalar(prefix + "samples_per_second", r.step, samplesPerSecond);
    if (r.step % 10 == 0 && error.empty())
      tb.flush(error);
  };
}

} // namespace mpc
