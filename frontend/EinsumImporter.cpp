//===- EinsumImporter.cpp - ONNX Einsum as products and sums ------------===//
//
// Einsum (opset 12) is written with the ops mpc already trains and runs on
// tensor cores: a label repeated within a term takes the diagonal (a
// product with an identity and a sum), a label no other term nor the output
// has is summed away, and the terms are contracted left to right as one
// batched MatMul each: [batch..., m, k] x [batch..., k, n], the labels both
// share and keep as the batch (a dimension each), the shared ones dropped
// as k, each side's own as m and n; then a transpose to the output's
// order. Ellipsis dimensions are labels of their own, aligned from the
// right, broadcasting where one is 1; the implicit output (no "->") is the
// ellipsis, then the labels seen once in ASCII order (numpy's, which onnx's
// reference calls). Shapes must be static (bind the batch with --batch).
//
//===----------------------------------------------------------------------===//

#include "frontend/Composer.h"

#include "llvm/ADT/StringExtras.h"

#include <map>

namespace mlir::mpc::importer {

namespace {

/// Labels: a letter's character code, ellipsis dimension j (of E, from the
/// left) 256 + j.
constexpr int kEllipsis = 256;

struct Equation {
  SmallVector<SmallVector<int>> inputs;
  SmallVector<int> output;
};

/// One term's labels (`rank` dimensions, `e` of them the ellipsis'), or an
/// error.
std::optional<std::string> parseTerm(StringRef term, int64_t rank, int64_t e,
                                     int64_t ellipsis, SmallVector<int> &labels) {
  bool seen = false;
  for (size_t i = 0; i < term.size(); ++i) {
    if (term.substr(i).starts_with("...")) {
      if (seen)
        return std::string("term '") + term.str() + "' has two ellipses";
      seen = true;
      for (int64_t j = ellipsis - e; j < ellipsis; ++j)
        labels.push_back(kEllipsis + (int)j);
      i += 2;
    } else if (llvm::isAlpha(term[i])) {
      labels.push_back(term[i]);
    } else {
      return std::string("term '") + term.str() + "' has '" + term[i] +
             "', not a letter or an ellipsis";
    }
  }
  if (rank >= 0 && (int64_t)labels.size() != rank)
    return std::string("term '") + term.str() + "' has " +
           std::to_string(labels.size()) + " labels for an input of rank " +
           std::to_string(rank);
  return std::nullopt;
}

std::optional<std::string> parse(StringRef text, ArrayRef<int64_t> ranks,
                                 Equation &eq) {
  std::string compact;
  for (char ch : text)
    if (ch != ' ')
      compact.push_back(ch);
  StringRef s(compact);
  auto [lhs, rhs] = s.split("->");
  bool implicit = !s.contains("->");
  SmallVector<StringRef> terms;
  lhs.split(terms, ',');
  if (terms.size() != ranks.size())
    return "equation '" + text.str() + "' has " + std::to_string(terms.size()) +
           " input terms for " + std::to_string(ranks.size()) + " inputs";
  // The ellipsis' dimensions: each term's rank less its letters.
  SmallVector<int64_t> ellipsisDims;
  int64_t ellipsis = 0;
  for (auto [term, rank] : llvm::zip(terms, ranks)) {
    int64_t letters = llvm::count_if(term, [](char ch) { return llvm::isAlpha(ch); });
    int64_t e = term.contains("...") ? rank - letters : 0;
    if (e < 0)
      return "term '" + term.str() + "' has more labels than its input's rank " +
             std::to_string(rank);
    ellipsisDims.push_back(e);
    ellipsis = std::max(ellipsis, e);
  }
  for (auto [k, term] : llvm::enumerate(terms)) {
    eq.inputs.emplace_back();
    if (auto err = parseTerm(term, ranks[k], ellipsisDims[k], ellipsis, eq.inputs.back()))
      return err;
  }
  if (implicit) {
    std::map<int, int> count;
    for (auto &labels : eq.inputs)
      for (int l : labels)
        ++count[l];
    for (int64_t j = 0; j < ellipsis; ++j)
      eq.output.push_back(kEllipsis + (int)j);
    for (auto [l, n] : count)
      if (n == 1 && l < kEllipsis)
        eq.output.push_back(l);
    return std::nullopt;
  }
  if (auto err = parseTerm(rhs, -1, ellipsis, ellipsis, eq.output))
    return err;
  for (auto [i, l] : llvm::enumerate(eq.output)) {
    if (llvm::is_contained(ArrayRef(eq.output).take_front(i), l))
      return "output term '" + rhs.str() + "' repeats a label";
    if (!llvm::any_of(eq.inputs, [&](auto &in) { return llvm::is_contained(in, l); }))
      return "output term '" + rhs.str() + "' has a label no input has";
  }
  return std::nullopt;
}

/// A tensor and the label of each of its dimensions.
struct Labeled {
  Value x;
  SmallVector<int> labels;
};

class Einsum {
public:
  Einsum(Composer &m) : m(m), c(m.c) {}

  int64_t dim(const Labeled &t, size_t i) { return typeOf(t.x).getDimSize(i); }

  Value transposeTo(Value x, ArrayRef<int64_t> perm) {
    if (llvm::equal(perm, llvm::seq<int64_t>(0, perm.size())))
      return x;
    return m.transpose(x, perm);
  }

  Value reshapeTo(Value x, ArrayRef<int64_t> shape) {
    if (typeOf(x).getShape() == shape)
      return x;
    return m.reshape(x, shape);
  }

  Value reduceSum(Value x, ArrayRef<int64_t> axes) {
    if (axes.empty())
      return x;
    return m.op("mpc.reduce_sum", {x},
                {c.named("axes", c.b.getDenseI64ArrayAttr(axes)),
                 c.named("keepdims", c.b.getBoolAttr(false)),
                 c.named("noop_with_empty_axes", c.b.getBoolAttr(false))});
  }

  /// `t` with a label repeated at axes p < q replaced by its diagonal.
  void diagonal(Labeled &t, size_t p, size_t q) {
    auto type = typeOf(t.x);
    int64_t n = type.getDimSize(p);
    SmallVector<int64_t> shape(type.getRank(), 1);
    shape[p] = shape[q] = n;
    const llvm::fltSemantics &sem =
        llvm::cast<FloatType>(type.getElementType()).getFloatSemantics();
    SmallVector<APFloat> eye;
    for (int64_t i = 0; i < n * n; ++i)
      eye.push_back(i / n == i % n ? APFloat::getOne(sem) : APFloat::getZero(sem));
    Value mask = m.constant(
        DenseElementsAttr::get(RankedTensorType::get(shape, type.getElementType()), eye));
    t.x = reduceSum(m.bin("mpc.mul", t.x, mask), {(int64_t)q});
    t.labels.erase(t.labels.begin() + q);
  }

  /// Sums away the labels of `t` that `keep` does not have.
  void sumAway(Labeled &t, ArrayRef<int> keep) {
    SmallVector<int64_t> axes;
    SmallVector<int> left;
    for (auto [i, l] : llvm::enumerate(t.labels))
      if (llvm::is_contained(keep, l))
        left.push_back(l);
      else
        axes.push_back((int64_t)i);
    t.x = reduceSum(t.x, axes);
    t.labels = left;
  }

  /// `t` expanded where its dimension of a label is 1 and `size` is not.
  void broadcast(Labeled &t, const std::map<int, int64_t> &size) {
    SmallVector<int64_t> shape;
    bool grows = false;
    for (auto [i, l] : llvm::enumerate(t.labels)) {
      shape.push_back(size.at(l));
      grows |= shape.back() != dim(t, i);
    }
    if (grows)
      t.x = m.op("mpc.expand", {t.x, m.i64s(shape)});
  }

  /// A and B contracted: the labels both have and `keep` has are the
  /// batch, those both have and it lacks are summed by the product.
  Labeled contract(Labeled a, Labeled b, ArrayRef<int> keep,
                   const std::map<int, int64_t> &size) {
    SmallVector<int> batch, shared, own, other;
    for (int l : a.labels)
      if (!llvm::is_contained(b.labels, l))
        own.push_back(l);
      else if (llvm::is_contained(keep, l))
        batch.push_back(l);
      else
        shared.push_back(l);
    for (int l : b.labels)
      if (!llvm::is_contained(a.labels, l))
        other.push_back(l);
    broadcast(a, size);
    broadcast(b, size);
    // The batch labels stay dimensions of their own (a batched MatMul of
    // any rank), so the product has the shape torch's einsum attention
    // (MaxViT's [b, g, h, i, d] x [b, g, h, j, d]) would have as a MatMul.
    auto arrange = [&](Labeled &t, ArrayRef<SmallVector<int> *> groups) {
      SmallVector<int64_t> perm, merged;
      for (SmallVector<int> *g : groups) {
        int64_t n = 1;
        for (int l : *g) {
          perm.push_back(llvm::find(t.labels, l) - t.labels.begin());
          if (g == groups.front())
            merged.push_back(size.at(l));
          else
            n *= size.at(l);
        }
        if (g != groups.front())
          merged.push_back(n);
      }
      return reshapeTo(transposeTo(t.x, perm), merged);
    };
    Value x = arrange(a, {&batch, &own, &shared}),
          y = arrange(b, {&batch, &shared, &other});
    Value z = m.bin("mpc.matmul", x, y);
    Labeled out;
    SmallVector<int64_t> shape;
    for (SmallVector<int> *g : {&batch, &own, &other})
      for (int l : *g) {
        out.labels.push_back(l);
        shape.push_back(size.at(l));
      }
    out.x = reshapeTo(z, shape);
    return out;
  }

  LogicalResult run(const Equation &eq) {
    // Each label's size: equal in every term, or 1 against another for
    // the ellipsis' (broadcast).
    std::map<int, int64_t> size;
    for (auto [k, labels] : llvm::enumerate(eq.inputs))
      for (auto [i, l] : llvm::enumerate(labels)) {
        int64_t d = typeOf(c.input(k)).getDimSize(i);
        auto [it, fresh] = size.try_emplace(l, d);
        if (fresh || it->second == d)
          continue;
        if (l >= kEllipsis && (it->second == 1 || d == 1))
          it->second = std::max(it->second, d);
        else
          return c.fail("label '" + Twine(l < kEllipsis ? (char)l : '.') +
                        "' has sizes " + Twine(it->second) + " and " + Twine(d));
      }
    SmallVector<Labeled> terms;
    for (auto [k, labels] : llvm::enumerate(eq.inputs)) {
      Labeled t{c.input(k), labels};
      // Repeated labels: the diagonal.
      for (bool found = true; found && !c.failed();) {
        found = false;
        for (size_t p = 0; p < t.labels.size() && !found; ++p)
          for (size_t q = p + 1; q < t.labels.size() && !found; ++q)
            if (t.labels[p] == t.labels[q]) {
              if (dim(t, p) != dim(t, q))
                return c.fail("label '" + Twine((char)t.labels[p]) +
                              "' repeats in a term over sizes " + Twine(dim(t, p)) +
                              " and " + Twine(dim(t, q)));
              diagonal(t, p, q);
              found = true;
            }
      }
      terms.push_back(std::move(t));
    }
    // Labels needed after term k: the output's and later terms'.
    auto neededAfter = [&](size_t k) {
      SmallVector<int> keep(eq.output);
      for (size_t j = k + 1; j < terms.size(); ++j)
        keep.append(terms[j].labels.begin(), terms[j].labels.end());
      return keep;
    };
    Labeled acc = terms[0];
    for (size_t k = 1; k < terms.size() && !c.failed(); ++k) {
      SmallVector<int> keep = neededAfter(k);
      // A label only one side has and nothing after needs: summed first.
      SmallVector<int> keepA(keep), keepB(keep);
      keepA.append(terms[k].labels.begin(), terms[k].labels.end());
      keepB.append(acc.labels.begin(), acc.labels.end());
      sumAway(acc, keepA);
      sumAway(terms[k], keepB);
      acc = contract(acc, terms[k], keep, size);
    }
    sumAway(acc, eq.output);
    if (c.failed())
      return failure();
    SmallVector<int64_t> perm;
    for (int l : eq.output)
      perm.push_back(llvm::find(acc.labels, l) - acc.labels.begin());
    Value y = transposeTo(acc.x, perm);
    if (!y)
      return failure();
    return c.setOutputs({y});
  }

private:
  Composer &m;
  NodeContext &c;
};

} // namespace

LogicalResult importEinsum(NodeContext &c) {
  if (failed(c.checkAttrs({"equation"})))
    return failure();
  if ((unsigned)c.inputs.size() == 0)
    return c.fail("needs at least one input");
  SmallVector<int64_t> ranks;
  for (unsigned k = 0; k < (unsigned)c.inputs.size(); ++k) {
    auto t = typeOf(c.input(k));
    if (!t.hasStaticShape())
      return c.fail("input " + Twine(k) +
                    " has a dynamic shape (bind the batch: --batch)");
    if (!llvm::isa<FloatType>(t.getElementType()))
      return c.fail("input " + Twine(k) + " is not a float tensor");
    ranks.push_back(t.getRank());
  }
  Equation eq;
  std::string text = c.getString("equation", "");
  if (auto err = parse(text, ranks, eq))
    return c.fail("attribute 'equation': " + *err);
  Composer m{c};
  return Einsum(m).run(eq);
}

} // namespace mlir::mpc::importer
