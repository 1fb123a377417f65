"""Writes the Hugging Face exports hf44-exports.test reads: tiny
LlamaForCausalLM (with and without an attention mask), BloomForCausalLM,
BartForConditionalGeneration, OPTForCausalLM, FalconForCausalLM,
GPTBigCodeForCausalLM, GPTJForCausalLM, FunnelForSequenceClassification,
T5ForConditionalGeneration and CLIPModel (with one), and
SwinForImageClassification from transformers 4.44.2 (eager attention, random weights,
seed 0), exported by torch 1.13's TorchScript exporter in training mode
(opset 17) with their loss, a batch of token ids, the mask (the second
row padded on the right: 3 tokens) and the labels (-100 where padded),
and torch's gradient of the loss for every parameter (an .npz, names as
the ONNX initializers). 4.38+ builds its masks differently from 4.36
(hf_exports.py): the causal mask from cache_position, sliced to the keys;
the padding laid over it by a slice assignment torch exports as
ScatterND; the rotary tables scaled. Committed: the suite does not
install transformers. Regenerate with

    pip install --target DIR transformers==4.44.2 (without its numpy)
    PYTHONPATH=DIR /usr/bin/python3 hf44_exports.py test/models/Inputs/hf44

usage: hf44_exports.py OUTDIR [NAME...]   (default: all)
"""
import os
import sys

import numpy as np
import torch
from transformers import (BartConfig, BartForConditionalGeneration, BloomConfig,
                          BloomForCausalLM, CLIPConfig, CLIPModel, FalconConfig, FalconForCausalLM,
                          FunnelConfig, FunnelForSequenceClassification,
                          GPTBigCodeConfig, GPTBigCodeForCausalLM, GPTJConfig,
                          GPTJForCausalLM, LlamaConfig, LlamaForCausalLM, OPTConfig,
                          OPTForCausalLM, SwinConfig, SwinForImageClassification,
                          T5Config, T5ForConditionalGeneration)

out = sys.argv[1]


def wanted(name):
    return not sys.argv[2:] or name in sys.argv[2:]


def export(name, model, args, names):
    """Writes NAME.onnx (torch 1.13, training mode, opset 17, the loss its
    output), each input as NAME.INPUT.npy, torch's gradients NAME.grads.npz."""
    torch.onnx.export(model, args, os.path.join(out, f"{name}.onnx"),
                      opset_version=17, input_names=names, output_names=["loss"],
                      do_constant_folding=False,
                      training=torch.onnx.TrainingMode.TRAINING)
    for n, t in zip(names, args):
        np.save(os.path.join(out, f"{name}.{n}.npy"), t.numpy())
    model.zero_grad()
    model(*args).backward()
    np.savez_compressed(os.path.join(out, f"{name}.grads.npz"),
                        **{n: p.grad.numpy() for n, p in model.named_parameters()})


class WithLoss(torch.nn.Module):
    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, ids, labels, mask=None):
        return self.m(input_ids=ids, labels=labels, attention_mask=mask,
                      use_cache=False).loss


llama = dict(vocab_size=32, hidden_size=32, intermediate_size=64,
             num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
             max_position_embeddings=32)
for name, make, masked in (
        ("llama", lambda: LlamaForCausalLM(LlamaConfig(**llama)), False),
        ("llama_mask", lambda: LlamaForCausalLM(LlamaConfig(**llama)), True),
        ("bloom_mask", lambda: BloomForCausalLM(BloomConfig(
            vocab_size=32, hidden_size=32, n_layer=2, n_head=4,
            hidden_dropout=0.0, attention_dropout=0.0)), True),
        ("bart_mask", lambda: BartForConditionalGeneration(BartConfig(
            vocab_size=32, d_model=32, encoder_layers=1, decoder_layers=1,
            encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=64,
            decoder_ffn_dim=64, max_position_embeddings=32, dropout=0.0,
            attention_dropout=0.0, activation_dropout=0.0, pad_token_id=1,
            bos_token_id=0, eos_token_id=2, decoder_start_token_id=2)), True),
        # OPT clamps the masked scores to the finite minimum; Falcon's one
        # K and V head broadcasts in the matmul; GPT-BigCode's multi-query
        # attention has the heads among the query rows and a boolean
        # causal-and-padding mask; GPT-J rotates interleaved pairs.
        ("opt_mask", lambda: OPTForCausalLM(OPTConfig(
            vocab_size=32, hidden_size=32, ffn_dim=64, num_hidden_layers=2,
            num_attention_heads=4, max_position_embeddings=32, word_embed_proj_dim=32,
            dropout=0.0, attention_dropout=0.0, pad_token_id=1)), True),
        ("falcon_mask", lambda: FalconForCausalLM(FalconConfig(
            vocab_size=32, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
            hidden_dropout=0.0, attention_dropout=0.0)), True),
        ("gptbigcode_mask", lambda: GPTBigCodeForCausalLM(GPTBigCodeConfig(
            vocab_size=32, n_positions=32, n_embd=32, n_layer=2, n_head=4,
            multi_query=True, attn_pdrop=0.0, resid_pdrop=0.0, embd_pdrop=0.0)), True),
        ("gptj_mask", lambda: GPTJForCausalLM(GPTJConfig(
            vocab_size=32, n_positions=32, n_embd=32, n_layer=2, n_head=4, rotary_dim=4,
            attn_pdrop=0.0, resid_pdrop=0.0, embd_pdrop=0.0)), True)):
    if not wanted(name):
        continue
    torch.manual_seed(0)
    model = WithLoss(make())
    model.m.config._attn_implementation = "eager"
    # (no padding token among BART's and OPT's ids: torch's padding_idx
    # keeps its embedding row's gradient 0, which the ONNX graph cannot say)
    ids = torch.randint(3, 32, (2, 16)) if name in ("bart_mask", "opt_mask") \
        else torch.randint(0, 32, (2, 16))
    mask = torch.ones(2, 16, dtype=torch.int64)
    mask[1, -3:] = 0
    labels = ids.clone()
    labels[mask == 0] = -100
    if name == "bart_mask":  # (a summary of 8 tokens)
        labels = torch.randint(3, 32, (2, 8))
    args, names = ((ids, labels, mask), ["ids", "labels", "mask"]) if masked else \
        ((ids, labels), ["ids", "labels"])
    export(name, model, args, names)


class ImageLoss(torch.nn.Module):
    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, pixels, labels):
        return self.m(pixel_values=pixels, labels=labels).loss


# SwinForImageClassification: shifted windows padded by F.pad, whose pads
# torch 1.13 computes (a reversed, transposed view of cat(pads, zeros)).
if wanted("swin"):
    torch.manual_seed(0)
    model = ImageLoss(SwinForImageClassification(SwinConfig(
        image_size=16, patch_size=2, embed_dim=16, depths=[1, 1], num_heads=[2, 4],
        window_size=4, num_labels=3, hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0, drop_path_rate=0.0)))
    model.m.config._attn_implementation = "eager"
    export("swin", model, (torch.randn(2, 3, 16, 16), torch.tensor([0, 2])),
           ["pixels", "labels"])


class ClassifierLoss(torch.nn.Module):
    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, ids, labels, mask):
        return self.m(input_ids=ids, labels=labels, attention_mask=mask).loss


# FunnelForSequenceClassification: relative attention written with
# torch.einsum, its positions computed in floats (a Gather of a Concat of
# Slices of float constants, cast to int64 for Range).
if wanted("funnel_mask"):
    torch.manual_seed(0)
    model = ClassifierLoss(FunnelForSequenceClassification(FunnelConfig(
        vocab_size=32, block_sizes=[1, 1], d_model=32, n_head=4, d_head=8, d_inner=64,
        hidden_dropout=0.0, attention_dropout=0.0, activation_dropout=0.0)))
    ids = torch.randint(3, 32, (2, 16))
    mask = torch.ones(2, 16, dtype=torch.int64)
    mask[1, -3:] = 0
    export("funnel_mask", model, (ids, torch.tensor([0, 1]), mask), ["ids", "labels", "mask"])


# T5ForConditionalGeneration: its decoder's causal mask is arithmetic,
# (1 - causal * mask) * min over an arange tiled over the batch, added to
# the trainable relative position bias.
if wanted("t5_mask"):
    torch.manual_seed(0)
    model = ClassifierLoss(T5ForConditionalGeneration(T5Config(
        vocab_size=32, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_heads=4,
        dropout_rate=0.0, decoder_start_token_id=0)))
    ids = torch.randint(2, 32, (2, 16))
    mask = torch.ones(2, 16, dtype=torch.int64)
    mask[1, -3:] = 0
    export("t5_mask", model, (ids, torch.randint(2, 32, (2, 8)), mask),
           ["ids", "labels", "mask"])


class ContrastiveLoss(torch.nn.Module):
    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, ids, pixels, mask):
        return self.m(input_ids=ids, pixel_values=pixels, attention_mask=mask,
                      return_loss=True).loss


# CLIPModel's contrastive loss: a learned temperature, logit_scale, a float
# scalar parameter; the text tower's causal attention adds its masks on a
# view of merged scores as heads, viewed back and forth between them.
if wanted("clip_mask"):
    torch.manual_seed(0)
    model = ContrastiveLoss(CLIPModel(CLIPConfig(
        text_config=dict(vocab_size=32, hidden_size=32, intermediate_size=64,
                         num_hidden_layers=2, num_attention_heads=4,
                         max_position_embeddings=16),
        vision_config=dict(image_size=16, patch_size=4, hidden_size=32,
                           intermediate_size=64, num_hidden_layers=2,
                           num_attention_heads=4),
        projection_dim=16)))
    model.m.config._attn_implementation = "eager"
    ids = torch.randint(3, 32, (2, 16))
    mask = torch.ones(2, 16, dtype=torch.int64)
    mask[1, -3:] = 0
    export("clip_mask", model, (ids, torch.randn(2, 3, 16, 16), mask),
           ["ids", "pixels", "mask"])
