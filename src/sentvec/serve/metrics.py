"""Prometheus metrics of the server (``GET /metrics``), through ``prometheus-client``.

Each app has its own registry, so several apps in one process do not collide. With
``--workers N``, ``sentvec serve`` sets ``$PROMETHEUS_MULTIPROC_DIR`` to a private temporary
directory before the workers start: prometheus-client's multiprocess mode then keeps every
worker's values in files there, and a scrape of any worker reports the sum over all of them
(gauges: the sum over live workers).
"""

from __future__ import annotations

import os
from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

__all__ = ["ServeMetrics", "CONTENT_TYPE_LATEST", "MULTIPROC_ENV"]

#: prometheus-client's multiprocess directory (set for ``--workers N`` by ``sentvec serve``).
MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"

_LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)
#: Label combinations (route, model, status) whose metric children are kept at hand.
_MAX_CACHED_KEYS = 1024
_SIZE_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096)


class ServeMetrics:
    """The server's counters, histograms and gauges, labelled per model.

    Attributes
    ----------
    multiprocess_dir : str or None
        ``$PROMETHEUS_MULTIPROC_DIR`` when set: :meth:`render` then aggregates every process
        writing there.
    """

    def __init__(self) -> None:
        self.multiprocess_dir = os.environ.get(MULTIPROC_ENV) or None
        self.registry = CollectorRegistry()
        r = self.registry
        self.requests = Counter(
            "sentvec_requests",
            "HTTP requests answered, by route, model and status code",
            ["route", "model", "status"],
            registry=r,
        )
        self.errors = Counter(
            "sentvec_request_errors",
            "Requests answered with a status >= 400, by route, model and status code",
            ["route", "model", "status"],
            registry=r,
        )
        self.latency = Histogram(
            "sentvec_request_duration_seconds",
            "Time from request start to response, by route and model",
            ["route", "model"],
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        self.batch_size = Histogram(
            "sentvec_batch_size",
            "Texts per encoded batch",
            ["model"],
            buckets=_SIZE_BUCKETS,
            registry=r,
        )
        self.batch_tokens = Histogram(
            "sentvec_batch_tokens",
            "Tokens per encoded batch",
            ["model"],
            buckets=tuple(b * 16 for b in _SIZE_BUCKETS),
            registry=r,
        )
        self.batch_seconds = Histogram(
            "sentvec_batch_duration_seconds",
            "Encoding time per batch",
            ["model"],
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        self.queue_depth = Gauge(
            "sentvec_queue_depth",
            "Texts waiting to be batched",
            ["model"],
            registry=r,
            multiprocess_mode="livesum",
        )
        self.in_progress = Gauge(
            "sentvec_requests_in_progress",
            "Embedding requests being served",
            ["model"],
            registry=r,
            multiprocess_mode="livesum",
        )
        self._request_children: dict[tuple[str, str, int], tuple] = {}
        self._in_progress: dict[str, Gauge] = {}
        self.truncated = Counter(
            "sentvec_truncated_inputs",
            "Inputs longer than the model's limit, truncated by the encoder",
            ["model"],
            registry=r,
        )

    def in_progress_of(self, model: str) -> Gauge:
        """The requests-in-progress gauge of ``model`` (looked up once per model)."""
        gauge = self._in_progress.get(model)
        if gauge is None:
            gauge = self._in_progress[model] = self.in_progress.labels(model)
        return gauge

    def depth_observer(self, model: str) -> Callable[[int], None]:
        """The ``on_depth`` callback of the model's batcher (sets its queue-depth gauge)."""
        return self.queue_depth.labels(model).set

    def batch_observer(self, model: str) -> Callable[[int, int, float], None]:
        """The ``on_batch`` callback of the model's batcher."""
        size, tokens, secs = (
            self.batch_size.labels(model),
            self.batch_tokens.labels(model),
            self.batch_seconds.labels(model),
        )

        def observe(n: int, t: int, seconds: float) -> None:
            size.observe(n)
            tokens.observe(t)
            secs.observe(seconds)

        return observe

    def observe_request(self, route: str, model: str, status: int, seconds: float) -> None:
        """Count one answered request."""
        key = (route, model, status)
        children = self._request_children.get(key)
        if children is None:  # labels() looks its child up under a lock: once per key
            code = str(status)
            children = (
                self.requests.labels(route, model, code),
                self.errors.labels(route, model, code) if status >= 400 else None,
                self.latency.labels(route, model),
            )
            if len(self._request_children) < _MAX_CACHED_KEYS:
                self._request_children[key] = children
        requests, errors, latency = children
        requests.inc()
        if errors is not None:
            errors.inc()
        latency.observe(seconds)

    def render(self) -> bytes:
        """The Prometheus text exposition of every metric (of every worker, in multiprocess
        mode)."""
        if self.multiprocess_dir is None:
            return generate_latest(self.registry)
        from prometheus_client.multiprocess import MultiProcessCollector

        registry = CollectorRegistry()
        MultiProcessCollector(registry, path=self.multiprocess_dir)
        return generate_latest(registry)

    def process_exits(self) -> None:
        """Drop this process's live gauges from the multiprocess files (a worker stopping)."""
        if self.multiprocess_dir is not None:
            from prometheus_client.multiprocess import mark_process_dead

            mark_process_dead(os.getpid(), self.multiprocess_dir)
