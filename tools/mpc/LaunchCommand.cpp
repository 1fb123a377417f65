//===- LaunchCommand.cpp - `mpc launch`: start the local ranks of a job ---===//
//
// torchrun's job for this machine: start --nproc processes with RANK,
// WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR and MASTER_PORT
// set, forward SIGINT/SIGTERM to them, and when one fails give the others
// a few seconds to notice and report (they name the rank that left), then
// stop them. The exit status is the first failing rank's.
//
//===----------------------------------------------------------------------===//

#include "Commands.h"

#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstring>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace llvm;

namespace mpc {

cl::SubCommand launchCommand(
    "launch", "Start the local ranks of a data-parallel job (as torchrun): "
              "mpc launch --nproc N -- mpc train ...");

static cl::opt<int> nproc("nproc", cl::desc("Ranks on this machine"),
                          cl::init(1), cl::sub(launchCommand));
static cl::opt<int> nnodes("nnodes", cl::desc("Machines in the job"),
                           cl::init(1), cl::sub(launchCommand));
static cl::opt<int> nodeRank("node-rank",
                             cl::desc("This machine's index in the job"),
                             cl::init(0), cl::sub(launchCommand));
static cl::opt<std::string>
    master("master",
           cl::desc("Rank 0's machine and a free port, ADDR:PORT (default: "
                    "127.0.0.1 and a free port, for a one-machine job)"),
           cl::value_desc("addr:port"), cl::sub(launchCommand));
static cl::opt<double> grace(
    "grace",
    cl::desc("Seconds the other ranks get to report and exit after one "
             "fails, before they are stopped"),
    cl::init(15), cl::sub(launchCommand));
static cl::list<std::string> command(cl::Positional, cl::OneOrMore,
                                     cl::desc("-- <command> [args...]"),
                                     cl::sub(launchCommand));

namespace {

volatile std::sig_atomic_t pendingSignal = 0;
void onSignal(int sig) { pendingSignal = sig; }

/// A port nobody listens on now (the kernel's choice).
int freePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  int port = 29500;
  if (fd >= 0 && ::bind(fd, (sockaddr *)&a, sizeof a) == 0 &&
      ::getsockname(fd, (sockaddr *)&a, &len) == 0)
    port = ntohs(a.sin_port);
  if (fd >= 0)
    ::close(fd);
  return port;
}

std::string describeStatus(int status) {
  if (WIFSIGNALED(status))
    return std::string("was killed by signal ") +
           std::to_string(WTERMSIG(status)) + " (" +
           strsignal(WTERMSIG(status)) + ")";
  return "exited with status " + std::to_string(WEXITSTATUS(status));
}

} // namespace

int runLaunch() {
  if (nproc < 1 || nnodes < 1 || nodeRank < 0 || nodeRank >= nnodes)
    return reportError("mpc launch needs --nproc >= 1, --nnodes >= 1 and 0 "
                       "<= --node-rank < --nnodes");
  std::string addr = "127.0.0.1";
  int port = 0;
  if (!master.empty()) {
    auto [a, p] = StringRef(master).rsplit(':');
    if (a.empty() || p.getAsInteger(10, port) || port <= 0 || port > 65535)
      return reportError("--master must be ADDR:PORT, got '" + master + "'");
    addr = a.str();
  } else if (nnodes > 1) {
    return reportError("a job on several machines needs --master ADDR:PORT "
                       "(rank 0's machine)");
  } else {
    port = freePort();
  }
  // `mpc` names this executable, wherever it is.
  std::vector<std::string> argv(command.begin(), command.end());
  if (argv[0] == "mpc") {
    char self[4096];
    ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0)
      argv[0] = std::string(self, (size_t)n);
  }
  struct sigaction sa{};
  sa.sa_handler = onSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);

  int world = nnodes * nproc;
  int threadsPerRank =
      std::max(1, (int)std::thread::hardware_concurrency() / nproc);
  std::vector<pid_t> pids(nproc, -1);
  for (int local = 0; local < nproc; ++local) {
    int rank = nodeRank * nproc + local;
    pid_t pid = ::fork();
    if (pid < 0)
      return reportError("cannot start rank " + std::to_string(rank) + ": " +
                         std::strerror(errno));
    if (pid == 0) {
      signal(SIGINT, SIG_DFL);
      signal(SIGTERM, SIG_DFL);
      setenv("RANK", std::to_string(rank).c_str(), 1);
      setenv("WORLD_SIZE", std::to_string(world).c_str(), 1);
      setenv("LOCAL_RANK", std::to_string(local).c_str(), 1);
      setenv("LOCAL_WORLD_SIZE", std::to_string(nproc.getValue()).c_str(), 1);
      setenv("MASTER_ADDR", addr.c_str(), 1);
      setenv("MASTER_PORT", std::to_string(port).c_str(), 1);
      // The ranks share this machine's cores (torchrun sets
      // OMP_NUM_THREADS=1 for the same reason).
      if (!std::getenv("MPC_NUM_THREADS"))
        setenv("MPC_NUM_THREADS", std::to_string(threadsPerRank).c_str(), 1);
      std::vector<char *> args;
      for (std::string &a : argv)
        args.push_back(a.data());
      args.push_back(nullptr);
      ::execvp(args[0], args.data());
      std::fprintf(stderr, "mpc: error: cannot run '%s': %s\n", args[0],
                   std::strerror(errno));
      std::_Exit(127);
    }
    pids[local] = pid;
  }

  int live = nproc, exitCode = 0;
  bool stopping = false;
  auto deadline = std::chrono::steady_clock::time_point::max();
  int forwarded = 0;
  while (live > 0) {
    if (int sig = pendingSignal; sig && sig != forwarded) {
      // Ctrl-C or a scheduler's SIGTERM: every rank gets it.
      for (pid_t p : pids)
        if (p > 0)
          ::kill(p, sig);
      forwarded = sig;
      stopping = true;
      deadline = std::min(deadline, std::chrono::steady_clock::now() +
                                        std::chrono::seconds(10));
      if (!exitCode)
        exitCode = 128 + sig;
    }
    // Reap every rank that has ended. When several failed at once, the
    // one a signal killed is the cause; the others reported it.
    int status, failedRank = -1, failedStatus = 0;
    bool reaped = false;
    for (pid_t done; (done = ::waitpid(-1, &status, WNOHANG)) > 0;)
      for (int local = 0; local < nproc; ++local)
        if (pids[local] == done) {
          pids[local] = -1;
          --live;
          reaped = true;
          bool failed = !WIFEXITED(status) || WEXITSTATUS(status) != 0;
          if (failed && (failedRank < 0 || WIFSIGNALED(status)))
            failedRank = nodeRank * nproc + local, failedStatus = status;
        }
    if (failedRank >= 0 && !exitCode) {
      // One write: the ranks print to this stderr at the same moment.
      errs() << ("mpc launch: rank " + std::to_string(failedRank) + " " +
                 describeStatus(failedStatus) +
                 (live ? "; stopping the other ranks" : "") + "\n");
      exitCode = WIFEXITED(failedStatus) ? WEXITSTATUS(failedStatus)
                                         : 128 + WTERMSIG(failedStatus);
    }
    if (failedRank >= 0 && !stopping) {
      stopping = true;
      deadline = std::chrono::steady_clock::now() +
                 std::chrono::milliseconds((int64_t)(grace * 1e3));
    }
    if (reaped)
      continue;
    if (stopping && std::chrono::steady_clock::now() > deadline) {
      // Past the grace period: terminate, then kill what is left.
      for (pid_t p : pids)
        if (p > 0)
          ::kill(p, forwarded == SIGTERM ? SIGKILL : SIGTERM);
      forwarded = SIGTERM;
      deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return exitCode;
}

} // namespace mpc
