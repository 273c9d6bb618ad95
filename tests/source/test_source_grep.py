"""The agent's search: grep -n semantics, the literal prefilter, streaming in batches, the cap."""

import subprocess

import pytest

from spectui.agent.source.grep import LiteralPlan, compile_pattern, grep_tree, search_file


@pytest.fixture
def corpus(tmp_path):
    root = tmp_path / "pkg"
    (root / "a" / "b").mkdir(parents=True)
    (root / "a" / "one.py").write_text(
        "import torch\nclass NGRAMWorker:\n    def is_ngram(self):\n        return True\n\n"
        "x = 'eagle EAGLE Eagle'\nfoo  \nbar\r\nlast line without newline")
    (root / "a" / "b" / "two.txt").write_text("alpha\nbeta\n\ngamma delta\nNGRAM|EAGLE3 literal\n" * 3)
    (root / "a" / "b" / "bin.dat").write_bytes(b"NGRAM\x00\x01binary")
    (root / "a" / "empty.py").write_text("")
    return root


def grep_rn(root, pattern, *flags):
    out = subprocess.run(["grep", "-rnE", *flags, pattern, "."], cwd=root, capture_output=True).stdout
    hits = set()
    for line in out.decode().splitlines():
        if line.startswith("./"):
            path, num, _ = line[2:].split(":", 2)
            hits.add((path, int(num)))
    return hits


@pytest.mark.parametrize("pattern,icase", [
    ("NGRAM", False), ("eagle", True), (r"^\s*return", False), (r"a\s", False), ("^$", False),
    (r"(alpha|gamma)", False), (r"\s$", False), ("line$", False), (r"e[a-z]+e", False), ("delta|torch", False),
    (r"class \w+Worker", False), ("^bar", False), ("NGRAM.EAGLE3", False),
])
def test_same_lines_as_grep(corpus, pattern, icase):
    rx = compile_pattern(pattern, icase)
    hits, stats = grep_tree(str(corpus), rx, lambda p: p[len(str(corpus)) + 1:], max_hits=10_000)
    expected = grep_rn(corpus, pattern, *(["-i"] if icase else []))
    # grep reports the binary file's match as "Binary file ... matches"; the browser skips binaries
    assert {(h["path"], h["line"]) for h in hits} == expected
    assert stats.binary_skipped == 1


def test_match_never_spans_lines():
    rx = compile_pattern(r"foo\s+bar")
    assert search_file(rx, LiteralPlan(rx), b"foo\nbar\nfoo  bar\n", 100) == [(3, 0, b"foo  bar")]
    rx = compile_pattern(r"x[^y]*z")
    assert search_file(rx, LiteralPlan(rx), b"x\nz\nxz\n", 100) == [(3, 0, b"xz")]


def test_columns_and_line_numbers():
    rx = compile_pattern("needle")
    data = b"a\n\nxx needle\nneedle needle\n"
    assert search_file(rx, LiteralPlan(rx), data, 100) == [(3, 3, b"xx needle"), (4, 0, b"needle needle")]
    dense = b"needle\n" * 5000  # many occurrences: the whole-file path, same answer
    found = search_file(rx, LiteralPlan(rx), dense, 10_000)
    assert [f[0] for f in found] == list(range(1, 5001))


@pytest.mark.parametrize("pattern,all_of,any_of", [
    ("speculative_num_draft_tokens", [b"speculative_num_draft_tokens"], []),
    (r"class [A-Za-z_]+Worker", [b"class ", b"Worker"], []),
    (r"def (is|has)_[a-z]+\(self\)", [b"(self)", b"def "], []),
    ("NGRAM|EAGLE3", [], [b"NGRAM", b"EAGLE3"]),
    (r"^(?:def|class)\s+Foo\b|^Foo\s*=", [b"Foo"], []),
    (r"\s$", [], []),
    ("(?i)NgramWorker", [b"ngramworker"], []),
    ("a(?i:bcd)e", [], []),
])
def test_literal_plan(pattern, all_of, any_of):
    plan = LiteralPlan(compile_pattern(pattern))
    assert plan.all_of == all_of and plan.any_of == any_of


def test_hits_stream_in_batches_and_stop_at_the_cap(tmp_path):
    (tmp_path / "many.py").write_text("hit\n" * 900)
    (tmp_path / "more.py").write_text("hit\n" * 900)
    batches = []
    kept, stats = grep_tree(str(tmp_path), compile_pattern("hit"), lambda p: p, max_hits=1000,
                            on_hits=batches.append, batch=200, flush_s=60)
    assert kept == [] and stats.truncated and stats.hits == 1000
    assert sum(len(b) for b in batches) == 1000 and len(batches) >= 2
    lines = [h["line"] for b in batches for h in b]
    assert lines == list(range(1, 901)) + list(range(1, 101))


def test_cancel_is_polled_between_files(tmp_path):
    for i in range(5):
        (tmp_path / f"f{i}.py").write_text("hit\n")
    calls = []

    def cancelled():
        calls.append(1)
        return len(calls) > 2

    hits, stats = grep_tree(str(tmp_path), compile_pattern("hit"), lambda p: p, cancelled=cancelled)
    assert stats.cancelled and len(hits) == 2


async def test_events_carry_the_search_id_and_precede_the_reply(open_tree, tmp_path):
    (tmp_path / "srt").mkdir()
    (tmp_path / "srt" / "big.py").write_text("x = 1  # marker\n" * 3000)
    b = await open_tree(tmp_path)
    seen = []
    other = []
    b.client.add_listener(lambda ev: other.append(ev) if ev.name == "source.grep" else None)
    r = await b.grep("marker", max_hits=2500, on_hits=lambda hits: seen.append(len(hits)))
    assert r.truncated and len(r.hits) == 2500 and sum(seen) == 2500
    assert len(other) == len(seen) >= 2  # streamed in several events, all in before the reply
    assert {ev.data["search_id"] for ev in other} == {other[0].data["search_id"]}
    assert all(len(ev.data["hits"]) <= 200 for ev in other)
    r2 = await b.grep("marker", path="srt", include=["*.txt"])
    assert r2.hits == [] and r2.files_scanned == 0


def test_random_patterns_agree_with_grep(tmp_path):
    """Random files and patterns (fixed seed): the same lines as grep -nE, on both search paths."""
    import os
    import random

    from spectui.agent.source.grep import search_bytes

    rnd = random.Random(20261130)
    alphabet = list("abcx():#@ 019AB_.=") + ["  ", "\n", "\n", "\n"]
    atoms = ["a", "b", "x", "ab", r"(\(|\))", r"\(", ":", "#", "@", "[0-9]", "[a-c]", "[A-Z]", r"\w", r"\s", ".",
             "[^a]", "b[0-9]{2}", "[0-9]{3,}", "x+", "a*", "(ab|c)", r"\bx\b", "[ab]{2}", r"\W"]
    f = tmp_path / "f.txt"
    checked = 0
    for _ in range(300):
        data = "".join(rnd.choice(alphabet) for _ in range(rnd.randint(1, 120)))
        pattern = "".join(rnd.choice(atoms) for _ in range(rnd.randint(1, 4)))
        pattern = ("^" if rnd.random() < 0.3 else "") + pattern + ("$" if rnd.random() < 0.3 else "")
        icase = rnd.random() < 0.2
        f.write_text(data)
        r = subprocess.run(["grep", "-nE", *(["-i"] if icase else []), pattern, str(f)], capture_output=True,
                           env=dict(os.environ, LC_ALL="C"))
        assert r.returncode in (0, 1) and not r.stderr, (pattern, r.stderr)
        expected = [int(line.split(b":", 1)[0]) for line in r.stdout.splitlines()]
        rx = compile_pattern(pattern, icase)
        assert [x[0] for x in search_file(rx, LiteralPlan(rx), data.encode(), 10**6)] == expected, (pattern, data)
        assert [x[0] for x in search_bytes(rx, data.encode(), 10**6)] == expected, (pattern, data)
        checked += 1
    assert checked == 300
