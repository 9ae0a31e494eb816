"""Every option of every ``sentvec`` command: help text, and numbers checked at parse time.

The parsers are walked from ``sentvec.cli.build_parser``, so a new option is covered without
editing this file: it must have help, and a numeric one must use a ``NumberType`` of
``sentvec.cli._args`` (never bare ``int`` / ``float``, which take ``nan``, ``inf`` and
``10**40``), whose range is then probed from both sides.
"""

from __future__ import annotations

import argparse

import pytest

from sentvec.cli import build_parser, main
from sentvec.cli._args import INT64_MAX, NumberType


def _commands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return {"": parser, **sub.choices}


def _options() -> list[tuple[str, argparse.Action]]:
    out = []
    for name, p in _commands().items():
        for a in p._actions:
            if isinstance(a, (argparse._HelpAction, argparse._SubParsersAction)):
                continue
            out.append((name, a))
    return out


def _label(name: str, a: argparse.Action) -> str:
    return f"{name or 'sentvec'} {'/'.join(a.option_strings) or a.dest}"


def test_every_option_of_every_command_has_help():
    missing = [_label(n, a) for n, a in _options() if not a.help]
    assert not missing, f"options without help text: {missing}"
    assert len(_commands()) >= 15  # every sub-command was walked


def test_no_numeric_option_parses_with_bare_int_or_float():
    bare = [_label(n, a) for n, a in _options() if a.type in (int, float)]
    assert not bare, f"use a NumberType (sentvec.cli._args) for: {bare}"


def _bad_values(t: NumberType) -> list[str]:
    values = ["nan", "inf", "-inf", "1e999", "abc", "1" + "0" * 40, "-1" + "0" * 40]
    if t.kind is int:
        values += ["1.5", "1e3"]
    step = 1 if t.kind is int else 0.5
    if t.minimum is not None:
        values.append(str(t.minimum - step if t.low_inclusive else t.minimum))
    if t.maximum is not None and t.maximum != INT64_MAX:
        values.append(str(t.maximum + step if t.high_inclusive else t.maximum))
    return values


def _numeric_options() -> list[tuple[str, str, NumberType]]:
    out = []
    for name, a in _options():
        if isinstance(a.type, NumberType) and a.option_strings:
            flag = next((s for s in a.option_strings if s.startswith("--")), a.option_strings[0])
            out.append((name, flag, a.type))
    return out


@pytest.fixture(scope="module")
def parser() -> argparse.ArgumentParser:
    return build_parser()


@pytest.mark.parametrize(
    "command, flag, number", _numeric_options(), ids=lambda x: str(x).replace(" ", "")
)
def test_numeric_options_refuse_out_of_range_nan_and_huge_values(
    parser, command, flag, number, capsys
):
    for value in _bad_values(number):
        with pytest.raises(SystemExit) as exc:  # as main() parses: the top-level parser
            parser.parse_known_args([command, f"{flag}={value}"])
        assert exc.value.code == 2, (flag, value)
        err = capsys.readouterr().err
        message = err.split("error: argument ", 1)[-1]
        assert flag in message.split(":", 1)[0] and ": expected " in message, err


def test_numeric_options_cover_every_command_with_numbers():
    commands = {c for c, _, _ in _numeric_options()}
    assert {"serve", "train-sent2vec", "embed", "encode", "distill", "eval-rte"} <= commands


def test_serve_port_70000_is_a_usage_error(capsys):
    # before: OverflowError traceback from the socket layer, exit 1
    with pytest.raises(SystemExit) as exc:
        main(["serve", "minilm", "--port", "70000"])
    assert exc.value.code == 2
    assert "argument --port: expected an integer in [0, 65535], got '70000'" in (
        capsys.readouterr().err
    )


@pytest.mark.parametrize(
    "text, kind, low, high, value",
    [
        ("65535", int, 0, 65535, 65535),
        ("0", int, 0, 65535, 0),
        ("1_000", int, 1, None, 1000),
        ("0.25", float, 0.0, None, 0.25),
        ("-1", float, -1.0, 1.0, -1.0),
    ],
)
def test_number_type_accepts_its_range(text, kind, low, high, value):
    assert NumberType(kind, low, high)(text) == value
