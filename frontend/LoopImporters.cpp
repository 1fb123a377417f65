//===- LoopImporters.cpp - Scan and Loop unrolled ------------------------===//
//
// Scan (opset 9 on) runs its body once per element of its scan inputs'
// sequence axis, carrying state variables from one iteration to the next.
// With the sequence length static it is imported unrolled, as LSTM is: per
// iteration each scan input's slice (in its direction), the body graph
// inlined in place on the states and slices (it may read the enclosing
// graph), its new states carried on; each scan output the iterations'
// values stacked along its axis (reversed for direction 1). Autodiff and
// the backends then see ordinary ops. Opset 8's Scan, whose states and
// scan inputs lead with a batch axis, runs the same per batch element
// (sequence_lens, which would stop them early, is not supported).
//
// Loop is unrolled the same way where its trip count is a constant and its
// condition one at every iteration once shapes are bound (the body's
// iteration number is a constant in each copy, so conditions computed from
// it fold): the expanded Range, loops over a shape's size. A condition
// known only at run time is a one-line error.
//
//===----------------------------------------------------------------------===//

#include "frontend/Composer.h"
#include "frontend/ImporterImpl.h"

#include "ir/ShapeRules.h"

namespace mlir::mpc::importer {
namespace {

/// An attribute of one value per item (axes or directions), `fill` where
/// absent; axes normalized against `ranks`.
FailureOr<SmallVector<int64_t>> perItem(NodeContext &c, StringRef name,
                                        ArrayRef<int64_t> ranks, bool axes) {
  auto v = c.getInts(name).value_or(SmallVector<int64_t>(ranks.size(), 0));
  if (v.size() != ranks.size())
    return c.fail("attribute " + name + " must have " + Twine(ranks.size()) +
                  " values, got " + Twine(v.size()));
  for (size_t i = 0; i < v.size(); ++i) {
    if (axes && (v[i] < -ranks[i] || v[i] >= ranks[i]))
      return c.fail("attribute " + name + ": axis " + Twine(v[i]) +
                    " is out of range for rank " + Twine(ranks[i]));
    if (!axes && v[i] != 0 && v[i] != 1)
      return c.fail("attribute " + name + ": direction " + Twine(v[i]) +
                    " is not 0 or 1");
    if (axes && v[i] < 0)
      v[i] += ranks[i];
  }
  return v;
}

/// The body run over `steps` iterations: the final states and, per scan
/// output, each iteration's value.
LogicalResult unroll(NodeContext &c, const onnx::AttributeProto &body,
                     SmallVector<Value> &states, ArrayRef<Value> scans,
                     ArrayRef<int64_t> axes, ArrayRef<int64_t> dirs,
                     int64_t steps,
                     SmallVector<SmallVector<Value>> &perOutput) {
  Composer b{c};
  int64_t n = states.size();
  for (int64_t i = 0; i < steps; ++i) {
    SmallVector<Value> args(states);
    for (auto [x, axis, dir] : llvm::zip(scans, axes, dirs)) {
      int64_t at = dir ? steps - 1 - i : i;
      args.push_back(b.sliceAt(x, axis, at));
    }
    if (c.failed())
      return failure();
    auto outs = c.inlineGraph(body, args);
    if (failed(outs))
      return failure();
    for (int64_t s = 0; s < n; ++s) {
      if ((*outs)[s].getType() != states[s].getType())
        return c.fail("the body changes state " + Twine(s) + "'s type");
      states[s] = (*outs)[s];
    }
    perOutput.resize(outs->size() - n);
    for (size_t o = n; o < outs->size(); ++o)
      perOutput[o - n].push_back((*outs)[o]);
  }
  return success();
}

/// The iterations' values stacked along `axis`, in reverse for direction 1.
Value stack(Composer &b, ArrayRef<Value> values, int64_t axis, bool reverse) {
  SmallVector<Value> parts;
  for (Value v : values)
    parts.push_back(b.unsqueeze(v, {axis}));
  if (reverse)
    std::reverse(parts.begin(), parts.end());
  return parts.size() == 1 ? parts[0] : b.concat(parts, axis);
}

} // namespace

LogicalResult importScan(NodeContext &c) {
  bool batched = c.opset < 9; // opset 8: sequence_lens first, a batch axis
  if (failed(c.checkAttrs({"body", "num_scan_inputs", "directions",
                           "scan_input_axes", "scan_input_directions",
                           "scan_output_axes", "scan_output_directions"})))
    return failure();
  if (batched && c.input(0))
    return c.fail("input sequence_lens is not supported (every sequence "
                  "runs its full length)");
  const onnx::AttributeProto *body = c.attr("body");
  if (!body || body->type() != onnx::AttributeProto::GRAPH)
    return c.fail("attribute 'body' must be a graph");
  ArrayRef<Value> inputs = ArrayRef<Value>(c.inputs).drop_front(batched);
  int64_t m = c.getInt("num_scan_inputs", 0);
  int64_t n = (int64_t)inputs.size() - m;
  if (m < 1 || n < 0)
    return c.fail("num_scan_inputs " + Twine(m) +
                  " must be between 1 and "
                  "the number of states and scan inputs " +
                  Twine(inputs.size()));
  for (Value v : inputs)
    if (!v)
      return c.fail("inputs may not be omitted");
  int64_t k = (int64_t)c.numOutputs() - n;
  if (k < 0 || body->g().output_size() != n + k ||
      body->g().input_size() != n + m)
    return c.fail("the body must take the states and scan inputs (" + Twine(n) +
                  " + " + Twine(m) +
                  ") and give the states and scan outputs (" + Twine(n) +
                  " + " + Twine(std::max<int64_t>(k, 0)) + ")");
  ArrayRef<Value> states0 = inputs.take_front(n), scans = inputs.drop_front(n);
  SmallVector<int64_t> inRanks;
  for (Value x : scans)
    inRanks.push_back(typeOf(x).getRank() - batched);
  FailureOr<SmallVector<int64_t>> inAxes = SmallVector<int64_t>(m, 0);
  auto inDirs = perItem(c, batched ? "directions" : "scan_input_directions",
                        inRanks, false);
  if (!batched)
    inAxes = perItem(c, "scan_input_axes", inRanks, true);
  if (failed(inAxes) || failed(inDirs))
    return failure();
  int64_t steps = ShapedType::kDynamic;
  for (auto [x, axis] : llvm::zip(scans, *inAxes)) {
    int64_t len = typeOf(x).getDimSize(axis + batched);
    if (len == ShapedType::kDynamic || len < 1 ||
        (steps != ShapedType::kDynamic && len != steps))
      return c.fail("the scan inputs' sequence lengths must be static, at "
                    "least 1 and equal (bind the input shapes)");
    steps = len;
  }
  Composer b{c};
  if (!batched) {
    SmallVector<Value> states(states0.begin(), states0.end());
    SmallVector<SmallVector<Value>> perOutput;
    if (failed(unroll(c, *body, states, scans, *inAxes, *inDirs, steps,
                      perOutput)))
      return failure();
    SmallVector<int64_t> outRanks;
    for (const auto &values : perOutput)
      outRanks.push_back(typeOf(values[0]).getRank() + 1);
    auto outAxes = perItem(c, "scan_output_axes", outRanks, true);
    auto outDirs = perItem(c, "scan_output_directions", outRanks, false);
    if (failed(outAxes) || failed(outDirs))
      return failure();
    SmallVector<Value> results(states);
    for (auto [values, axis, dir] : llvm::zip(perOutput, *outAxes, *outDirs))
      results.push_back(stack(b, values, axis, dir));
    if (c.failed())
      return failure();
    return c.setOutputs(results);
  }
  // Opset 8: each batch element's scan on its own, the results stacked.
  for (Value x : inputs)
    if (typeOf(x).isDynamicDim(0))
      return c.fail("the batch must be static (bind it with --batch)");
  int64_t batch = typeOf(inputs[0]).getDimSize(0);
  SmallVector<SmallVector<Value>> finals(n), outputs(k);
  for (int64_t r = 0; r < batch; ++r) {
    SmallVector<Value> states, rowScans;
    for (Value x : states0)
      states.push_back(b.sliceAt(x, 0, r));
    for (Value x : scans)
      rowScans.push_back(b.sliceAt(x, 0, r));
    SmallVector<SmallVector<Value>> perOutput;
    if (c.failed() || failed(unroll(c, *body, states, rowScans, *inAxes,
                                    *inDirs, steps, perOutput)))
      return failure();
    for (int64_t s = 0; s < n; ++s)
      finals[s].push_back(states[s]);
    for (int64_t o = 0; o < k; ++o)
      outputs[o].push_back(stack(b, perOutput[o], 0, false));
  }
  SmallVector<Value> results;
  for (const auto &values : finals)
    results.push_back(stack(b, values, 0, false));
  for (const auto &values : outputs)
    results.push_back(stack(b, values, 0, false));
  if (c.failed())
    return failure();
  return c.setOutputs(results);
}

/// Loops unrolled past this many iterations are refused (a condition that
/// never turns false, or a trip count meant as "forever").
constexpr int64_t kMaxUnrolledIterations = 1 << 16;

LogicalResult importLoop(NodeContext &c) {
  if (failed(c.checkAttrs({"body"})))
    return failure();
  const onnx::AttributeProto *body = c.attr("body");
  if (!body || body->type() != onnx::AttributeProto::GRAPH)
    return c.fail("attribute 'body' must be a graph");
  // The trip count and the first condition as constants (null: absent).
  std::optional<int64_t> trips;
  bool cond = true;
  if (Value m = c.input(0)) {
    SmallVector<int64_t> count;
    if (!getConstantInts(m, count) || count.size() != 1)
      return c.fail("input M (the trip count) must be a constant once "
                    "shapes are bound (mpc unrolls Loop)");
    trips = count[0];
  }
  auto constantBool = [](Value v) -> std::optional<bool> {
    std::optional<double> s = getConstantScalar(v);
    if (!s || !getElementTypeOrSelf(v).isInteger(1))
      return std::nullopt;
    return *s != 0.0;
  };
  if (Value first = c.input(1)) {
    auto known = constantBool(first);
    if (!known)
      return c.fail("input cond must be a constant once shapes are bound "
                    "(mpc unrolls Loop)");
    cond = *known;
  }
  SmallVector<Value> carried;
  for (unsigned i = 2; i < c.inputs.size(); ++i) {
    if (!c.input(i))
      return c.fail("loop-carried inputs may not be omitted");
    carried.push_back(c.input(i));
  }
  int64_t n = carried.size(), k = (int64_t)c.numOutputs() - n;
  if (k < 0 || body->g().input_size() != n + 2 ||
      body->g().output_size() != n + 1 + k)
    return c.fail("the body must take the iteration number, the condition "
                  "and the " +
                  Twine(n) +
                  " loop-carried values and give the "
                  "condition, those values and the " +
                  Twine(std::max<int64_t>(k, 0)) + " scan outputs");
  Composer b{c};
  SmallVector<SmallVector<Value>> perOutput(k);
  int64_t i = 0;
  for (; cond && (!trips || i < *trips); ++i) {
    if (i == kMaxUnrolledIterations)
      return c.fail("the loop runs past " + Twine(kMaxUnrolledIterations) +
                    " iterations (mpc unrolls Loop)");
    SmallVector<Value> args{
        b.i64s({i}, {}),
        b.constant(DenseElementsAttr::get(
            RankedTensorType::get({}, c.b.getI1Type()), true))};
    args.append(carried);
    if (c.failed())
      return failure();
    auto outs = c.inlineGraph(*body, args);
    if (failed(outs))
      return failure();
    auto next = constantBool((*outs)[0]);
    if (!next)
      return c.fail("the body's condition must be a constant once shapes "
                    "are bound (mpc unrolls Loop; iteration " +
                    Twine(i) + ")");
    cond = *next;
    for (int64_t v = 0; v < n; ++v)
      carried[v] = (*outs)[1 + v];
    for (int64_t o = 0; o < k; ++o)
      perOutput[o].push_back((*outs)[1 + n + o]);
  }
  if (k && i == 0)
    return c.fail("the loop runs no iteration, so its scan outputs have no "
                  "known shape");
  SmallVector<Value> results(carried);
  for (const auto &values : perOutput)
    results.push_back(stack(b, values, 0, false));
  if (c.failed())
    return failure();
  return c.setOutputs(results);
}

} // namespace mlir::mpc::importer
