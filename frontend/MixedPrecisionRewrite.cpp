//===- MixedPrecisionRewrite.cpp - FP32 ONNX -> mixed-precision ONNX ------===//

#include "frontend/MixedPrecisionRewrite.h"
#include "frontend/ModelLoader.h"
#include "runtime/Half.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

namespace fs = std::filesystem;

namespace mlir::mpc {

using onnx::TensorProto;

static constexpr int kFloat = TensorProto::FLOAT;

onnx::ModelProto skeletonOf(onnx::ModelProto &m) {
  // Move the initializers out while copying the rest.
  google::protobuf::RepeatedPtrField<TensorProto> inits;
  inits.Swap(m.mutable_graph()->mutable_initializer());
  onnx::ModelProto s(m);
  inits.Swap(m.mutable_graph()->mutable_initializer());
  auto *g = s.mutable_graph();
  std::set<std::string> inputs;
  for (const auto &v : g->input())
    inputs.insert(v.name());
  for (const auto &t : m.graph().initializer()) {
    if (t.data_type() != kFloat) {
      *g->add_initializer() = t; // integers: shapes and indices, small
      continue;
    }
    if (inputs.count(t.name()))
      continue; // already declared as an input (older exporters)
    auto *v = g->add_input();
    v->set_name(t.name());
    auto *tt = v->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(t.data_type());
    auto *shape = tt->mutable_shape(); // present even for scalars (rank 0)
    for (int64_t d : t.dims())
      shape->add_dim()->set_dim_value(d);
  }
  return s;
}

std::string nodeKey(const onnx::NodeProto &node) {
  if (!node.name().empty())
    return node.name();
  return node.output_size() ? node.output(0) : std::string();
}

namespace {

/// FP32 values as fp16/bf16 bits in raw_data; finite values beyond fp16's
/// range saturate, nonzero values below its smallest subnormal become 0.
void storeLow(TensorProto &t, std::vector<float> &values, bool bf16,
              RewriteReport::Stored &stats) {
  std::string raw(values.size() * 2, '\0');
  auto *bits = reinterpret_cast<uint16_t *>(raw.data());
  if (bf16) {
    for (size_t i = 0; i < values.size(); ++i)
      bits[i] = ::mpc::rt::floatToBf16(values[i]);
  } else {
    for (float &v : values)
      if (std::isfinite(v) && std::fabs(v) > 65504.0f) {
        v = std::copysign(65504.0f, v);
        ++stats.saturated;
      }
    ::mpc::rt::floatsToHalf(values.data(), bits, (int64_t)values.size());
    for (size_t i = 0; i < values.size(); ++i)
      stats.flushed += values[i] != 0.0f && (bits[i] & 0x7fff) == 0;
  }
  stats.elements = (int64_t)values.size();
  t.clear_float_data();
  t.clear_external_data();
  t.set_data_location(TensorProto::DEFAULT);
  t.set_data_type(bf16 ? TensorProto::BFLOAT16 : TensorProto::FLOAT16);
  t.set_raw_data(std::move(raw));
}

bool floatValues(const TensorProto &t, const std::string &dir,
                 std::vector<float> &out, std::string &error) {
  int64_t n = 1;
  for (int64_t d : t.dims())
    n *= d;
  out.resize(n);
  if (t.data_location() == TensorProto::EXTERNAL) {
    std::vector<char> bytes;
    if (!readExternalData(t, dir, bytes, error))
      return false;
    if ((int64_t)bytes.size() != n * 4)
      return error = "external data of '" + t.name() + "' has the wrong size",
             false;
    std::memcpy(out.data(), bytes.data(), bytes.size());
  } else if (t.has_raw_data()) {
    if ((int64_t)t.raw_data().size() != n * 4)
      return error = "raw data of '" + t.name() + "' has the wrong size",
             false;
    std::memcpy(out.data(), t.raw_data().data(), n * 4);
  } else {
    if (t.float_data_size() != n)
      return error = "initializer '" + t.name() + "' has the wrong size",
             false;
    std::copy(t.float_data().begin(), t.float_data().end(), out.begin());
  }
  return true;
}

void setElemType(onnx::ValueInfoProto &v, int type) {
  v.mutable_type()->mutable_tensor_type()->set_elem_type(type);
}

/// The rewrite in phases over one graph: the precision of each node, the
/// new element type of each tensor (storing initializers and constants
/// low), the casts where types meet, and the nodes emitted again with the
/// casts after their producers.
class Rewriter {
public:
  Rewriter(onnx::ModelProto &model, const std::string &dir,
           const std::map<std::string, bool> &painted,
           const std::map<std::string, int> &elemTypes,
           const RewriteOptions &options, RewriteReport &report)
      : model(model), g(*model.mutable_graph()), dir(dir), options(options),
        report(report), lowNodes(painted), type(elemTypes),
        low(options.bf16 ? TensorProto::BFLOAT16 : TensorProto::FLOAT16),
        lowName(options.bf16 ? "bf16" : "fp16") {}

  bool run(std::string &error) {
    nameNodes();
    indexGraph();
    paintIdentities();
    if (!retypeStorage(error))
      return false;
    castOutputs();
    castInputs();
    emitNodes();
    auto *meta = model.add_metadata_props();
    meta->set_key("mpc.converted");
    meta->set_value(lowName);
    return true;
  }

private:
  onnx::ModelProto &model;
  onnx::GraphProto &g;
  const std::string &dir;
  const RewriteOptions &options;
  RewriteReport &report;
  std::map<std::string, bool> lowNodes; // node key -> low precision?
  std::map<std::string, int> type, newType; // tensor -> element type
  const int low;
  const char *lowName;
  std::map<std::string, std::vector<int>> users; // tensor -> node indices
  std::set<std::string> graphOutputs, names;
  std::map<std::string, int> producerIndex;
  std::map<std::pair<std::string, int>, std::string> castOf;
  std::map<std::string, std::vector<onnx::NodeProto>> castsAfter; // producer output -> casts
  std::vector<onnx::NodeProto> leadingCasts;

  int precisionOf(const onnx::NodeProto &n) const {
    auto it = lowNodes.find(nodeKey(n));
    return it == lowNodes.end() ? 0 : it->second ? low : kFloat;
  }

  bool onlyLowUsers(const std::string &t) const {
    auto it = users.find(t);
    if (it == users.end() || graphOutputs.count(t))
      return false;
    for (int u : it->second)
      if (precisionOf(g.node(u)) != low)
        return false;
    return true;
  }

  /// An unnamed node is known by its first output (nodeKey), which
  /// castOutputs may rename (--keep-io-types): it is named so first, and
  /// keeps its precision.
  void nameNodes() {
    for (auto &n : *g.mutable_node())
      if (n.name().empty() && n.output_size())
        n.set_name(nodeKey(n));
  }

  /// Identity nodes vanish at import (exporters use them to share
  /// initializers): they take the precision all their users agree on;
  /// SequenceAt nodes, their split's.
  void paintIdentities() {
    for (int i = g.node_size() - 1; i >= 0; --i) {
      const onnx::NodeProto &n = g.node(i);
      if (n.op_type() != "Identity" || lowNodes.count(nodeKey(n)) ||
          !users.count(n.output(0)))
        continue;
      bool allLow = true;
      for (int r : users[n.output(0)]) {
        auto it = lowNodes.find(nodeKey(g.node(r)));
        allLow &= it != lowNodes.end() && it->second;
      }
      if (allLow)
        lowNodes[nodeKey(n)] = true;
    }
    // SequenceAt picks a part of the split its SplitToSequence imported
    // as: the part has the split's precision.
    for (const auto &n : g.node())
      if (n.op_type() == "SequenceAt" && !lowNodes.count(nodeKey(n)) && n.input_size())
        if (auto it = producerIndex.find(n.input(0)); it != producerIndex.end())
          if (auto p = lowNodes.find(nodeKey(g.node(it->second))); p != lowNodes.end())
            lowNodes[nodeKey(n)] = p->second;
  }

  /// Element types of every tensor as imported (declared ones win; value_info
  /// where the import has none: what it folded), users, producers and the
  /// names taken.
  void indexGraph() {
    for (const auto &v : g.input())
      if (v.type().tensor_type().elem_type())
        type[v.name()] = v.type().tensor_type().elem_type();
    for (const auto &v : g.value_info())
      if (v.type().tensor_type().elem_type())
        type.emplace(v.name(), v.type().tensor_type().elem_type());
    for (const auto &t : g.initializer())
      type[t.name()] = t.data_type();
    for (int i = 0; i < g.node_size(); ++i)
      for (const auto &in : g.node(i).input())
        users[in].push_back(i);
    for (const auto &o : g.output())
      graphOutputs.insert(o.name());
    for (const auto &n : g.node())
      for (const auto &o : n.output())
        names.insert(o);
    for (const auto &v : g.input())
      names.insert(v.name());
    for (const auto &t : g.initializer())
      names.insert(t.name());
    for (int i = 0; i < g.node_size(); ++i)
      for (const auto &o : g.node(i).output())
        producerIndex[o] = i;
  }

  /// New element types: outputs of low nodes; initializers, Constants and
  /// (unless --keep-io-types) graph inputs read only by low nodes.
  bool retypeStorage(std::string &error) {
    newType = type;
    for (const auto &n : g.node())
      if (precisionOf(n) == low)
        for (const auto &o : n.output())
          if (type.count(o) && type[o] == kFloat)
            newType[o] = low;
    for (auto &t : *g.mutable_initializer()) {
      if (t.data_type() != kFloat)
        continue;
      bool readByPainted = users.count(t.name()) != 0;
      if (!onlyLowUsers(t.name())) {
        if (readByPainted)
          for (int u : users[t.name()])
            if (precisionOf(g.node(u)) == low) {
              report.keptFp32.push_back(t.name());
              break;
            }
        continue;
      }
      std::vector<float> values;
      if (!floatValues(t, dir, values, error))
        return false;
      if (t.data_location() == TensorProto::EXTERNAL)
        report.wasExternal.push_back(t.name());
      RewriteReport::Stored stats{t.name()};
      storeLow(t, values, options.bf16, stats);
      report.storedLow.push_back(stats);
      newType[t.name()] = low;
    }
    for (auto &n : *g.mutable_node()) {
      if (n.op_type() != "Constant" || n.output_size() != 1 ||
          !onlyLowUsers(n.output(0)))
        continue;
      for (auto &a : *n.mutable_attribute())
        if (a.name() == "value" && a.t().data_type() == kFloat) {
          std::vector<float> values;
          if (!floatValues(a.t(), dir, values, error))
            return false;
          RewriteReport::Stored stats{n.output(0)};
          storeLow(*a.mutable_t(), values, options.bf16, stats);
          report.storedLow.push_back(stats);
          newType[n.output(0)] = low;
        }
    }
    if (!options.keepIoTypes)
      for (auto &in : *g.mutable_input())
        if (type[in.name()] == kFloat && onlyLowUsers(in.name())) {
          newType[in.name()] = low;
          setElemType(in, low);
          report.ioChanged.push_back(in.name());
        }
    return true;
  }

  std::string fresh(const std::string &base) {
    std::string name = base;
    for (int k = 1; names.count(name); ++k)
      name = base + "_" + std::to_string(k);
    names.insert(name);
    return name;
  }

  static onnx::NodeProto castNode(const std::string &name,
                                  const std::string &in,
                                  const std::string &out, int to) {
    onnx::NodeProto cast;
    cast.set_op_type("Cast");
    cast.set_name(name);
    cast.add_input(in);
    cast.add_output(out);
    auto *attr = cast.add_attribute();
    attr->set_name("to");
    attr->set_type(onnx::AttributeProto::INT);
    attr->set_i(to);
    return cast;
  }

  /// The FP32 constant `t` holds (an initializer or a Constant node's
  /// value), if it is one.
  const TensorProto *constantTensor(const std::string &t) const {
    for (const auto &init : g.initializer())
      if (init.name() == t)
        return init.data_type() == kFloat ? &init : nullptr;
    auto p = producerIndex.find(t);
    if (p == producerIndex.end())
      return nullptr;
    const onnx::NodeProto &n = g.node(p->second);
    // A cast of an FP32 constant to FP32 (torch's CastLike of its mask
    // fill, made a Cast by keepOriginalTypes) is that constant.
    if (n.op_type() == "Cast" && n.input_size() == 1 && type.count(n.input(0)) &&
        type.at(n.input(0)) == kFloat)
      for (const auto &a : n.attribute())
        if (a.name() == "to" && a.i() == kFloat)
          return constantTensor(n.input(0));
    if (n.op_type() != "Constant")
      return nullptr;
    for (const auto &a : n.attribute())
      if (a.name() == "value" && a.t().data_type() == kFloat)
        return &a.t();
    return nullptr;
  }

  /// Whether a Cast to the low type gives `values` the bits storing them
  /// low does: nothing FP16 would round to infinity that storeLow saturates.
  bool castIsExact(const std::vector<float> &values) const {
    return options.bf16 ||
           std::none_of(values.begin(), values.end(), [](float v) {
             return std::isfinite(v) && std::fabs(v) >= 65520.0f;
           });
  }

  /// Whether constantTensor's `c` is an initializer (not a Constant's).
  bool isInitializer(const TensorProto *c) const {
    return std::any_of(g.initializer().begin(), g.initializer().end(),
                       [&](const TensorProto &init) { return &init == c; });
  }

  /// Tensor `t` as type `to`: one cast per (tensor, type), emitted right
  /// after the producer (or first, for graph inputs and initializers). An
  /// FP32 constant read low becomes a low initializer, saturated as stored
  /// ones are: a Cast would turn torch's finfo(float32).min fill into
  /// -inf, and a row masked whole into NaN. An initializer the Cast
  /// converts exactly stays one tensor behind the Cast: it may be a weight
  /// (a tied embedding a Gather reads in FP32 and a MatMul in FP16), which
  /// a second copy would make a second, untied weight in training.
  std::string castTo(const std::string &t, int to) {
    auto key = std::make_pair(t, to);
    if (auto it = castOf.find(key); it != castOf.end())
      return it->second;
    std::string out = fresh(t + (to == kFloat ? "/to_fp32"
                                              : std::string("/to_") + lowName));
    std::vector<float> values;
    std::string ignored;
    if (const TensorProto *c = to == low ? constantTensor(t) : nullptr;
        c && floatValues(*c, dir, values, ignored) &&
        !(isInitializer(c) && castIsExact(values))) {
      TensorProto stored = *c;
      stored.set_name(out);
      RewriteReport::Stored stats{out};
      storeLow(stored, values, options.bf16, stats);
      report.storedLow.push_back(stats);
      *g.add_initializer() = std::move(stored);
      return castOf[key] = out;
    }
    (producerIndex.count(t) ? castsAfter[t] : leadingCasts)
        .push_back(castNode(out, t, out, to));
    report.castsAdded.push_back(out);
    return castOf[key] = out;
  }

  /// Graph outputs computed in low precision: declare the low type, or
  /// (--keep-io-types) let the producer write an internal tensor and a Cast
  /// write the output; FP32 readers then read the output itself.
  void castOutputs() {
    for (auto &out : *g.mutable_output()) {
      if (newType[out.name()] != low || type[out.name()] != kFloat)
        continue;
      if (!options.keepIoTypes) {
        setElemType(out, low);
        report.ioChanged.push_back(out.name());
        continue;
      }
      std::string internal = fresh(out.name() + "/" + lowName);
      for (auto &n : *g.mutable_node()) {
        for (auto &o : *n.mutable_output())
          if (o == out.name())
            o = internal;
        for (auto &i : *n.mutable_input())
          if (i == out.name())
            i = internal;
      }
      producerIndex[internal] = producerIndex[out.name()];
      producerIndex.erase(out.name());
      newType[internal] = low;
      newType[out.name()] = kFloat;
      onnx::NodeProto cast = castNode(fresh(out.name() + "/to_fp32"), internal,
                                      out.name(), kFloat);
      castsAfter[internal].push_back(cast);
      castOf[{internal, kFloat}] = out.name();
      report.castsAdded.push_back(cast.name());
    }
  }

  /// Every painted node reads its float inputs in its own precision; a node
  /// mpc did not paint (folded at import, or a sequence op) reads them in
  /// their original types, so that its outputs keep theirs (torch 2's
  /// exports declare every value's type in value_info, and CastLike's
  /// result takes its second input's type: as original, a Cast to it).
  void castInputs() {
    for (auto &n : *g.mutable_node()) {
      int p = precisionOf(n);
      if (!p) {
        keepOriginalTypes(n);
        continue;
      }
      if (p == low &&
          (n.op_type() == "Attention" || n.op_type() == "FlexAttention"))
        softmaxInFloat(n);
      for (auto &in : *n.mutable_input()) {
        auto it = newType.find(in);
        if (in.empty() || it == newType.end())
          continue;
        int t = it->second;
        if ((t == kFloat || t == low) && t != p)
          in = castTo(in, p);
      }
    }
  }

  /// A low ONNX Attention computes its softmax in FLOAT (the spec's
  /// default is Q's type; FlexAttention's is FLOAT, said explicitly):
  /// softmax_precision = 1 unless the model set it.
  static void softmaxInFloat(onnx::NodeProto &n) {
    for (const auto &a : n.attribute())
      if (a.name() == "softmax_precision")
        return;
    auto *a = n.add_attribute();
    a->set_name("softmax_precision");
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(kFloat);
  }

  /// A node mpc did not paint reads any float input that the rewrite
  /// retyped in its original type.
  void keepOriginalTypes(onnx::NodeProto &n) {
    if (n.op_type() == "Shape" || n.op_type() == "Size")
      return; // read only the shape
    auto retyped = [&](const std::string &in) {
      auto was = type.find(in), now = newType.find(in);
      return !in.empty() && was != type.end() && now != newType.end() &&
             was->second != now->second && (was->second == kFloat || was->second == low);
    };
    if (n.op_type() == "CastLike" && n.input_size() == 2 && retyped(n.input(1))) {
      onnx::NodeProto cast = castNode(n.name(), n.input(0), n.output(0), type[n.input(1)]);
      cast.mutable_unknown_fields()->MergeFrom(n.unknown_fields()); // IR 10 metadata_props
      n = std::move(cast);
    }
    for (auto &in : *n.mutable_input())
      if (retyped(in))
        in = castTo(in, type[in]);
  }

  /// The nodes in order with the casts after their producers; value_info
  /// retyped.
  void emitNodes() {
    std::vector<onnx::NodeProto> nodes(leadingCasts);
    for (const auto &n : g.node()) {
      nodes.push_back(n);
      for (const auto &o : n.output())
        if (auto it = castsAfter.find(o); it != castsAfter.end())
          nodes.insert(nodes.end(), it->second.begin(), it->second.end());
    }
    g.clear_node();
    for (auto &n : nodes)
      *g.add_node() = std::move(n);
    for (auto &v : *g.mutable_value_info())
      if (auto it = newType.find(v.name()); it != newType.end() &&
                                            v.type().has_tensor_type() &&
                                            it->second != type[v.name()])
        setElemType(v, it->second);
  }
};

} // namespace

bool rewriteMixedPrecision(onnx::ModelProto &model, const std::string &dir,
                           const std::map<std::string, bool> &painted,
                           const std::map<std::string, int> &elemTypes,
                           const RewriteOptions &options,
                           RewriteReport &report, std::string &error) {
  return Rewriter(model, dir, painted, elemTypes, options, report).run(error);
}

bool saveModelAtomically(onnx::ModelProto &model, const std::string &path,
                         const std::string &sourceDir,
                         const std::vector<std::string> &external,
                         std::string &error) {
  std::set<std::string> toExternal(external.begin(), external.end());
  std::string dataPath = path + ".data", dataTmp = dataPath + ".tmp";
  std::string dataName = fs::path(dataPath).filename().string();
  bool anyExternal = false;
  {
    std::ofstream data;
    int64_t offset = 0;
    for (auto &t : *model.mutable_graph()->mutable_initializer()) {
      bool wasExternal = t.data_location() == TensorProto::EXTERNAL;
      if (!wasExternal && !toExternal.count(t.name()))
        continue;
      std::string bytes;
      if (wasExternal) {
        std::vector<char> raw;
        if (!readExternalData(t, sourceDir, raw, error))
          return false;
        bytes.assign(raw.begin(), raw.end());
      } else {
        bytes = t.raw_data();
      }
      if (!anyExternal) {
        data.open(dataTmp, std::ios::binary | std::ios::trunc);
        anyExternal = true;
      }
      data.write(bytes.data(), (std::streamsize)bytes.size());
      t.clear_raw_data();
      t.clear_external_data();
      t.set_data_location(TensorProto::EXTERNAL);
      auto entry = [&](const char *k, const std::string &v) {
        auto *e = t.add_external_data();
        e->set_key(k);
        e->set_value(v);
      };
      entry("location", dataName);
      entry("offset", std::to_string(offset));
      entry("length", std::to_string(bytes.size()));
      offset += (int64_t)bytes.size();
    }
    if (anyExternal && !data) {
      error = "cannot write '" + dataPath + "'";
      std::remove(dataTmp.c_str());
      return false;
    }
  }
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out || !model.SerializeToOstream(&out)) {
      error = "cannot write '" + path + "'";
      std::remove(tmp.c_str());
      std::remove(dataTmp.c_str());
      return false;
    }
  }
  if ((anyExternal && std::rename(dataTmp.c_str(), dataPath.c_str()) != 0) ||
      std::rename(tmp.c_str(), path.c_str()) != 0) {
    error = "cannot write '" + path + "'";
    std::remove(tmp.c_str());
    std::remove(dataTmp.c_str());
    return false;
  }
  return true;
}

} // namespace mlir::mpc
