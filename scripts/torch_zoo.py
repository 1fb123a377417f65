"""The reference models of the test suite and benchmarks (torch modules).

scripts/export_torch_models.py exports them with their losses; tests and
benchmarks that build a model themselves import this module (or
export_torch_models, which re-exports it). Importing seeds torch's
generator, so every importer draws the same weights.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class WithCrossEntropy(nn.Module):
    """logits = model(x); loss = cross_entropy(logits, labels)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x, labels):
        logits = self.model(x)
        return F.cross_entropy(logits, labels), logits


class WithSmallCrossEntropy(WithCrossEntropy):
    """Cross-entropy weighted by 1e-5, as one small term of a multi-task
    objective: its gradients fall below fp16's range without loss
    scaling."""

    def forward(self, x, labels):
        loss, logits = super().forward(x, labels)
        return 1e-5 * loss, logits


class Mlp(nn.Sequential):
    def __init__(self):
        super().__init__(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64),
                         nn.ReLU(), nn.Linear(64, 10))


class MlpDropout(nn.Sequential):
    """The MLP with dropout after each hidden layer (exported in training
    mode: Dropout nodes with training_mode true)."""

    def __init__(self):
        super().__init__(nn.Linear(64, 128), nn.ReLU(), nn.Dropout(0.2),
                         nn.Linear(128, 64), nn.ReLU(), nn.Dropout(0.1),
                         nn.Linear(64, 10))


class LeNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5, padding=2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.avg_pool2d(F.relu(self.conv2(x)), 2)
        x = torch.flatten(x, 1)
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


class ResCnn(nn.Module):
    """A small CNN with BatchNorm and one residual block."""

    def __init__(self, ch=8, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, ch, 3, padding=1, bias=False),
                                  nn.BatchNorm2d(ch), nn.ReLU())
        self.block = nn.Sequential(
            nn.Conv2d(ch, ch, 3, padding=1, bias=False), nn.BatchNorm2d(ch),
            nn.ReLU(), nn.Conv2d(ch, ch, 3, padding=1, bias=False),
            nn.BatchNorm2d(ch))
        self.head = nn.Linear(ch, classes)

    def forward(self, x):
        x = self.stem(x)
        x = F.relu(x + self.block(x))
        return self.head(x.mean(dim=(2, 3)))


class UNet(nn.Module):
    """A two-level U-Net classifier: nearest and bilinear upsampling
    (exported as Resize) with a skip connection."""

    def __init__(self, ch=4, classes=10):
        super().__init__()
        self.down = nn.Conv2d(3, ch, 3, padding=1)
        self.mid = nn.Conv2d(ch, ch, 3, padding=1)
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        self.smooth = nn.Upsample(scale_factor=1.5, mode="bilinear",
                                  align_corners=False)
        self.out = nn.Conv2d(2 * ch, ch, 3, padding=1)
        self.head = nn.Linear(ch, classes)

    def forward(self, x):
        d = F.relu(self.down(x))
        m = self.up(F.relu(self.mid(F.max_pool2d(d, 2))))
        y = self.smooth(F.relu(self.out(torch.cat([d, m], 1))))
        return self.head(y.mean(dim=(2, 3)))


class SubPixelCnn(nn.Module):
    """Sub-pixel convolutions, as super-resolution networks and GAN
    generators upsample: pixel_shuffle (exported as DepthToSpace, CRD) and
    pixel_unshuffle back (a reshape and transpose in torch 1.13's
    export)."""

    def __init__(self, ch=8, classes=10):
        super().__init__()
        self.expand = nn.Conv2d(3, 4 * ch, 3, padding=1)
        self.mix = nn.Conv2d(ch, ch, 3, padding=1)
        self.head = nn.Linear(4 * ch, classes)

    def forward(self, x):
        y = F.pixel_shuffle(F.relu(self.expand(x)), 2)
        y = F.pixel_unshuffle(torch.tanh(self.mix(y)), 2)
        return self.head(y.mean(dim=(2, 3)))


class Recurrent(nn.Module):
    """A sequence classifier over nn.LSTM, nn.GRU or nn.RNN (exported as
    ONNX LSTM, GRU, RNN; batch first, optionally bidirectional), reading
    the last step."""

    def __init__(self, kind="LSTM", bidirectional=False, dim=6, hidden=5,
                 classes=3):
        super().__init__()
        self.rnn = getattr(nn, kind)(dim, hidden, batch_first=True,
                                     bidirectional=bidirectional)
        self.head = nn.Linear(hidden * (2 if bidirectional else 1), classes)

    def forward(self, x):
        y, _ = self.rnn(x)
        return self.head(y[:, -1])


class Moe(nn.Module):
    """A mixture-of-experts classifier: a softmax router keeps each
    sample's top 2 of 4 experts (torch.topk, exported as TopK), their
    renormalized weights scattered back over all experts (Mixtral's
    routing, computed densely)."""

    def __init__(self, dim=16, hidden=32, experts=4, classes=10):
        super().__init__()
        self.router = nn.Linear(dim, experts)
        self.experts = nn.ModuleList(
            nn.Sequential(nn.Linear(dim, hidden), nn.SiLU(),
                          nn.Linear(hidden, dim)) for _ in range(experts))
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        probs = F.softmax(self.router(x), dim=-1)
        top, chosen = torch.topk(probs, 2, dim=-1)
        top = top / top.sum(dim=-1, keepdim=True)
        gates = torch.zeros_like(probs).scatter(1, chosen, top)
        outs = torch.stack([e(x) for e in self.experts], dim=1)
        return self.head(x + (gates.unsqueeze(-1) * outs).sum(dim=1))


class Encoder(nn.Module):
    """nn.TransformerEncoder classifier over token embeddings."""

    def __init__(self, vocab=100, d=64, heads=4, layers=2, classes=10):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        layer = nn.TransformerEncoderLayer(d, heads, 4 * d, dropout=0.0,
                                           batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers)
        self.head = nn.Linear(d, classes)

    def forward(self, tokens):
        h = self.encoder(self.embed(tokens))
        return self.head(h.mean(dim=1))


class GptBlock(nn.Module):
    def __init__(self, d, heads, gelu, dropout=0.0):
        super().__init__()
        self.heads = heads
        self.dropout = dropout
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.fc = nn.Linear(d, 4 * d)
        self.out = nn.Linear(4 * d, d)
        self.gelu = gelu

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2)
                   for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / (d // self.heads) ** 0.5
        causal = torch.triu(torch.ones(t, t, dtype=torch.bool, device=x.device), diagonal=1)
        att = att.masked_fill(causal, float("-inf")).softmax(dim=-1)
        # GPT-2's attention and residual dropouts (none at 0: the graph
        # then has no Dropout node at all).
        drop = (lambda z: F.dropout(z, self.dropout, self.training)
                if self.dropout else z)
        y = (drop(att) @ v).transpose(1, 2).reshape(b, t, d)
        x = x + drop(self.proj(y))
        return x + drop(self.out(F.gelu(self.fc(self.ln2(x)),
                                        approximate=self.gelu)))


class Gpt(nn.Module):
    """GPT-2 style decoder with a causal mask; the loss is NLL of the
    next-token log-probabilities."""

    def __init__(self, vocab=128, d=64, heads=4, layers=2, ctx=16,
                 gelu="none", dropout=0.0):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(ctx, d)
        self.blocks = nn.ModuleList(GptBlock(d, heads, gelu, dropout)
                                    for _ in range(layers))
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, tokens, targets):
        t = tokens.shape[1]
        x = self.tok(tokens) + self.pos(torch.arange(t, device=tokens.device))
        for block in self.blocks:
            x = block(x)
        logits = self.head(self.ln(x))
        logits = logits.reshape(-1, logits.shape[-1])
        # Explicit log-softmax, so torch exports NegativeLogLikelihoodLoss
        # (it fuses F.log_softmax + nll_loss into SoftmaxCrossEntropyLoss).
        logp = logits - torch.logsumexp(logits, dim=-1, keepdim=True)
        return F.nll_loss(logp, targets.reshape(-1)), logp


class RmsNorm(nn.Module):
    """Llama's RMSNorm as Hugging Face writes it: x * rsqrt(mean(x^2) +
    eps), times the weight (Gemma's: times 1 + the weight, zero-initialized)."""

    def __init__(self, d, eps=1e-6, offset=False):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(d) if offset else torch.ones(d))
        self.eps, self.offset = eps, offset

    def forward(self, x):
        n = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return n * (1.0 + self.weight) if self.offset else self.weight * n


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


class LlamaLayer(nn.Module):
    def __init__(self, d, heads, kv_heads, ffn, gemma=False, rotary_dims=None,
                 softmax_fp32=False):
        super().__init__()
        self.softmax_fp32 = softmax_fp32
        self.heads, self.kv_heads, self.hd = heads, kv_heads, d // heads
        self.gemma, self.rd = gemma, rotary_dims or d // heads
        self.q = nn.Linear(d, d, bias=False)
        self.k = nn.Linear(d, kv_heads * self.hd, bias=False)
        self.v = nn.Linear(d, kv_heads * self.hd, bias=False)
        self.o = nn.Linear(d, d, bias=False)
        self.ln1, self.ln2 = RmsNorm(d, offset=gemma), RmsNorm(d, offset=gemma)
        self.gate = nn.Linear(d, ffn, bias=False)
        self.up = nn.Linear(d, ffn, bias=False)
        self.down = nn.Linear(ffn, d, bias=False)

    def forward(self, x, cos, sin, mask):
        b, t, d = x.shape
        h = self.ln1(x)
        q = self.q(h).view(b, t, self.heads, self.hd).transpose(1, 2)
        k = self.k(h).view(b, t, self.kv_heads, self.hd).transpose(1, 2)
        v = self.v(h).view(b, t, self.kv_heads, self.hd).transpose(1, 2)
        rope = lambda z: z * cos + rotate_half(z) * sin
        if self.rd < self.hd:  # GPT-NeoX's partial rotary: the rest passes
            q = torch.cat((rope(q[..., :self.rd]), q[..., self.rd:]), dim=-1)
            k = torch.cat((rope(k[..., :self.rd]), k[..., self.rd:]), dim=-1)
        else:
            q, k = rope(q), rope(k)
        rep = self.heads // self.kv_heads  # repeat_kv
        k = k[:, :, None].expand(b, self.kv_heads, rep, t, self.hd).reshape(b, self.heads, t, self.hd)
        v = v[:, :, None].expand(b, self.kv_heads, rep, t, self.hd).reshape(b, self.heads, t, self.hd)
        att = q @ k.transpose(2, 3) / self.hd ** 0.5
        if self.gemma:  # Gemma 2's attention logit softcap
            att = torch.tanh(att / 50.0) * 50.0
        if self.softmax_fp32:  # Hugging Face's, whatever the model's type
            att = (att + mask).softmax(-1, dtype=torch.float32).to(q.dtype)
        else:
            att = (att + mask).softmax(-1)
        x = x + self.o((att @ v).transpose(1, 2).reshape(b, t, d))
        h = self.ln2(x)
        act = F.gelu(self.gate(h), approximate="tanh") if self.gemma else F.silu(self.gate(h))
        return x + self.down(act * self.up(h))


class Llama(nn.Module):
    """A Llama-style decoder as Hugging Face's LlamaModel writes it:
    RMSNorm (rsqrt), rotary embeddings computed from the positions
    (rotate_half), grouped-query heads (repeat_kv), the causal mask
    full(min).triu(1), a SwiGLU MLP; the loss is NLL of the next-token
    log-probabilities. `gemma`: Gemma 2's variations (RMSNorm times 1 +
    weight, the attention logits' softcap tanh(s / 50) 50, GeGLU with
    tanh GELU); `rotary_dims`: GPT-NeoX's partial rotary (the first
    rotary_dims of each head rotate, the rest pass); `window`: Mistral's
    sliding window (each query sees itself and `window` keys before);
    `softmax_fp32`: the softmax in FP32 and cast back, and the logits cast
    to FP32, as Hugging Face's Llama writes them (under autocast: FP32
    between casts, an FP32 loss)."""

    def __init__(self, vocab=128, d=64, heads=4, kv_heads=2, layers=2, ffn=172,
                 gemma=False, rotary_dims=None, window=None, softmax_fp32=False):
        super().__init__()
        self.window, self.softmax_fp32 = window, softmax_fp32
        self.tok = nn.Embedding(vocab, d)
        self.layers = nn.ModuleList(
            LlamaLayer(d, heads, kv_heads, ffn, gemma, rotary_dims, softmax_fp32)
            for _ in range(layers))
        self.ln = RmsNorm(d, offset=gemma)
        self.head = nn.Linear(d, vocab, bias=False)
        hd = rotary_dims or d // heads
        self.register_buffer("inv_freq", 1.0 / 10000 ** (torch.arange(0, hd, 2).float() / hd),
                             persistent=False)

    def forward(self, tokens, targets):
        t = tokens.shape[1]
        freqs = torch.arange(t, device=tokens.device).float()[:, None] * self.inv_freq[None]
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos()[None, None], emb.sin()[None, None]
        if self.window:  # Mistral's sliding window as Hugging Face 4.34-4.36 built it
            ones = torch.ones(t, t, device=tokens.device)
            mask = torch.log(torch.triu(torch.tril(ones, diagonal=0), diagonal=-self.window))
        else:
            mask = torch.full((t, t), torch.finfo(torch.float32).min, device=tokens.device).triu(1)
        x = self.tok(tokens)
        for layer in self.layers:
            x = layer(x, cos, sin, mask)
        logits = self.head(self.ln(x)).reshape(-1, self.head.out_features)
        if self.softmax_fp32:
            logits = logits.float()
        logp = logits - torch.logsumexp(logits, dim=-1, keepdim=True)
        return F.nll_loss(logp, targets.reshape(-1)), logp


class BertLayer(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.query, self.key, self.value = (nn.Linear(d, d) for _ in range(3))
        self.dense = nn.Linear(d, d)
        self.ln1 = nn.LayerNorm(d, eps=1e-12)
        self.inter = nn.Linear(d, 4 * d)
        self.out = nn.Linear(4 * d, d)
        self.ln2 = nn.LayerNorm(d, eps=1e-12)

    def forward(self, x, mask):
        b, t, d = x.shape
        heads = lambda z: z.view(b, t, self.heads, -1).permute(0, 2, 1, 3)
        q, k, v = (heads(f(x)) for f in (self.query, self.key, self.value))
        att = q @ k.transpose(-1, -2) / (d // self.heads) ** 0.5 + mask
        y = (att.softmax(-1) @ v).permute(0, 2, 1, 3).reshape(b, t, d)
        x = self.ln1(x + self.dense(y))
        return self.ln2(x + self.out(F.gelu(self.inter(x))))


class Bert(nn.Module):
    """BERT-style encoder as Hugging Face's BertModel writes it: separate
    query, key and value Linears, an additive padding mask (token 0),
    post-LayerNorm; classifies from the first token."""

    def __init__(self, vocab=100, d=64, heads=4, layers=2, ctx=16, classes=10):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(ctx, d)
        self.ln = nn.LayerNorm(d, eps=1e-12)
        self.layers = nn.ModuleList(BertLayer(d, heads) for _ in range(layers))
        self.head = nn.Linear(d, classes)

    def forward(self, tokens):
        t = tokens.shape[1]
        x = self.ln(self.tok(tokens) + self.pos(torch.arange(t, device=tokens.device)))
        mask = (tokens == 0).float()[:, None, None, :] * -10000.0
        for layer in self.layers:
            x = layer(x, mask)
        return self.head(x[:, 0])


class VitBlock(nn.Module):
    """timm's ViT block: one QKV Linear, viewed (b, t, 3, heads, d),
    permuted (2, 0, 3, 1, 4) and unbound into Q, K and V; pre-LayerNorm.
    With `tokens`, the scores add a learned relative position bias as
    Swin, LeViT and T5 do: a table of a value per head and offset i - j,
    gathered to [heads, t, t] by a constant index."""

    def __init__(self, d, heads, tokens=None):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.rel = None
        if tokens:
            self.rel = nn.Parameter(torch.randn(heads, 2 * tokens - 1) * 0.02)
            pos = torch.arange(tokens)
            self.register_buffer("rel_index", pos[:, None] - pos[None, :] + tokens - 1)

    def forward(self, x):
        b, t, d = x.shape
        qkv = self.qkv(self.ln1(x)).reshape(b, t, 3, self.heads, -1)
        q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)
        att = (q * (d // self.heads) ** -0.5) @ k.transpose(-2, -1)
        if self.rel is not None:
            att = att + self.rel[:, self.rel_index]
        y = (att.softmax(-1) @ v).transpose(1, 2).reshape(b, t, d)
        x = x + self.proj(y)
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class Vit(nn.Module):
    """A ViT as timm writes it (ViT-Tiny's width and heads): 4x4 patches of
    32x32 images, a class token, learned positions, classified from the
    class token; with `rel`, each block's attention adds a learned
    relative position bias (VitBlock)."""

    def __init__(self, d=192, heads=3, layers=4, classes=10, rel=False):
        super().__init__()
        self.patch = nn.Conv2d(3, d, 4, stride=4)
        self.cls = nn.Parameter(torch.randn(1, 1, d) * 0.02)
        self.pos = nn.Parameter(torch.randn(1, 65, d) * 0.02)
        self.blocks = nn.ModuleList(VitBlock(d, heads, 65 if rel else None)
                                    for _ in range(layers))
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, classes)

    def forward(self, x):
        x = self.patch(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], 1) + self.pos
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln(x)[:, 0])


class DigitsCnn(nn.Module):
    """The 8x8 digits (rows of 64 pixels) as 1x8x8 images: two 3x3
    convolutions, a max-pool and a linear classifier."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.fc = nn.Linear(32 * 4 * 4, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x.reshape(-1, 1, 8, 8)))
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc(torch.flatten(x, 1))


class DigitsCnnBn(nn.Module):
    """DigitsCnn with batch norm after each convolution and dropout before
    the classifier: what model.eval() changes (exported in training
    mode)."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(32)
        self.drop = nn.Dropout(0.3)
        self.fc = nn.Linear(32 * 4 * 4, 10)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x.reshape(-1, 1, 8, 8))))
        x = F.max_pool2d(F.relu(self.bn2(self.conv2(x))), 2)
        return self.fc(self.drop(torch.flatten(x, 1)))


class DigitsTransformer(nn.Module):
    """The 8x8 digits as 8 tokens (one per pixel row): a linear embedding
    plus learned positions, one Transformer encoder layer, mean pooling and
    a linear classifier."""

    def __init__(self, d=32):
        super().__init__()
        self.embed = nn.Linear(8, d)
        self.pos = nn.Parameter(0.1 * torch.randn(8, d))
        self.encoder = nn.TransformerEncoderLayer(d, 4, 2 * d, dropout=0.0,
                                                  batch_first=True)
        self.head = nn.Linear(d, 10)

    def forward(self, x):
        h = self.embed(x.reshape(-1, 8, 8)) + self.pos
        return self.head(self.encoder(h).mean(dim=1))
