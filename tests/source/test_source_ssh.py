"""The source browser over a real OpenSSH sshd on loopback: the same agent, shipped over SSH."""

import json
import sys

import pytest

from spectui.cli.main import main
from spectui.core.session import open_session
from spectui.core.source import SourceError, open_browser

# The first test to use a release downloads its wheel from PyPI: allow for a slow network.
pytestmark = [pytest.mark.sshd, pytest.mark.timeout(600)]


def source_args(sshd, state_dir, *rest):
    return ["source", "--host", sshd.dest, *sshd.cli_args(), "--python", sys.executable,
            "--state-dir", str(state_dir), *rest]


def test_algorithms_grep_show_over_ssh(sshd, state_dir, sglang_2025, capsys):
    root = ["--sglang-root", str(sglang_2025)]
    assert main(source_args(sshd, state_dir, *root, "algorithms", "--json")) == 0
    r = json.loads(capsys.readouterr().out)
    assert [a["name"] for a in r["algorithms"]] == ["NONE", "EAGLE", "EAGLE3", "STANDALONE", "NGRAM"]
    assert r["source"]["version"] == "0.5.3"
    assert main(source_args(sshd, state_dir, *root, "grep", r"^class \w+Worker", "--json")) == 0
    r = json.loads(capsys.readouterr().out)
    assert {"path": "srt/speculative/ngram_worker.py", "line": 21, "col": 0,
            "text": "class NGRAMWorker:"} in r["hits"]
    assert main(source_args(sshd, state_dir, *root, "show", "srt/speculative/ngram_worker.py:21", "-n", "4")) == 0
    assert ">21  class NGRAMWorker:" in capsys.readouterr().out


def test_missing_sglang_over_ssh_is_one_sentence(sshd, state_dir, capsys):
    assert main(source_args(sshd, state_dir, "tree")) == 1
    err = capsys.readouterr().err.strip()
    assert err == (f"spectui: SGLang is not installed for {sys.executable}; point at a source tree with "
                   f"--sglang-root PATH.")


async def test_confinement_and_streaming_over_ssh(sshd, state_dir, sglang_current, tmp_path):
    s = await open_session(sshd.host_target(state_dir, simulated=False))
    try:
        b = await open_browser(s, sglang_root=str(sglang_current))
        with pytest.raises(SourceError, match="may not contain '..'"):
            await b.read("../sglang-0.5.23.dist-info/METADATA")
        with pytest.raises(SourceError, match="outside the source roots"):
            await b.read("/etc/hostname")
        batches = []
        r = await b.grep("speculative", max_hits=1500, on_hits=batches.append)
        assert r.truncated and len(r.hits) == 1500 and len(batches) >= 8
        assert all(h.text and h.line >= 1 for h in r.hits)
        view = await b.algorithms()
        assert view.get("NGRAM").main_worker.module == "sglang.srt.speculative.ngram_worker"
    finally:
        await s.close()
