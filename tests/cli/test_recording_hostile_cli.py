"""`spectui recording info|export` and `spectui replay` on hostile files, run as the user runs them (a
subprocess): a size bomb is refused in bounded memory and time, a file that lies is one sentence, escapes in
host, server and rule names are shown and not obeyed, exports never follow a link nor overwrite without
--force, CSV cells cannot start a formula, and OpenMetrics text carries no NaN or infinity."""

from __future__ import annotations

import csv
import gzip
import json
import os
import resource
import stat
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families

from spectui.core import recording
from spectui.core.recording import FORMAT, VERSION

ROOT = Path(__file__).resolve().parents[2]
ADDRESS_SPACE = 1 << 30   # 1 GB: spectui's own footprint fits many times over; the inflated bomb does not
ESCAPES = ("\x1b]0;owned\x07", "\x1b[2J", "\x1b]52;c;ZWNobyBwd25lZA==\x07")


def spectui(*args: str, limit_memory: bool = False, timeout: float = 300) -> subprocess.CompletedProcess:
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))
    return subprocess.run([sys.executable, "-m", "spectui", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=timeout, preexec_fn=limit if limit_memory else None,
                          env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})


def one_sentence(result: subprocess.CompletedProcess, code: int = 1) -> str:
    assert result.returncode == code, (result.returncode, result.stderr[-2000:])
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("spectui: ") and lines[0].endswith("."), result.stderr
    return lines[0]


def header(**changes) -> dict:
    h = {"format": FORMAT, "version": VERSION, "spectui": "0.2.0", "started": 1_764_496_800.0,
         "host": {"hostname": "gpu-box"}, "target": "root@gpu-box", "profiles": []}
    h.update(changes)
    return h


SESSION = {"t": 0.5, "ev": "session", "d": {"facts": {"hostname": "gpu-box"}, "servers": []}}


def write(path: Path, *lines) -> Path:
    raw = b"".join((x if isinstance(x, str) else json.dumps(x)).encode() + b"\n" for x in lines)
    path.write_bytes(gzip.compress(raw))
    return path


def frame(name: str, t: float, value: float) -> dict:
    return {"t": t, "ev": "server_frame", "d": {"name": name, "seq": int(t), "running_req": 1,
                                                "accept_length": {"value": value, "source": "metrics-counters"}}}


def repeated_gzip(head: bytes, block: bytes, count: int) -> bytes:
    """A gzip file of ``head`` then ``block`` ``count`` times, compressed once: after a full flush the
    compressor starts afresh, so each copy of the block compresses to the same bytes (CRC and size are
    those of the whole)."""
    co = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    out = [b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff", co.compress(head), co.flush(zlib.Z_FULL_FLUSH)]
    once = co.compress(block) + co.flush(zlib.Z_FULL_FLUSH)
    crc = zlib.crc32(head)
    for _ in range(count):
        crc = zlib.crc32(block, crc)
    out += [once * count, co.flush(), struct.pack("<II", crc, (len(head) + len(block) * count) & 0xFFFFFFFF)]
    return b"".join(out)


def test_repeated_gzip_is_the_data_it_says():
    head, block = b"head\n", b'{"t": 1}\n' * 1000
    assert gzip.decompress(repeated_gzip(head, block, 5)) == head + block * 5


def test_a_size_bomb_is_refused_in_bounded_memory_and_time(tmp_path):
    path = tmp_path / "bomb.spectui.gz"
    line = json.dumps({"t": 1.0, "ev": "gpu", "d": {"seq": 1, "gpus": [{"index": 0, "util_pct": 50.0}]}}).encode()
    block = (line + b"\n") * 20_000
    path.write_bytes(repeated_gzip(json.dumps(header()).encode() + b"\n" + json.dumps(SESSION).encode() + b"\n",
                                   block, recording.MAX_INFLATED_BYTES // len(block) + 2))
    assert path.stat().st_size * 200 < recording.MAX_INFLATED_BYTES   # it lies about its size
    for command in (["recording", "info"], ["recording", "export", "--format", "json", "-o",
                                             str(tmp_path / "out.json")], ["replay"]):
        said = one_sentence(spectui(*command, str(path), limit_memory=True))
        assert "more than" in said, said
    assert not (tmp_path / "out.json").exists()


LIES = [
    (header(version=0), SESSION),
    (header(version="1"), SESSION),
    (header(started="abc"), SESSION),
    (header(started=1e300), SESSION),
    (header(host=["gpu-box"]), SESSION),
    (header(), '["gpu", 1]'),
    (header(), {"ev": "gpu", "d": {}}),
    (header(), {"t": "abc", "ev": "gpu", "d": {}}),
    (header(), {"t": 1, "ev": "alert", "d": {"kind": "fired", "rule": ["r"], "message": "m"}}),
    (header(), {"t": 1, "ev": "session", "d": {"facts": "gpu-box", "servers": []}}),
    (header(), {"t": 1, "ev": "gpu", "d": {"gpus": ["GPU-0"]}}),
]


@pytest.mark.parametrize("lines", LIES, ids=[str(i) for i in range(len(LIES))])
def test_a_file_that_lies_is_one_sentence_naming_the_line(tmp_path, lines):
    path = write(tmp_path / "lie.spectui.gz", *lines)
    line = "line 1" if lines[1] is SESSION else "line 2"
    for command in (["recording", "info"], ["recording", "export", "--format", "csv", "-o", str(tmp_path / "csv")],
                    ["replay"]):
        said = one_sentence(spectui(*command, str(path)))
        assert f"{path}, {line}" in said, said


def test_a_replay_without_a_session_says_so_and_exits(tmp_path):
    path = write(tmp_path / "nosession.spectui.gz", header(), {"t": 1, "ev": "gpu", "d": {"gpus": []}})
    said = one_sentence(spectui("replay", str(path)))
    assert "holds no session" in said and "nothing to replay" in said


def test_info_shows_escapes_and_obeys_none(tmp_path):
    evil_host, evil_server, evil_rule = (f"box{ESCAPES[0]}", f"srv{ESCAPES[1]}", f"rule{ESCAPES[2]}")
    path = write(tmp_path / "esc.spectui.gz", header(host={"hostname": evil_host}, spectui=f"9{ESCAPES[1]}"), SESSION,
                 frame(evil_server, 1.0, 2.0),
                 {"t": 2, "ev": "alert", "d": {"kind": "fired", "rule": evil_rule, "subject": evil_server,
                                               "message": "m"}})
    result = spectui("recording", "info", str(path))
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "\x1b" not in out and "\x07" not in out
    assert "box␛]0;owned␇" in out and "srv␛[2J" in out and "rule␛]52;c;" in out


def recorded(tmp_path: Path) -> Path:
    return write(tmp_path / "s.spectui.gz", header(), SESSION, frame("=HYPERLINK(\"http://x\",\"y\")", 1.0, 2.0),
                 frame("=HYPERLINK(\"http://x\",\"y\")", 2.0, 2.5), frame("@SUM(A1)", 3.0, 1.5),
                 {"t": 4.0, "ev": "gpu", "d": {"gpus": [{"index": 0, "util_pct": float("nan"),
                                                         "power_w": float("inf"), "mem_used_mib": 10.0}]}},
                 {"t": 5.0, "ev": "l_star", "d": {"server": "-1+1", "value": float("-inf"), "source": "measured"}},
                 {"t": 6.0, "ev": "l_star", "d": {"server": "+cmd", "value": 1.6, "source": "measured"}})


def test_csv_cells_never_start_a_formula(tmp_path):
    path = recorded(tmp_path)
    result = spectui("recording", "export", str(path), "--format", "csv", "-o", str(tmp_path / "csv"))
    assert result.returncode == 0, result.stderr
    cells = [cell for f in sorted((tmp_path / "csv").iterdir()) for row in csv.reader(f.open()) for cell in row]
    assert "'=HYPERLINK(\"http://x\",\"y\")" in cells and "'@SUM(A1)" in cells and "'+cmd" in cells
    assert not [c for c in cells if c[:1] in ("=", "+", "@") or (c.startswith("-") and not _number(c))]
    assert stat.S_IMODE((tmp_path / "csv").stat().st_mode) == 0o700
    assert {stat.S_IMODE(f.stat().st_mode) for f in (tmp_path / "csv").iterdir()} == {0o600}


def _number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


def test_openmetrics_has_no_nan_nor_infinity_and_parses(tmp_path):
    path = recorded(tmp_path)
    out = tmp_path / "s.om"
    result = spectui("recording", "export", str(path), "--format", "prometheus", "-o", str(out))
    assert result.returncode == 0, result.stderr
    text = out.read_text()
    families = {f.name: f for f in text_string_to_metric_families(text)}
    values = [s.value for f in families.values() for s in f.samples]
    assert values and all(v == v and abs(v) != float("inf") for v in values)
    assert [s.value for s in families["spectui_gpu_memory_used_bytes"].samples] == [10.0 * 1024 * 1024]
    assert "spectui_gpu_utilization_percent" not in families and "spectui_gpu_power_watts" not in families
    assert [s.labels["server"] for s in families["spectui_break_even_accept_length"].samples] == ["+cmd"]
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    doc = tmp_path / "s.json"
    assert spectui("recording", "export", str(path), "--format", "json", "-o", str(doc)).returncode == 0
    json.loads(doc.read_text(), parse_constant=lambda c: pytest.fail(f"{c} in the JSON export"))


@pytest.mark.parametrize("fmt", ["json", "prometheus"])
def test_export_never_follows_a_link_nor_overwrites_without_force(tmp_path, fmt):
    path = recorded(tmp_path)
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    link = tmp_path / "out"
    link.symlink_to(victim)
    said = one_sentence(spectui("recording", "export", str(path), "--format", fmt, "-o", str(link)))
    assert "exists" in said and "--force" in said
    assert victim.read_text() == "keep me" and link.is_symlink()
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "nowhere")
    one_sentence(spectui("recording", "export", str(path), "--format", fmt, "-o", str(dangling)))
    assert not (tmp_path / "nowhere").exists()
    result = spectui("recording", "export", str(path), "--format", fmt, "-o", str(link), "--force")
    assert result.returncode == 0, result.stderr
    assert victim.read_text() == "keep me"           # the link was replaced, its target untouched
    assert not link.is_symlink() and stat.S_IMODE(link.stat().st_mode) == 0o600


def test_csv_export_into_a_linked_folder_or_over_files_is_refused(tmp_path):
    path = recorded(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "linked").symlink_to(elsewhere)
    said = one_sentence(spectui("recording", "export", str(path), "--format", "csv", "-o", str(tmp_path / "linked")))
    assert "link" in said and not list(elsewhere.iterdir())
    out = tmp_path / "csv"
    assert spectui("recording", "export", str(path), "--format", "csv", "-o", str(out)).returncode == 0
    first = {f.name: f.read_text() for f in out.iterdir()}
    said = one_sentence(spectui("recording", "export", str(path), "--format", "csv", "-o", str(out)))
    assert "exists" in said and "--force" in said
    assert spectui("recording", "export", str(path), "--format", "csv", "-o", str(out), "--force").returncode == 0
    assert {f.name: f.read_text() for f in out.iterdir()} == first


def test_record_refuses_a_dangling_link(tmp_path):
    link = tmp_path / "session.spectui.gz"
    link.symlink_to(tmp_path / "created-later")
    said = one_sentence(spectui("demo", "--record", str(link)), code=2)
    assert "exists" in said and not (tmp_path / "created-later").exists()
