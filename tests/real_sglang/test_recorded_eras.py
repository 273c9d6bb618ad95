"""The --help-text fallback against recorded releases (0.4.9, 0.3.6): does it agree with that
release's own parser on real launch commands?

tests/fixtures/real/sglang_help/VERSION.txt is the release's help text and VERSION.verdicts.json
its parser's verdicts, both recorded from the PyPI wheel by scripts/record_sglang_help.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spectui.core.profiles import parse_help_flags
from spectui.core.profiles.flags import argv_verdict

from .launch_commands import load_commands

HELP_DIR = Path(__file__).resolve().parents[1] / "fixtures" / "real" / "sglang_help"
ERAS = ["0.4.9", "0.3.6"]


def _recorded(version):
    text = (HELP_DIR / f"{version}.txt").read_text(encoding="utf-8")
    verdicts = json.loads((HELP_DIR / f"{version}.verdicts.json").read_text(encoding="utf-8"))
    return text, verdicts


@pytest.mark.parametrize("version", ERAS)
def test_recording_names_its_wheel(version):
    text, verdicts = _recorded(version)
    header = text.splitlines()[0]
    assert header.startswith(f"# sglang {version} wheel sglang-{version}-py3-none-any.whl "
                             f"(https://pypi.org/project/sglang/{version}/)")
    assert verdicts["wheel"] == f"sglang-{version}-py3-none-any.whl"
    assert {c["id"] for c in load_commands()} == set(verdicts["verdicts"])


@pytest.mark.parametrize("version", ERAS)
def test_fallback_agrees_with_the_release_parser(version):
    text, recorded = _recorded(version)
    flagset = parse_help_flags(text)
    for cid, verdict in recorded["verdicts"].items():
        mine = argv_verdict(verdict["argv"], flagset)
        # same verdict, and when refused the same kind (and flag): "argument --x", "ambiguous option", ...
        assert (mine or "").split(":")[0] == (verdict["error"] or "").split(":")[0], cid


def test_what_0_4_9_says_about_real_commands():
    text, recorded = _recorded("0.4.9")
    flagset = parse_help_flags(text)
    verdicts = recorded["verdicts"]
    # abbreviations that 0.5.23 finds ambiguous were fine in 0.4.9
    assert verdicts["eagle-blog-abbreviated"]["error"] is None
    assert argv_verdict(verdicts["eagle-blog-abbreviated"]["argv"], flagset) is None
    # NGRAM came later: argparse choices of 0.4.9 are EAGLE, EAGLE3, NEXTN
    assert argv_verdict(verdicts["ngram-docs"]["argv"], flagset) == \
        "argument --speculative-algorithm: invalid choice: 'NGRAM'"
    assert verdicts["ngram-docs"]["error"].startswith("argument --speculative-algorithm: invalid choice: 'NGRAM'")
    # --disable-overlap is a prefix of two 0.4.9 flags
    assert argv_verdict(verdicts["baseline-abbreviated-research"]["argv"], flagset) == \
        "ambiguous option: --disable-overlap could match --disable-overlap-schedule, --disable-overlap-cg-plan"


def test_0_3_6_had_no_speculative_flags():
    text, recorded = _recorded("0.3.6")
    flagset = parse_help_flags(text)
    assert not [n for n in flagset.names() if n.startswith("--speculative")]
    argv = recorded["verdicts"]["eagle3-docs"]["argv"]
    assert argv_verdict(argv, flagset).startswith("unrecognized arguments: --speculative-algorithm EAGLE3 ")
    assert recorded["verdicts"]["baseline-tokenizer-api"]["error"] is None
