"""API-key authentication: ``Authorization: Bearer KEY`` on every route but ``/health``.

A pure ASGI middleware (no per-request task or body buffering). The scheme is matched without
regard to case (RFC 9110 section 11.1: ``bearer KEY`` is ``Bearer KEY``); the key is compared in
constant time (:func:`hmac.compare_digest`) and is never logged or echoed.
"""

from __future__ import annotations

import hmac
from typing import Any

from sentvec.serve.errors import ApiError, error_payload

__all__ = ["ApiKeyMiddleware", "OPEN_PATHS", "bearer_credentials"]

#: Routes served without a key (load balancers probe them).
OPEN_PATHS = frozenset({"/health"})


def bearer_credentials(authorization: bytes) -> bytes:
    """The credentials of an ``Authorization: Bearer <token>`` value; ``b""`` for another scheme.

    The scheme is case-insensitive and separated from the token by one or more spaces (RFC 9110
    section 11.4); spaces around the token are not part of it.

    Parameters
    ----------
    authorization : bytes
        The header's value as received.

    Returns
    -------
    bytes
        The token, or ``b""`` when the value is not a Bearer credential.
    """
    scheme, _, token = authorization.partition(b" ")
    if scheme.lower() != b"bearer":
        return b""
    return token.strip(b" ")


class ApiKeyMiddleware:
    """Refuse HTTP requests without ``Authorization: Bearer <key>`` (401, in the route's dialect).

    Parameters
    ----------
    app : ASGI application
    api_key : str
        The key; never empty.
    """

    def __init__(self, app: Any, api_key: str) -> None:
        if not api_key:
            raise ValueError("the API key must not be empty")
        self.app = app
        self._expected = api_key.encode("utf-8")

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope.get("path", "") in OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        given = b""
        for name, value in scope.get("headers", ()):
            if name == b"authorization":
                given = value
                break
        if hmac.compare_digest(bearer_credentials(given), self._expected):
            await self.app(scope, receive, send)
            return
        message = (
            "Missing API key: send it as 'Authorization: Bearer KEY'"
            if not given
            else "Incorrect API key provided"
        )
        err = ApiError(401, message, code="invalid_api_key")
        body, _ = error_payload(err, scope.get("path", ""))
        await send(
            {
                "type": "http.response.start",
                "status": 401,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"www-authenticate", b"Bearer"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})
