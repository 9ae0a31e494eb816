"""The two request and response formats: OpenAI's ``/v1/embeddings`` and
text-embeddings-inference's ``/embed``.

Requests are read with a size limit, parsed with orjson (which refuses non-UTF-8 bytes and lone
surrogates) and checked field by field, so every refusal names the field, the index and the
limit at fault. Status codes follow each original: OpenAI answers 400 to any invalid request;
TEI answers 422 to well-formed JSON of the wrong shape and 413 to an input over a limit.
"""

from __future__ import annotations

import binascii
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson

from sentvec.serve.errors import ApiError
from sentvec.serve.served_model import ServedModel, TokenCounts

__all__ = [
    "EmbedCall",
    "check_content_type",
    "read_body",
    "parse_json",
    "parse_openai",
    "parse_tei",
    "openai_response_body",
    "tei_response_body",
    "finish_vectors",
]

_OPENAI_FIELDS = {"input", "model", "encoding_format", "dimensions", "user"}
_TEI_FIELDS = {
    "inputs",
    "normalize",
    "truncate",
    "truncation_direction",
    "prompt_name",
    "dimensions",
    "model",
}


#: The header that ends a connection after its answer.
_CLOSE = {"Connection": "close"}


@dataclass
class EmbedCall:
    """One validated embedding request."""

    model: ServedModel
    texts: list[str]
    dimensions: int | None = None
    encoding_format: str = "float"
    normalize: bool = False
    truncate: bool = True


def check_content_type(value: str | None) -> None:
    """Refuse (415) a body that is not declared ``application/json``.

    A browser sends a cross-origin POST without asking the server first (no CORS preflight)
    only with a "simple" content type (``text/plain``, a form) or none: refusing those keeps
    any web page a user visits from making the server encode. Parameters are allowed, except
    a ``charset`` other than UTF-8 (JSON is UTF-8, RFC 8259).

    Raises
    ------
    ApiError
        415, naming the type received.
    """
    if value == "application/json":
        return
    media, _, params = (value or "").partition(";")
    if media.strip().lower() != "application/json":
        got = f"Content-Type {value!r:.60}" if value else "no Content-Type"
        raise ApiError(
            415,
            f"the request body must be JSON sent as Content-Type: application/json; got {got}",
        )
    for param in params.split(";"):
        name, _, given = param.partition("=")
        charset = given.strip().strip('"').lower()
        if name.strip().lower() == "charset" and charset not in ("utf-8", "utf8"):
            raise ApiError(
                415,
                f"the request body must be UTF-8 JSON; got Content-Type {value!r:.60}",
            )


async def read_body(receive_stream: Any, content_length: str | None, limit: int) -> bytes:
    """The request body, refused with 413 as soon as it exceeds ``limit`` bytes.

    ``receive_stream`` is an async iterator of body chunks (``Request.stream()``). The 413
    carries ``Connection: close``: the rest of the body is not read, so the connection cannot
    carry another request.
    """
    if content_length is not None:
        try:
            declared = int(content_length)
        except ValueError:
            raise ApiError(400, f"Content-Length {content_length!r} is not a number") from None
        if declared > limit:
            raise ApiError(
                413,
                f"the request body has {declared} bytes, more than this server's limit of "
                f"{limit} bytes (--max-request-bytes); send fewer or shorter inputs per request",
                headers=_CLOSE,
            )
    parts, size = [], 0
    async for chunk in receive_stream:
        size += len(chunk)
        if size > limit:
            raise ApiError(
                413,
                f"the request body exceeds this server's limit of {limit} bytes "
                "(--max-request-bytes); send fewer or shorter inputs per request",
                headers=_CLOSE,
            )
        parts.append(chunk)
    return b"".join(parts)


def parse_json(body: bytes) -> dict[str, Any]:
    """The body as a JSON object; 400 for an empty body, invalid JSON or invalid UTF-8."""
    if not body.strip():
        raise ApiError(400, "the request body is empty; send a JSON object")
    try:
        obj = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        reason = str(exc)
        if "UTF-8" in reason or "surrogate" in reason:
            raise ApiError(
                400,
                f"the request body is not valid UTF-8 JSON ({reason}); encode the text as "
                "UTF-8 before sending it",
            ) from None
        raise ApiError(400, f"the request body is not valid JSON: {reason}") from None
    if not isinstance(obj, dict):
        raise ApiError(400, f"the request body must be a JSON object, got a JSON {_json_type(obj)}")
    return obj


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _texts(value: Any, field: str, status: int, max_items: int) -> list[str]:
    """A string or a non-empty list of non-blank strings, at most ``max_items`` of them."""
    if value is None:
        raise ApiError(status, f"'{field}' is required: a string or a list of strings", param=field)
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list):
        raise ApiError(
            status,
            f"'{field}' must be a string or a list of strings, got a JSON {_json_type(value)}",
            param=field,
        )
    if not items:
        raise ApiError(status, f"'{field}' is an empty list; send at least one string", param=field)
    if len(items) > max_items:
        raise ApiError(
            413,
            f"'{field}' has {len(items)} items, more than this server's limit of {max_items} "
            "per request (--max-input-items); split it into several requests",
            param=field,
        )
    # the common case, checked in C loops (no message built): all str, none empty or blank
    if set(map(type, items)) == {str} and all(items) and not any(map(str.isspace, items)):
        return items
    for i, s in enumerate(items):
        if not isinstance(s, str):
            if isinstance(s, (int, list)) and not isinstance(s, bool):
                raise ApiError(
                    status,
                    f"'{field}' holds token ids ({field}[{i}] is a JSON {_json_type(s)}); this "
                    "server takes text only: send strings",
                    param=field,
                )
            raise ApiError(
                status,
                f"{field}[{i}] must be a string, got a JSON {_json_type(s)}",
                param=field,
            )
        if not s.strip():
            raise ApiError(
                status,
                f"{field}[{i}] is empty or whitespace only; every input must hold text "
                "(an empty text has no embedding)",
                param=field,
            )
    return items


def _model(value: Any, models: Mapping[str, ServedModel], status: int) -> ServedModel:
    if value is None:
        return next(iter(models.values()))
    if not isinstance(value, str):
        raise ApiError(
            status, f"'model' must be a string, got a JSON {_json_type(value)}", param="model"
        )
    model = models.get(value)
    if model is None:
        raise ApiError(
            404,
            f"The model {value!r} does not exist on this server; it serves: "
            f"{', '.join(repr(m) for m in models)}",
            param="model",
            code="model_not_found",
        )
    return model


def _dimensions(value: Any, model: ServedModel, status: int) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ApiError(
            status,
            f"'dimensions' must be a positive integer, got {value!r:.40}",
            param="dimensions",
        )
    reason = model.dimensions_refusal(value)
    if reason is not None:
        raise ApiError(400, reason, param="dimensions")
    return value


def _unknown(obj: dict[str, Any], known: set[str], status: int, hint: str) -> None:
    extra = sorted(set(obj) - known)
    if extra:
        raise ApiError(
            status,
            f"unrecognized request argument{'s' if len(extra) > 1 else ''} "
            f"{', '.join(repr(x) for x in extra)}; {hint}",
            param=extra[0],
        )


def parse_openai(
    obj: dict[str, Any], models: Mapping[str, ServedModel], max_items: int
) -> EmbedCall:
    """Check an OpenAI ``/v1/embeddings`` request (every refusal a 400, or 404 / 413)."""
    _unknown(obj, _OPENAI_FIELDS, 400, f"this endpoint takes {sorted(_OPENAI_FIELDS)}")
    model = _model(obj.get("model"), models, 400)
    texts = _texts(obj.get("input"), "input", 400, max_items)
    fmt = obj.get("encoding_format")
    fmt = "float" if fmt is None else fmt
    if fmt not in ("float", "base64"):
        raise ApiError(
            400,
            f"'encoding_format' must be 'float' or 'base64', got {fmt!r:.40}",
            param="encoding_format",
        )
    user = obj.get("user")
    if user is not None and not isinstance(user, str):
        raise ApiError(400, f"'user' must be a string, got a JSON {_json_type(user)}", param="user")
    dims = _dimensions(obj.get("dimensions"), model, 400)
    return EmbedCall(model, texts, dims, fmt, normalize=False, truncate=True)


def _bool(obj: dict[str, Any], name: str, default: bool) -> bool:
    value = obj.get(name)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise ApiError(422, f"'{name}' must be true or false, got {value!r:.40}", param=name)
    return value


def parse_tei(obj: dict[str, Any], models: Mapping[str, ServedModel], max_items: int) -> EmbedCall:
    """Check a text-embeddings-inference ``/embed`` request (422 for a wrong shape, 413 for a
    limit). ``normalize`` defaults to true and ``truncate`` to false, as in TEI."""
    _unknown(obj, _TEI_FIELDS, 422, f"this endpoint takes {sorted(_TEI_FIELDS)}")
    model = _model(obj.get("model"), models, 422)
    texts = _texts(obj.get("inputs"), "inputs", 422, max_items)
    normalize = _bool(obj, "normalize", True)
    truncate = _bool(obj, "truncate", False)
    direction = obj.get("truncation_direction")
    if direction is not None and str(direction).lower() != "right":
        raise ApiError(
            422,
            f"'truncation_direction' {direction!r:.20} is not supported: sentvec's encoders keep "
            "the start of a long input (right truncation)",
            param="truncation_direction",
        )
    if obj.get("prompt_name") is not None:
        raise ApiError(
            422,
            "'prompt_name' is not supported: sentvec models define no prompts",
            param="prompt_name",
        )
    dims = _dimensions(obj.get("dimensions"), model, 422)
    return EmbedCall(model, texts, dims, "float", normalize=normalize, truncate=truncate)


def too_long_error(call: EmbedCall, counts: TokenCounts) -> ApiError:
    """413 for ``truncate=false`` and an input over the model's limit (as TEI answers)."""
    i = counts.first_too_long()
    return ApiError(
        413,
        f"Input validation error: inputs[{i}] has {int(counts.lengths[i])} tokens, more than "
        f"model {call.model.name!r} accepts ({counts.limit}); {counts.truncated} of "
        f"{len(call.texts)} inputs are too long. Send truncate=true to have them truncated",
        param="inputs",
    )


def finish_vectors(call: EmbedCall, vectors: np.ndarray) -> tuple[np.ndarray, int]:
    """The first ``dimensions`` columns, L2-normalised if asked; and the count of zero rows."""
    if call.dimensions is not None:
        vectors = vectors[:, : call.dimensions]
    if not call.normalize:  # a row is zero when no entry is non-zero (NaN is non-zero)
        zero = len(vectors) - int(np.count_nonzero(vectors.any(axis=1)))
        return np.ascontiguousarray(vectors, dtype=np.float32), zero
    norms = np.linalg.norm(vectors, axis=1)
    zero = int((norms == 0).sum())
    vectors = vectors / np.where(norms > 0, norms, 1.0)[:, None]
    return np.ascontiguousarray(vectors, dtype=np.float32), zero


def openai_response_body(call: EmbedCall, vectors: np.ndarray, counts: TokenCounts) -> bytes:
    """``{"object": "list", "data": [...], "model", "usage"}``; with ``base64``, each embedding
    is the base64 of its little-endian float32 bytes, as OpenAI sends it."""
    usage: dict[str, int] = {"prompt_tokens": counts.processed, "total_tokens": counts.processed}
    if counts.truncated:
        usage["truncated_inputs"] = counts.truncated
    if call.encoding_format == "base64" and len(vectors):
        # the same bytes orjson writes for the dicts below, built with array operations
        return b"".join(
            (
                b'{"object":"list","data":[',
                _base64_data(vectors),
                b'],"model":',
                orjson.dumps(call.model.name),
                b',"usage":',
                orjson.dumps(usage),
                b"}",
            )
        )
    data = [{"object": "embedding", "index": i, "embedding": row} for i, row in enumerate(vectors)]
    return orjson.dumps(
        {"object": "list", "data": data, "model": call.model.name, "usage": usage},
        option=orjson.OPT_SERIALIZE_NUMPY,
    )


_EQUALS = ord("=")
_ROW_HEAD = np.frombuffer(b'{"object":"embedding","index":', dtype=np.uint8)
_ROW_MID = np.frombuffer(b',"embedding":"', dtype=np.uint8)
_ROW_TAIL = np.frombuffer(b'"},', dtype=np.uint8)


def _base64_matrix(vectors: np.ndarray) -> np.ndarray:
    """Each row's little-endian float32 bytes in base64 (with ``=`` padding): an ``(n, L)``
    array of ASCII codes, from one ``b2a_base64`` call over all rows.

    Each row is padded with zero bytes to a multiple of 3, so no 3-byte group spans two rows and
    the base64 of the whole is the rows' base64, one after another; the last characters of each
    row, which encode the padding, become ``=``: exactly what base64 writes for that row alone.
    """
    n = len(vectors)
    raw = np.ascontiguousarray(vectors, dtype="<f4").view(np.uint8).reshape(n, -1)
    width = raw.shape[1]
    pad = -width % 3
    if pad:
        raw = np.concatenate([raw, np.zeros((n, pad), dtype=np.uint8)], axis=1)
    text = binascii.b2a_base64(raw.tobytes(), newline=False)
    chars = np.frombuffer(text, dtype=np.uint8).reshape(n, -1)
    if pad:
        chars = chars.copy()
        chars[:, -pad:] = _EQUALS
    return chars


def _base64_data(vectors: np.ndarray) -> bytes:
    """The items of OpenAI's ``data`` list for base64 rows, comma-separated, as orjson writes
    them: ``{"object":"embedding","index":I,"embedding":"B64"}``. Rows whose indices have the
    same number of digits have the same length, so each such run is one 2-d array."""
    chars = _base64_matrix(vectors)
    n, width = chars.shape
    h, m, t = len(_ROW_HEAD), len(_ROW_MID), len(_ROW_TAIL)
    parts = []
    lo, digits = 0, 1
    while lo < n:
        hi = min(n, 10**digits)
        rows = np.empty((hi - lo, h + digits + m + width + t), dtype=np.uint8)
        rows[:, :h] = _ROW_HEAD
        index = np.arange(lo, hi)
        for k in range(digits):
            rows[:, h + k] = 48 + index // 10 ** (digits - 1 - k) % 10
        rows[:, h + digits : h + digits + m] = _ROW_MID
        rows[:, h + digits + m : -t] = chars[lo:hi]
        rows[:, -t:] = _ROW_TAIL
        parts.append(rows.tobytes())
        lo, digits = hi, digits + 1
    return b"".join(parts)[:-1]  # no comma after the last item


def tei_response_body(vectors: np.ndarray) -> bytes:
    """TEI's ``[[float, ...], ...]`` (one list per input, also for a single string)."""
    return orjson.dumps(vectors, option=orjson.OPT_SERIALIZE_NUMPY)
