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
import signal
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import Response
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect

from sentvec._environment import SERVE_SETTINGS
from sentvec.encoders.base import Encoder
from sentvec.serve.batching import BatcherClosedError, DynamicBatcher, QueueFullError
from sentvec.serve.errors import ApiError, error_payload
from sentvec.serve.http_limits import REFUSAL_SCOPE_KEY
from sentvec.serve.metrics import CONTENT_TYPE_LATEST, ServeMetrics
from sentvec.serve.process import WORKER_HEADER
from sentvec.serve.protocol import (
    EmbedCall,
    check_content_type,
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
from sentvec.serve.served_model import (
    ServedModel,
    TokenCounts,
    load_served_model,
    model_name_for,
)
from sentvec.serve.settings import SETTINGS_ENV, ServeSettings, read_api_key

__all__ = ["create_app", "app_from_environment", "ServerState", "LOAD_ERROR_FILE"]

#: The file of ``ServeSettings.run_dir`` where a worker writes why its models failed to load.
LOAD_ERROR_FILE = "load-error"

log = logging.getLogger("sentvec.serve")

#: Requests with more texts than this count their tokens in a thread, off the event loop.
_THREADED_COUNT_MIN = 64
_JSON = "application/json"


class _ClientGone(Exception):
    """The client disconnected before its vectors were ready."""


class ServerState:
    """What the routes share: the models, their batchers, the limits, the metrics.

    ``loading`` is true until :meth:`install` has the models (``/health`` and embedding routes
    answer 503 until then); ``load_error`` holds why loading failed.
    """

    def __init__(self, settings: ServeSettings) -> None:
        self.settings = settings
        self.metrics = ServeMetrics()
        self.models: dict[str, ServedModel] = {}
        self.batchers: dict[str, DynamicBatcher] = {}
        self.loading = True
        self.load_started = time.monotonic()
        self.load_error: str | None = None
        self.ready = True  # false once shutting down
        self.created = int(time.time())

    def install(self, models: dict[str, ServedModel]) -> None:
        """Serve ``models`` from now on: one batcher each."""
        cfg = self.settings
        for name, model in models.items():
            tokens, items = model.batch_limits
            prepare = model.prepare
            self.batchers[name] = DynamicBatcher(
                model.encode_counted if prepare is None else model.encode_prepared,
                prepare=prepare,
                max_batch_tokens=cfg.max_batch_tokens or tokens,
                max_batch_size=cfg.max_batch_size or items,
                max_wait_ms=cfg.max_wait_ms,
                max_queue_items=cfg.max_queue_items,
                max_concurrent_batches=model.concurrent_batches,
                name=name,
                on_batch=self.metrics.batch_observer(name),
                on_depth=self.metrics.depth_observer(name),
            )
        self.models = models
        self.loading = False

    def not_serving(self) -> ApiError | None:
        """The 503 to answer while loading, after a failed load, or while shutting down."""
        if self.load_error is not None:
            return ApiError(503, f"the server could not load its models: {self.load_error}")
        if self.loading:
            waited = time.monotonic() - self.load_started
            return ApiError(
                503,
                f"the server is still loading its models ({waited:.0f} s so far); retry shortly",
                headers={"Retry-After": "1"},
            )
        if not self.ready:
            return ApiError(503, "the server is shutting down; retry on another instance")
        return None

    @property
    def healthy(self) -> bool:
        """Ready to serve: models loaded, not shutting down, and no batching task has died."""
        return self.not_serving() is None and not any(b.failed for b in self.batchers.values())


def _named(models: Any) -> list[tuple[str, Any]]:
    """``[(name, model)]`` from a mapping, a sequence or a single model (nothing loaded)."""
    if isinstance(models, (str, os.PathLike, Encoder)):
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
    names = [name for name, _ in pairs]
    for name in names:
        if names.count(name) > 1:
            raise ValueError(f"two models are named {name!r}; give each its own name (--name)")
    return pairs


def _source(name: str, m: Any) -> str:
    if isinstance(m, ServedModel):
        return m.source
    return os.fspath(m) if isinstance(m, (str, os.PathLike)) else name


def _load(
    pairs: list[tuple[str, Any]], encoder_options: dict[str, Any] | None
) -> dict[str, ServedModel]:
    """Each model as a :class:`ServedModel`, loading paths and aliases (slow: minutes)."""
    out: dict[str, ServedModel] = {}
    for name, m in pairs:
        if isinstance(m, ServedModel):
            out[name] = m
        elif isinstance(m, (str, os.PathLike)):
            log.info("loading model %r from %s", name, os.fspath(m))
            out[name] = load_served_model(name, m, encoder_options)
        else:
            out[name] = ServedModel(name, m)
    return out


def _load_in_thread(
    state: ServerState,
    pairs: list[tuple[str, Any]],
    options: dict[str, Any] | None,
    on_load_error: Callable[[str], None] | None,
) -> None:
    """Load in a daemon thread (the process may exit without waiting for it), then install
    the models from the event loop."""
    loop = asyncio.get_running_loop()

    def work() -> None:
        try:
            served = _load(pairs, options)
        except BaseException as exc:  # reported, and the server stops
            message = f"{type(exc).__name__}: {exc}"
            if on_load_error is None:  # otherwise its owner reports it (the CLI, at exit)
                log.error("loading the models failed: %s", message)
            loop.call_soon_threadsafe(_failed, message)
        else:
            loop.call_soon_threadsafe(_loaded, served)

    def _loaded(served: dict[str, ServedModel]) -> None:
        state.install(served)
        log.info("models loaded in %.1f s", time.monotonic() - state.load_started)

    def _failed(message: str) -> None:
        state.load_error = message
        if on_load_error is not None:
            on_load_error(message)

    threading.Thread(target=work, name="sentvec-load-models", daemon=True).start()


def create_app(
    models: Any,
    *,
    api_key: str | None = None,
    encoder_options: dict[str, Any] | None = None,
    settings: ServeSettings | None = None,
    background: bool = False,
    on_load_error: Callable[[str], None] | None = None,
    **limits: Any,
) -> FastAPI:
    """An ASGI application serving ``models``.

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
    background : bool, default False
        False: load the models now, before returning. True: load them in a thread once the
        server has started (its lifespan startup), so the port is open at once; until they are
        loaded ``/health`` and the embedding routes answer 503 (with ``Retry-After``).
    on_load_error : callable, optional
        With ``background``: ``on_load_error(message)`` when loading fails (``sentvec serve``
        stops the server with it); ``/health`` answers 503 from then on either way.

    Returns
    -------
    fastapi.FastAPI
        Mount it in your own application or run it with uvicorn. Mounted apps get no lifespan
        events; the batchers then start on first use and stop with the event loop (and
        ``background`` is not available).

    Raises
    ------
    ValueError, FileNotFoundError
        A bad limit, a duplicate name, or (without ``background``) a model that cannot be
        loaded.
    """
    base = settings if settings is not None else ServeSettings()
    unknown = set(limits) - set(ServeSettings.__dataclass_fields__)
    if unknown:
        raise TypeError(f"unknown create_app options: {sorted(unknown)}")
    cfg = ServeSettings(**{**base.__dict__, **limits}).check()
    pairs = _named(models)
    options = encoder_options or cfg.encoder_options
    cfg.models = [[name, _source(name, m)] for name, m in pairs]
    state = ServerState(cfg)
    if not background:
        state.install(_load(pairs, options))

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> Any:
        state.ready = True
        if state.loading and state.load_error is None:
            _load_in_thread(state, pairs, options, on_load_error)
        yield
        state.ready = False  # /health: 503 while the last requests finish
        await asyncio.gather(*(b.aclose() for b in state.batchers.values()))
        state.metrics.process_exits()

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
    app.add_middleware(EmbeddingRoutes)  # inside the key check, added after it
    if api_key is not None:
        app.add_middleware(ApiKeyMiddleware, api_key=api_key)
    return app


def _json(body: bytes, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(content=body, status_code=status, media_type=_JSON, headers=headers)


def _error_response(err: ApiError, path: str) -> Response:
    body, headers = error_payload(err, path)
    return _json(body, err.status, headers)


#: The embedding routes: path -> (route label, dialect).
_EMBED_ROUTES = {"/v1/embeddings": ("/v1/embeddings", "openai"), "/embed": ("/embed", "tei")}


class EmbeddingRoutes:
    """Pure ASGI middleware: ``POST /v1/embeddings`` and ``POST /embed`` go straight to their
    handler, past FastAPI's exception middleware and router, which only add work per request
    there: the handler reads and checks the body itself and answers every error itself. Every
    other request, any other method on these paths, and every request of an application
    mounted under a prefix (a ``root_path``) go through the application."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["method"] == "POST" and not scope.get("root_path"):
            route = _EMBED_ROUTES.get(scope["path"])
            if route is not None:
                response = await _embed(Request(scope, receive, send), *route)
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


async def _until_disconnect(request: Request) -> None:
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            return


async def _vectors_or_gone(
    request: Request, batcher: DynamicBatcher, call: EmbedCall, tokens: int
) -> Any:
    """The batcher's answer; :class:`_ClientGone` (and the job dropped) if the client leaves."""
    job = batcher.enqueue(call.texts, tokens)
    gone = False

    async def drop_when_gone() -> None:
        nonlocal gone
        await _until_disconnect(request)
        gone = True
        job.cancel()  # still queued: never encoded; already in a batch: its rows are dropped

    watch = asyncio.ensure_future(drop_when_gone())
    try:
        return await job
    except asyncio.CancelledError:
        if gone:
            raise _ClientGone from None
        job.cancel()
        raise
    finally:
        watch.cancel()


async def _embed(request: Request, route: str, dialect: str) -> Response:
    state: ServerState = request.app.state.sentvec
    cfg = state.settings
    t0 = time.perf_counter()
    model_name, status = "-", 500
    try:
        refusal = state.not_serving()
        if refusal is not None:
            raise refusal
        received = request.headers
        check_content_type(received.get("content-type"))
        body = await read_body(
            request.stream(), received.get("content-length"), cfg.max_request_bytes
        )
        obj = parse_json(body)
        parse = parse_openai if dialect == "openai" else parse_tei
        call = parse(obj, state.models, cfg.max_input_items)
        model_name = call.model.name
        counts: TokenCounts | None = None
        if call.model.counts_on_encode:  # counted by the encoding itself; nothing truncated
            budget = call.model.token_bound(call.texts)
        else:
            if len(call.texts) >= _THREADED_COUNT_MIN and call.model.counts_in_thread:
                counts = await asyncio.to_thread(call.model.count_tokens, call.texts)
            else:
                counts = call.model.count_tokens(call.texts)
            if counts.truncated and not call.truncate:
                raise too_long_error(call, counts)
            budget = counts.processed
        gauge = state.metrics.in_progress_of(model_name)
        gauge.inc()
        try:
            raw, lengths = await _vectors_or_gone(request, state.batchers[model_name], call, budget)
        finally:
            gauge.dec()
        if counts is None:
            counts = TokenCounts(lengths, None)
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
        return _error_response(exc, route)
    except QueueFullError as exc:
        status = 429
        overloaded = ApiError(
            429,
            f"Model is overloaded: {exc}; retry later",
            code="rate_limit_exceeded",
            headers={"Retry-After": "1"},
        )
        return _error_response(overloaded, route)
    except BatcherClosedError:
        status = 503
        return _error_response(ApiError(503, "the server is shutting down"), route)
    except (_ClientGone, ClientDisconnect) as exc:
        # nobody reads this response. 499 is nginx's "client closed request"; a body that did
        # not arrive in time was answered 408 by the connection layer, which logged it
        refused = request.scope.get(REFUSAL_SCOPE_KEY)
        status = 499 if refused is None else int(refused)
        if refused is None:
            log.info(
                "%s: the client closed the connection %s; its request was dropped",
                route,
                "before its answer" if isinstance(exc, _ClientGone) else "while sending its body",
            )
        return Response(status_code=status)
    except Exception:
        log.exception("%s: unexpected error", route)
        internal = ApiError(
            500, "internal error while computing embeddings; the server log has the details"
        )
        return _error_response(internal, route)
    finally:
        state.metrics.observe_request(route, model_name, status, time.perf_counter() - t0)


def _add_routes(app: FastAPI, state: ServerState) -> None:
    def serving() -> None:
        refusal = state.not_serving()
        if refusal is not None and state.ready:  # loading or failed; a stopping server answers
            raise refusal

    # plain Starlette routes: the body is read and checked by _embed itself, so FastAPI's
    # per-request parameter machinery would only add work to the hot path
    async def openai_embeddings(request: Request) -> Response:
        return await _embed(request, "/v1/embeddings", "openai")

    async def tei_embed(request: Request) -> Response:
        return await _embed(request, "/embed", "tei")

    app.add_route("/v1/embeddings", openai_embeddings, methods=["POST"], include_in_schema=False)
    app.add_route("/embed", tei_embed, methods=["POST"], include_in_schema=False)

    def model_card(m: ServedModel) -> dict[str, Any]:
        return {"id": m.name, "object": "model", "created": state.created, "owned_by": "sentvec"}

    @app.get("/v1/models")
    async def openai_models() -> Response:
        import orjson

        serving()
        cards = [model_card(m) for m in state.models.values()]
        return _json(orjson.dumps({"object": "list", "data": cards}))

    @app.get("/v1/models/{name:path}")
    async def openai_model(name: str) -> Response:
        import orjson

        serving()
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

        serving()
        default = next(iter(state.models.values()))
        cfg = state.settings
        info = {
            "model_id": default.name,
            "model_sha": None,
            "model_dtype": "float32",
            "model_type": {"embedding": {"pooling": default.pooling}},
            "max_concurrent_requests": cfg.max_queue_items,
            # TEI's field is a non-null integer (usize): the longest input embedded whole.
            # A model that truncates nothing (Sent2Vec, static) embeds any input the body
            # limit lets through, and a body of B bytes holds at most B // 2 words
            "max_input_length": default.max_input_length or cfg.max_request_bytes // 2,
            "max_batch_tokens": state.batchers[default.name].max_batch_tokens,
            "max_batch_requests": state.batchers[default.name].max_batch_size,
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
        # with --workers N each worker answers for itself: say which one
        worker = {WORKER_HEADER: str(os.getpid())}
        if state.healthy:
            return Response(status_code=200, headers=worker)
        refusal = state.not_serving() or ApiError(503, "unhealthy: a batching task has died")
        response = _error_response(refusal, "/health")
        response.headers.update(worker)
        return response

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


def _exit_with_parent() -> None:
    """Linux: the kernel sends this worker SIGTERM when the supervisor that started it dies,
    even by SIGKILL or the OOM killer (``prctl(PR_SET_PDEATHSIG)``), so that no worker outlives
    it holding the port; a graceful stop follows as for any SIGTERM. Elsewhere: nothing."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    parent = os.getppid()
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGTERM), 0, 0, 0)  # 1: PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the supervisor died before the request took effect
        os.kill(os.getpid(), signal.SIGTERM)


def app_from_environment() -> FastAPI:
    """The app of a ``sentvec serve --workers N`` worker process (uvicorn's factory).

    Reads :class:`ServeSettings` from ``$SENTVEC_SERVE_SETTINGS`` and the API key from the
    settings' key file or ``$SENTVEC_API_KEY``; the models load once per process, in the
    background (``/health`` is 503 until then). If they cannot be loaded, the worker writes why
    into ``run_dir/load-error`` and stops the parent (every worker would fail alike).

    Raises
    ------
    RuntimeError
        The variable is not set (this is not a worker started by ``sentvec serve``).
    """
    text = SERVE_SETTINGS.value()
    if not text:
        raise RuntimeError(
            f"${SETTINGS_ENV} is not set; start workers with `sentvec serve --workers N`"
        )
    _exit_with_parent()
    cfg = ServeSettings.from_json(text)
    models = {name: source for name, source in cfg.models}

    def stop_all(message: str) -> None:
        # every worker would fail alike: tell the parent why, and stop it (and so all workers)
        if cfg.run_dir:
            with open(os.path.join(cfg.run_dir, LOAD_ERROR_FILE), "w", encoding="utf-8") as f:
                f.write(message)
        os.kill(os.getppid(), signal.SIGTERM)

    return create_app(
        models,
        api_key=read_api_key(cfg.api_key_file),
        settings=cfg,
        background=True,
        on_load_error=stop_all,
    )
