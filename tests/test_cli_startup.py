"""Start-up of one command: only its own module is imported, the parser is the same."""

from __future__ import annotations

import subprocess
import sys


def test_parser_of_one_command_equals_the_full_parsers():
    # `sentvec embed` builds only its own sub-parser (start-up time); same options and help
    from sentvec.cli import build_parser

    def sub_help(parser, name):
        action = next(a for a in parser._actions if a.dest == "command")
        return action.choices[name].format_help()

    full = build_parser()
    for name in ("embed", "eval-sts", "train-sent2vec"):
        one = build_parser(name)
        assert sub_help(one, name) == sub_help(full, name)
    assert build_parser("eval_sts").format_help() == full.format_help()
    assert build_parser("--help").format_help() == full.format_help()


def test_embed_imports_no_other_command_module():
    code = ("import sys; from sentvec.cli import build_parser; build_parser('embed'); "
            "print(sorted(m for m in sys.modules if m.startswith('sentvec.cli.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert "sentvec.cli.embed" in out and "sentvec.cli.eval_sts" not in out


def test_embed_to_a_text_only_stdout(monkeypatch):
    # a stdout without .buffer (io.StringIO) gets the same text
    import io
    from pathlib import Path

    from sentvec.cli import main

    ref = Path(__file__).parent / "data" / "sent2vec-reference"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"the city\nof london\n")))
    out = io.StringIO()
    monkeypatch.setattr(sys, "stdout", out)
    assert main(["embed", str(ref / "tiny-bigram.bin")]) == 0
    from sentvec.sent2vec.model import Sent2Vec

    vectors = Sent2Vec.load(ref / "tiny-bigram.bin").encode(["the city", "of london"])
    assert out.getvalue() == "".join(" ".join(f"{v:.6g}" for v in row) + "\n"
                                     for row in vectors.tolist())
