"""The Transformer of Vaswani et al. (2017): layers and the encoder-decoder, from the equations.

An encoder layer is self-attention then a position-wise feed-forward network; a decoder layer
is causal (masked) self-attention, attention over the encoder's output, then the feed-forward
network. Each sublayer has a residual connection and LayerNorm, post-norm as in the paper::

    x = LayerNorm(x + Dropout(Sublayer(x)))

``norm_first=True`` gives the pre-norm variant ``x = x + Dropout(Sublayer(LayerNorm(x)))``
(Xiong et al. 2020), which keeps an un-normalised path from input to output and trains deep
stacks without learning-rate warm-up; a pre-norm stack ends with one more LayerNorm.
:class:`EncoderLayer` and :class:`DecoderLayer` have ``from_torch`` for PyTorch's
``nn.TransformerEncoderLayer`` / ``nn.TransformerDecoderLayer`` (``batch_first=True``, ReLU).

:class:`Transformer` is a translation model with the translator contract of chapters 4 and 5
(:class:`seqbook.interfaces.Translator`): ``forward(src, src_lengths, tgt_in) -> logits`` for
teacher forcing, and ``start``/``step`` to decode one token at a time, so chapter 4's trainer,
``translate``, greedy and beam search work on it unchanged. It keeps no recurrent state: its
decoder state is the source's encoding and the prefix so far, and every step runs the decoder
over the whole prefix (the causal mask makes that the same as training; real systems cache each
layer's keys and values instead). Token embeddings are multiplied by ``sqrt(d_model)`` as in the
paper, then a positions module (:mod:`seqbook.positions`: sinusoidal, learned or none) adds
where each token is.

Attention itself (masks, ``scaled_dot_product_attention``, ``MultiHeadAttention``) lives in
:mod:`seqbook.multihead`. Layers draw their parameters from PyTorch's global generator
(``torch.manual_seed`` fixes them); :class:`Transformer` takes a ``seed`` (as every model of the
book does) and then leaves the global generator untouched.
"""

from __future__ import annotations

import math
from typing import NamedTuple, Sequence

import torch
import torch.nn.functional as F
from torch import nn

from . import checks
from .multihead import MultiHeadAttention, dropout_probability, padding_mask
from .positions import make_positions
from .seeding import seeded
from .translation import BOS, PAD
from .translator import StepwiseTranslator

__all__ = ["PositionwiseFeedForward", "EncoderLayer", "DecoderLayer", "Encoder", "Decoder",
           "TransformerState", "Transformer", "gradient_gaps"]


# -- layers ---------------------------------------------------------------------------------
class PositionwiseFeedForward(nn.Module):
    """``FFN(x) = max(0, x W_1 + b_1) W_2 + b_2``, the same two-layer network at every position:
    ``(batch, time, d_model) -> (batch, time, d_model)`` through ``d_ff`` hidden units."""

    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.0):
        super().__init__()
        checks.positive_ints(d_model=d_model, d_ff=d_ff)
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout_probability(dropout))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear2(self.dropout(torch.relu(self.linear1(x))))


def _check_torch_layer(module, kind: type) -> None:
    checks.torch_module(module, kind)
    relu = getattr(module, "activation_relu_or_gelu", 0) == 1 or module.activation is F.relu
    checks.built_with([("activation='relu'", not relu), ("batch_first=True", not module.self_attn.batch_first),
                       ("bias=True", module.linear1.bias is None)])


def _copy_from_torch(layer: nn.Module, module: nn.Module, norms) -> nn.Module:
    """Copy the feed-forward weights and the LayerNorms of a PyTorch layer into ``layer``."""
    ref = module.self_attn.in_proj_weight
    layer = layer.to(device=ref.device, dtype=ref.dtype)
    with torch.no_grad():
        for name in ("linear1", "linear2"):
            getattr(layer.ffn, name).load_state_dict(getattr(module, name).state_dict())
        for name in norms:
            getattr(layer, name).load_state_dict(getattr(module, name).state_dict())
            getattr(layer, name).eps = getattr(module, name).eps
    return layer


class EncoderLayer(nn.Module):
    """Self-attention, then the feed-forward network, each with a residual connection and
    LayerNorm: ``x (batch, time, d_model) -> (batch, time, d_model)``."""

    def __init__(self, d_model: int, num_heads: int, d_ff: int, dropout: float = 0.0,
                 norm_first: bool = False):
        super().__init__()
        self.d_model, self.norm_first = d_model, bool(norm_first)
        self.self_attn = MultiHeadAttention(d_model, num_heads, dropout)
        self.ffn = PositionwiseFeedForward(d_model, d_ff, dropout)
        self.norm1, self.norm2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout_probability(dropout))

    @classmethod
    def from_torch(cls, module: nn.TransformerEncoderLayer) -> "EncoderLayer":
        """A copy of a batch-first ``nn.TransformerEncoderLayer`` with ReLU (either norm order)."""
        _check_torch_layer(module, nn.TransformerEncoderLayer)
        sa = module.self_attn
        layer = cls(sa.embed_dim, sa.num_heads, module.linear1.out_features, module.dropout.p,
                    module.norm_first)
        layer.self_attn = MultiHeadAttention.from_torch(sa)
        return _copy_from_torch(layer, module, ("norm1", "norm2"))

    def forward(self, x, key_padding_mask=None, return_attention: bool = False):
        """``x (batch, time, d_model)``, ``key_padding_mask (batch, time)`` True at
        padding. With ``return_attention=True`` also the weights
        ``(batch, heads, time, time)``."""
        checks.sequence(x, self.d_model, "x")
        if self.norm_first:
            normed = self.norm1(x)
            a, weights = self.self_attn(normed, normed, normed, key_padding_mask)
            x = x + self.dropout(a)
            x = x + self.dropout(self.ffn(self.norm2(x)))
        else:
            a, weights = self.self_attn(x, x, x, key_padding_mask)
            x = self.norm1(x + self.dropout(a))
            x = self.norm2(x + self.dropout(self.ffn(x)))
        return (x, weights) if return_attention else x


class DecoderLayer(nn.Module):
    """Causal self-attention, attention over the encoder's output (``memory``), then the
    feed-forward network, each with a residual connection and LayerNorm."""

    def __init__(self, d_model: int, num_heads: int, d_ff: int, dropout: float = 0.0,
                 norm_first: bool = False):
        super().__init__()
        self.d_model, self.norm_first = d_model, bool(norm_first)
        self.self_attn = MultiHeadAttention(d_model, num_heads, dropout)
        self.cross_attn = MultiHeadAttention(d_model, num_heads, dropout)
        self.ffn = PositionwiseFeedForward(d_model, d_ff, dropout)
        self.norm1, self.norm2, self.norm3 = (nn.LayerNorm(d_model) for _ in range(3))
        self.dropout = nn.Dropout(dropout_probability(dropout))

    @classmethod
    def from_torch(cls, module: nn.TransformerDecoderLayer) -> "DecoderLayer":
        """A copy of a batch-first ``nn.TransformerDecoderLayer`` with ReLU (either norm order);
        its ``multihead_attn`` becomes ``cross_attn``."""
        _check_torch_layer(module, nn.TransformerDecoderLayer)
        sa = module.self_attn
        layer = cls(sa.embed_dim, sa.num_heads, module.linear1.out_features, module.dropout.p,
                    module.norm_first)
        layer.self_attn = MultiHeadAttention.from_torch(sa)
        layer.cross_attn = MultiHeadAttention.from_torch(module.multihead_attn)
        return _copy_from_torch(layer, module, ("norm1", "norm2", "norm3"))

    def forward(self, x, memory, memory_key_padding_mask=None, causal: bool = True,
                tgt_key_padding_mask=None, return_attention: bool = False):
        """``x (batch, tgt_len, d_model)``, ``memory (batch, src_len, d_model)``;
        masks True at padding; ``causal=True`` (the default) hides later target
        positions. With ``return_attention=True`` also ``{"self": (batch, heads,
        tgt_len, tgt_len), "cross": (batch, heads, tgt_len, src_len)}``."""
        checks.query_key_value(x, memory, None, self.d_model, self.d_model,
                               names=("x", "memory"))
        if self.norm_first:
            normed = self.norm1(x)
            a, self_w = self.self_attn(normed, normed, normed, tgt_key_padding_mask,
                                       causal)
            x = x + self.dropout(a)
            normed = self.norm2(x)
            a, cross_w = self.cross_attn(normed, memory, memory,
                                         memory_key_padding_mask)
            x = x + self.dropout(a)
            x = x + self.dropout(self.ffn(self.norm3(x)))
        else:
            a, self_w = self.self_attn(x, x, x, tgt_key_padding_mask, causal)
            x = self.norm1(x + self.dropout(a))
            a, cross_w = self.cross_attn(x, memory, memory, memory_key_padding_mask)
            x = self.norm2(x + self.dropout(a))
            x = self.norm3(x + self.dropout(self.ffn(x)))
        return (x, {"self": self_w, "cross": cross_w}) if return_attention else x


def _our_name(torch_name: str) -> str:
    """The name of our parameter that copies PyTorch's ``torch_name`` (``from_torch``'s mapping)."""
    name = torch_name.replace("multihead_attn.", "cross_attn.")
    for ffn in ("linear1.", "linear2."):
        if name.startswith(ffn):
            name = "ffn." + name
    return name


def gradient_gaps(ours: nn.Module, theirs: nn.Module) -> dict[str, float]:
    """After one backward pass through PyTorch's module ``theirs`` and one through its copy
    ``ours`` (built by ``from_torch``: a ``MultiHeadAttention``, ``EncoderLayer`` or
    ``DecoderLayer``), the largest difference of every gradient, relative to the largest entry of
    PyTorch's, by PyTorch's parameter name. PyTorch stacks ``W_Q, W_K, W_V`` (and their biases)
    in one ``in_proj_weight`` (``in_proj_bias``); ours are stacked the same way to compare."""
    mine = dict(ours.named_parameters())
    gaps = {}
    for name, param in theirs.named_parameters():
        if param.grad is None:
            raise ValueError(f"expected a gradient on {name}: run backward through both modules first")
        head, _, leaf = _our_name(name).rpartition(".")
        prefix = head + "." if head else ""
        if leaf.startswith("in_proj_"):                    # weight or bias of W_Q, W_K, W_V
            kind = leaf.removeprefix("in_proj_")
            grad = torch.cat([mine[f"{prefix}{r}_proj.{kind}"].grad for r in "qkv"])
        else:
            grad = mine[_our_name(name)].grad
        scale = param.grad.abs().max().clamp_min(1e-30)
        gaps[name] = float((grad - param.grad).abs().max() / scale)
    return gaps


# -- stacks ---------------------------------------------------------------------------------
class _Stack(nn.Module):
    """Embedding times sqrt(d_model), plus positions, dropout, then ``num_layers`` layers."""

    layer_class: type = nn.Module

    def __init__(self, vocab_size: int, d_model: int = 64, num_heads: int = 4, d_ff: int = 256,
                 num_layers: int = 2, dropout: float = 0.1, positions: str = "sinusoidal",
                 max_len: int = 256, norm_first: bool = False):
        super().__init__()
        self.vocab_size, self.d_model = checks.positive_ints(vocab_size=vocab_size, d_model=d_model)
        self.embedding = nn.Embedding(vocab_size, d_model)
        # With N(0, 1/d_model) entries the scaled embedding has unit-variance entries, the
        # scale of the sine/cosine signal added to it (as in the paper's tied embeddings).
        nn.init.normal_(self.embedding.weight, std=d_model ** -0.5)
        self.positions = make_positions(positions, d_model, max_len)
        self.dropout = nn.Dropout(dropout_probability(dropout))
        self.layers = nn.ModuleList(self.layer_class(d_model, num_heads, d_ff, dropout, norm_first)
                                    for _ in range(checks.positive_int(num_layers, "num_layers")))
        self.final_norm = nn.LayerNorm(d_model) if norm_first else nn.Identity()

    def embed(self, ids: torch.Tensor) -> torch.Tensor:
        """``ids (batch, time)`` -> ``dropout(E[ids] * sqrt(d_model) + P[:time])``. The one place
        where ids enter the model, so the one place they are checked."""
        checks.token_ids(ids, "token ids", 2, self.vocab_size)
        return self.dropout(self.positions(self.embedding(ids) * math.sqrt(self.d_model)))


class Encoder(_Stack):
    """``src (batch, src_len)`` ids -> ``memory (batch, src_len, d_model)``."""

    layer_class = EncoderLayer

    def forward(self, src, key_padding_mask=None, return_attention: bool = False):
        """With ``return_attention=True`` also a list (one per layer) of
        ``(batch, heads, src_len, src_len)`` weights."""
        x, maps = self.embed(src), []
        for layer in self.layers:
            x, weights = layer(x, key_padding_mask, return_attention=True)
            maps.append(weights)
        x = self.final_norm(x)
        return (x, maps) if return_attention else x


class Decoder(_Stack):
    """``tgt_in (batch, tgt_len)`` ids and ``memory`` -> states ``(batch, tgt_len, d_model)``."""

    layer_class = DecoderLayer

    def forward(self, tgt_in, memory, memory_key_padding_mask=None,
                return_attention: bool = False):
        """With ``return_attention=True`` also a list (one per layer) of dicts ``{"self":
        (batch, heads, tgt_len, tgt_len), "cross": (batch, heads, tgt_len, src_len)}``.
        Right padding of ``tgt_in`` needs no mask: the causal mask already hides every later
        position, padding included, from each real position."""
        x, maps = self.embed(tgt_in), []
        for layer in self.layers:
            x, weights = layer(x, memory, memory_key_padding_mask, return_attention=True)
            maps.append(weights)
        x = self.final_norm(x)
        return (x, maps) if return_attention else x


# -- the translation model -----------------------------------------------------------------
class TransformerState(NamedTuple):
    """What the decoder needs at the next step, batch first in every field: the encoder's
    ``memory`` (batch, src_len, d_model), its ``src_padding`` (batch, src_len) True at padding,
    and the target ``prefix`` (batch, t) read so far (``<bos>`` first)."""

    memory: torch.Tensor
    src_padding: torch.Tensor
    prefix: torch.Tensor

    def select(self, rows) -> "TransformerState":
        """The state of the given batch rows (a list or tensor of indices)."""
        return TransformerState(*(field[rows] for field in self))

    @staticmethod
    def cat(states: Sequence["TransformerState"]) -> "TransformerState":
        """Stack states of single sentences (all with the same source and prefix length)."""
        return TransformerState(*(torch.cat(fields) for fields in zip(*states)))


class Transformer(StepwiseTranslator, nn.Module):
    """Encoder-decoder Transformer for translation (the translator contract of chapters 4-6).

    ``positions`` is ``"sinusoidal"`` (the paper's), ``"learned"`` or ``"none"``, the same kind
    for encoder and decoder (each has its own table when learned). ``tie_output=True`` shares
    the decoder's embedding matrix with the output projection, as the paper does. Parameters
    come from ``seed`` (None: from PyTorch's global generator).
    """

    def __init__(self, src_vocab_size: int, tgt_vocab_size: int, d_model: int = 64,
                 num_heads: int = 4, d_ff: int = 256, num_layers: int = 2, dropout: float = 0.1,
                 positions: str = "sinusoidal", max_len: int = 256, norm_first: bool = False,
                 tie_output: bool = False, seed: int | None = None):
        super().__init__()
        self.config = dict(src_vocab_size=src_vocab_size, tgt_vocab_size=tgt_vocab_size,
                           d_model=d_model, num_heads=num_heads, d_ff=d_ff,
                           num_layers=num_layers, dropout=dropout, positions=positions,
                           max_len=max_len, norm_first=norm_first, tie_output=tie_output)
        shared = dict(d_model=d_model, num_heads=num_heads, d_ff=d_ff, num_layers=num_layers,
                      dropout=dropout, positions=positions, max_len=max_len, norm_first=norm_first)
        with seeded(seed):
            self.encoder = Encoder(src_vocab_size, **shared)
            self.decoder = Decoder(tgt_vocab_size, **shared)
            self.output = nn.Linear(d_model, tgt_vocab_size)
        if tie_output:
            self.output.weight = self.decoder.embedding.weight

    def _device(self) -> torch.device:
        return self.output.weight.device

    def encode(self, src, src_lengths=None, return_attention: bool = False):
        """``src (batch, src_len)`` -> ``(memory (batch, src_len, d_model),
        src_padding (batch, src_len) True at padding)``; padding from ``src_lengths``
        when given, else where ``src == PAD``. With ``return_attention=True`` also the
        encoder's maps."""
        if src_lengths is None:
            src_padding = src == PAD
        else:
            checks.padded_batch(src, src_lengths, "src")
            src_padding = padding_mask(src_lengths.to(src.device), src.shape[1])
        memory, maps = self.encoder(src, src_padding, return_attention=True)
        if return_attention:
            return memory, src_padding, maps
        return memory, src_padding

    def decode(self, tgt_in, memory, src_padding=None, return_attention: bool = False):
        """``tgt_in (batch, tgt_len)`` and the encoder's output -> logits
        ``(batch, tgt_len, tgt_vocab_size)`` (and the decoder's maps if asked)."""
        states, maps = self.decoder(tgt_in, memory, src_padding, return_attention=True)
        logits = self.output(states)
        return (logits, maps) if return_attention else logits

    def forward(self, src, src_lengths, tgt_in):
        """Teacher forcing: ``src (batch, src_len)``, ``src_lengths (batch,)`` (or None: padding
        where ``src == PAD``), ``tgt_in (batch, tgt_len)`` -> logits ``(batch, tgt_len, n_vocab)``."""
        memory, src_padding = self.encode(src, src_lengths)  # (where src is checked)
        if checks.token_ids(tgt_in, "tgt_in", 2).shape[0] != src.shape[0]:
            raise ValueError(f"expected tgt_in with the batch size of src ({src.shape[0]}), "
                             f"got {tuple(tgt_in.shape)}")
        return self.decode(tgt_in, memory, src_padding)

    def start(self, src: torch.Tensor, src_lengths: torch.Tensor | None) -> TransformerState:
        """Encode the source once; the prefix starts empty."""
        memory, src_padding = self.encode(src, src_lengths)
        return TransformerState(memory, src_padding, src.new_zeros(src.shape[0], 0))

    def step(self, tokens: torch.Tensor, state: TransformerState):
        """One decoder step: tokens (batch,) -> logits (batch, n_vocab) for the next
        token, and the state with the tokens appended to the prefix."""
        prefix = torch.cat([state.prefix, tokens[:, None]], dim=1)     # (batch, t)
        logits = self.decode(prefix, state.memory, state.src_padding)  # (b, t, n_vocab)
        return logits[:, -1], state._replace(prefix=prefix)            # the last one

    def attention_maps(self, src_ids, tgt_ids) -> dict[str, list[torch.Tensor]]:
        """Every attention map of one pair under teacher forcing, for plotting. ``src_ids`` and
        ``tgt_ids`` are 1-d lists or tensors of ids, ``tgt_ids`` the target words without
        ``<bos>`` (as chapter 5's ``attention_for``): the decoder reads ``<bos>, tgt_ids[:-1]``,
        so row ``j`` of a decoder map belongs to the position that predicts ``tgt_ids[j]``.

        Returns ``{"encoder": [(heads, src_len, src_len)] * layers, "decoder_self":
        [(heads, tgt_len, tgt_len)] * layers, "cross": [(heads, tgt_len, src_len)] * layers}``,
        detached, on the CPU."""
        src_ids, tgt_ids = checks.as_token_ids(src_ids, "src_ids"), checks.as_token_ids(tgt_ids, "tgt_ids")
        tgt_in = torch.cat([torch.tensor([BOS]), tgt_ids[:-1]])
        device = self._device()
        with torch.no_grad():
            memory, src_padding, enc = self.encode(src_ids[None].to(device), return_attention=True)
            _, dec = self.decode(tgt_in[None].to(device), memory, src_padding, return_attention=True)
        return {"encoder": [w[0].cpu() for w in enc],
                "decoder_self": [m["self"][0].cpu() for m in dec],
                "cross": [m["cross"][0].cpu() for m in dec]}

    def attention_for(self, src_ids, tgt_ids) -> torch.Tensor:
        """The last decoder layer's cross-attention averaged over its heads, ``(len(tgt_ids),
        len(src_ids))``, on the CPU: chapter 5's alignment-heatmap interface (``tgt_ids``
        without ``<bos>``; see :meth:`attention_maps`)."""
        return self.attention_maps(src_ids, tgt_ids)["cross"][-1].mean(dim=0)
