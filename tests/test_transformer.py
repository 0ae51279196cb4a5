"""Transformer layers against PyTorch's, the masks' guarantees, and the translation model."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from seqbook.multihead import causal_mask
from seqbook.transformer import DecoderLayer, Encoder, EncoderLayer, PositionwiseFeedForward, Transformer
from seqbook.translation import BOS, EOS, PAD

TOL = dict(atol=1e-5, rtol=1e-5)


def _randomise_norms(module, gen):
    """Non-trivial LayerNorm parameters, so that copying them is tested too."""
    with torch.no_grad():
        for sub in module.modules():
            if isinstance(sub, nn.LayerNorm):
                sub.weight.copy_(1 + 0.3 * torch.randn(sub.weight.shape, generator=gen))
                sub.bias.copy_(0.3 * torch.randn(sub.bias.shape, generator=gen))


def _scratch_grad(torch_name, grads):
    """The scratch layer's gradient for the torch parameter ``torch_name``."""
    name = torch_name.replace("multihead_attn.", "cross_attn.")
    if name.startswith("linear"):
        return grads["ffn." + name]
    if name.endswith(("in_proj_weight", "in_proj_bias")):  # torch stacks W_Q, W_K, W_V
        attn, kind = name.split(".")[0], name.rsplit("_", 1)[-1]
        return torch.cat([grads[f"{attn}.{x}_proj.{kind}"] for x in "qkv"])
    return grads[name]


def _compare_grads(ref, mine):
    """Every parameter gradient of the torch layer against the scratch layer's."""
    grads = {n: p.grad for n, p in mine.named_parameters()}
    for name, p in ref.named_parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0, name
        torch.testing.assert_close(_scratch_grad(name, grads), p.grad, **TOL, msg=name)


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_layer_equals_torch(norm_first, device):
    torch.manual_seed(0)
    ref = nn.TransformerEncoderLayer(24, 4, dim_feedforward=32, dropout=0.0, batch_first=True,
                                     norm_first=norm_first)
    gen = torch.Generator().manual_seed(1)
    _randomise_norms(ref, gen)
    ref = ref.to(device)
    layer = EncoderLayer.from_torch(ref)
    x = torch.randn(3, 6, 24, generator=gen).to(device)
    kpm = torch.zeros(3, 6, dtype=torch.bool, device=device)
    kpm[1, 4:], kpm[2, 2:] = True, True
    out_ref, out = ref(x, src_key_padding_mask=kpm), layer(x, key_padding_mask=kpm)
    torch.testing.assert_close(out, out_ref, **TOL)
    target = torch.randn(out.shape, generator=gen).to(device)
    (out_ref * target).sum().backward()
    (out * target).sum().backward()
    _compare_grads(ref, layer)


@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_layer_equals_torch(norm_first, device):
    torch.manual_seed(0)
    ref = nn.TransformerDecoderLayer(24, 4, dim_feedforward=32, dropout=0.0, batch_first=True,
                                     norm_first=norm_first)
    gen = torch.Generator().manual_seed(1)
    _randomise_norms(ref, gen)
    ref = ref.to(device)
    layer = DecoderLayer.from_torch(ref)
    x, memory = torch.randn(3, 5, 24, generator=gen).to(device), torch.randn(3, 7, 24, generator=gen).to(device)
    mkpm = torch.zeros(3, 7, dtype=torch.bool, device=device)
    mkpm[0, 5:], mkpm[2, 3:] = True, True
    out_ref = ref(x, memory, tgt_mask=causal_mask(5, device), memory_key_padding_mask=mkpm)
    out = layer(x, memory, memory_key_padding_mask=mkpm)
    torch.testing.assert_close(out, out_ref, **TOL)
    target = torch.randn(out.shape, generator=gen).to(device)
    (out_ref * target).sum().backward()
    (out * target).sum().backward()
    _compare_grads(ref, layer)


def test_layer_from_torch_rejects_other_layers():
    with pytest.raises(ValueError, match="activation='relu'"):
        EncoderLayer.from_torch(nn.TransformerEncoderLayer(8, 2, 16, activation="gelu", batch_first=True))
    with pytest.raises(ValueError, match="batch_first=True"):
        DecoderLayer.from_torch(nn.TransformerDecoderLayer(8, 2, 16))
    with pytest.raises(TypeError, match="nn.TransformerDecoderLayer"):
        DecoderLayer.from_torch(nn.TransformerEncoderLayer(8, 2, 16, batch_first=True))


def test_feed_forward_acts_on_each_position_alone():
    torch.manual_seed(0)
    ffn = PositionwiseFeedForward(8, 32)
    x = torch.randn(2, 5, 8)
    torch.testing.assert_close(ffn(x)[:, 3], ffn(x[:, 3:4])[:, 0], **TOL)


def test_encoder_without_positions_is_permutation_equivariant_and_with_them_is_not():
    src = torch.tensor([[4, 9, 5, 7, 6, 8]])
    perm = torch.tensor([2, 0, 5, 3, 1, 4])
    for positions in ("none", "sinusoidal"):
        torch.manual_seed(0)
        enc = Encoder(12, d_model=16, num_heads=4, d_ff=32, num_layers=2, dropout=0.0,
                      positions=positions)
        out, out_p = enc(src), enc(src[:, perm])
        if positions == "none":
            torch.testing.assert_close(out_p, out[:, perm], **TOL)
        else:
            assert (out_p - out[:, perm]).abs().max() > 1e-2


def _model(**kw):
    args = dict(d_model=16, num_heads=4, d_ff=32, num_layers=2, dropout=0.0, seed=0)
    args.update(kw)
    return Transformer(13, 11, **args)


def _batch():
    src = torch.tensor([[4, 5, 6, 7, 8], [9, 10, 4, PAD, PAD]])
    tgt_in = torch.tensor([[BOS, 4, 5, 6], [BOS, 7, 8, PAD]])
    return src, torch.tensor([5, 3]), tgt_in


@pytest.mark.parametrize("norm_first", [False, True])
def test_later_target_tokens_do_not_change_earlier_outputs(norm_first):
    model = _model(norm_first=norm_first)
    src, lengths, tgt_in = _batch()
    logits = model(src, lengths, tgt_in)
    assert logits.shape == (2, 4, 11)
    changed = tgt_in.clone()
    changed[:, 2:] = torch.tensor([[9, 3], [5, 6]])
    logits_changed = model(src, lengths, changed)
    assert torch.equal(logits_changed[:, :2], logits[:, :2])  # exactly, not approximately
    assert (logits_changed[:, 2:] - logits[:, 2:]).abs().max() > 1e-3


def test_padded_source_tokens_do_not_change_anything():
    model = _model()
    src, lengths, tgt_in = _batch()
    logits = model(src, lengths, tgt_in)
    changed = src.clone()
    changed[1, 3:] = torch.tensor([11, 12])
    assert torch.equal(model(changed, lengths, tgt_in), logits)
    memory, padding = model.encode(src, lengths)
    memory_changed, _ = model.encode(changed, lengths)
    assert torch.equal(memory_changed[1, :3], memory[1, :3])
    # Without the lengths the padding is found from PAD, with the same result.
    torch.testing.assert_close(model(src, None, tgt_in), logits, atol=0, rtol=0)
    # A changed REAL token does change the other sentence-mates' outputs.
    changed[1, 0] = 12
    assert (model(changed, lengths, tgt_in)[1] - logits[1]).abs().max() > 1e-3


def test_a_source_given_with_padding_reads_the_same_once_the_padding_is_dropped():
    model = _model().eval()
    src, lengths, tgt_in = _batch()
    prefixes = torch.tensor([[BOS, 4, 5], [BOS, 7, 3], [BOS, 4, 4]])
    one = model.next_log_probs_fn(src[1, :3].tolist())(prefixes)  # a list of ids works too
    with torch.no_grad():
        forced = model(src[1:].expand(3, -1), None, prefixes)
    torch.testing.assert_close(one, torch.log_softmax(forced[:, -1], -1), **TOL)


def test_decoding_state_is_the_encoding_and_the_prefix():
    model = _model().eval()
    src, lengths, tgt_in = _batch()
    with torch.no_grad():
        state = model.start(src, lengths)
        memory, padding = model.encode(src, lengths)
        assert torch.equal(state.memory, memory) and torch.equal(state.src_padding, padding)
        assert state.prefix.shape == (2, 0)
        _, state = model.step(tgt_in[:, 0], state)
        _, state = model.step(tgt_in[:, 1], state)
    assert torch.equal(state.prefix, tgt_in[:, :2])


def test_attention_maps_for_plotting():
    model = _model()
    src_ids, tgt_ids = [4, 5, 6], [7, 8, 9, EOS]  # the target words, without <bos>
    maps = model.attention_maps(src_ids, tgt_ids)
    assert [tuple(w.shape) for w in maps["encoder"]] == [(4, 3, 3)] * 2
    assert [tuple(w.shape) for w in maps["decoder_self"]] == [(4, 4, 4)] * 2
    assert [tuple(w.shape) for w in maps["cross"]] == [(4, 4, 3)] * 2
    for w in maps["decoder_self"]:
        assert torch.all(w.triu(1) == 0)
    for ws in maps.values():
        for w in ws:
            torch.testing.assert_close(w.sum(-1), torch.ones(w.shape[:-1]), **TOL)
    # The maps are those of teacher forcing with <bos> 7 8 9 as the decoder's input.
    memory, padding = model.encode(torch.tensor([src_ids]))
    _, dec = model.decode(torch.tensor([[BOS, 7, 8, 9]]), memory, padding, return_attention=True)
    assert torch.equal(maps["cross"][1], dec[1]["cross"][0])
    align = model.attention_for(torch.tensor(src_ids), torch.tensor(tgt_ids))
    assert align.shape == (4, 3)
    torch.testing.assert_close(align, maps["cross"][-1].mean(0))


def test_seed_fixes_parameters_without_touching_global_generator():
    torch.manual_seed(5)
    before = torch.rand(1)
    torch.manual_seed(5)
    a, b, c = _model(seed=1), _model(seed=1), _model(seed=2)
    assert torch.equal(torch.rand(1), before)
    for (name, pa), pb, pc in zip(a.named_parameters(), b.parameters(), c.parameters()):
        assert torch.equal(pa, pb), name
    assert not torch.equal(a.output.weight, c.output.weight)


def test_embedding_scaling_and_tied_output():
    model = _model(positions="none", tie_output=True)
    assert model.output.weight is model.decoder.embedding.weight
    x = model.decoder.embed(torch.tensor([[4, 5]]))
    torch.testing.assert_close(x, model.decoder.embedding.weight[[4, 5]][None] * 4.0)  # sqrt(16)
    scaled = model.encoder.embed(torch.arange(13)[None])
    assert 0.7 < scaled.std().item() < 1.3  # unit scale, as the sine/cosine signal


def test_learned_positions_model_trains_its_tables():
    model = _model(positions="learned")
    src, lengths, tgt_in = _batch()
    model(src, lengths, tgt_in).sum().backward()
    assert model.encoder.positions.table.grad[:5].abs().sum() > 0
    assert model.decoder.positions.table.grad[:4].abs().sum() > 0


def test_model_rejects_bad_input():
    model = _model()
    src, lengths, tgt_in = _batch()
    with pytest.raises(TypeError, match="expected src of dtype torch.int64"):
        model(src.float(), lengths, tgt_in)
    with pytest.raises(ValueError, match=r"token ids in 0..12, got ids from"):
        model(src + 10, lengths, tgt_in)
    with pytest.raises(ValueError, match="batch size of src"):
        model(src, lengths, tgt_in[:1])
    with pytest.raises(ValueError, match=r"expected 2 src_lengths \(one per sentence\), got 1"):
        model(src, lengths[:1], tgt_in)
    with pytest.raises(ValueError, match=r"src_ids \(one sentence\) as an int64 tensor of shape \(time,\)"):
        model.next_log_probs_fn(src)
    with pytest.raises(ValueError, match="tgt_ids with at least one token"):
        model.attention_maps([4, 5], [])
    with pytest.raises(ValueError, match="one of"):
        _model(positions="rotary")
    with pytest.raises(ValueError, match="max_len = 256"):
        model(torch.full((1, 300), 4), None, tgt_in[:1])
    with pytest.raises(ValueError, match=r"expected x, memory with the same batch, got \(2, 3, 16\) and \(1, 3, 16\)"):
        model.decoder.layers[0](torch.randn(2, 3, 16), torch.randn(1, 3, 16))


def test_small_transformer_learns_to_reverse(device):
    model = Transformer(12, 12, d_model=32, num_heads=4, d_ff=64, num_layers=1, dropout=0.0, seed=0).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    gen = torch.Generator().manual_seed(0)
    losses = []
    for _ in range(60):
        src = torch.randint(4, 12, (32, 6), generator=gen)
        tgt = src.flip(1)
        tgt_in = torch.cat([torch.full((32, 1), BOS), tgt], 1).to(device)
        tgt_out = torch.cat([tgt, torch.full((32, 1), EOS)], 1).to(device)
        src = src.to(device)
        loss = F.cross_entropy(model(src, None, tgt_in).flatten(0, 1), tgt_out.flatten())
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[0] > 2.0  # about ln 12 = 2.5 at the start
    assert sum(losses[-5:]) / 5 < 0.55 * losses[0]


def _backward_both(ours, theirs, out_ours, out_theirs, seed=3):
    target = torch.randn(out_theirs.shape, generator=torch.Generator().manual_seed(seed))
    (out_ours * target).sum().backward()
    (out_theirs * target).sum().backward()


def test_gradient_gaps_compare_every_parameter_of_a_copy():
    from seqbook.multihead import MultiHeadAttention
    from seqbook.transformer import gradient_gaps

    gen = torch.Generator().manual_seed(0)
    x, mem = torch.randn(2, 5, 8, generator=gen), torch.randn(2, 4, 8, generator=gen)
    torch.manual_seed(0)
    cases = []
    mha = nn.MultiheadAttention(8, 2, batch_first=True)
    ours = MultiHeadAttention.from_torch(mha)
    _backward_both(ours, mha, ours(x, x, x)[0], mha(x, x, x)[0])
    cases.append((ours, mha))
    dec = nn.TransformerDecoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True)
    _randomise_norms(dec, gen)
    ours_dec = DecoderLayer.from_torch(dec)
    _backward_both(ours_dec, dec, ours_dec(x, mem), dec(x, mem, tgt_mask=causal_mask(5)))
    cases.append((ours_dec, dec))
    for mine, theirs in cases:
        gaps = gradient_gaps(mine, theirs)
        assert list(gaps) == [n for n, _ in theirs.named_parameters()]       # every one, biases too
        assert max(gaps.values()) < 1e-5, gaps
    assert {"in_proj_bias", "out_proj.bias"} <= set(gradient_gaps(*cases[0]))
    assert "multihead_attn.in_proj_weight" in gradient_gaps(ours_dec, dec)
    # a wrong gradient shows up under its own name, and only there
    with torch.no_grad():
        ours_dec.cross_attn.v_proj.bias.grad.neg_()
        ours_dec.norm3.weight.grad.neg_()
    gaps = gradient_gaps(ours_dec, dec)
    wrong = {n for n, g in gaps.items() if g > 1e-3}
    assert wrong == {"multihead_attn.in_proj_bias", "norm3.weight"}, gaps


def test_gradient_gaps_need_a_backward_pass_first():
    from seqbook.multihead import MultiHeadAttention
    from seqbook.transformer import gradient_gaps

    mha = nn.MultiheadAttention(8, 2, batch_first=True)
    with pytest.raises(ValueError, match="run backward through both modules first"):
        gradient_gaps(MultiHeadAttention.from_torch(mha), mha)
