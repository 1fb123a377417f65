//===- GlooGroup.cpp - CPU ranks reduce through gloo over TCP --------------===//
//
// Gloo (Debian's libgloo-dev, the library PyTorch's CPU process group is
// built on) connects every pair of ranks over TCP, exchanging addresses
// through the job's TcpStore, and runs ring all-reduces whose result is
// the same bits on every rank. Its exceptions become one-line errors that
// name the rank that left (ProcessGroup::failure).
//
//===----------------------------------------------------------------------===//

#include "runtime/dist/ProcessGroup.h"
#include "runtime/Half.h"

#ifdef MPC_HAVE_GLOO
#include <gloo/allreduce.h>
#include <gloo/broadcast.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>

#include <csignal>
#include <cstdlib>
#include <pthread.h>
#include <unistd.h>
#endif

namespace mpc::rt::dist {

#ifdef MPC_HAVE_GLOO
namespace {

/// Gloo's store interface on the job's TcpStore (gloo throws on failure).
class GlooStore : public gloo::rendezvous::Store {
public:
  GlooStore(TcpStore &store, std::chrono::milliseconds timeout)
      : store_(store), timeout_(timeout) {}

  void set(const std::string &key, const std::vector<char> &data) override {
    std::string e;
    if (!store_.set(key, data, e))
      throw std::runtime_error(e);
  }
  std::vector<char> get(const std::string &key) override {
    std::vector<char> v;
    std::string e;
    if (!store_.get(key, v, timeout_, e))
      throw std::runtime_error(e);
    return v;
  }
  void wait(const std::vector<std::string> &keys) override {
    wait(keys, timeout_);
  }
  void wait(const std::vector<std::string> &keys,
            const std::chrono::milliseconds &timeout) override {
    for (const std::string &k : keys) {
      std::vector<char> v;
      std::string e;
      if (!store_.get(k, v, timeout, e))
        throw std::runtime_error(e);
    }
  }

private:
  TcpStore &store_;
  std::chrono::milliseconds timeout_;
};

/// c = a + b on fp16 / bf16 bit patterns (gloo's reduce function shape).
template <bool Bf16>
void add16s(void *c, const void *a, const void *b, size_t n) {
  auto *out = static_cast<uint16_t *>(c);
  auto *x = static_cast<const uint16_t *>(a), *y = static_cast<const uint16_t *>(b);
  for (size_t i = 0; i < n; ++i)
    out[i] = add16(x[i], y[i], Bf16);
}

class GlooGroup : public ProcessGroup {
public:
  using ProcessGroup::ProcessGroup;

  bool connect(std::string &error) {
    gloo::transport::tcp::attr attr;
    // This host's address the others can reach: GLOO_SOCKET_IFNAME as in
    // PyTorch, loopback for a job on one machine, else the host name.
    if (const char *iface = std::getenv("GLOO_SOCKET_IFNAME"); iface && *iface)
      attr.iface = iface;
    else if (env_.masterAddr == "localhost" ||
             env_.masterAddr.rfind("127.", 0) == 0)
      attr.hostname = "127.0.0.1";
    else {
      char host[256] = {0};
      gethostname(host, sizeof host - 1);
      attr.hostname = host;
    }
    try {
      device_ = gloo::transport::tcp::CreateDevice(attr);
      glooStore_ = std::make_unique<GlooStore>(*store_, startTimeout());
      prefixed_ = std::make_unique<gloo::rendezvous::PrefixStore>("gloo",
                                                                  *glooStore_);
      context_ = std::make_shared<gloo::rendezvous::Context>(rank(), size());
      context_->setTimeout(startTimeout());
      context_->connectFullMesh(*prefixed_, device_);
    } catch (const std::exception &e) {
      return (error = failure("connecting the ranks", e.what()), false);
    }
    return true;
  }

  std::string name() const override { return "gloo"; }

  void beginTraining() override {
    ProcessGroup::beginTraining();
    context_->setTimeout(timeout_);
  }

  bool allReduce(int64_t *data, size_t n, std::string &error) override {
    return sumOf(data, n, error);
  }
  bool allReduce(double *data, size_t n, std::string &error) override {
    return sumOf(data, n, error);
  }

  bool broadcast(void *data, size_t bytes, int root,
                 std::string &error) override {
    return run("broadcast", error, [&] {
      gloo::BroadcastOptions o(context_);
      o.setOutput(static_cast<char *>(data), bytes);
      o.setRoot(root);
      o.setTag(tag_++);
      gloo::broadcast(o);
    });
  }

protected:
  bool sum(float *data, size_t n, std::string &error) override {
    return sumOf(data, n, error);
  }
  bool sum16(uint16_t *data, size_t n, bool bf16,
             std::string &error) override {
    return run("all-reduce", error, [&] {
      gloo::AllreduceOptions o(context_);
      o.setOutput(data, n);
      o.setReduceFunction(bf16 ? &add16s<true> : &add16s<false>);
      o.setTag(tag_++);
      gloo::allreduce(o);
    });
  }

private:
  template <typename T> bool sumOf(T *data, size_t n, std::string &error) {
    return run("all-reduce", error, [&] {
      gloo::AllreduceOptions o(context_);
      o.setOutput(data, n);
      o.setReduceFunction(
          static_cast<void (*)(void *, const void *, const void *, size_t)>(
              &gloo::sum<T>));
      o.setTag(tag_++);
      gloo::allreduce(o);
    });
  }

  template <typename F>
  bool run(const char *what, std::string &error, F &&f) {
    auto t0 = std::chrono::steady_clock::now();
    try {
      f();
    } catch (const std::exception &e) {
      return (error = failure(what, e.what()), false);
    }
    commSeconds_ += std::chrono::duration<double>(
                        std::chrono::steady_clock::now() - t0)
                        .count();
    return true;
  }

  std::shared_ptr<gloo::transport::Device> device_;
  std::unique_ptr<GlooStore> glooStore_;
  std::unique_ptr<gloo::rendezvous::PrefixStore> prefixed_;
  std::shared_ptr<gloo::rendezvous::Context> context_;
  uint32_t tag_ = 0;
};

} // namespace
#endif

std::unique_ptr<ProcessGroup> openGlooGroup(const JobEnv &env,
                                            std::chrono::milliseconds timeout,
                                            std::chrono::milliseconds start,
                                            std::string &error) {
#ifdef MPC_HAVE_GLOO
  // A write to a rank that died raises SIGPIPE, whose default (and LLVM's
  // handler) ends the process before the error can name the rank. Blocked
  // here, before gloo starts its threads (they inherit the mask), such a
  // write fails with EPIPE and gloo reports it.
  sigset_t pipe;
  sigemptyset(&pipe);
  sigaddset(&pipe, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe, nullptr);
  auto store = openJobStore(env, start, error);
  if (!store)
    return nullptr;
  auto group = std::make_unique<GlooGroup>(env, std::move(store), timeout,
                                            start);
  if (!group->connect(error) || !group->startWatchdog(error))
    return nullptr;
  return group;
#else
  (void)env, (void)timeout, (void)start;
  error = "this mpc was built without gloo (libgloo-dev), so it cannot run "
          "CPU ranks; install it and rebuild";
  return nullptr;
#endif
}

} // namespace mpc::rt::dist
