"""The server's limits and models, as one object that travels to worker processes.

``sentvec serve --workers N`` starts N processes, each importing the app through
:func:`sentvec.serve.app_from_environment`; they receive these settings as JSON in the
environment variable :data:`SETTINGS_ENV`. The API key never travels in them: each process reads
it from ``api_key_file`` or ``$SENTVEC_API_KEY`` itself.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass, field
from typing import Any

from sentvec._environment import API_KEY, SERVE_SETTINGS

__all__ = [
    "ServeSettings",
    "SETTINGS_ENV",
    "API_KEY_ENV",
    "DEFAULT_BATCH_LIMITS",
    "SENT2VEC_BATCH_LIMITS",
    "read_api_key",
]

#: Environment variable holding the JSON settings of a worker process.
SETTINGS_ENV = SERVE_SETTINGS.name
#: Environment variable holding the API key (when no key file is given).
API_KEY_ENV = API_KEY.name
#: Default ``(max_batch_tokens, max_batch_size)`` of a model that counts tokens beforehand.
DEFAULT_BATCH_LIMITS = (16384, 256)
#: Default ``(max_batch_tokens, max_batch_size)`` of a Sent2Vec model: characters, items
#: (:attr:`sentvec.serve.ServedModel.batch_limits` says why).
SENT2VEC_BATCH_LIMITS = (131072, 512)


@dataclass
class ServeSettings:
    """What ``create_app`` serves and the limits it enforces.

    Attributes
    ----------
    models : list of [name, source] pairs
        Each model's served name and its ``--model`` value (see :func:`sentvec.load_encoder`).
    max_batch_tokens, max_batch_size, max_wait_ms
        Dynamic batching bounds (see :class:`sentvec.serve.DynamicBatcher`); None: each
        model's own default (:attr:`sentvec.serve.ServedModel.batch_limits`:
        :data:`DEFAULT_BATCH_LIMITS` for a transformer or a static model,
        :data:`SENT2VEC_BATCH_LIMITS` for Sent2Vec).
    max_input_items : int, default 2048
        Texts per request (OpenAI's own limit is 2048); more is a 413.
    max_request_bytes : int, default 8 MiB
        Request body size; more is a 413.
    max_queue_items : int, default 8192
        Texts waiting per model; more is a 429 with ``Retry-After``.
    max_header_bytes : int, default 16384
        Size of a request head (request line and header fields, Node.js's and h11's default);
        more is a 431 and the connection is closed.
    max_header_fields : int, default 100
        Header fields per request (Apache's ``LimitRequestFields``); more is a 431.
    header_timeout : float, default 30
        Seconds a client may take to send a request head, from its first byte (from the
        connection's opening for the first request); past it, 408 and the connection closed.
    body_timeout : float, default 60
        Seconds a client may take to send a request body, from the end of its head; past it,
        408 and the connection closed (8 MiB in 60 s is 140 kB/s).
    encoder_options : dict
        ``device`` / ``backend`` for transformer models.
    api_key_file : str, optional
        File holding the API key (first line); else ``$SENTVEC_API_KEY``; neither: no key.
    run_dir : str, optional
        ``sentvec serve --workers N``'s private temporary directory (a worker that cannot load
        its models writes why into ``RUN_DIR/load-error``).
    """

    models: list[list[str]] = field(default_factory=list)
    max_batch_tokens: int | None = None
    max_batch_size: int | None = None
    max_wait_ms: float = 2.0
    max_input_items: int = 2048
    max_request_bytes: int = 8 * 1024 * 1024
    max_queue_items: int = 8192
    max_header_bytes: int = 16384
    max_header_fields: int = 100
    header_timeout: float = 30.0
    body_timeout: float = 60.0
    encoder_options: dict[str, Any] = field(default_factory=dict)
    api_key_file: str | None = None
    run_dir: str | None = None

    def check(self) -> ServeSettings:
        """Raise ValueError for a bound below 1, a timeout that is not a positive finite number
        of seconds, or an item limit above the queue limit."""
        for name in (
            "max_batch_tokens",
            "max_batch_size",
            "max_input_items",
            "max_request_bytes",
            "max_queue_items",
            "max_header_bytes",
            "max_header_fields",
        ):
            if getattr(self, name) is not None and int(getattr(self, name)) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if not float(self.max_wait_ms) >= 0:
            raise ValueError(f"max_wait_ms must be >= 0, got {self.max_wait_ms}")
        for name in ("header_timeout", "body_timeout"):
            if not 0 < float(getattr(self, name)) < math.inf:
                option = "--" + name.replace("_", "-")
                raise ValueError(
                    f"{name} ({option}) must be a positive number of seconds, "
                    f"got {getattr(self, name)}"
                )
        if self.max_input_items > self.max_queue_items:
            raise ValueError(
                f"max_input_items ({self.max_input_items}) exceeds max_queue_items "
                f"({self.max_queue_items}): such a request could never be queued"
            )
        return self

    def to_json(self) -> str:
        """The settings as JSON (for :data:`SETTINGS_ENV`)."""
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> ServeSettings:
        """Settings from :meth:`to_json`'s output."""
        data = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError(f"{SETTINGS_ENV} must hold a JSON object")
        return cls(**data).check()


def read_api_key(api_key_file: str | os.PathLike[str] | None) -> str | None:
    """The API key: the first line of ``api_key_file``, else ``$SENTVEC_API_KEY``, else None.

    Raises
    ------
    FileNotFoundError
        ``api_key_file`` does not exist.
    ValueError
        The file or the variable holds an empty key.
    """
    if api_key_file is not None:
        with open(api_key_file, encoding="utf-8") as f:
            key = f.readline().strip()
        if not key:
            raise ValueError(f"the API key file {os.fspath(api_key_file)!r} is empty")
        return key
    env = API_KEY.value()
    if env is None:
        return None
    if not env.strip():
        raise ValueError(f"${API_KEY_ENV} is set but empty")
    return env.strip()
