"""``sentvec serve``: serve models over HTTP with OpenAI- and TEI-compatible APIs.

Each MODEL is anything --model accepts (minilm, a Hugging Face directory, a sent2vec .bin,
memory-mapped, a Sent2Vec directory, a saved pipeline), served under its --name (default: the
alias, or the path's last component, a .bin without its suffix). The port is bound first (a
port in use is reported at once); /health answers 503 while the models load, then 200.
Concurrent requests for a model are batched. The API key is read from --api-key-file or
$SENTVEC_API_KEY, never from the command line. SIGTERM or Ctrl-C stops accepting connections,
answers the requests in flight, then exits 0 (a second Ctrl-C stops at once, exit 130). See
docs/serving.md.

Examples::

    sentvec serve minilm
    sentvec serve minilm wiki_unigrams.bin --name minilm --name wiki --port 8080
    SENTVEC_API_KEY=... sentvec serve my-pipeline --workers 2
"""

from __future__ import annotations

import argparse
from typing import Any

from sentvec.cli._args import (
    MODEL_HELP,
    add_device_options,
    device_options,
    float_range,
    int_at_least,
    plain_text,
    port_number,
)
from sentvec.serve.settings import DEFAULT_BATCH_LIMITS, SENT2VEC_BATCH_LIMITS, ServeSettings


def register(subparsers: Any) -> None:
    """Add the ``serve`` sub-command."""
    p = subparsers.add_parser(
        "serve",
        help="serve models over HTTP (OpenAI /v1/embeddings, TEI /embed, /metrics)",
        description=plain_text(__doc__.split("\n\n")[1]),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n" + __doc__.split("::\n\n")[1].rstrip(),
        allow_abbrev=False,  # "--api-key SECRET" must not pass as --api-key-file
    )
    p.error = _redacting_error(p)
    p.add_argument("--api-key", nargs="?", action=_RefuseKey, help=argparse.SUPPRESS)
    p.add_argument(
        "models",
        nargs="+",
        metavar="MODEL",
        help=MODEL_HELP.replace(" (default: minilm)", "") + "; one or more",
    )
    p.add_argument(
        "--name", action="append", default=None, help="served name of each MODEL, in order"
    )
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument(
        "--port",
        type=port_number,
        default=8000,
        help="port, 0-65535; 0: any free one (default 8000)",
    )
    p.add_argument(
        "--workers", type=int_at_least(1), default=1, help="server processes (default 1)"
    )
    (tokens, items), (s2v_chars, s2v_items) = DEFAULT_BATCH_LIMITS, SENT2VEC_BATCH_LIMITS
    p.add_argument(
        "--max-batch-tokens",
        type=int_at_least(1),
        default=None,
        metavar="N",
        help=f"token budget of a batch (default: {tokens} for a transformer or a static model; "
        f"{s2v_chars} characters for Sent2Vec, whose batches are bounded by characters)",
    )
    p.add_argument(
        "--max-batch-size",
        type=int_at_least(1),
        default=None,
        metavar="N",
        help=f"inputs per batch (default: {items}; {s2v_items} for Sent2Vec)",
    )
    p.add_argument(
        "--max-wait-ms",
        type=float_range(0.0, 60_000.0),
        default=2.0,
        metavar="MS",
        help="how long a batch waits for more requests (default 2)",
    )
    p.add_argument(
        "--max-input-items",
        type=int_at_least(1),
        default=2048,
        metavar="N",
        help="texts one request may hold; more is refused with 413 (default 2048)",
    )
    p.add_argument(
        "--max-request-bytes",
        type=int_at_least(1),
        default=8 << 20,
        metavar="N",
        help="largest request body in bytes; larger is refused with 413 (default 8388608 = 8 MiB)",
    )
    p.add_argument(
        "--max-queue-items",
        type=int_at_least(1),
        default=8192,
        metavar="N",
        help="texts queued per model before 429 (default 8192)",
    )
    http = ServeSettings()
    p.add_argument(
        "--max-header-bytes",
        type=int_at_least(1),
        default=http.max_header_bytes,
        metavar="N",
        help="size of a request's head, its request line and header fields together; more is "
        f"a 431 and the connection is closed (default {http.max_header_bytes})",
    )
    p.add_argument(
        "--max-header-fields",
        type=int_at_least(1),
        default=http.max_header_fields,
        metavar="N",
        help=f"header fields per request; more is a 431 (default {http.max_header_fields})",
    )
    p.add_argument(
        "--header-timeout",
        type=float_range(0, 86400.0, low_inclusive=False),
        default=http.header_timeout,
        metavar="S",
        help="seconds a client may take to send a request's head, from its first byte; "
        f"then 408 and the connection is closed (default {http.header_timeout:g})",
    )
    p.add_argument(
        "--body-timeout",
        type=float_range(0, 86400.0, low_inclusive=False),
        default=http.body_timeout,
        metavar="S",
        help="seconds a client may take to send a request's body, from the end of its head; "
        f"then 408 and the connection is closed (default {http.body_timeout:g})",
    )
    p.add_argument(
        "--api-key-file",
        default=None,
        metavar="FILE",
        help="file whose first line is the API key (else $SENTVEC_API_KEY; neither: no key)",
    )
    p.add_argument(
        "--log-level",
        choices=("critical", "error", "warning", "info", "debug"),
        default="info",
        help="server log level (default info)",
    )
    p.add_argument(
        "--access-log", action="store_true", help="log every request (default: errors only)"
    )
    add_device_options(p)
    p.set_defaults(func=run)


class _RefuseKey(argparse.Action):
    """``--api-key``: refused without echoing the value (it would show in ps and history)."""

    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: Any = None) -> None:
        parser.error(
            "the API key is never given on the command line (other users see it in ps, and "
            "it stays in the shell history): use --api-key-file FILE or $SENTVEC_API_KEY"
        )


#: Shown instead of the values that follow an unrecognized option.
HIDDEN = "<value not shown>"
_UNRECOGNIZED = "unrecognized arguments: "


def redact_unrecognized(message: str) -> str:
    """argparse's "unrecognized arguments" message without the arguments' values.

    A mistyped option (``--api-ke SECRET``) is unknown, so its value would be echoed to the
    terminal and to logs; only option names are shown (``--api-ke <value not shown>``).
    """
    if not message.startswith(_UNRECOGNIZED):
        return message
    shown = []
    for token in message[len(_UNRECOGNIZED) :].split(" "):
        if token.startswith("-"):
            name, eq, _ = token.partition("=")
            shown.append(f"{name}={HIDDEN}" if eq else name)
        elif not shown or shown[-1] != HIDDEN:
            shown.append(HIDDEN)
    return _UNRECOGNIZED + " ".join(shown)


def _redacting_error(parser: argparse.ArgumentParser) -> Any:
    plain_error = parser.error

    def error(message: str) -> Any:
        return plain_error(redact_unrecognized(message))

    return error


def _settings(args: argparse.Namespace) -> Any:
    from sentvec.serve.served_model import model_name_for
    from sentvec.serve.settings import ServeSettings

    names = args.name or []
    if len(names) > len(args.models):
        raise ValueError(f"{len(names)} --name values for {len(args.models)} models")
    names = names + [model_name_for(m) for m in args.models[len(names) :]]
    return ServeSettings(
        models=[[n, m] for n, m in zip(names, args.models, strict=True)],
        max_batch_tokens=args.max_batch_tokens,
        max_batch_size=args.max_batch_size,
        max_wait_ms=args.max_wait_ms,
        max_input_items=args.max_input_items,
        max_request_bytes=args.max_request_bytes,
        max_queue_items=args.max_queue_items,
        max_header_bytes=args.max_header_bytes,
        max_header_fields=args.max_header_fields,
        header_timeout=args.header_timeout,
        body_timeout=args.body_timeout,
        encoder_options=device_options(args),
        api_key_file=args.api_key_file,
    ).check()


def run(args: argparse.Namespace) -> int:
    """Bind the port, then serve (answering 503 while the models load) until SIGTERM / Ctrl-C."""
    from sentvec.serve import run_server

    return run_server(
        _settings(args),
        host=args.host,
        port=args.port,
        workers=args.workers,
        log_level=args.log_level,
        access_log=args.access_log,
    )
