"""DynamicBatcher in-process: bounds, order, queue limit, cancelled jobs skipped."""

from __future__ import annotations

import asyncio
import threading

import numpy as np
import pytest

from sentvec.serve.batching import DynamicBatcher, QueueFullError
from sentvec.serve.settings import DEFAULT_BATCH_LIMITS, SENT2VEC_BATCH_LIMITS


class Recorder:
    """An encoder whose vector of text t is [len(t), hash]; records each batch; can block."""

    def __init__(self) -> None:
        self.batches: list[list[str]] = []
        self.gate = threading.Event()
        self.gate.set()

    def __call__(self, texts: list[str]) -> np.ndarray:
        self.gate.wait(10)
        self.batches.append(list(texts))
        return np.array([[len(t), sum(map(ord, t))] for t in texts], dtype=np.float32)


def _want(texts):
    return np.array([[len(t), sum(map(ord, t))] for t in texts], dtype=np.float32)


def test_concurrent_requests_share_batches_within_bounds_and_get_their_rows():
    rec = Recorder()

    async def run():
        b = DynamicBatcher(rec, max_batch_size=5, max_batch_tokens=1000, max_wait_ms=20)
        rec.gate.clear()  # hold the first batch so the others queue up behind it
        groups = [[f"r{i}-{j}" * (i + 1) for j in range(1 + i % 3)] for i in range(10)]
        tasks = [asyncio.create_task(b.submit(g, len(g))) for g in groups]
        await asyncio.sleep(0.05)
        rec.gate.set()
        out = await asyncio.gather(*tasks)
        await b.aclose()
        return groups, out

    groups, out = asyncio.run(run())
    for g, v in zip(groups, out, strict=True):
        np.testing.assert_array_equal(v, _want(g))
    assert len(rec.batches) < len(groups)
    assert all(len(batch) <= 5 for batch in rec.batches)
    assert sorted(t for batch in rec.batches for t in batch) == sorted(t for g in groups for t in g)


def test_token_bound_and_oversized_request_alone():
    rec = Recorder()

    async def run():
        b = DynamicBatcher(rec, max_batch_size=100, max_batch_tokens=10, max_wait_ms=20)
        rec.gate.clear()
        first = asyncio.create_task(b.submit(["x"], 1))
        await asyncio.sleep(0.02)
        tasks = [asyncio.create_task(b.submit([f"t{i}"], 4)) for i in range(4)]
        big = asyncio.create_task(b.submit(["big"], 50))
        await asyncio.sleep(0.02)
        rec.gate.set()
        await asyncio.gather(first, big, *tasks)
        await b.aclose()

    asyncio.run(run())
    assert rec.batches[0] == ["x"]
    assert rec.batches[1:] == [["t0", "t1"], ["t2", "t3"], ["big"]]  # 4 + 4 <= 10 tokens


def test_full_queue_refuses_and_cancelled_jobs_are_never_encoded():
    rec = Recorder()

    async def run():
        b = DynamicBatcher(rec, max_queue_items=3, max_wait_ms=0)
        rec.gate.clear()
        running = asyncio.create_task(b.submit(["running"], 1))
        await asyncio.sleep(0.02)  # now in the worker thread, no longer queued
        queued = asyncio.create_task(b.submit(["a", "b"], 2))
        gone = asyncio.create_task(b.submit(["gone"], 1))
        await asyncio.sleep(0.01)
        assert b.queued_items == 3
        with pytest.raises(QueueFullError, match="--max-queue-items"):
            await b.submit(["one too many"], 1)
        gone.cancel()
        rec.gate.set()
        await asyncio.gather(running, queued)
        await b.aclose()

    asyncio.run(run())
    assert ["gone"] not in rec.batches and all("gone" not in batch for batch in rec.batches)
    assert ["running"] in rec.batches


def test_the_depth_reported_is_what_is_queued_when_clients_leave():
    """Requests dropped while queued (their clients left) leave the depth at once, while a batch
    is still encoding: the depth reported never stays above what is queued."""
    rec = Recorder()
    depths: list[int] = []

    async def run():
        b = DynamicBatcher(rec, max_wait_ms=0, max_queue_items=5000, on_depth=depths.append)
        rec.gate.clear()
        running = asyncio.create_task(b.submit(["running"], 1))
        await asyncio.sleep(0.02)  # in the worker thread, no longer queued
        clients = [asyncio.create_task(b.submit([f"t{i}"] * 2000, 2000)) for i in range(2)]
        await asyncio.sleep(0.01)
        assert b.queued_items == 4000 and depths[-1] == 4000
        for client in clients:
            client.cancel()
        await asyncio.sleep(0.01)
        queued_after_leaving, reported_after_leaving = b.queued_items, depths[-1]
        # the room they held is free again: 4,000 more items fit under the limit of 5,000
        refill = asyncio.create_task(b.submit(["x"] * 4000, 4000))
        await asyncio.sleep(0.01)
        rec.gate.set()
        await asyncio.gather(running, refill)
        await b.aclose()
        return queued_after_leaving, reported_after_leaving

    assert asyncio.run(run()) == (0, 0)
    assert depths[-1] == 0
    assert all(len(batch) != 2000 for batch in rec.batches)  # the dropped ones never encoded


def test_encoder_error_fails_only_its_batch():
    calls = []

    def flaky(texts):
        calls.append(texts)
        if "boom" in texts:
            raise RuntimeError("boom")
        return np.zeros((len(texts), 2), dtype=np.float32)

    async def run():
        b = DynamicBatcher(flaky, max_wait_ms=0)
        with pytest.raises(RuntimeError, match="boom"):
            await b.submit(["boom"], 1)
        ok = await b.submit(["fine"], 1)
        await b.aclose()
        return ok

    assert asyncio.run(run()).shape == (1, 2)


def test_a_transformer_on_the_cpu_runs_small_forward_passes(tiny_minilm):
    """Inside a gathered batch, a CPU transformer encodes 8 sentences per forward pass (less
    padding, docs/serving.md); other encoders keep their own batching."""
    from pathlib import Path

    import sentvec
    from sentvec.serve.served_model import CPU_FORWARD_BATCH_SIZE, ServedModel

    calls: list[int] = []
    forward = tiny_minilm.model.forward

    def counting(*args, **kwargs):
        calls.append(int(kwargs["input_ids"].shape[0]))
        return forward(*args, **kwargs)

    served = ServedModel("m", tiny_minilm)
    texts = [f"sentence {i} " + "word " * (30 + i) for i in range(20)]  # distinct, long
    tiny_minilm.model.forward = counting
    try:
        got = served.encode(texts)
    finally:
        del tiny_minilm.model.forward
    assert served.forward_batch_size == CPU_FORWARD_BATCH_SIZE == 8
    assert sum(calls) == 20 and max(calls) == 8  # the encoder's default would be one pass of 20
    want = tiny_minilm.encode(texts, batch_size=8, show_progress_bar=False)
    assert np.array_equal(got, want)
    tiny_bin = Path(__file__).parents[1] / "data" / "sent2vec-reference" / "tiny-bigram.bin"
    assert ServedModel("s", sentvec.load_encoder(tiny_bin)).forward_batch_size is None


def test_a_sent2vec_model_counts_its_tokens_while_encoding():
    """No counting pass: the encoding reports each text's tokens, split on the official
    separators (an independent regex here), and each request of a batch gets its own counts."""
    import re
    from pathlib import Path

    import sentvec
    from sentvec.serve.served_model import ServedModel

    tiny_bin = Path(__file__).parents[1] / "data" / "sent2vec-reference" / "tiny-bigram.bin"
    encoder = sentvec.load_encoder(tiny_bin)
    served = ServedModel("s", encoder)
    assert served.counts_on_encode and not served.counts_in_thread
    texts = ["the city at night", "a\tman  plays\x0bthe guitar\n", "qqqzz </s> the", "x" * 7]
    want = [len([w for w in re.split(rb"[ \t\v\f\r\n\x00]+", t.encode()) if w]) for t in texts]
    vectors, tokens = served.encode_counted(texts)
    assert tokens.tolist() == want == [4, 5, 3, 1]
    with pytest.warns(UserWarning):  # encode warns of the zero row; encode_counted does not
        np.testing.assert_array_equal(vectors, encoder.encode(texts))
    assert served.token_bound(texts) >= sum(want)

    async def run():
        b = DynamicBatcher(served.encode_counted, max_wait_ms=20)
        out = await asyncio.gather(b.submit(texts[:3], 9), b.submit(texts[3:], 7))
        await b.aclose()
        return out

    (v1, t1), (v2, t2) = asyncio.run(run())
    assert t1.tolist() == want[:3] and t2.tolist() == want[3:]
    np.testing.assert_array_equal(np.vstack([v1, v2]), vectors)

    # the server's path: bytes made on the event loop, the kernel in the thread; the same
    assert served.prepare is not None
    pv, pt = served.encode_prepared(served.prepare(texts))
    np.testing.assert_array_equal(pv, vectors)
    assert pt.tolist() == want
    assert served.batch_limits == SENT2VEC_BATCH_LIMITS


def test_only_a_sent2vec_model_without_preprocessing_prepares_on_the_event_loop(tiny_minilm):
    """Moses tokenizing is a kernel of its own: with it, the thread gets the texts."""
    from pathlib import Path

    from sentvec.sent2vec import Preprocessing, Sent2Vec
    from sentvec.serve.served_model import ServedModel

    moses = Sent2Vec.load(
        Path(__file__).parents[1] / "data" / "sent2vec-reference" / "tiny-bigram.bin"
    )
    moses.preprocessing = Preprocessing(lowercase=True, tokenizer="moses")
    served = ServedModel("m", moses)
    assert served.prepare is None and served.counts_on_encode
    assert served.batch_limits == SENT2VEC_BATCH_LIMITS
    with pytest.raises(TypeError, match="prepares nothing"):
        served.encode_prepared(None)
    transformer = ServedModel("t", tiny_minilm)
    assert transformer.prepare is None and transformer.batch_limits == DEFAULT_BATCH_LIMITS


def test_concurrent_batches_encode_side_by_side_and_close_cleanly():
    """With max_concurrent_batches=2 two batches are inside encode at once (a barrier of two
    threads passes only then); each request still gets its own rows."""
    barrier = threading.Barrier(2, timeout=5)
    inside: list[int] = []

    def encode(texts: list[str]) -> np.ndarray:
        inside.append(len(texts))
        barrier.wait()  # raises BrokenBarrierError unless another batch is being encoded
        return _want(texts)

    async def run():
        b = DynamicBatcher(encode, max_batch_size=1, max_wait_ms=0, max_concurrent_batches=2)
        out = await asyncio.gather(b.submit(["first"], 1), b.submit(["second"], 1))
        await b.aclose()
        return out

    first, second = asyncio.run(run())
    np.testing.assert_array_equal(first, _want(["first"]))
    np.testing.assert_array_equal(second, _want(["second"]))
    assert inside == [1, 1]
    with pytest.raises(ValueError, match="max_concurrent_batches"):
        DynamicBatcher(encode, max_concurrent_batches=0)


def test_prepare_runs_on_the_event_loop_and_encode_gets_its_result_in_the_thread():
    rec = Recorder()
    threads: dict[str, set[int]] = {"prepare": set(), "encode": set()}

    def prepare(texts: list[str]) -> tuple[str, ...]:
        threads["prepare"].add(threading.get_ident())
        if "bad" in texts:
            raise ValueError("cannot prepare 'bad'")
        return tuple(t.upper() for t in texts)

    def encode(prepared: tuple[str, ...]) -> np.ndarray:
        threads["encode"].add(threading.get_ident())
        assert isinstance(prepared, tuple)
        return rec(list(prepared))

    async def run():
        loop_thread = threading.get_ident()
        b = DynamicBatcher(encode, prepare=prepare, max_batch_size=4, max_wait_ms=5)
        rec.gate.clear()
        groups = [[f"a{i}", f"b{i}"] for i in range(5)]
        tasks = [asyncio.create_task(b.submit(g, 2)) for g in groups]
        await asyncio.sleep(0.02)
        rec.gate.set()
        out = await asyncio.gather(*tasks)
        with pytest.raises(ValueError, match="cannot prepare 'bad'"):
            await b.submit(["bad"], 1)
        after = await b.submit(["ok"], 1)  # a failed batch fails its requests, not the batcher
        await b.aclose()
        return loop_thread, groups, out, after

    loop_thread, groups, out, after = asyncio.run(run())
    for g, v in zip(groups, out, strict=True):
        np.testing.assert_array_equal(v, _want([t.upper() for t in g]))
    np.testing.assert_array_equal(after, _want(["OK"]))
    assert threads["prepare"] == {loop_thread}
    assert threads["encode"] and loop_thread not in threads["encode"]
    assert len(rec.batches) < len(groups)  # requests still share batches
