#!/usr/bin/python3
"""Exports the reference models of the test suite with torch.onnx.

Each model is wrapped with its loss (cross-entropy as SoftmaxCrossEntropyLoss,
or log-softmax + NegativeLogLikelihoodLoss) and exported with a symbolic
batch dimension. Runs under Debian's python3-torch (torch 1.13, opsets <= 17);
the GPT variant with the Gelu op (opset 20) is derived with the onnx package.

usage: export_torch_models.py OUT_DIR [--only NAME,...]
"""
import argparse
import os
import subprocess
import sys

import torch

# The model classes (also for the tests and benchmarks that import this
# module as `zoo`); importing them seeds torch's generator.
from torch_zoo import *  # noqa: E402,F401,F403


def export(model, args, names, path, opset, training=False):
    mode = (torch.onnx.TrainingMode.TRAINING if training
            else torch.onnx.TrainingMode.EVAL)
    model.train(training)
    batch = {n: {0: "batch"} for n in names[0] + names[1][1:]}
    torch.onnx.export(model, args, path, input_names=names[0],
                      output_names=names[1], dynamic_axes=batch,
                      opset_version=opset, training=mode,
                      do_constant_folding=not training)


def gelu_op_variant(src, dst):
    """Replaces torch's Erf-form GELU by the Gelu op (opset 20), using the
    onnx package's version converter for the other ops."""
    code = r'''
import sys, onnx
from onnx import helper, version_converter
m = version_converter.convert_version(onnx.load(sys.argv[1]), 20)
nodes = list(m.graph.node)
by_out = {o: n for n in nodes for o in n.output}
users = {}
for n in nodes:
    for i in n.input:
        users.setdefault(i, []).append(n)
drop, new = set(), {}
for erf in [n for n in nodes if n.op_type == "Erf"]:
    div = by_out[erf.input[0]]
    add = users[erf.output[0]][0]
    mul1 = users[add.output[0]][0]
    mul2 = users[mul1.output[0]][0]
    x = div.input[0]
    assert div.op_type == "Div" and add.op_type == "Add"
    assert mul1.op_type == "Mul" and x in mul1.input and mul2.op_type == "Mul"
    drop |= {id(div), id(erf), id(add), id(mul1)}
    new[id(mul2)] = helper.make_node("Gelu", [x], [mul2.output[0]],
                                     name=mul2.name + "/Gelu")
out = [new.get(id(n), n) for n in nodes if id(n) not in drop]
del m.graph.node[:]
m.graph.node.extend(out)
onnx.checker.check_model(m)
onnx.save(m, sys.argv[2])
'''
    # The onnx version converter lives in the PyPI onnx (pyenv python).
    py = os.environ.get("MPC_ONNX_PYTHON", "python3")
    subprocess.run([py, "-c", code, src, dst], check=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--only", default="")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    only = set(filter(None, a.only.split(",")))
    p = lambda n: os.path.join(a.out, n + ".onnx")
    want = lambda n: not only or n in only
    xy = (["x", "labels"], ["loss", "logits"])
    lbl = lambda b: torch.randint(0, 10, (b,))

    if want("mlp"):
        export(WithCrossEntropy(Mlp()), (torch.randn(4, 64), lbl(4)), xy,
               p("mlp"), 14)
    if want("lenet"):
        export(WithCrossEntropy(LeNet()), (torch.randn(4, 1, 28, 28), lbl(4)),
               xy, p("lenet"), 15)
    import torchvision  # only the ResNet-18 exports need it
    resnet = WithCrossEntropy(torchvision.models.resnet18(num_classes=10))
    img = (torch.randn(2, 3, 64, 64), lbl(2))
    if want("resnet18"):
        export(resnet, img, xy, p("resnet18"), 17)
    if want("resnet18_train"):
        export(resnet, img, xy, p("resnet18_train"), 17, training=True)
    def training_too(name, make, names):
        """<name>_train: the model and arguments `make()` draws, exported in
        training mode with the weights <name> gets (the generator's state
        put back after), as a user who trains the model should export it."""
        if want(name + "_train"):
            state = torch.get_rng_state()
            export(*make(), names, p(name + "_train"), 17, training=True)
            torch.set_rng_state(state)

    encoder = lambda: (WithCrossEntropy(Encoder()),
                       (torch.randint(0, 100, (4, 16)), lbl(4)))
    training_too("transformer", encoder, xy)
    if want("transformer"):
        export(*encoder(), xy, p("transformer"), 17)
    toks = (torch.randint(0, 128, (2, 16)), torch.randint(0, 128, (2, 16)))
    gnames = (["tokens", "targets"], ["loss", "logp"])
    training_too("gpt", lambda: (Gpt(), toks), gnames)
    # gpt_dropout_train: the same weights with GPT-2's dropouts (0.1 on the
    # attention probabilities and the residual branches), in training mode.
    if want("gpt_dropout_train"):
        state = torch.get_rng_state()
        export(Gpt(dropout=0.1), toks, gnames, p("gpt_dropout_train"), 17,
               training=True)
        torch.set_rng_state(state)
    if want("gpt") or want("gpt_gelu_op"):
        export(Gpt(), toks, gnames, p("gpt"), 17)
    if want("gpt_tanh"):
        export(Gpt(gelu="tanh"), toks, gnames, p("gpt_tanh"), 17)
    if want("gpt_gelu_op"):
        gelu_op_variant(p("gpt"), p("gpt_gelu_op"))
    # gpt_l<N>: the same decoder N blocks deep (depth-independence of the
    # compile: bench/compile_scale.py, test/codegen/kernel-cache.test).
    for name in sorted(only):
        if name.startswith("gpt_l") and name[5:].isdigit():
            torch.manual_seed(0)
            export(Gpt(layers=int(name[5:])), toks, gnames, p(name), 17)
    # Seeded on their own, so --only gives the same weights.
    torch.manual_seed(1)
    digits = (torch.rand(4, 64), lbl(4))
    if want("digits_cnn"):
        export(WithCrossEntropy(DigitsCnn()), digits, xy, p("digits_cnn"), 17)
    if want("digits_cnn_bn_train"):
        torch.manual_seed(9)
        export(WithCrossEntropy(DigitsCnnBn()), digits, xy,
               p("digits_cnn_bn_train"), 17, training=True)
    if want("digits_transformer"):
        export(WithCrossEntropy(DigitsTransformer()), digits, xy,
               p("digits_transformer"), 17)
    if want("unet"):
        torch.manual_seed(3)
        export(WithCrossEntropy(UNet()), (torch.randn(2, 3, 8, 8), lbl(2)),
               xy, p("unet"), 17)
    if want("subpixel"):
        torch.manual_seed(6)
        export(WithCrossEntropy(SubPixelCnn()),
               (torch.randn(2, 3, 6, 6), lbl(2)), xy, p("subpixel"), 17)
    if want("moe"):
        torch.manual_seed(7)
        export(WithCrossEntropy(Moe()), (torch.randn(4, 16), lbl(4)), xy,
               p("moe"), 17)
    if want("lstm"):
        torch.manual_seed(8)
        export(WithCrossEntropy(Recurrent("LSTM", True, classes=10)),
               (torch.randn(2, 5, 6), lbl(2)), xy, p("lstm"), 17,
               training=True)
    if want("mlp_small_loss"):
        torch.manual_seed(2)
        export(WithSmallCrossEntropy(Mlp()), digits, xy, p("mlp_small_loss"),
               17)
    if want("mlp_dropout"):
        torch.manual_seed(5)
        export(WithCrossEntropy(MlpDropout()), digits, xy, p("mlp_dropout"),
               17, training=True)
    # bert_train: the same model exported in training mode, as a user who
    # trains it should (no constant folding, so no initializers merged and
    # each Linear's weight transposed in the graph).
    for name, training in (("bert", False), ("bert_train", True)):
        if want(name):
            torch.manual_seed(4)
            export(WithCrossEntropy(Bert()),
                   (torch.randint(0, 100, (4, 16)), lbl(4)), xy, p(name), 17,
                   training=training)


if __name__ == "__main__":
    sys.exit(main())
