"""Writes the Hugging Face exports hf-exports.test reads: tiny
LlamaForCausalLM, MistralForCausalLM, GPT2LMHeadModel (no dropout),
GPTNeoXForCausalLM and BloomForCausalLM (transformers 4.36.2, eager attention, random
weights, seed 0) exported by torch 1.13's TorchScript
exporter in training mode (opset 17) with their loss, a batch of token
ids, and torch's gradient of the loss for every parameter (an .npz,
names as the ONNX initializers). Committed: the suite does not install
transformers. Regenerate with

    pip install --target DIR transformers==4.36.2 (without its numpy)
    PYTHONPATH=DIR /usr/bin/python3 hf_exports.py test/models/Inputs/hf

usage: hf_exports.py OUTDIR [KIND...]   (default: all)
"""
import os
import sys

import numpy as np
import torch
from transformers import (BloomConfig, BloomForCausalLM, GPT2Config,
                          GPT2LMHeadModel, GPTNeoXConfig,
                          GPTNeoXForCausalLM, LlamaConfig, LlamaForCausalLM,
                          MistralConfig, MistralForCausalLM)

out = sys.argv[1]
small = dict(vocab_size=32, hidden_size=32, intermediate_size=64,
             num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
             max_position_embeddings=32)


class WithLoss(torch.nn.Module):
    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, ids, labels):
        return self.m(input_ids=ids, labels=labels, use_cache=False).loss


neox = dict(vocab_size=32, hidden_size=32, intermediate_size=64,
            num_hidden_layers=2, num_attention_heads=4, rotary_pct=0.25,
            max_position_embeddings=32)
for kind, make in (("llama", lambda: LlamaForCausalLM(LlamaConfig(**small))),
                   ("mistral", lambda: MistralForCausalLM(MistralConfig(sliding_window=5, **small))),
                   ("gpt2", lambda: GPT2LMHeadModel(GPT2Config(
                       vocab_size=32, n_positions=32, n_embd=32, n_layer=2, n_head=4,
                       attn_pdrop=0.0, resid_pdrop=0.0, embd_pdrop=0.0))),
                   ("neox", lambda: GPTNeoXForCausalLM(GPTNeoXConfig(**neox))),
                   ("bloom", lambda: BloomForCausalLM(BloomConfig(
                       vocab_size=32, hidden_size=32, n_layer=2, n_head=4,
                       hidden_dropout=0.0, attention_dropout=0.0)))):
    if sys.argv[2:] and kind not in sys.argv[2:]:
        continue
    torch.manual_seed(0)
    model = WithLoss(make())
    model.m.config._attn_implementation = "eager"
    ids = torch.randint(0, 32, (2, 16))
    torch.onnx.export(model, (ids, ids), os.path.join(out, f"{kind}.onnx"),
                      opset_version=17, input_names=["ids", "labels"],
                      output_names=["loss"], do_constant_folding=False,
                      training=torch.onnx.TrainingMode.TRAINING)
    np.save(os.path.join(out, f"{kind}.ids.npy"), ids.numpy())
    model.zero_grad()
    model(ids, ids).backward()
    np.savez_compressed(os.path.join(out, f"{kind}.grads.npz"),
                        **{n: p.grad.numpy() for n, p in model.named_parameters()})
