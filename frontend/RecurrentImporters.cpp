//===- RecurrentImporters.cpp - LSTM, GRU, RNN unrolled over time ---------===//
//
// nn.LSTM, nn.GRU and nn.RNN export as ONNX LSTM, GRU and RNN. They are
// imported as their definitions unrolled over the (static) sequence: the input
// projections of every step as one MatMul, then per step the recurrent
// MatMul and the gates (sigmoid, tanh, products) as mpc ops, which
// autodiff, the precision passes and every backend already handle (the
// recurrent GEMMs on tensor cores in fp16, the gate math fused). Forward,
// reverse and bidirectional, both layouts, peepholes, sequence_lens
// (forward: a finished sequence keeps its state and outputs zeros); the
// default activations only. A form outside that (clip, input_forget,
// other activations, sequence_lens in reverse) is a one-line error naming
// it. CausalConvWithState (27: Mamba's and Gated DeltaNet's depthwise
// causal conv with a decode state) is its definition too: the past state
// (zeros without one) and the input concatenated along time, a depthwise
// Conv (a 1-D one, run as 2-D), optional SiLU, and the last k - 1 steps as
// the present state.
//
//===----------------------------------------------------------------------===//

#include "frontend/Composer.h"
#include "frontend/ImporterImpl.h"

#include "llvm/ADT/StringExtras.h"

namespace mlir::mpc::importer {
namespace {

enum class Cell { Lstm, Gru, Rnn };

struct Recurrence {
  Cell cell;
  int64_t gates = 0, hidden = 0, steps = 0, dirs = 1;
  bool reverseOnly = false, linearBeforeReset = false, batchFirst = false;
};

/// Attributes and optional inputs outside what is unrolled here.
LogicalResult checkForm(NodeContext &c, Recurrence &r) {
  bool lstm = r.cell == Cell::Lstm;
  if (failed(c.requireInputs(3)) ||
      failed(c.checkAttrs({"hidden_size", "direction", "layout", "activations",
                           "activation_alpha", "activation_beta", "clip",
                           "input_forget", "linear_before_reset"})))
    return failure();
  if (c.attr("clip"))
    return c.fail("attribute clip is not supported");
  if (c.getInt("input_forget", 0))
    return c.fail("attribute input_forget is not supported");
  if (c.attr("activation_alpha") || c.attr("activation_beta"))
    return c.fail("activation_alpha and activation_beta are not supported");
  if (auto acts = c.getStrings("activations")) {
    SmallVector<std::string> expect =
        lstm ? SmallVector<std::string>{"Sigmoid", "Tanh", "Tanh"}
        : r.cell == Cell::Gru ? SmallVector<std::string>{"Sigmoid", "Tanh"}
                              : SmallVector<std::string>{"Tanh"};
    for (size_t i = 0; i < acts->size(); ++i)
      if ((*acts)[i] != expect[i % expect.size()])
        return c.fail("activation '" + (*acts)[i] +
                      "' is not supported (only the defaults, " +
                      llvm::join(expect, ", ") + ")");
  }
  std::string direction = c.getString("direction", "forward");
  if (direction != "forward" && direction != "reverse" &&
      direction != "bidirectional")
    return c.fail("attribute direction '" + direction + "' is not one of "
                  "forward, reverse, bidirectional");
  r.dirs = direction == "bidirectional" ? 2 : 1;
  r.reverseOnly = direction == "reverse";
  if (c.input(4) && direction != "forward")
    return c.fail("input sequence_lens is supported forward only (a "
                  "reverse pass starts at each sequence's own end)");
  r.gates = lstm ? 4 : r.cell == Cell::Gru ? 3 : 1;
  r.hidden = c.getInt("hidden_size", 0);
  r.linearBeforeReset = !lstm && c.getInt("linear_before_reset", 0);
  r.batchFirst = c.getInt("layout", 0) != 0;
  auto x = typeOf(c.input(0)), w = typeOf(c.input(1));
  if (x.getRank() != 3)
    return c.fail("X must be 3-D");
  r.steps = x.getDimSize(r.batchFirst ? 1 : 0);
  if (ShapedType::isDynamic(r.steps) || x.isDynamicDim(2))
    return c.fail("the sequence length and input size must be static (bind "
                  "the input shapes)");
  if (w.getRank() != 3 || w.isDynamicDim(1) || w.getDimSize(0) != r.dirs)
    return c.fail("W must be [num_directions, gates * hidden_size, "
                  "input_size]");
  if (r.hidden <= 0)
    r.hidden = w.getDimSize(1) / r.gates;
  if (w.getDimSize(1) != r.gates * r.hidden)
    return c.fail("W's second dimension " + Twine(w.getDimSize(1)) +
                  " is not " + Twine(r.gates) + " x hidden_size " +
                  Twine(r.hidden));
  return success();
}

/// `v` [dirs, ...] at direction d, without that axis.
Value direction(Composer &m, Value v, int64_t d) { return m.sliceAt(v, 0, d); }

/// Step `t` in the integer type of `like`, a scalar.
Value intScalar(Composer &m, Value like, int64_t t) {
  auto elem = llvm::cast<IntegerType>(typeOf(like).getElementType());
  return m.constant(DenseElementsAttr::get(
      RankedTensorType::get({}, elem), APInt(elem.getWidth(), t)));
}

/// Gate k of `g` [batch, gates * H].
Value gate(Composer &m, Value g, int64_t k, int64_t h) {
  return m.slice(g, 1, k * h, (k + 1) * h);
}

struct DirectionResult {
  SmallVector<Value> outputs; // H_t in time order, [batch, H] each
  Value lastH, lastC;
};

/// One direction unrolled: X [T, batch, I] (sequence first).
DirectionResult unroll(Composer &m, const Recurrence &r, Value x, int64_t d,
                       bool backwards) {
  NodeContext &c = m.c;
  const int64_t H = r.hidden, G = r.gates;
  Type elem = typeOf(x).getElementType();
  Value w = direction(m, c.input(1), d), rw = direction(m, c.input(2), d);
  // The input projections of all steps in one product: [T, batch, G H].
  Value xw = m.op("mpc.matmul", {x, m.transpose(w, {1, 0})});
  Value rT = m.transpose(rw, {1, 0});
  Value wb, rb; // [G H] each
  if (Value b = c.input(3)) {
    Value bd = direction(m, b, d);
    wb = m.slice(bd, 0, 0, G * H);
    rb = m.slice(bd, 0, G * H, 2 * G * H);
    // Both biases join the input projection, except GRU's recurrent
    // candidate bias under linear_before_reset (the reset gate scales it).
    xw = m.bin("mpc.add", xw,
               r.linearBeforeReset
                   ? m.bin("mpc.add", wb,
                           m.concat({m.slice(rb, 0, 0, 2 * H),
                                     m.floats(elem, {H}, 0.0)},
                                    0))
                   : m.bin("mpc.add", wb, rb));
  }
  auto initial = [&](unsigned i) -> Value {
    if (Value v = c.input(i)) // [dirs, batch, H]; [batch, dirs, H] in layout 1
      return direction(m, r.batchFirst ? m.transpose(v, {1, 0, 2}) : v, d);
    int64_t batch = typeOf(x).getDimSize(1);
    if (ShapedType::isDynamic(batch)) {
      (void)c.fail("without initial_h and initial_c the batch must be static "
             "(bind it with --batch)");
      return {};
    }
    return m.floats(elem, {batch, H}, 0.0);
  };
  DirectionResult out;
  Value h = initial(5), cell = r.cell == Cell::Lstm ? initial(6) : Value();
  Value peep = r.cell == Cell::Lstm && c.input(7) ? direction(m, c.input(7), d)
                                                  : Value(); // [3 H]: i, o, f
  // sequence_lens as a column [batch, 1], compared with each step.
  Value lens = c.input(4) ? m.reshape(c.input(4), {-1, 1}) : Value();
  // What every step reads of the weights, sliced once (a slice of a
  // parameter is a kernel each time).
  Value peepI, peepO, peepF, rbCand, rCand;
  if (peep)
    peepI = m.slice(peep, 0, 0, H), peepO = m.slice(peep, 0, H, 2 * H),
    peepF = m.slice(peep, 0, 2 * H, 3 * H);
  if (r.cell == Cell::Gru && r.linearBeforeReset && rb)
    rbCand = m.slice(rb, 0, 2 * H, 3 * H);
  if (r.cell == Cell::Gru && !r.linearBeforeReset)
    rCand = m.slice(rT, 1, 2 * H, 3 * H); // [H, H]
  out.outputs.resize(r.steps);
  for (int64_t s = 0; s < r.steps; ++s) {
    int64_t t = backwards ? r.steps - 1 - s : s;
    Value gx = m.sliceAt(xw, 0, t);
    Value gh = m.op("mpc.matmul", {h, rT}); // [batch, G H]
    Value prevH = h, prevC = cell;
    if (r.cell == Cell::Rnn) {
      h = m.op("mpc.tanh", {m.bin("mpc.add", gx, gh)});
    } else if (r.cell == Cell::Lstm) {
      Value g = m.bin("mpc.add", gx, gh);
      Value gi = gate(m, g, 0, H), go = gate(m, g, 1, H), gf = gate(m, g, 2, H);
      if (peep) { // i and f see C_{t-1}, o sees C_t
        gi = m.bin("mpc.add", gi, m.bin("mpc.mul", peepI, cell));
        gf = m.bin("mpc.add", gf, m.bin("mpc.mul", peepF, cell));
      }
      Value i = m.op("mpc.sigmoid", {gi}), f = m.op("mpc.sigmoid", {gf}),
            cand = m.op("mpc.tanh", {gate(m, g, 3, H)});
      cell = m.bin("mpc.add", m.bin("mpc.mul", f, cell),
                   m.bin("mpc.mul", i, cand));
      if (peep)
        go = m.bin("mpc.add", go, m.bin("mpc.mul", peepO, cell));
      h = m.bin("mpc.mul", m.op("mpc.sigmoid", {go}), m.op("mpc.tanh", {cell}));
    } else {
      Value z = m.op("mpc.sigmoid",
                     {m.bin("mpc.add", gate(m, gx, 0, H), gate(m, gh, 0, H))});
      Value rg = m.op("mpc.sigmoid",
                      {m.bin("mpc.add", gate(m, gx, 1, H), gate(m, gh, 1, H))});
      Value hc;
      if (r.linearBeforeReset) {
        Value rec = gate(m, gh, 2, H);
        if (rbCand)
          rec = m.bin("mpc.add", rec, rbCand);
        hc = m.bin("mpc.add", gate(m, gx, 2, H), m.bin("mpc.mul", rg, rec));
      } else {
        hc = m.bin("mpc.add", gate(m, gx, 2, H),
                   m.op("mpc.matmul", {m.bin("mpc.mul", rg, h), rCand}));
      }
      hc = m.op("mpc.tanh", {hc});
      // (1 - z) hc + z h = hc + z (h - hc)
      h = m.bin("mpc.add", hc, m.bin("mpc.mul", z, m.bin("mpc.sub", h, hc)));
    }
    out.outputs[t] = h;
    if (lens) { // past its length a sequence keeps its state, outputs 0
      Value live = m.bin("mpc.less", intScalar(m, lens, t), lens);
      out.outputs[t] = m.where(live, h, m.scalar(elem, 0.0));
      h = m.where(live, h, prevH);
      if (cell)
        cell = m.where(live, cell, prevC);
    }
  }
  out.lastH = h;
  out.lastC = cell;
  return out;
}

LogicalResult importRecurrent(NodeContext &c, Cell cell) {
  Recurrence r{cell};
  if (failed(checkForm(c, r)))
    return failure();
  Composer m{c};
  const bool batchFirst = r.batchFirst;
  Value x = batchFirst ? m.transpose(c.input(0), {1, 0, 2}) : c.input(0);
  SmallVector<Value> ys, hs, cs;
  for (int64_t d = 0; d < r.dirs; ++d) {
    DirectionResult dr = unroll(m, r, x, d, r.reverseOnly || d == 1);
    SmallVector<Value> steps;
    for (Value h : dr.outputs)
      steps.push_back(m.unsqueeze(h, {0}));
    ys.push_back(m.unsqueeze(m.concat(steps, 0), {1})); // [T, 1, batch, H]
    hs.push_back(m.unsqueeze(dr.lastH, {0}));
    if (cell == Cell::Lstm)
      cs.push_back(m.unsqueeze(dr.lastC, {0}));
  }
  Value y = r.dirs > 1 ? m.concat(ys, 1) : ys[0];
  if (batchFirst) // [batch, T, dirs, H]
    y = m.transpose(y, {2, 0, 1, 3});
  Value yh = r.dirs > 1 ? m.concat(hs, 0) : hs[0];
  if (batchFirst)
    yh = m.transpose(yh, {1, 0, 2});
  SmallVector<Value> results{y, yh};
  if (cell == Cell::Lstm) {
    Value yc = r.dirs > 1 ? m.concat(cs, 0) : cs[0];
    results.push_back(batchFirst ? m.transpose(yc, {1, 0, 2}) : yc);
  }
  if (c.failed())
    return failure();
  results.resize(std::min<size_t>(results.size(), c.numOutputs()));
  return c.setOutputs(results);
}

} // namespace

LogicalResult importLSTM(NodeContext &c) {
  return importRecurrent(c, Cell::Lstm);
}

LogicalResult importGRU(NodeContext &c) {
  return importRecurrent(c, Cell::Gru);
}

LogicalResult importRNN(NodeContext &c) {
  return importRecurrent(c, Cell::Rnn);
}

LogicalResult importCausalConvWithState(NodeContext &c) {
  if (failed(c.requireInputs(2)) || failed(c.checkAttrs({"activation"})))
    return failure();
  auto x = llvm::cast<RankedTensorType>(c.input(0).getType());
  auto w = llvm::cast<RankedTensorType>(c.input(1).getType());
  if (x.getRank() != 3 || w.getRank() != 3 || x.isDynamicDim(1) ||
      x.isDynamicDim(2) || !w.hasStaticShape() ||
      w.getDimSize(0) != x.getDimSize(1) || w.getDimSize(1) != 1)
    return c.fail("input must be batch x channels x length (static channels "
                  "and length) and weight channels x 1 x k");
  std::string activation = c.getString("activation", "none");
  if (activation != "none" && activation != "silu" && activation != "swish")
    return c.fail("unknown activation '" + activation + "'");
  int64_t channels = x.getDimSize(1), length = x.getDimSize(2),
          k = w.getDimSize(2);
  Composer m{c};
  Type et = x.getElementType();
  Value past = c.input(3);
  if (past) {
    auto p = llvm::cast<RankedTensorType>(past.getType());
    if (p.getRank() != 3 || p.getDimSize(1) != channels ||
        p.getDimSize(2) != k - 1)
      return c.fail("past_state must be batch x " + Twine(channels) + " x " +
                    Twine(k - 1));
  }
  Value padded = c.input(0);
  if (k > 1) {
    if (!past) // zeros of [batch, C, k - 1] (the batch may be dynamic)
      past = m.op("mpc.expand",
                  {m.splat(et, {1, channels, k - 1}, 0.0),
                   m.concat({m.slice(m.op("mpc.shape", {c.input(0)}), 0, 0, 2),
                             m.i64s({k - 1})},
                            0)});
    padded = m.concat({past, c.input(0)}, 2);
  }
  SmallVector<Value> operands{padded, c.input(1)};
  if (c.input(2))
    operands.push_back(c.input(2));
  Value y = m.op("mpc.conv", operands,
                 {c.named("group", c.b.getI64IntegerAttr(channels)),
                  c.named("kernel_shape", c.b.getDenseI64ArrayAttr({k}))});
  if (activation != "none")
    y = m.bin("mpc.mul", y, m.op("mpc.sigmoid", {y}));
  // The last k - 1 steps of the padded input (none for k = 1: an empty
  // state, [batch, C, 0]).
  Value present = m.slice(padded, 2, length, length + k - 1);
  if (c.failed())
    return failure();
  return c.setOutputs({y, present});
}

} // namespace mlir::mpc::importer
