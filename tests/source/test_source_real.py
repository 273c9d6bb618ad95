"""Against the real source of two SGLang releases from PyPI: 0.5.23 and 0.5.3 (October 2025)."""

import json
import re
import shutil
import subprocess
import sys

import pytest

from spectui.cli.main import main

# The first test to use a release downloads its wheel from PyPI: allow for a slow network.
pytestmark = pytest.mark.timeout(600)

# What each release's enum holds, in its own order (read from the wheels by hand).
ENUM_CURRENT = ["DFLASH", "UNO", "DSPARK", "EAGLE", "EAGLE3", "FROZEN_KV_MTP", "STANDALONE", "NGRAM", "NONE"]
ENUM_2025 = ["NONE", "EAGLE", "EAGLE3", "STANDALONE", "NGRAM"]


def enum_members_by_text(path):
    """The members of ``class SpeculativeAlgorithm`` read with a regex (independent of the agent's ast)."""
    text = path.read_text()
    body = text[text.index("class SpeculativeAlgorithm("):]
    body = body.split("\n", 1)[1]
    end = re.search(r"^\S", body, re.M)
    body = body[:end.start()] if end else body
    return re.findall(r"^    ([A-Z][A-Z0-9_]*)\s*=", body, re.M)


async def test_algorithms_of_0_5_23(open_tree, sglang_current):
    b = await open_tree(sglang_current)
    assert b.info.version == "0.5.23" and b.info.start == "srt/speculative"
    view = await b.algorithms()
    assert view.names == ENUM_CURRENT
    assert view.names == enum_members_by_text(sglang_current / view.enum_path)
    assert view.enum_path == "srt/speculative/spec_info.py" and view.enum_bases == ("Enum",)
    assert view.enum_module == "sglang.srt.speculative.spec_info"
    ngram = view.get("NGRAM").main_worker
    assert (ngram.cls, ngram.module) == ("NGRAMWorker", "sglang.srt.speculative.ngram_worker")
    assert ngram.path == "srt/speculative/ngram_worker.py"
    assert (sglang_current / ngram.path).read_text().splitlines()[ngram.line - 1].startswith("class NGRAMWorker")
    # 0.5.23 dispatches in SpeculativeAlgorithm.create_worker
    assert ngram.site_path == "srt/speculative/spec_info.py" and ngram.site_function == "create_worker"
    eagle = view.get("EAGLE3")
    assert eagle.main_worker.cls == "EAGLEWorkerV2"
    assert eagle.main_worker.module == "sglang.srt.speculative.eagle_worker_v2"
    assert any(w.conditional and w.cls == "MultiLayerEagleWorkerV2" for w in eagle.workers)
    assert view.get("STANDALONE").main_worker.module == "sglang.srt.speculative.standalone_worker_v2"
    assert view.get("DSPARK").main_worker.module == "sglang.srt.speculative.dspark_components.dspark_worker_v2"
    # FROZEN_KV_MTP is also is_eagle(), but an earlier `if ...: return` takes it first
    assert [w.cls for w in view.get("FROZEN_KV_MTP").workers] == ["FrozenKVMTPWorkerV2"]
    assert view.get("NONE").workers == ()
    for a in view.algorithms:
        for w in a.workers:
            line = (sglang_current / w.path).read_text().splitlines()[w.line - 1]
            assert line.startswith(f"class {w.cls}"), (a.name, w)


async def test_algorithms_of_a_2025_release(open_tree, sglang_2025):
    b = await open_tree(sglang_2025)
    assert b.info.version == "0.5.3"
    view = await b.algorithms()
    assert view.names == ENUM_2025
    assert view.names == enum_members_by_text(sglang_2025 / view.enum_path)
    assert view.enum_bases == ("IntEnum",)
    workers = {a.name: [(w.cls, w.module, w.conditional) for w in a.workers] for a in view.algorithms}
    assert workers == {
        "NONE": [],
        "EAGLE": [("EAGLEWorker", "sglang.srt.speculative.eagle_worker", False)],
        "EAGLE3": [("EAGLEWorker", "sglang.srt.speculative.eagle_worker", False)],
        "STANDALONE": [("StandaloneWorker", "sglang.srt.speculative.standalone_worker", False)],
        "NGRAM": [("NGRAMWorker", "sglang.srt.speculative.ngram_worker", False)],
    }
    # this release chooses workers with if/elif in the scheduler, not in the enum
    assert {w.site_path for a in view.algorithms for w in a.workers} == {"srt/managers/scheduler.py"}
    assert "is_eagle" in view.get("EAGLE3").predicates and "is_eagle3" in view.get("EAGLE3").predicates


async def test_enum_is_found_by_search_not_by_path(open_tree, sglang_2025, tmp_path):
    """Move the enum to another file, as older trees had it: it is still found, members intact."""
    tree = tmp_path / "sglang"
    shutil.copytree(sglang_2025 / "srt" / "speculative", tree / "srt" / "speculative")
    shutil.copytree(sglang_2025 / "srt" / "managers", tree / "srt" / "managers")
    (tree / "version.py").write_text('__version__ = "0.0.1-moved"\n')
    (tree / "__init__.py").write_text("")
    spec = tree / "srt" / "speculative" / "spec_info.py"
    moved = tree / "srt" / "speculative" / "eagle_utils_moved.py"
    moved.write_text(spec.read_text())
    spec.unlink()
    b = await open_tree(tree)
    view = await b.algorithms()
    assert view.enum_path == "srt/speculative/eagle_utils_moved.py"
    assert view.names == ENUM_2025
    assert view.get("NGRAM").main_worker.module == "sglang.srt.speculative.ngram_worker"


async def test_tree_read_and_definitions(open_tree, sglang_current):
    b = await open_tree(sglang_current)
    listing = await b.tree()
    names = [e.name for e in listing.entries]
    assert listing.path == "srt/speculative"
    assert {"spec_info.py", "ngram_worker.py", "eagle_worker_v2.py"} <= set(names)
    assert names.index("cpp_ngram") < names.index("spec_info.py")  # folders first
    whole = await b.tree("", depth=1)
    assert {"srt", "lang"} <= {e.name for e in whole.entries if e.is_dir}
    page = await b.read("srt/speculative/spec_info.py", 32, 3)
    assert page.lines[0] == "class SpeculativeAlgorithm(Enum):" and page.start == 32 and page.end == 34
    assert page.module == "sglang.srt.speculative.spec_info" and page.language == "python"
    text = (sglang_current / "srt/speculative/spec_info.py").read_text()
    assert page.total_lines == len(text.splitlines())
    around = await b.read("srt/speculative/spec_info.py", count=11, around=100, context=5)
    assert (around.start, around.end) == (95, 105) and around.lines == tuple(text.splitlines()[94:105])
    defs = await b.definition("NGRAMWorker")
    assert defs[0].path == "srt/speculative/ngram_worker.py" and defs[0].kind == "class"
    assert text.splitlines()[(await b.definition("create_worker"))[0].line - 1].strip().startswith("def create_worker")


async def test_flags_in_both_shapes(open_tree, sglang_current, sglang_2025):
    new = await open_tree(sglang_current)
    d = (await new.flag("--speculative-num-draft-tokens"))[0]
    assert (d.path, d.kind, d.context) == ("srt/arg_groups/fields/spec.py", "field", "Spec")
    assert d.help == "The number of tokens sampled from the draft model in Speculative Decoding."
    alias = (await new.flag("speculative-draft-model"))[0]
    assert alias.alias == "--speculative-draft-model" and alias.names == ("--speculative-draft-model-path",)
    assert await new.flag("--speculative-ngram-max-match-window-size") == []  # gone in 0.5.23
    old = await open_tree(sglang_2025)
    d = (await old.flag("--speculative-ngram-max-match-window-size"))[0]
    assert (d.path, d.kind, d.type) == ("srt/server_args.py", "add_argument", "int")
    assert "window size" in d.help
    src = (sglang_2025 / d.path).read_text().splitlines()
    assert '"--speculative-ngram-max-match-window-size"' in "\n".join(src[d.line - 1:d.end_line])


async def test_profile_flags_jump_to_their_definitions(open_tree, sglang_current):
    from spectui.core.profiles import load_profiles

    profile = load_profiles().get("kimi-ngram")
    b = await open_tree(sglang_current)
    rows = await b.profile_flags(profile)
    flags = {r.flag: r for r in rows}
    assert set(flags) == {"--" + k for k in profile.args if k.startswith("speculative-")}
    algo = flags["--speculative-algorithm"]
    assert algo.value == "NGRAM" and "Speculative algorithm" in algo.definition.help
    assert flags["--speculative-num-draft-tokens"].definition.path == "srt/arg_groups/fields/spec.py"


def test_cli_algorithms_json_for_both_releases(cli_env, sglang_current, sglang_2025, capsys):
    for tree, expected, base in ((sglang_current, ENUM_CURRENT, "Enum"), (sglang_2025, ENUM_2025, "IntEnum")):
        assert main(["source", "--demo", "--sglang-root", str(tree), "algorithms", "--json"]) == 0
        r = json.loads(capsys.readouterr().out)
        assert r["schema"] == "spectui.source.algorithms/1"
        assert [a["name"] for a in r["algorithms"]] == expected and r["enum"]["bases"] == [base]
        ngram = next(a for a in r["algorithms"] if a["name"] == "NGRAM")
        assert ngram["workers"][0]["module"] == "sglang.srt.speculative.ngram_worker"
    assert main(["source", "--demo", "--sglang-root", str(sglang_2025), "algorithms"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("SpeculativeAlgorithm(IntEnum) in srt/speculative/spec_info.py:")
    assert re.search(r"^  NGRAM\s+NGRAMWorker\s+sglang\.srt\.speculative\.ngram_worker", out, re.M)
    assert re.search(r"^  NONE\s+no worker", out, re.M)


def test_cli_show_grep_def_tree(cli_env, sglang_2025, capsys):
    base = ["source", "--demo", "--sglang-root", str(sglang_2025)]
    assert main([*base, "show", "srt/speculative/spec_info.py:13", "-n", "8"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("srt/speculative/spec_info.py  (sglang.srt.speculative.spec_info)  lines 11-18 of")
    assert ">13      NGRAM = auto()" in out
    assert main([*base, "grep", r"class \w+Worker\b"]) == 0
    cap = capsys.readouterr()
    assert "srt/speculative/ngram_worker.py:21:class NGRAMWorker:" in cap.out.splitlines()
    assert re.search(r"\d+ hits in \d+ files", cap.err)
    assert main([*base, "def", "StandaloneWorker", "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["definitions"][0] == {"path": "srt/speculative/standalone_worker.py", "line": 29, "kind": "class",
                                   "text": "class StandaloneWorker(EAGLEWorker):"}
    assert main([*base, "tree"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == f"srt/speculative/  (sglang 0.5.3 at {sglang_2025})"
    assert "  ngram_worker.py  9.5 KiB" in out
    assert main([*base, "def", "NoSuchThing"]) == 1


def test_installed_sglang_is_located_through_the_interpreter(tmp_path, cli_env, sglang_2025, capsys):
    """A venv with SGLang 0.5.3 installed (its wheel's files): found through --python, version and path."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next(venv.glob("lib/python3*/site-packages"))
    shutil.copytree(sglang_2025, site / "sglang")
    shutil.copytree(sglang_2025.parent / "sglang-0.5.3.dist-info", site / "sglang-0.5.3.dist-info")
    py = str(venv / "bin" / "python")
    assert main(["source", "--host", "local", "--python", py, "where", "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["installed"] is True and r["version"] == "0.5.3" and r["path"] == str(site / "sglang")
    assert main(["source", "--host", "local", "--python", py, "tree", "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["source"]["origin"] == "installed" and r["source"]["root"] == str(site / "sglang")
    assert r["path"] == "srt/speculative" and any(e["name"] == "ngram_worker.py" for e in r["entries"])
    # the same machine's own Python has no SGLang: one sentence, pointing at --sglang-root
    assert main(["source", "--host", "local", "--python", sys.executable, "tree"]) == 1
    err = capsys.readouterr().err.strip()
    assert err == (f"spectui: SGLang is not installed for {sys.executable}; point at a source tree with "
                   f"--sglang-root PATH.")


@pytest.mark.parametrize("pattern", [r"class [A-Za-z_]+Worker", r"speculative_num_draft_tokens",
                                     r"NGRAM|EAGLE3", r"def (is|has)_[a-z]+\(self\)", r"^\s*return\s+None$"])
async def test_grep_agrees_with_grep_rnE_on_0_5_23(open_tree, sglang_current, pattern):
    b = await open_tree(sglang_current)
    r = await b.grep(pattern, max_hits=20000)
    assert not r.truncated
    out = subprocess.run(["grep", "-rnE", pattern, "."], cwd=sglang_current, capture_output=True).stdout
    expected = set()
    for line in out.decode("utf-8", "replace").splitlines():
        if line.startswith("./"):
            path, num, _ = line[2:].split(":", 2)
            expected.add((path, int(num)))
    assert expected, "the pattern should match something"
    assert {(h.path, h.line) for h in r.hits} == expected


async def test_cancelling_a_search_stops_it_on_the_host(open_tree, sglang_current):
    import asyncio

    b = await open_tree(sglang_current)
    events = []
    b.client.add_listener(lambda ev: events.append((asyncio.get_running_loop().time(), ev))
                          if ev.name == "source.grep" else None)
    task = asyncio.create_task(b.grep(r"\bw\b", max_hits=20000))  # no literal: the slow path, ~0.7 s here
    while not events:
        await asyncio.sleep(0.01)
    task.cancel()
    cancelled_at = asyncio.get_running_loop().time()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.sleep(1.5)
    search_id = events[0][1].data["search_id"]
    late = [t for t, ev in events if ev.data["search_id"] == search_id and t > cancelled_at + 0.3]
    assert late == [], "the host kept searching after the cancel"
    r = await b.grep(r"\bw\b", max_hits=20000)  # uncancelled, the same search runs to its end
    assert len(r.hits) > 1000 and not r.cancelled
