"""Writes the torch 2.x exports models/torch2-exports.test reads: tiny
Hugging Face models (transformers 5), a torchvision Swin and a timm
SwinV2 exported by
torch.onnx.export's default, torch.export-based exporter, each with its
inputs and torch's gradients of every parameter (NAME.onnx, NAME.INPUT.npy, NAME.grads.npz),
and for the CNN (batch norm in training mode) its state after two SGD
steps (cnn.trained.npz). `droppath` draws (stochastic depth): its
gradients are those of torch's draws, not mpc's.

Run with torch 2.15, torchvision 0.29, transformers 5.25 and timm 1.0.31 (not what
setup.sh installs: the outputs are committed); CI only reads them:

  PYTHONPATH=TORCH2_TORCHVISION_TRANSFORMERS5 python3 torch2_exports.py OUTDIR [NAME...]

Exported with optimize=False, as a model to train must be: the exporter's
optimizer folds parameters into constants and merges equal ones
(`gpt2_folded` keeps it on, to show mpc's refusal). Of the metadata the
exporter writes only what mpc reads is kept (stack traces make up most of
the file): torch.export's input kind, persistence and placeholder name of
each value, and the FX node of the nodes that read an initializer. The
weights are stored in the model file.
"""
import os
import sys

import numpy as np
import onnx
import torch
import torchvision
import transformers as T

KEEP_NODE = {"pkg.torch.onnx.fx_node"}
KEEP_VALUE = {"pkg.torch.export.graph_signature.InputSpec.kind",
              "pkg.torch.export.graph_signature.InputSpec.persistent",
              "pkg.torch.onnx.original_node_name"}


def strip(model):
    inits = {i.name for i in model.graph.initializer}
    for n in model.graph.node:
        reads = any(i in inits for i in n.input)
        kept = [p for p in n.metadata_props if p.key in KEEP_NODE and reads]
        del n.metadata_props[:]
        n.metadata_props.extend(kept)
    for v in list(model.graph.value_info) + list(model.graph.input) + list(model.graph.output):
        kept = [p for p in v.metadata_props if p.key in KEEP_VALUE]
        del v.metadata_props[:]
        v.metadata_props.extend(kept)
        v.doc_string = ""


class Loss(torch.nn.Module):
    def __init__(self, m, keys):
        super().__init__()
        self.m, self.keys = m, keys

    def forward(self, *args):
        return self.m(**dict(zip(self.keys, args))).loss


class CNN(torch.nn.Module):
    """Convolutions with batch norm in training mode (batch statistics,
    running statistics updated), as ResNets are trained."""

    def __init__(self):
        super().__init__()
        nn = torch.nn
        self.c1, self.b1 = nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8)
        self.c2, self.b2 = nn.Conv2d(8, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8)
        self.fc = nn.Linear(8, 10)

    def forward(self, x, labels):
        f = torch.nn.functional
        h = f.relu(self.b1(self.c1(x)))
        h = f.relu(self.b2(self.c2(h)) + h)
        return f.cross_entropy(self.fc(h.mean((2, 3))), labels)


class Classifier(torch.nn.Module):
    """A torchvision classifier and its cross-entropy loss."""

    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, x, labels):
        return torch.nn.functional.cross_entropy(self.m(x), labels)


def swin_v2():
    import timm
    return timm.models.swin_transformer_v2.SwinTransformerV2(
        img_size=32, patch_size=4, window_size=4, embed_dim=32, depths=(2, 2),
        num_heads=(2, 4), num_classes=10, drop_path_rate=0.0)


class DropPath(torch.nn.Module):
    """Residual blocks with stochastic depth (torchvision.ops'
    StochasticDepth, as ConvNeXt, Swin and EfficientNet train): each
    sample skips a block with probability 0.5."""

    def __init__(self):
        super().__init__()
        nn = torch.nn
        self.blocks = nn.ModuleList(nn.Sequential(nn.LayerNorm(16), nn.Linear(16, 16), nn.GELU())
                                    for _ in range(2))
        self.drop = torchvision.ops.StochasticDepth(0.5, "row")
        self.head = nn.Linear(16, 10)

    def forward(self, x, labels):
        for block in self.blocks:
            x = x + self.drop(block(x))
        return torch.nn.functional.cross_entropy(self.head(x), labels)


def export(out, name, model, inputs, names, optimize=False):
    torch.manual_seed(0)
    path = os.path.join(out, name + ".onnx")
    keys = {"ids": "input_ids", "mask": "attention_mask", "labels": "labels",
            "pixels": "pixel_values"}
    wrapped = (model if isinstance(model, (CNN, Classifier, DropPath))
               else Loss(model, [keys[n] for n in names]))
    torch.onnx.export(wrapped, tuple(inputs), path, input_names=names,
                      output_names=["loss"], optimize=optimize)
    m = onnx.load(path)
    strip(m)
    onnx.save(m, path, save_as_external_data=False)
    if os.path.exists(path + ".data"):
        os.remove(path + ".data")
    for n, t in zip(names, inputs):
        np.save(os.path.join(out, f"{name}.{n}.npy"), t.numpy())
    loss = wrapped(*inputs)
    loss.backward()
    inits = {i.name for i in m.graph.initializer}
    grads = {p: t.grad.numpy() for p, t in wrapped.named_parameters()
             if t.grad is not None and p in inits}
    np.savez(os.path.join(out, f"{name}.grads.npz"), **grads)
    print(f"{name}: loss {float(loss):.6f}, {len(grads)} gradients")
    if isinstance(model, CNN):  # the state after two SGD steps
        opt = torch.optim.SGD(wrapped.parameters(), lr=0.1)
        opt.step()
        opt.zero_grad()
        wrapped(*inputs).backward()
        opt.step()
        state = {k: v.numpy() for k, v in wrapped.state_dict().items()
                 if k in inits and v.dtype == torch.float32}
        np.savez(os.path.join(out, f"{name}.trained.npz"), **state)


def main():
    out = sys.argv[1]
    wanted = set(sys.argv[2:])
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    ids = torch.randint(2, 100, (2, 16))
    labels = torch.randint(2, 100, (2, 16))
    mask = torch.ones(2, 16, dtype=torch.int64)
    mask[1, 12:] = 0  # right padding on the second row
    classes = torch.tensor([0, 2])
    small = dict(vocab_size=100, hidden_size=32, intermediate_size=64,
                 num_hidden_layers=2, num_attention_heads=4,
                 max_position_embeddings=64)
    lm = [ids, mask, labels], ["ids", "mask", "labels"]
    cls = [ids, mask, classes], ["ids", "mask", "labels"]
    models = {
        "gpt2": lambda: (T.GPT2LMHeadModel(T.GPT2Config(
            vocab_size=100, n_positions=64, n_embd=32, n_layer=2, n_head=4,
            attn_pdrop=0, embd_pdrop=0, resid_pdrop=0)), *lm),
        "llama": lambda: (T.LlamaForCausalLM(T.LlamaConfig(
            **small, num_key_value_heads=2)), *lm),
        "mistral": lambda: (T.MistralForCausalLM(T.MistralConfig(
            **small, num_key_value_heads=2, sliding_window=8)), *lm),
        "modernbert": lambda: (T.ModernBertForSequenceClassification(T.ModernBertConfig(
            vocab_size=100, hidden_size=32, intermediate_size=64,
            num_hidden_layers=2, num_attention_heads=4,
            max_position_embeddings=64, num_labels=3, pad_token_id=0,
            local_attention=8, global_attn_every_n_layers=2)), *cls),
        "deberta": lambda: (T.DebertaV2ForMaskedLM(T.DebertaV2Config(
            **small, hidden_dropout_prob=0, attention_probs_dropout_prob=0)), *lm),
        "roberta": lambda: (T.RobertaForSequenceClassification(T.RobertaConfig(
            **small, hidden_dropout_prob=0, attention_probs_dropout_prob=0,
            num_labels=3, pad_token_id=1)), *cls),
    }
    # BART shifts its labels right into the decoder's inputs (ScatterElements
    # of select_scatter, padded labels -100 replaced by the pad token).
    bart_labels = labels.clone()
    bart_labels[1, 12:] = -100
    models["bart"] = lambda: (T.BartForConditionalGeneration(T.BartConfig(
        vocab_size=100, d_model=32, encoder_layers=1, decoder_layers=1,
        encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=64,
        decoder_ffn_dim=64, max_position_embeddings=64, dropout=0,
        attention_dropout=0)), [ids, mask, bart_labels], ["ids", "mask", "labels"])
    # torchvision's Swin: relative position biases gathered by GatherND,
    # shifted windows masked.
    models["swin"] = lambda: (Classifier(torchvision.models.SwinTransformer(
        patch_size=[4, 4], embed_dim=32, depths=[2, 2], num_heads=[2, 4],
        window_size=[4, 4], num_classes=10, stochastic_depth_prob=0.0)),
        [torch.randn(2, 3, 32, 32), torch.tensor([1, 7])], ["x", "labels"])
    # timm's SwinV2 (cosine attention: a learned per-head scale on the
    # product of normalized Q and K; continuous position bias), stochastic
    # depth off so that torch's gradients are the reference. Needs timm
    # (1.0.31), imported only for it.
    models["swinv2"] = lambda: (Classifier(swin_v2()),
                                [torch.randn(2, 3, 32, 32), torch.tensor([1, 7])],
                                ["x", "labels"])
    models["droppath"] = lambda: (DropPath().train(), [torch.randn(8, 16), torch.arange(8)],
                                  ["x", "labels"])
    models["cnn"] = lambda: (CNN().train(), [torch.randn(4, 3, 8, 8), torch.tensor([1, 7, 3, 0])],
                             ["x", "labels"])
    for name, make in models.items():
        if wanted and name not in wanted:
            continue
        torch.manual_seed(0)
        model, inputs, names = make()
        export(out, name, model, inputs, names)
    if not wanted or "gpt2_folded" in wanted:
        torch.manual_seed(0)
        model, inputs, names = models["gpt2"]()
        export(out, "gpt2_folded", model, inputs, names, optimize=True)


if __name__ == "__main__":
    main()
