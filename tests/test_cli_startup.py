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
