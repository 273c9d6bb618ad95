"""The agent serves files under its roots only, regular files only, and never hangs on a special one."""

import asyncio
import os

import pytest

from spectui.core.source import SourceError


@pytest.fixture
def tree(tmp_path):
    """A small package, plus a secret beside it and every trap the browser must refuse."""
    root = tmp_path / "sglang"
    spec = root / "srt" / "speculative"
    spec.mkdir(parents=True)
    (root / "__init__.py").write_text("")
    (root / "version.py").write_text('__version__ = "9.9.9"\n')
    (spec / "spec_info.py").write_text("class SpeculativeAlgorithm:\n    NGRAM = 1\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("TOPSECRET needle\n")
    (spec / "leak.txt").symlink_to(outside / "secret.txt")
    (spec / "leakdir").symlink_to(outside, target_is_directory=True)
    (spec / "zero").symlink_to("/dev/zero")
    (spec / "inside_link.py").symlink_to(spec / "spec_info.py")
    os.mkfifo(spec / "pipe")
    return root


async def refused(coro, *words):
    with pytest.raises(SourceError) as info:
        await asyncio.wait_for(coro, 10)  # a hang would be a failure, not a wait
    msg = str(info.value)
    for w in words:
        assert w in msg, msg
    assert "\n" not in msg and msg.endswith(".")
    return msg


async def test_dotdot_is_refused_even_when_it_stays_inside(open_tree, tree):
    b = await open_tree(tree)
    await refused(b.read("../outside/secret.txt"), "may not contain '..'")
    await refused(b.read("srt/../srt/speculative/spec_info.py"), "may not contain '..'")
    await refused(b.tree("srt/.."), "may not contain '..'")
    await refused(b.grep("needle", path=".."), "may not contain '..'")


async def test_absolute_paths_elsewhere_are_refused(open_tree, tree):
    b = await open_tree(tree)
    await refused(b.read("/etc/passwd"), "/etc/passwd is outside the source roots", str(tree))
    await refused(b.read(str(tree.parent / "outside" / "secret.txt")), "outside the source roots")
    page = await b.read(str(tree / "srt" / "speculative" / "spec_info.py"))  # absolute, but inside
    assert page.lines[0] == "class SpeculativeAlgorithm:" and page.path == "srt/speculative/spec_info.py"


async def test_symlinks_leading_outside_are_refused(open_tree, tree):
    b = await open_tree(tree)
    await refused(b.read("srt/speculative/leak.txt"), "leads outside the source roots through a symlink",
                  str(tree.parent / "outside" / "secret.txt"))
    await refused(b.read("srt/speculative/leakdir/secret.txt"), "leads outside")
    await refused(b.tree("srt/speculative/leakdir"), "leads outside")
    await refused(b.read("srt/speculative/zero"), "leads outside", "/dev/zero")
    inside = await b.read("srt/speculative/inside_link.py")  # a link that stays inside is fine
    assert inside.lines[1] == "    NGRAM = 1"
    listing = {e.name: e for e in (await b.tree()).entries}
    assert listing["leak.txt"].kind == "outside" and listing["leakdir"].kind == "outside"
    assert listing["zero"].kind == "outside"
    assert listing["inside_link.py"].kind == "file" and listing["inside_link.py"].link
    assert listing["pipe"].kind == "special" and listing["pipe"].what == "named pipe (FIFO)"
    # search never follows links out: the secret's needle is not found
    r = await b.grep("needle|NGRAM")
    assert {h.path for h in r.hits} == {"srt/speculative/spec_info.py"}


async def test_fifo_is_refused_without_hanging(open_tree, tree):
    b = await open_tree(tree)
    await refused(b.read("srt/speculative/pipe"), "named pipe (FIFO), not a regular file")
    r = await asyncio.wait_for(b.grep("anything"), 10)  # the walk passes the FIFO by
    assert r.hits == [] and r.files_scanned >= 3


async def test_a_fifo_where_the_version_file_should_be_does_not_hang_opening(open_tree, tmp_path):
    root = tmp_path / "sglang"
    (root / "srt").mkdir(parents=True)
    (root / "__init__.py").write_text("")
    os.mkfifo(root / "version.py")
    os.mkfifo(root / "_version.py")
    b = await asyncio.wait_for(open_tree(root), 10)
    assert b.info.version is None and b.info.package == ""


async def test_devices_in_a_configured_root_are_refused(open_tree, tree):
    """With /dev itself configured as a root, /dev/zero passes confinement: the file type check stops it."""
    b = await open_tree(tree, roots=["/dev"])
    await refused(b.read("/dev/zero"), "/dev/zero is a character device, not a regular file")
    await refused(b.read("/dev/null"), "character device")
    # and through a symlink inside the package, now leading into a root
    await refused(b.read("srt/speculative/zero"), "character device")


async def test_huge_file_is_truncated_with_a_note(open_tree, tree):
    line = "x = 1  # " + "y" * 90 + "\n"  # 100 bytes
    (tree / "srt" / "huge.py").write_text(line * 60_000)  # 6,000,000 bytes, over the 4 MiB cap
    b = await open_tree(tree)
    first = await b.read("srt/huge.py", 1, 1000)
    assert first.truncated and first.size == 6_000_000
    assert first.note == "srt/huge.py is 5.7 MiB; only its first 4.0 MiB are shown (the viewer's cap)"
    assert first.total_lines == 4 * 1024 * 1024 // 100 and len(first.lines) == 1000 and not first.eof
    last = await b.read("srt/huge.py", first.total_lines - 5, 1000)  # lazily, page by page
    assert last.eof and last.end == first.total_lines and last.lines[-1] == line.rstrip("\n")


async def test_other_refusals_are_one_sentence(open_tree, tree):
    (tree / "srt" / "blob.bin").write_bytes(b"\x7fELF\x00\x01\x02" * 100)
    b = await open_tree(tree)
    await refused(b.read("srt/blob.bin"), "binary file")
    await refused(b.read("srt/missing.py"), "does not exist")
    await refused(b.read("srt"), "is a directory")
    await refused(b.read("srt/\x00x"), "NUL")
    await refused(b.grep("("), "not a valid regular expression")
    await refused(b.definition("not a name"), "is not a Python name")


async def test_roots_must_be_directories(demo_session, tmp_path):
    from spectui.core.source import open_browser

    with pytest.raises(SourceError, match=r"^The SGLang source root .*nope is not a directory on this host\.$"):
        await open_browser(demo_session, sglang_root=str(tmp_path / "nope"))


async def test_pages_stay_small_on_the_wire_even_for_non_ascii_text(open_tree, tree):
    import json

    (tree / "srt" / "wide.py").write_text(("# 推测解码 " * 20 + "\n") * 8000)  # ~2.4 MB of UTF-8
    b = await open_tree(tree)
    page = await b.read("srt/wide.py", 1, 5000)
    assert not page.eof and 100 < page.end < 5000
    assert len(json.dumps(list(page.lines))) < 700_000  # JSON escapes each of these characters
    rest = await b.read("srt/wide.py", page.end + 1, 5000)
    assert rest.start == page.end + 1 and rest.lines[0] == page.lines[0]


def test_cli_refusals_are_one_line_each(tree, cli_env, capsys):
    import json

    from spectui.cli.main import main

    base = ["source", "--demo", "--sglang-root", str(tree)]
    assert main([*base, "show", "../outside/secret.txt"]) == 1
    assert capsys.readouterr().err == "spectui: ../outside/secret.txt is refused: source paths may not contain '..'.\n"
    assert main([*base, "show", "srt/speculative/pipe"]) == 1
    assert capsys.readouterr().err == ("spectui: srt/speculative/pipe is a named pipe (FIFO), not a regular file; "
                                       "the source browser reads regular files only.\n")
    assert main([*base, "grep", "("]) == 1
    assert capsys.readouterr().err.startswith("spectui: '(' is not a valid regular expression: missing )")
    assert main([*base, "show", "/etc/passwd", "--json"]) == 1
    cap = capsys.readouterr()
    assert json.loads(cap.out)["error"] == {"kind": "SourceError",
                                            "message": f"/etc/passwd is outside the source roots ({tree})."}
    assert main([*base, "tree", "--json"]) == 0
    entries = {e["name"]: e for e in json.loads(capsys.readouterr().out)["entries"]}
    assert entries["leak.txt"]["kind"] == "outside" and entries["pipe"]["what"] == "named pipe (FIFO)"
