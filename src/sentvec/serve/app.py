"""``create_app``: the ASGI application serving sentvec models over HTTP.

Routes (see docs/serving.md):

* ``POST /v1/embeddings``, ``GET /v1/models``: the OpenAI embeddings API (its official client
  works against it unchanged; errors as ``{"error": {"message", "type", "param", "code"}}``);
* ``POST /embed``, ``GET /info``, ``GET /health``: text-embeddings-inference's API;
* ``GET /metrics``: Prometheus metrics.

Every embedding request goes through its model's :class:`~sentvec.serve.DynamicBatcher`. A long
input is truncated by the encoder itself and reported: ``usage.truncated_inputs`` and the header
``X-Sentvec-Truncated-Inputs``; on ``/embed`` with ``truncate=false`` (TEI's default) it is a
413. Rows that are all zero (a Sent2Vec text without any known word) are counted in
``X-Sentvec-Zero-Vectors``.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from sentvec.serve.batching import BatcherClosedError, DynamicBatcher, QueueFullError
from sentvec.serve.errors import ApiError, error_payload
from sentvec.serve.metrics import CONTENT_TYPE_LATEST, ServeMetrics
from sentvec.serve.protocol import (
    EmbedCall,
    finish_vectors,
    openai_response_body,
    parse_json,
    parse_openai,
    parse_tei,
    read_body,
    tei_response_body,
    too_long_error,
)
from sentvec.serve.security import ApiKeyMiddleware
from sentvec.serve.served_model import ServedModel, load_served_model, model_name_for
from sentvec.serve.settings import SETTINGS_ENV, ServeSettings, read_api_key

__all__ = ["create_app", "app_from_environment", "ServerState"]

log = logging.getLogger("sentvec.serve")

#: Requests with more texts than this count their tokens in a thread, off the event loop.
_THREADED_COUNT_MIN = 64
_JSON = "application/json"


class _ClientGone(Exception):
    """The client disconnected before its vectors were ready."""


def _depth_of(batcher: DynamicBatcher) -> Callable[[], float]:
    return lambda: float(batcher.queued_items)


class ServerState:
    """What the routes share: the models, their batchers, the limits, the metrics."""

    def __init__(self, models: dict[str, ServedModel], settings: ServeSettings) -> None:
        self.models = models
        self.settings = settings
        self.metrics = ServeMetrics()
        self.batchers: dict[str, DynamicBatcher] = {}
        for name, model in models.items():
            self.batchers[name] = DynamicBatcher(
                model.encode,
                max_batch_tokens=settings.max_batch_tokens,
                max_batch_size=settings.max_batch_size,
                max_wait_ms=settings.max_wait_ms,
                max_queue_items=settings.max_queue_items,
                name=name,
                on_batch=self.metrics.batch_observer(name),
            )
            self.metrics.track_queue(name, _depth_of(self.batchers[name]))
        self.ready = True
        self.created = int(time.time())

    @property
    def healthy(self) -> bool:
        """Ready to serve: not shutting down, and no batching task has died."""
        return self.ready and not any(b.failed for b in self.batchers.values())


def _coerce_models(
    models: Any, encoder_options: dict[str, Any] | None
) -> tuple[dict[str, ServedModel], list[list[str]]]:
    """``{name: ServedModel}`` from a mapping, a sequence or a single model (loading paths)."""
    if isinstance(models, (str, os.PathLike)) or callable(getattr(models, "encode", None)):
        models = [models]
    if isinstance(models, Mapping):
        pairs = list(models.items())
    elif isinstance(models, Sequence):
        pairs = []
        for m in models:
            if isinstance(m, (str, os.PathLike)):
                pairs.append((model_name_for(m), m))
            else:
                pairs.append((type(m).__name__.lower(), m))
    else:
        raise TypeError(
            f"models must be a mapping, a sequence or one model, got {type(models).__name__}"
        )
    if not pairs:
        raise ValueError("create_app needs at least one model")
    out: dict[str, ServedModel] = {}
    sources: list[list[str]] = []
    for name, m in pairs:
        if name in out:
            raise ValueError(f"two models are named {name!r}; give each its own name (--name)")
        if isinstance(m, ServedModel):
            out[name] = m
        elif isinstance(m, (str, os.PathLike)):
            log.info("loading model %r from %s", name, os.fspath(m))
            out[name] = load_served_model(name, m, encoder_options)
        else:
            out[name] = ServedModel(name, m)
        sources.append([name, out[name].source])
    return out, sources


def create_app(
    models: Any,
    *,
    api_key: str | None = None,
    encoder_options: dict[str, Any] | None = None,
    settings: ServeSettings | None = None,
    **limits: Any,
) -> FastAPI:
    """An ASGI application serving ``models`` (loaded now, before it can serve).

    Parameters
    ----------
    models : mapping name -> model, sequence of models, or one model
        A model is an encoder object, or a ``--model`` value (``"minilm"``, a Hugging Face
        directory, a sent2vec ``.bin`` memory-mapped, a Sent2Vec directory, a saved pipeline)
        loaded with :func:`sentvec.load_encoder`. Without names, a model is named after its
        alias or its path's last component. The first is the default model (a request without
        ``model``, and ``/embed``).
    api_key : str, optional
        When given, every route but ``/health`` needs ``Authorization: Bearer <api_key>``.
    encoder_options : dict, optional
        ``device`` / ``backend`` for transformer models loaded from a ``--model`` value.
    settings : ServeSettings, optional
        Limits (``max_batch_tokens``, ``max_batch_size``, ``max_wait_ms``, ``max_input_items``,
        ``max_request_bytes``, ``max_queue_items``); ``**limits`` overrides single fields.

    Returns
    -------
    fastapi.FastAPI
        Mount it in your own application or run it with uvicorn. Mounted apps get no lifespan
        events; the batchers then start on first use and stop with the event loop.

    Raises
    ------
    ValueError, FileNotFoundError
        A bad limit, a duplicate name, or a model that cannot be loaded.
    """
    base = settings if settings is not None else ServeSettings()
    unknown = set(limits) - set(ServeSettings.__dataclass_fields__)
    if unknown:
        raise TypeError(f"unknown create_app options: {sorted(unknown)}")
    cfg = ServeSettings(**{**base.__dict__, **limits}).check()
    served, sources = _coerce_models(models, encoder_options or cfg.encoder_options)
    cfg.models = sources
    state = ServerState(served, cfg)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> Any:
        state.ready = True
        yield
        state.ready = False  # /health: 503 while the last requests finish
        await asyncio.gather(*(b.aclose() for b in state.batchers.values()))

    app = FastAPI(
        title="sentvec serve",
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
    )
    app.state.sentvec = state
    _add_routes(app, state)
    _add_error_handlers(app)
    if api_key is not None:
        app.add_middleware(ApiKeyMiddleware, api_key=api_key)
    return app


def _json(body: bytes, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(content=body, status_code=status, media_type=_JSON, headers=headers)


def _error_response(err: ApiError, path: str) -> Response:
    body, headers = error_payload(err, path)
    return _json(body, err.status, headers)


async def _until_disconnect(request: Request) -> None:
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            return


async def _vectors_or_gone(
    request: Request, batcher: DynamicBatcher, call: EmbedCall, tokens: int
) -> Any:
    """The batcher's answer; :class:`_ClientGone` (and the job dropped) if the client leaves."""
    job = asyncio.ensure_future(batcher.submit(call.texts, tokens))
    watch = asyncio.ensure_future(_until_disconnect(request))
    try:
        done, _ = await asyncio.wait({job, watch}, return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        job.cancel()
        raise
    finally:
        watch.cancel()
    if job in done:
        return job.result()
    job.cancel()  # still queued: never encoded; already in a batch: its rows are dropped
    raise _ClientGone


async def _embed(request: Request, route: str, dialect: str) -> Response:
    state: ServerState = request.app.state.sentvec
    cfg = state.settings
    t0 = time.perf_counter()
    model_name, status = "-", 500
    try:
        if not state.ready:
            raise ApiError(503, "the server is shutting down; retry on another instance")
        body = await read_body(
            request.stream(), request.headers.get("content-length"), cfg.max_request_bytes
        )
        obj = parse_json(body)
        parse = parse_openai if dialect == "openai" else parse_tei
        call = parse(obj, state.models, cfg.max_input_items)
        model_name = call.model.name
        if len(call.texts) >= _THREADED_COUNT_MIN:
            counts = await asyncio.to_thread(call.model.count_tokens, call.texts)
        else:
            counts = call.model.count_tokens(call.texts)
        if counts.truncated and not call.truncate:
            raise too_long_error(call, counts)
        gauge = state.metrics.in_progress.labels(model_name)
        gauge.inc()
        try:
            raw = await _vectors_or_gone(
                request, state.batchers[model_name], call, counts.processed
            )
        finally:
            gauge.dec()
        vectors, n_zero = finish_vectors(call, raw)
        if counts.truncated:
            state.metrics.truncated.labels(model_name).inc(counts.truncated)
        headers = {
            "X-Sentvec-Truncated-Inputs": str(counts.truncated),
            "X-Sentvec-Zero-Vectors": str(n_zero),
        }
        out = (
            openai_response_body(call, vectors, counts)
            if dialect == "openai"
            else tei_response_body(vectors)
        )
        status = 200
        return _json(out, 200, headers)
    except ApiError as exc:
        status = exc.status
        return _error_response(exc, request.url.path)
    except QueueFullError as exc:
        status = 429
        overloaded = ApiError(
            429,
            f"Model is overloaded: {exc}; retry later",
            code="rate_limit_exceeded",
            headers={"Retry-After": "1"},
        )
        return _error_response(overloaded, request.url.path)
    except BatcherClosedError:
        status = 503
        return _error_response(ApiError(503, "the server is shutting down"), request.url.path)
    except _ClientGone:
        status = 499  # nginx's "client closed request"; nobody reads this response
        return Response(status_code=499)
    except Exception:
        log.exception("%s: unexpected error", route)
        internal = ApiError(
            500, "internal error while computing embeddings; the server log has the details"
        )
        return _error_response(internal, request.url.path)
    finally:
        state.metrics.observe_request(route, model_name, status, time.perf_counter() - t0)


def _add_routes(app: FastAPI, state: ServerState) -> None:
    default = next(iter(state.models.values()))

    @app.post("/v1/embeddings")
    async def openai_embeddings(request: Request) -> Response:
        return await _embed(request, "/v1/embeddings", "openai")

    @app.post("/embed")
    async def tei_embed(request: Request) -> Response:
        return await _embed(request, "/embed", "tei")

    def model_card(m: ServedModel) -> dict[str, Any]:
        return {"id": m.name, "object": "model", "created": state.created, "owned_by": "sentvec"}

    @app.get("/v1/models")
    async def openai_models() -> Response:
        import orjson

        cards = [model_card(m) for m in state.models.values()]
        return _json(orjson.dumps({"object": "list", "data": cards}))

    @app.get("/v1/models/{name:path}")
    async def openai_model(name: str) -> Response:
        import orjson

        if name not in state.models:
            raise ApiError(
                404,
                f"The model {name!r} does not exist on this server",
                param="model",
                code="model_not_found",
            )
        return _json(orjson.dumps(model_card(state.models[name])))

    @app.get("/info")
    async def tei_info() -> Response:
        import orjson

        from sentvec import __version__

        cfg = state.settings
        info = {
            "model_id": default.name,
            "model_sha": None,
            "model_dtype": "float32",
            "model_type": {"embedding": {"pooling": default.pooling}},
            "max_concurrent_requests": cfg.max_queue_items,
            "max_input_length": default.max_input_length or 0,
            "max_batch_tokens": cfg.max_batch_tokens,
            "max_batch_requests": cfg.max_batch_size,
            "max_client_batch_size": cfg.max_input_items,
            "auto_truncate": False,
            "tokenization_workers": 1,
            "version": __version__,
            "sha": None,
            "docker_label": None,
            "sentvec": {
                "models": [
                    {
                        "name": m.name,
                        "source": m.source,
                        "dim": m.dim,
                        "max_input_length": m.max_input_length,
                    }
                    for m in state.models.values()
                ]
            },
        }
        return _json(orjson.dumps(info))

    @app.get("/health")
    async def tei_health() -> Response:
        if state.healthy:
            return Response(status_code=200)
        return _error_response(ApiError(503, "unhealthy"), "/health")

    @app.get("/metrics")
    async def metrics() -> Response:
        return Response(content=state.metrics.render(), media_type=CONTENT_TYPE_LATEST)


def _add_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def api_error(request: Request, exc: ApiError) -> Response:
        return _error_response(exc, request.url.path)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        text = {
            404: f"no route {request.url.path!r}",
            405: f"method {request.method} is not allowed on {request.url.path!r}",
        }
        err = ApiError(exc.status_code, text.get(exc.status_code, str(exc.detail)))
        return _error_response(err, request.url.path)

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> Response:
        log.error("unexpected error on %s: %r", request.url.path, exc)
        err = ApiError(500, "internal server error; the server log has the details")
        return _error_response(err, request.url.path)


def app_from_environment() -> FastAPI:
    """The app of a ``sentvec serve --workers N`` worker process (uvicorn's factory).

    Reads :class:`ServeSettings` from ``$SENTVEC_SERVE_SETTINGS`` and the API key from the
    settings' key file or ``$SENTVEC_API_KEY``, then loads the models (once per process).

    Raises
    ------
    RuntimeError
        The variable is not set (this is not a worker started by ``sentvec serve``).
    """
    text = os.environ.get(SETTINGS_ENV)
    if not text:
        raise RuntimeError(
            f"${SETTINGS_ENV} is not set; start workers with `sentvec serve --workers N`"
        )
    cfg = ServeSettings.from_json(text)
    models = {name: source for name, source in cfg.models}
    return create_app(models, api_key=read_api_key(cfg.api_key_file), settings=cfg)
