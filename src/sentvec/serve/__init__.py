"""An embeddings server for every sentvec model: OpenAI- and text-embeddings-inference-compatible
HTTP APIs over dynamic batching (``sentvec serve``; the ``serve`` extra).

``create_app(models, ...)`` returns an ASGI application (FastAPI) serving one or more encoders,
each under a name; ``run_server(settings, ...)`` runs it on uvicorn, in one process or as
a supervisor of several (what ``sentvec serve`` runs). Nothing here is imported by
``import sentvec``; the names below load on first access.
"""

from __future__ import annotations

from sentvec._lazy import attach

_LAZY: dict[str, str] = {
    "create_app": "sentvec.serve.app",
    "app_from_environment": "sentvec.serve.app",
    "ServeSettings": "sentvec.serve.settings",
    "uvicorn_options": "sentvec.serve.http_limits",
    "DynamicBatcher": "sentvec.serve.batching",
    "QueueFullError": "sentvec.serve.batching",
    "ServedModel": "sentvec.serve.served_model",
    "ApiError": "sentvec.serve.errors",
    "run_server": "sentvec.serve.supervisor",
    "start_server": "sentvec.serve.process",
    "ServerProcess": "sentvec.serve.process",
    "free_port": "sentvec.serve.process",
}

__all__, __getattr__, __dir__ = attach(__name__, _LAZY)
