//===- StoreGroup.cpp - GPU ranks' host collectives through the store -----===//
//
// GPU ranks reduce gradients with NCCL on the device (runtime/cuda/
// CudaSession.cpp); what the training loop reduces on the host is a few
// scalars a step and, once, the initial weights. Those go through the
// job's TcpStore: each rank posts its bytes under the collective's
// sequence number and reads everyone's, summing in rank order, so every
// rank gets the same bits. The machine running GPU ranks needs no gloo.
//
//===----------------------------------------------------------------------===//

#include "runtime/Half.h"
#include "runtime/dist/ProcessGroup.h"

#include <cstring>

namespace mpc::rt::dist {
namespace {

class StoreGroup : public ProcessGroup {
public:
  using ProcessGroup::ProcessGroup;

  std::string name() const override { return "nccl"; }

  bool allReduce(int64_t *data, size_t n, std::string &error) override {
    return fold(data, n, error, [](int64_t a, int64_t b) { return a + b; });
  }
  bool allReduce(double *data, size_t n, std::string &error) override {
    return fold(data, n, error, [](double a, double b) { return a + b; });
  }
  /// As a sum in which only the root's bytes are nonzero: every rank
  /// posts, so the collective synchronizes like the others.
  bool broadcast(void *data, size_t bytes, int root,
                 std::string &error) override {
    auto *p = static_cast<uint8_t *>(data);
    if (rank() != root)
      std::memset(p, 0, bytes);
    return fold(p, bytes, error, [](uint8_t a, uint8_t b) -> uint8_t {
      return a | b;
    });
  }

protected:
  bool sum(float *data, size_t n, std::string &error) override {
    return fold(data, n, error, [](float a, float b) { return a + b; });
  }
  bool sum16(uint16_t *data, size_t n, bool bf16,
             std::string &error) override {
    return fold(data, n, error,
                [bf16](uint16_t a, uint16_t b) { return add16(a, b, bf16); });
  }

private:
  /// Posts this rank's bytes, reads every rank's, folds them in rank order.
  template <typename T, typename Add>
  bool fold(T *data, size_t n, std::string &error, Add add) {
    auto t0 = std::chrono::steady_clock::now();
    std::string key = "r/" + std::to_string(seq_++);
    std::vector<char> mine(reinterpret_cast<char *>(data),
                           reinterpret_cast<char *>(data + n));
    if (!store_->set(key + "/" + std::to_string(rank()), mine, error))
      return (error = failure("all-reduce", error), false);
    std::vector<T> total(n);
    for (int r = 0; r < size(); ++r) {
      std::vector<char> v;
      if (!store_->get(key + "/" + std::to_string(r), v, collectiveTimeout(),
                       error) ||
          v.size() != n * sizeof(T))
        return (error = failure("all-reduce", error), false);
      const T *x = reinterpret_cast<const T *>(v.data());
      for (size_t i = 0; i < n; ++i)
        total[i] = r == 0 ? x[i] : add(total[i], x[i]);
    }
    std::memcpy(data, total.data(), n * sizeof(T));
    return finishCollective(key + "/" + std::to_string(rank()), t0, error);
  }

  /// Erases this rank's key of two collectives ago: a rank in collective s
  /// has seen every rank post s - 1, so all of them read s - 2.
  bool finishCollective(const std::string &key,
                        std::chrono::steady_clock::time_point t0,
                        std::string &error) {
    if (!old_[seq_ % 2].empty() && !store_->erase(old_[seq_ % 2], error))
      return false;
    old_[seq_ % 2] = key;
    commSeconds_ += std::chrono::duration<double>(
                        std::chrono::steady_clock::now() - t0)
                        .count();
    return true;
  }

  uint64_t seq_ = 0;
  std::string old_[2];
};

} // namespace

std::unique_ptr<ProcessGroup> openStoreGroup(const JobEnv &env,
                                            std::chrono::milliseconds timeout,
                                            std::chrono::milliseconds start,
                                            std::string &error) {
  auto store = openJobStore(env, start, error);
  if (!store)
    return nullptr;
  auto group = std::make_unique<StoreGroup>(env, std::move(store), timeout,
                                            start);
  if (!group->startWatchdog(error))
    return nullptr;
  return group;
}

} // namespace mpc::rt::dist
