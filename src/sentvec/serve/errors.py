"""Errors a client is told about, in the two dialects the server speaks.

An :class:`ApiError` carries an HTTP status and a message; :func:`openai_error_body` renders it as
the OpenAI API does (``{"error": {"message", "type", "param", "code"}}``) and
:func:`tei_error_body` as text-embeddings-inference does (``{"error", "error_type"}``). No
traceback or exception text of an unexpected failure ever reaches a client.
"""

from __future__ import annotations

from typing import Any

import orjson

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


class ApiError(Exception):
    """A request the server refuses or could not serve, with what the client is told.

    Parameters
    ----------
    status : int
        HTTP status (400 malformed request, 401 missing or wrong key, 404 unknown model,
        413 a limit exceeded, 422 well-formed but invalid, 429 queue full, 503 not ready).
    message : str
        A sentence saying what was wrong and, where it helps, what to do instead.
    param : str, optional
        The request field at fault (OpenAI's ``error.param``).
    code : str, optional
        A machine-readable code (OpenAI's ``error.code``, e.g. ``"model_not_found"``).
    headers : dict, optional
        Extra response headers (``Retry-After`` on a 429).
    """

    def __init__(
        self,
        status: int,
        message: str,
        *,
        param: str | None = None,
        code: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = int(status)
        self.message = message
        self.param = param
        self.code = code
        self.headers = dict(headers or {})


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
