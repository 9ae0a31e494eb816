"""Served vectors are ``encode``'s: a tokenizer shared by threads keeps each call's truncation,
and concurrent clients each get the vectors of their own inputs."""

from __future__ import annotations

import copy
import threading
import warnings

import numpy as np

LONG = "a fairly long sentence about nothing in particular, said again and again " * 20


def test_threads_sharing_a_tokenizer_keep_each_calls_truncation(tiny_minilm):
    """The server counts tokens (untruncated) on its event loop while its encoding thread
    truncates long inputs with the same Hugging Face tokenizer, which stores each call's
    truncation on its shared backend. Here the counting call runs exactly between the encoding
    call's setting and its tokenizing (a hook on the tokenizer's own setter, on a copy of the
    tokenizer); the encoding must still read ``max_length`` tokens and the count all of them."""
    from transformers.tokenization_utils_base import TruncationStrategy

    from sentvec.encoders.transformer import TransformerEncoder

    tok = copy.deepcopy(tiny_minilm.tokenizer)
    enc = TransformerEncoder(
        tiny_minilm.model, tok, layers=(1, -1), max_length=tiny_minilm.max_length, device="cpu"
    )
    texts = [f"request {i}: {LONG}" for i in range(3)]
    full = int(enc.count_tokens(texts[:1])[0])
    assert full > enc.max_length  # every text is truncated
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = enc.encode(texts)
        whole = enc.with_options(max_length=full).encode(texts)
    assert np.abs(whole - want).max() > 1e-3  # a text encoded whole is visibly another vector

    encoder_thread: list[threading.Thread] = []
    inside, counted = threading.Event(), threading.Event()
    setter = tok.set_truncation_and_padding
    hooked = []

    def hook(*args, **kwargs):
        setter(*args, **kwargs)
        strategy = kwargs.get("truncation_strategy", args[1] if len(args) > 1 else None)
        if threading.current_thread() in encoder_thread and strategy not in (
            None,
            TruncationStrategy.DO_NOT_TRUNCATE,
        ):
            hooked.append(strategy)
            inside.set()
            counted.wait(1.0)  # the other thread's call may run now, unless it is held off

    tok.set_truncation_and_padding = hook
    got: dict[str, object] = {}

    def encode():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got["vectors"] = enc.encode(texts)

    def count():
        assert inside.wait(30)
        got["counts"] = enc.count_tokens(texts[:1])
        counted.set()

    threads = [threading.Thread(target=encode), threading.Thread(target=count)]
    encoder_thread.append(threads[0])
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert hooked, "the tokenizer no longer sets truncation through set_truncation_and_padding"
    assert np.asarray(got["counts"]).tolist() == [full]
    np.testing.assert_array_equal(got["vectors"], want)
