//===- TcpStore.cpp - the job's key-value store over TCP ------------------===//
//
// A request is op (1 byte), key, value (each a u32 length and bytes) and a
// 64-bit argument (a timeout in ms, or an increment); a reply is a status
// byte and a value. The server runs a thread per connection: a job has a
// handful of ranks, each with one connection.
//
//===----------------------------------------------------------------------===//

#include "runtime/dist/TcpStore.h"

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <map>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

namespace mpc::rt::dist {
namespace {

enum Op : char { Set = 's', Get = 'g', Has = 'h', Add = 'a', Hello = 'r', Erase = 'e' };
enum Status : char { Ok = 0, Missing = 1 };

bool sendAll(int fd, const void *data, size_t n) {
  const char *p = static_cast<const char *>(data);
  while (n) {
    ssize_t k = ::send(fd, p, n, MSG_NOSIGNAL);
    if (k < 0 && errno == EINTR)
      continue;
    if (k <= 0)
      return false;
    p += k, n -= (size_t)k;
  }
  return true;
}

bool recvAll(int fd, void *data, size_t n) {
  char *p = static_cast<char *>(data);
  while (n) {
    ssize_t k = ::recv(fd, p, n, 0);
    if (k < 0 && errno == EINTR)
      continue;
    if (k <= 0)
      return false;
    p += k, n -= (size_t)k;
  }
  return true;
}

bool sendBytes(int fd, const void *data, uint32_t n) {
  return sendAll(fd, &n, 4) && sendAll(fd, data, n);
}

bool recvBytes(int fd, std::vector<char> &out) {
  uint32_t n;
  if (!recvAll(fd, &n, 4) || n > (1u << 30))
    return false;
  out.resize(n);
  return recvAll(fd, out.data(), n);
}

/// getaddrinfo for TCP on host:port (numeric port).
addrinfo *resolve(const std::string &host, int port, bool passive,
                  std::string &error) {
  addrinfo hints{}, *res = nullptr;
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = passive ? AI_PASSIVE : 0;
  std::string service = std::to_string(port);
  if (int rc = getaddrinfo(passive ? nullptr : host.c_str(), service.c_str(),
                           &hints, &res)) {
    error = "cannot resolve " + host + ": " + gai_strerror(rc);
    return nullptr;
  }
  return res;
}

} // namespace

class StoreServer {
  /// The keys and what guards them, owned jointly by the server and its
  /// connection threads: a thread still serving a client when the server
  /// goes (the process is ending) keeps them alive.
  struct State {
    std::mutex mutex;
    std::condition_variable changed;
    std::map<std::string, std::vector<char>> data;
  };

public:
  ~StoreServer() {
    stopping_ = true;
    if (listen_ >= 0)
      ::shutdown(listen_, SHUT_RDWR), ::close(listen_);
    if (acceptor_.joinable())
      acceptor_.join();
  }

  bool start(int port, std::string &error) {
    addrinfo *res = resolve("", port, true, error);
    if (!res)
      return false;
    for (addrinfo *a = res; a && listen_ < 0; a = a->ai_next) {
      int fd = ::socket(a->ai_family, a->ai_socktype, a->ai_protocol);
      int one = 1;
      ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
      if (fd >= 0 && ::bind(fd, a->ai_addr, a->ai_addrlen) == 0 &&
          ::listen(fd, 128) == 0)
        listen_ = fd;
      else if (fd >= 0)
        error = std::strerror(errno), ::close(fd);
    }
    freeaddrinfo(res);
    if (listen_ < 0)
      return (error = "cannot listen on port " + std::to_string(port) + ": " +
                      error + " (another job on MASTER_PORT?)",
              false);
    acceptor_ = std::thread([this] { acceptLoop(); });
    return true;
  }

private:
  void acceptLoop() {
    while (!stopping_) {
      int fd = ::accept(listen_, nullptr, nullptr);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED)
          continue;
        return;
      }
      std::thread([state = state_, fd] { serve(*state, fd); }).detach();
    }
  }

  static void serve(State &st, int fd) {
    int rank = -1; // whose connection, once it says hello
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    for (;;) {
      char op;
      std::vector<char> key, value;
      int64_t arg;
      if (!recvAll(fd, &op, 1) || !recvBytes(fd, key) ||
          !recvBytes(fd, value) || !recvAll(fd, &arg, 8))
        break;
      std::string k(key.begin(), key.end());
      char status = Ok;
      std::vector<char> reply;
      {
        std::unique_lock<std::mutex> lock(st.mutex);
        if (op == Set) {
          st.data[k] = value;
          st.changed.notify_all();
        } else if (op == Get) {
          auto until = std::chrono::steady_clock::now() +
                       std::chrono::milliseconds(arg);
          bool found = st.changed.wait_until(
              lock, until, [&] { return st.data.count(k) > 0; });
          if (found)
            reply = st.data[k];
          else
            status = Missing;
        } else if (op == Erase) {
          st.data.erase(k);
        } else if (op == Hello) {
          rank = (int)arg;
        } else if (op == Has) {
          status = st.data.count(k) ? Ok : Missing;
        } else if (op == Add) {
          int64_t v = 0;
          auto it = st.data.find(k);
          if (it != st.data.end() && it->second.size() == 8)
            std::memcpy(&v, it->second.data(), 8);
          v += arg;
          reply.resize(8);
          std::memcpy(reply.data(), &v, 8);
          st.data[k] = reply;
          st.changed.notify_all();
        }
      }
      if (!sendAll(fd, &status, 1) ||
          !sendBytes(fd, reply.data(), (uint32_t)reply.size()))
        break;
    }
    ::close(fd);
    // A rank's connection closed before it finished: it died.
    std::lock_guard<std::mutex> lock(st.mutex);
    if (rank >= 0 && !st.data.count("finished/" + std::to_string(rank)) &&
        !st.data.count("lost")) {
      std::string r = std::to_string(rank);
      st.data["lost"] = std::vector<char>(r.begin(), r.end());
      st.changed.notify_all();
    }
  }

  int listen_ = -1;
  std::atomic<bool> stopping_{false};
  std::thread acceptor_;
  std::shared_ptr<State> state_ = std::make_shared<State>();
};

std::unique_ptr<TcpStore> TcpStore::open(const std::string &host, int port,
                                         bool serve,
                                         std::chrono::milliseconds timeout,
                                         std::string &error) {
  std::unique_ptr<TcpStore> store(new TcpStore);
  store->host_ = host;
  store->port_ = port;
  if (serve) {
    store->server_ = std::make_unique<StoreServer>();
    if (!store->server_->start(port, error))
      return nullptr;
  }
  auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string why;
  while (store->fd_ < 0) {
    if (addrinfo *res = resolve(host, port, false, why)) {
      for (addrinfo *a = res; a && store->fd_ < 0; a = a->ai_next) {
        int fd = ::socket(a->ai_family, a->ai_socktype, a->ai_protocol);
        if (fd >= 0 && ::connect(fd, a->ai_addr, a->ai_addrlen) == 0)
          store->fd_ = fd;
        else if (fd >= 0)
          why = std::strerror(errno), ::close(fd);
      }
      freeaddrinfo(res);
    }
    if (store->fd_ >= 0)
      break;
    if (std::chrono::steady_clock::now() > deadline)
      return (error = "cannot reach the job's store at " + store->address() +
                      " (MASTER_ADDR:MASTER_PORT): " + why,
              nullptr);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  int one = 1;
  ::setsockopt(store->fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return store;
}

TcpStore::~TcpStore() {
  if (fd_ >= 0)
    ::close(fd_);
}

bool TcpStore::call(char op, const std::string &key,
                    const std::vector<char> &value, int64_t arg,
                    std::vector<char> &reply, std::string &error) {
  std::lock_guard<std::mutex> lock(mutex_);
  char status;
  if (!sendAll(fd_, &op, 1) || !sendBytes(fd_, key.data(), key.size()) ||
      !sendBytes(fd_, value.data(), value.size()) ||
      !sendAll(fd_, &arg, 8) || !recvAll(fd_, &status, 1) ||
      !recvBytes(fd_, reply))
    return (error = "lost the job's store at " + address() +
                    " (rank 0 is gone)",
            false);
  return status == Ok || (error = "missing", false);
}

bool TcpStore::set(const std::string &key, const std::vector<char> &value,
                   std::string &error) {
  std::vector<char> reply;
  return call(Set, key, value, 0, reply, error);
}

bool TcpStore::get(const std::string &key, std::vector<char> &value,
                   std::chrono::milliseconds timeout, std::string &error) {
  if (call(Get, key, {}, timeout.count(), value, error))
    return true;
  if (error == "missing")
    error = "timed out after " + std::to_string(timeout.count() / 1000) +
            " s waiting for '" + key + "' in the job's store";
  return false;
}

bool TcpStore::erase(const std::string &key, std::string &error) {
  std::vector<char> reply;
  return call(Erase, key, {}, 0, reply, error);
}

bool TcpStore::hello(int rank, std::string &error) {
  std::vector<char> reply;
  return call(Hello, "", {}, rank, reply, error);
}

bool TcpStore::has(const std::string &key, bool &exists, std::string &error) {
  std::vector<char> reply;
  exists = call(Has, key, {}, 0, reply, error);
  if (!exists && error == "missing")
    return error.clear(), true;
  return exists;
}

bool TcpStore::add(const std::string &key, int64_t delta, int64_t &value,
                   std::string &error) {
  std::vector<char> reply;
  if (!call(Add, key, {}, delta, reply, error) || reply.size() != 8)
    return false;
  std::memcpy(&value, reply.data(), 8);
  return true;
}

} // namespace mpc::rt::dist
