"""The demo's story: `spectui bench --demo --profiles kimi-baseline,kimi-eagle3,kimi-ngram --preset single-stream`.

The shipped profiles and the shipped single-stream preset on the simulated pcie-8gpu host
(only the simulated load time is shortened). The README's story: baseline fastest, EAGLE-3
about 0.73x with accept length about 2.0, NGRAM about 0.5x with 1.3-1.5, and a break-even
accept length L* near 2.7. Ranges are generous for a loaded machine, but each bound is one a
wrong step time, accept length or ordering would cross.
"""

import json

import pytest

from spectui.cli.main import main
from spectui.core.bench.table import parse_markdown_table
from spectui.core.history import HistoryStore

pytestmark = pytest.mark.timeout(480)


def test_story_table_on_the_demo(story_profiles, state_dir, capsys):
    argv = ["bench", "--demo", "--state-dir", str(state_dir), "--profiles", "kimi-baseline,kimi-eagle3,kimi-ngram",
            "--preset", "single-stream", "--repeat", "1", "--json"]
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 0, err
    comp = json.loads(out)
    assert comp["baseline"] == "kimi-baseline" and comp["state"] == "complete"
    cells = {row["name"]: row["cells"]["1"] for row in comp["profiles"]}
    base, eagle, ngram = cells["kimi-baseline"], cells["kimi-eagle3"], cells["kimi-ngram"]
    report = {n: (round(c["tok_s"]["median"], 1), c.get("speedup") and round(c["speedup"], 3),
                  c.get("accept_length"), c.get("l_star")) for n, c in cells.items()}

    # ordering: baseline > EAGLE-3 > NGRAM
    assert base["tok_s"]["median"] > eagle["tok_s"]["median"] > ngram["tok_s"]["median"], report
    assert 0.60 <= eagle["speedup"] <= 0.85, report
    assert 0.40 <= ngram["speedup"] <= 0.60, report
    assert 1.7 <= eagle["accept_length"]["per_request"] <= 2.3, report
    assert 1.2 <= ngram["accept_length"]["per_request"] <= 1.6, report
    for cell in (eagle, ngram):
        assert 2.3 <= cell["l_star"] <= 3.1, report
        # the counters over the run say the same as the requests
        assert cell["accept_length"]["metrics"] == pytest.approx(cell["accept_length"]["per_request"], rel=0.02)
        # speculation pays exactly when accept length beats L*: the measured speedup is about L / L*
        assert cell["speedup"] == pytest.approx(cell["accept_length"]["per_request"] / cell["l_star"], rel=0.1)
    assert base["step_kind"] == "decode" and 10.5 <= base["step_ms"] <= 14.5, report
    assert any("kimi-eagle3 is slower" in v and "L*" in v for v in comp["verdicts"])

    # the servers were stopped after the demo comparison, and every run is in the history
    code = main(["servers", "list", "--demo", "--state-dir", str(state_dir), "--json"])
    listed = json.loads(capsys.readouterr().out)["servers"]
    assert all(s["state"] in ("stopped", "failed", "crashed") for s in listed)
    store = HistoryStore()
    assert len(store.runs()) == 3 and all(r["state"] == "done" for r in store.runs())
    assert {r["profile_hash"] for r in store.runs()} == {story_profiles.get(n).content_hash for n in cells}
    run = store.runs()[1]
    assert run["profile_content"]["args"]["speculative-algorithm"] == "EAGLE3"
    assert run["launch_argv"][1:3] == ["-m", "spectui.sim.server"] and run["gpus"] and run["sglang_version"]
    assert run["preset"]["name"] == "single-stream"

    # the stored comparison prints as the table the command printed, in Markdown for an issue
    code = main(["history", "show", comp["id"], "--markdown"])
    md = capsys.readouterr().out
    assert code == 0
    table = parse_markdown_table(md)
    assert [r[0] for r in table[1:]] == ["kimi-baseline", "kimi-eagle3", "kimi-ngram"]
    assert table[2][2] == f"{eagle['speedup']:.2f}x"
