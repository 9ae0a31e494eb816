"""Served vectors are ``encode``'s: a tokenizer shared by threads keeps each call's truncation,
and concurrent clients each get the vectors of their own inputs."""

from __future__ import annotations

import asyncio
import base64
import copy
import threading
import warnings
from pathlib import Path

import numpy as np
import pytest

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


# ------------------------------------------------------------------ over HTTP
REF = Path(__file__).parents[1] / "data" / "sent2vec-reference"
BIN = REF / "tiny-bigram.bin"
SENTENCES = [
    line.strip()
    for line in (REF / "sentences.txt").read_text(encoding="utf-8").splitlines()
    if line.strip()
]
CLIENTS = 16
PER_CLIENT = 3
#: A transformer's vector of a text changes in its last bits with the padded length of the
#: forward pass it shares with other texts (docs/serving.md): 3.6e-7 at most measured here for
#: the 2-layer MiniLM (float32's epsilon is 1.2e-7); 2e-6 leaves a margin of 5 and is still
#: 1,000 times below the distance between the vectors of two of these texts, so another
#: request's answer is caught (a test that handed each request its neighbour's rows failed
#: with 2.1).
TRANSFORMER_BOUND = 2e-6


def _requests() -> list[list[str]]:
    """Distinct texts of mixed lengths, one long (truncated) text every fourth request."""
    texts = SENTENCES[: CLIENTS * PER_CLIENT]
    groups = [texts[i * PER_CLIENT : (i + 1) * PER_CLIENT] for i in range(CLIENTS)]
    for i in range(0, CLIENTS, 4):
        groups[i] = [*groups[i][:-1], f"client {i}: {LONG}"]
    return groups


@pytest.fixture(scope="module")
def static_dir(minilm_path, tmp_path_factory):
    """A static model over MiniLM's tokenizer with random rows."""
    from tokenizers import Tokenizer

    from sentvec.encoders.static import StaticEncoder

    tokenizer = Tokenizer.from_file(str(minilm_path / "tokenizer.json"))
    rows = np.random.default_rng(0).standard_normal((tokenizer.get_vocab_size(), 24))
    path = tmp_path_factory.mktemp("serve-static") / "model"
    StaticEncoder(rows.astype(np.float32), tokenizer).save(path)
    return path


@pytest.fixture(scope="module")
def server(tiny_minilm_dir, static_dir):
    pytest.importorskip("fastapi")
    pytest.importorskip("uvicorn")
    from sentvec.serve import start_server

    with start_server(
        *[str(tiny_minilm_dir), str(BIN), str(static_dir)],
        *["--name", "tiny", "--name", "s2v", "--name", "static", "--max-wait-ms", "20"],
        *["--precision", "float32"],  # as the oracles (auto is bfloat16 on a CPU with it)
    ) as srv:
        yield srv


@pytest.fixture(scope="module")
def oracles(tiny_minilm, static_dir):
    from sentvec import Sent2Vec, load_encoder

    return {"tiny": tiny_minilm, "s2v": Sent2Vec.load(BIN), "static": load_encoder(static_dir)}


def _quiet(encoder, texts):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # truncation, zero rows: the server reports them
        return encoder.encode(texts)


def _decode(body) -> np.ndarray:
    assert [d["index"] for d in body["data"]] == list(range(len(body["data"])))
    return np.stack(
        [np.frombuffer(base64.b64decode(d["embedding"]), dtype="<f4") for d in body["data"]]
    )


def _batches(url: str, name: str) -> tuple[float, float]:
    """(batches encoded, texts in them) of model ``name``, from /metrics."""
    httpx = pytest.importorskip("httpx")
    found = {}
    for line in httpx.get(url + "/metrics").text.splitlines():
        for part in ("count", "sum"):
            if line.startswith(f'sentvec_batch_size_{part}{{model="{name}"}}'):
                found[part] = float(line.rsplit(" ", 1)[1])
    return found.get("count", 0.0), found.get("sum", 0.0)


@pytest.mark.parametrize("name", ["tiny", "s2v", "static"])
def test_concurrent_clients_each_get_the_vectors_of_their_own_inputs(server, oracles, name):
    """16 clients at once, each with 3 distinct texts (48 in all), base64: each answer is
    ``encode`` of its own inputs, whatever batch the server put them in; bit for bit for
    Sent2Vec and a static model, within float32 rounding for a transformer."""
    httpx = pytest.importorskip("httpx")
    groups = _requests()
    before = _batches(server.url, name)

    async def burst():
        async with httpx.AsyncClient(base_url=server.url, timeout=120) as c:
            return await asyncio.gather(
                *(
                    c.post(
                        "/v1/embeddings",
                        json={"model": name, "input": g, "encoding_format": "base64"},
                    )
                    for g in groups
                )
            )

    responses = asyncio.run(burst())
    assert [r.status_code for r in responses] == [200] * CLIENTS
    got = [_decode(r.json()) for r in responses]
    batches, texts = (a - b for a, b in zip(_batches(server.url, name), before, strict=True))
    assert texts == CLIENTS * PER_CLIENT
    if name == "tiny":  # requests were gathered: a batch held several clients' texts
        assert batches < CLIENTS
    for g, v in zip(groups, got, strict=True):
        want = _quiet(oracles[name], g)
        if name == "tiny":
            assert np.abs(v - want).max() <= TRANSFORMER_BOUND
        else:
            np.testing.assert_array_equal(v, want)
    # and answers are told apart: another client's vectors are far beyond the bound
    apart = np.abs(got[1] - _quiet(oracles[name], groups[2])).max()
    assert apart > 1000 * TRANSFORMER_BOUND


@pytest.mark.parametrize("name", ["tiny", "s2v", "static"])
def test_base64_of_48_inputs_in_one_request_is_encode(server, oracles, name):
    httpx = pytest.importorskip("httpx")
    texts = [t for g in _requests() for t in g]
    r = httpx.post(
        server.url + "/v1/embeddings",
        json={"model": name, "input": texts, "encoding_format": "base64"},
        timeout=120,
    )
    assert r.status_code == 200
    got, want = _decode(r.json()), _quiet(oracles[name], texts)
    assert got.shape == want.shape == (48, want.shape[1])
    if name == "tiny":
        assert np.abs(got - want).max() <= TRANSFORMER_BOUND
    else:
        np.testing.assert_array_equal(got, want)
