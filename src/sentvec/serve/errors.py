"""Errors a client is told about, in the two dialects the server speaks.

An :class:`ApiError` carries an HTTP status and a message; :func:`openai_error_body` renders it as
the OpenAI API does (``{"error": {"message", "type", "param", "code"}}``) and
:func:`tei_error_body` as text-embeddings-inference does (``{"error", "error_type"}``). No
traceback or exception text of an unexpected failure ever reaches a client.
"""

from __future__ import annotations

from typing import Any

import orjson

from sentvec.exceptions import ApiError

__all__ = ["ApiError", "openai_error_body", "tei_error_body", "error_payload"]

#: OpenAI's ``error.type`` by HTTP status (its API reference's error codes).
_OPENAI_TYPES = {
    400: "invalid_request_error",
    401: "invalid_request_error",
    404: "invalid_request_error",
    405: "invalid_request_error",
    413: "invalid_request_error",
    415: "invalid_request_error",
    422: "invalid_request_error",
    429: "rate_limit_error",
    503: "server_error",
}

#: text-embeddings-inference's ``error_type`` by HTTP status (its OpenAPI document).
_TEI_TYPES = {429: "overloaded", 503: "unhealthy", 500: "backend", 424: "backend"}


def openai_error_body(err: ApiError) -> bytes:
    """``{"error": {"message", "type", "param", "code"}}`` as the OpenAI API sends it."""
    kind = _OPENAI_TYPES.get(
        err.status, "server_error" if err.status >= 500 else "invalid_request_error"
    )
    return orjson.dumps(
        {"error": {"message": err.message, "type": kind, "param": err.param, "code": err.code}}
    )


def tei_error_body(err: ApiError) -> bytes:
    """``{"error", "error_type"}`` as text-embeddings-inference sends it."""
    kind = _TEI_TYPES.get(err.status, "backend" if err.status >= 500 else "validation")
    return orjson.dumps({"error": err.message, "error_type": kind})


def error_payload(err: ApiError, path: str) -> tuple[bytes, dict[str, Any]]:
    """The body for ``err`` in the dialect of the route at ``path`` (``/v1/...``: OpenAI's)."""
    body = openai_error_body(err) if path.startswith("/v1/") else tei_error_body(err)
    return body, err.headers
