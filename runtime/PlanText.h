//===- PlanText.h - the text form of a plan, shared by writer and reader -*- C++ -*-===//
//
// plan.txt, one record per line, tokens separated by spaces (names and
// strings are %-escaped so they contain no spaces):
//   mpc-plan <version>
//   value <dtype> <d0,d1,...|->            (ids count from 0)
//   input <name> <id>
//   output <name> <id>
//   param <name> <id> <trainable 0|1> <offset> <bytes>
//   param <name> <id> <trainable 0|1> seed=<seed>:<mean hex>:<std hex>
//                                           (drawn: runtime/SeededWeights.h)
//   const <id> <offset> <bytes>
//   step <op> <name> <in,in,...|-> <out,...|->
//   cuda-arch <sm_XY,...>                    (artifacts with device code)
//   train loss=<output> loss-scale-init=<double hex> adam-betas=<f>,<f>
//         [lr=<f>] [lr-schedule=<spec>] [accumulate=<micro-batches>]
//   gradient <output> <param>                (train-step plans)
// and after a step, its attributes and what codegen decided for it:
//   attr <key> i <int> | f <double hex> | s <str> | I <i,i,...|-> |
//        S <s,s,...|-> | t <dtype> <dims|-> <offset> <bytes>
//   amp <why this precision, to the end of the line>
//   count-underflow
//   cuda [kernel=K grid=x,y,z block=x,y,z] [prologue=K]
//        [prologue-grid=x,y,z prologue-block=x,y,z] [smem=BYTES]
//        [prologue-smem=BYTES] [alias=V]
//        [fused-into=S] [stored-as=V] [written=N] [chain=S,S,...]
//        [inputs=V,V,...]
//        [stores=V,...] [fused-relu] [epilogue-add=V] [prologue-add=V,V]
//        [prologue-dropout=S,K,V,V]
//        [overwrites=RESULT,INPUT,...] [underflow-counter]
//        [scratch=BYTES] [count=N]
//        [batch=PER:S,S,...@K] [batched-into=S]
//        [lists=TENSORS,PER,LEAD_IN,TRAIL_IN,LEAD_OUT,TRAIL_OUT
//         launch=T,T,...@K ...] [gemm=... [bias-grad=V|bias-grad-b=V|
//         gelu-out=V [gelu-aux=V]|dgelu-out=V gelu-aux=V] [relu-mask=V]
//         [drelu-out=V]]
//        [library-fused-into=S] [conv=...]
// A plan of another version is refused in one line: its steps may not
// mean the same.
//
//===----------------------------------------------------------------------===//

#ifndef MPC_RUNTIME_PLANTEXT_H
#define MPC_RUNTIME_PLANTEXT_H

#include "runtime/Plan.h"

#include <iosfwd>
#include <string>
#include <vector>

namespace mpc::rt::plantext {

/// Version 2: typed steps (op ids, `amp`, `count-underflow`, `cuda`
/// records) instead of free-form `mpc.*` and `cuda.*` attributes.
/// Version 3: `layout` records (stored layouts) and the NHWC field of a
/// cuDNN convolution record.
/// Version 4: `written=N` (a kernel writing only its first N outputs).
/// Version 5: `applied-only` steps (runtime/AppliedOnly.h) and the
/// accumulator read as zero on a group's first micro-batch
/// (`mpc.accum.first`).
inline constexpr int kPlanVersion = 5;

/// A token: %XX for spaces, commas, `%`, control and non-ASCII bytes ("%"
/// alone is the empty string). `text`: the rest of a line, only `%` and
/// control characters escaped.
std::string escape(const std::string &s, bool text = false);
std::string unescape(const std::string &s);

/// "a,b,c", or "-" for an empty list.
template <typename T, typename F>
std::string joinList(const std::vector<T> &v, F f) {
  if (v.empty())
    return "-";
  std::string out;
  for (size_t i = 0; i < v.size(); ++i)
    out += (i ? "," : "") + f(v[i]);
  return out;
}
std::vector<std::string> splitList(const std::string &s);

bool parseDType(const std::string &s, DType &t);
/// Every bit of a double, as C's %a (strtod reads it back).
std::string hexFloat(double v);

/// The `train` record (without its newline), and its key=value tokens
/// read back after the word `train`; false on a token it does not know.
std::string trainRecord(const TrainInfo &t);
bool parseTrain(std::istream &is, TrainInfo &t);

} // namespace mpc::rt::plantext

#endif // MPC_RUNTIME_PLANTEXT_H
