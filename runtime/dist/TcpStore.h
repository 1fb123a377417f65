//===- TcpStore.h - the key-value store the ranks of a job meet at -*- C++ -*-===//
//
// torchrun's rendezvous: rank 0 serves a small key-value store at
// MASTER_ADDR:MASTER_PORT and every rank (rank 0 too) is a client. Gloo
// exchanges its connection addresses through it, NCCL its unique id, and
// the ranks check in there when a collective fails, to name the rank that
// left. Values are bytes; `wait` blocks until a key exists or the timeout.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_RUNTIME_DIST_TCPSTORE_H
#define MPC_RUNTIME_DIST_TCPSTORE_H

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace mpc::rt::dist {

class StoreServer;

class TcpStore {
public:
  /// Connects to host:port, retrying until `timeout` (the server may start
  /// later); `serve` first starts the server in this process (rank 0).
  /// Null with a one-line `error`.
  static std::unique_ptr<TcpStore> open(const std::string &host, int port,
                                        bool serve,
                                        std::chrono::milliseconds timeout,
                                        std::string &error);
  ~TcpStore();

  bool set(const std::string &key, const std::vector<char> &value,
           std::string &error);
  /// The value of `key` once it exists; false after `timeout` or when the
  /// server is gone.
  bool get(const std::string &key, std::vector<char> &value,
           std::chrono::milliseconds timeout, std::string &error);
  bool erase(const std::string &key, std::string &error);
  /// Whether `key` exists now (no waiting).
  bool has(const std::string &key, bool &exists, std::string &error);
  /// Adds `delta` to the integer at `key` (0 when absent); its new value.
  bool add(const std::string &key, int64_t delta, int64_t &value,
           std::string &error);

  /// Tells the server this connection is rank `rank`'s: when it closes
  /// before the rank set "finished/<rank>", the server sets "lost" to the
  /// rank's number (the others' watchdogs wait on that key).
  bool hello(int rank, std::string &error);

  std::string address() const { return host_ + ":" + std::to_string(port_); }

private:
  TcpStore() = default;
  bool call(char op, const std::string &key, const std::vector<char> &value,
            int64_t arg, std::vector<char> &reply, std::string &error);

  std::unique_ptr<StoreServer> server_;
  std::string host_;
  int port_ = 0;
  int fd_ = -1;
  std::mutex mutex_; // one request at a time on the connection
};

} // namespace mpc::rt::dist

#endif // MPC_RUNTIME_DIST_TCPSTORE_H
