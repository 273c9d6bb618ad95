"""Hostile YAML is refused in one sentence naming the file and line, before any value is built:
alias bombs, runaway nesting, self-referring aliases, oversized files, and special files."""

import os
import threading
import time

import pytest

from spectui.core.profiles.errors import ProfileError
from spectui.core.profiles.loader import load_profiles
from spectui.core.profiles.yamlsource import MAX_DEPTH, MAX_FILE_BYTES, MAX_NODES, load_yaml, parse_yaml


def alias_bomb(levels: int) -> str:
    """``a0`` is a list of 9 scalars; each ``aN`` is a list of 9 aliases of ``aN-1``."""
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    for i in range(1, levels + 1):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]")
    return "\n".join(lines) + "\n"


def refusal(text: str, name: str = "bomb.yaml", within_s: float = 1.0) -> ProfileError:
    t0 = time.monotonic()
    with pytest.raises(ProfileError) as info:
        parse_yaml(text, name)
    assert time.monotonic() - t0 < within_s
    return info.value


def test_the_limits_are_far_above_any_shipped_profile():
    assert (MAX_FILE_BYTES, MAX_NODES, MAX_DEPTH) == (256 * 1024, 20_000, 64)


@pytest.mark.parametrize("levels", [4, 7, 8, 12])
def test_an_alias_bomb_under_a_kilobyte_is_refused_at_once(levels):
    text = alias_bomb(levels)
    assert len(text) < 1024
    err = refusal(text)
    # Expanded sizes: a0 = 10 nodes, a1 = 91, a2 = 820, a3 = 7381; the keys a0..a4 are 5 more.
    # After a4's first *a3 the document holds 8307 + 7381 = 15688 values; its second *a3
    # (line 5, column 15) takes it to 23069, past 20000.
    assert str(err) == ("bomb.yaml:5:15: the alias *a3 makes the YAML expand to more than 20000 values "
                        "(aliases repeated inside aliases); write the values out or drop the anchors")
    assert "\n" not in str(err)


def test_a_bomb_in_a_profile_folder_is_one_error_of_the_library(tmp_path):
    folder = tmp_path / "profiles"
    folder.mkdir()
    (folder / "ok.yaml").write_text("name: ok\nmodel: org/model\n")
    (folder / "lol.yaml").write_text(alias_bomb(8))
    t0 = time.monotonic()
    library = load_profiles([folder], layers=[])
    assert time.monotonic() - t0 < 2.0
    bombs = [e for e in library.errors if e.path == str(folder / "lol.yaml")]
    assert [(e.line, e.column) for e in bombs] == [(5, 15)]


def test_an_alias_inside_the_node_it_names_is_refused():
    err = refusal("a: &a [1, *a]\n", "self.yaml")
    assert str(err) == ("self.yaml:1:11: the alias *a refers to a node that contains it, which has no end; "
                        "point it at a complete node")


def test_brackets_nested_a_thousand_deep_are_refused_where_they_pass_the_limit():
    err = refusal("[" * 1000 + "]" * 1000 + "\n", "deep.yaml")
    # the 65th "[" opens level 65
    assert str(err) == ("deep.yaml:1:65: the YAML nests more than 64 levels deep here, where a profile or "
                        "preset needs a few; flatten it")


def test_nesting_built_from_aliases_counts_too():
    text = "a: &a " + "[" * 40 + "]" * 40 + "\n" + "b: " + "[" * 30 + "*a" + "]" * 30 + "\n"
    err = refusal(text, "deep.yaml")
    # the root map, 30 lists, then the 40 of *a: 71 levels; the alias is at line 2, column 3 + 30 + 1
    assert str(err) == ("deep.yaml:2:34: the alias *a nests the YAML more than 64 levels deep, where a "
                        "profile or preset needs a few; flatten it")


def test_many_plain_values_are_refused_at_the_one_past_the_limit():
    text = "[" + "1, " * 20_005 + "]\n"
    err = refusal(text, "big.yaml", within_s=10.0)  # linear work: PyYAML scans each of them
    # values 1..20000 fit; the 20001st starts at column 1 + 3 * 20000 + 1
    assert (err.line, err.column) == (1, 60_002)
    assert "holds more than 20000 values by this point" in err.message


def test_nesting_and_anchors_a_profile_uses_still_load():
    text = ("base: &base\n  tp-size: 8\n  mem-fraction-static: 0.85\n"
            "args:\n  <<: *base\n  speculative-num-steps: 3\n  list: [[1, 2], [3, [4, 5]]]\n")
    doc = parse_yaml(text, "fine.yaml")
    assert doc.data["args"] == {"tp-size": 8, "mem-fraction-static": 0.85, "speculative-num-steps": 3,
                                "list": [[1, 2], [3, [4, 5]]]}
    assert doc.where(("args", "speculative-num-steps")) == (6, 26)


def test_a_file_past_the_size_limit_is_refused_unread(tmp_path):
    big = tmp_path / "huge.yaml"
    big.write_bytes(b"# " + b"x" * (MAX_FILE_BYTES - 1) + b"\n")  # 256 KiB + 2 bytes of comment
    with pytest.raises(ProfileError) as info:
        load_yaml(big)
    assert str(info.value) == (f"{big}: the file holds 262146 bytes, more than the 262144 a profile or "
                               "preset may have; check that it is the right file")


def test_a_fifo_in_place_of_a_profile_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "pipe.yaml"
    os.mkfifo(fifo)
    result = []
    t = threading.Thread(target=lambda: result.append(_error_of(fifo)), daemon=True)
    t.start()
    t.join(5)
    if t.is_alive():  # let the blocked open return before failing
        with open(fifo, "wb"):
            pass
        t.join(5)
        pytest.fail("reading a FIFO as a profile blocked")
    assert result == [f"{fifo}: this is not a regular file; point at a YAML file"]


def _error_of(path):
    try:
        load_yaml(path)
    except ProfileError as exc:
        return str(exc)
    return None
