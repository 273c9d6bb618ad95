"""Reading how a server spectui did not start was launched: its flags, its systemd unit, and the
followers of its tmux pane and its journal."""

import os
import shutil
import subprocess
import sys
import time
import uuid

import pytest

from spectui.agent.servers import discover as sd
from spectui.agent.servers.external_logs import JournalMirror, MirrorFile, TmuxMirror, new_lines
from spectui.agent.servers.origin import journal_argv, systemd_unit


def test_launchers_and_flags_as_argparse_reads_them():
    # `sglang serve <model>` is `--model-path <model>` (sglang 0.5.23 wheel, sglang/cli/serve.py:62-65)
    got = sd.launcher(["/usr/bin/python3", "/usr/local/bin/sglang", "serve", "Qwen/Qwen3-8B", "--tp=4", "--po", "8000"])
    assert got[0] == "sglang serve"
    s = sd.settings(got[1])
    assert (s["model"], s["tp_size"], s["port"], s["host"]) == ("Qwen/Qwen3-8B", 4, 8000, "127.0.0.1")
    got = sd.launcher(["python", "-m", "sglang.launch_server", "--model", "m", "--host=0.0.0.0",
                       "--speculative-algo", "EAGLE", "--speculative-num-steps=5", "--speculative-eagle-topk", "4",
                       "--speculative-num-draft", "16", "--enable-metrics"])
    s = sd.settings(got[1])
    assert s["model"] == "m" and s["host"] == "0.0.0.0" and s["port"] == 30000 and s["metrics"] is True
    assert s["speculative"] == {"algorithm": "EAGLE", "num_steps": 5, "topk": 4, "draft_tokens": 16}
    # --enable-metrics-for-all-schedulers is another flag, and a prefix shorter than sglang accepts is not read
    s = sd.settings(["--enable-metrics-for-all-schedulers", "--p", "1"])
    assert s["metrics"] is False and s["port"] == 30000
    assert sd.launcher(["python", "-m", "sglang.bench_serving"]) is None
    assert sd.ext_name(30000, 5) == "ext-30000" and sd.ext_name(None, 5) == "ext-pid5"


# Line forms: "hierarchy-ID:controller-list:cgroup-path" (cgroups(7),
# https://man7.org/linux/man-pages/man7/cgroups.7.html, whose example is "5:cpuacct,cpu,cpuset:/daemons"),
# and "0::PATH" on cgroup v2 (https://docs.kernel.org/admin-guide/cgroup-v2.html, whose example is
# "0::/test-cgroup/test-cgroup-nested"); systemd's services sit in system.slice/NAME.service, a user's
# in user@UID.service/app.slice/NAME.service (https://www.freedesktop.org/software/systemd/man/latest/systemd.special.html).
@pytest.mark.parametrize("text, unit, user", [
    ("0::/system.slice/sglang.service\n", "sglang.service", False),
    ("12:pids:/system.slice/sglang.service\n5:cpuacct,cpu,cpuset:/daemons\n"
     "1:name=systemd:/system.slice/sglang.service\n", "sglang.service", False),
    ("0::/user.slice/user-1000.slice/user@1000.service/app.slice/sglang.service\n", "sglang.service", True),
    ("0::/user.slice/user-1000.slice/user@1000.service/init.scope\n", None, False),
    ("0::/user.slice/user-1000.slice/session-3.scope\n", None, False),
    ("0::/test-cgroup/test-cgroup-nested\n", None, False),
    ("5:cpuacct,cpu,cpuset:/daemons\n", None, False),
])
def test_systemd_unit_from_cgroup_lines(text, unit, user):
    assert systemd_unit(text) == (unit, user)


def test_journal_argv():
    assert journal_argv("sglang.service", False) == ["journalctl", "-f", "-n", "200", "-o", "cat", "-u",
                                                     "sglang.service"]
    assert journal_argv("sglang.service", True)[-2:] == ["--user-unit", "sglang.service"]


def test_journal_mirror_with_a_stand_in_journalctl(tmp_path, monkeypatch):
    """No systemd runs here: a stand-in ``journalctl`` placed first on PATH prints lines and records
    the arguments it was given; the mirror copies its lines."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    args_file = tmp_path / "args"
    script = bin_dir / "journalctl"
    script.write_text("#!%s\nimport sys, time\nopen(%r, 'w').write(' '.join(sys.argv[1:]))\n"
                      "for i in range(3):\n    print('line %%d' %% i, flush=True)\ntime.sleep(30)\n"
                      % (sys.executable, str(args_file)))
    script.chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir) + os.pathsep + os.environ["PATH"])
    out = tmp_path / "mirror.log"
    m = JournalMirror("sglang.service", False, str(out))
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and out.read_text().count("\n") < 3:
            time.sleep(0.05)
        assert out.read_text() == "line 0\nline 1\nline 2\n"
        assert args_file.read_text() == "-f -n 200 -o cat -u sglang.service"
    finally:
        m.close()
    assert m.proc.poll() is not None


def test_new_lines_aligns_a_scrolled_capture():
    seen = ["a1", "a2", "a3"]
    assert new_lines(seen, ["a2", "a3", "a4", "a5"]) == (["a4", "a5"], False)
    assert new_lines(seen, ["a1", "a2", "a3"]) == ([], False)
    # the last mirrored line was redrawn in place (a progress bar): its new text is new
    assert new_lines(["x", "load 10%"], ["x", "load 60%", "y"]) == (["load 60%", "y"], True)
    # scrolled past everything seen
    assert new_lines(seen, ["b1", "b2"]) == (["b1", "b2"], False)


def test_mirror_file_is_bounded(tmp_path):
    m = MirrorFile(str(tmp_path / "m.log"), max_bytes=100)
    for i in range(30):
        m.write_lines(["line %02d" % i])
    m.close()
    assert os.path.getsize(tmp_path / "m.log") <= 100 and os.path.getsize(tmp_path / "m.log.1") <= 100
    assert (tmp_path / "m.log").read_text().splitlines()[-1] == "line 29"


def test_tmux_mirror_of_a_scrolling_pane_loses_and_repeats_nothing(tmp_path):
    assert shutil.which("tmux"), "needs tmux (scripts/test installs it)"
    sock = str(tmp_path / ("tmux-%s" % uuid.uuid4().hex[:8]))
    # 300 numbered lines in bursts, in a pane with a 60-line history: it scrolls past its history many times
    prog = "import time\nfor i in range(300):\n    print('row %03d' % i, flush=True)\n    time.sleep(0.004)\n" \
           "time.sleep(60)\n"
    subprocess.run(["tmux", "-S", sock, "-f", "/dev/null", "new-session", "-d", "-x", "120", "-y", "20",
                    "sh", "-c", "tmux -S %s set -g history-limit 60; %s -c \"$0\"" % (sock, sys.executable), prog],
                   check=True)
    try:
        pane = subprocess.run(["tmux", "-S", sock, "list-panes", "-F", "#{pane_id}"], stdout=subprocess.PIPE,
                              check=True).stdout.decode().strip()
        path = tmp_path / "pane.log"
        m = TmuxMirror(sock, pane, str(path))
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            m.poll(force=True)
            if path.read_text().endswith("row 299\n"):
                break
            time.sleep(0.05)
        m.close()
        rows = [line for line in path.read_text().splitlines() if line.startswith("row")]
        assert rows == ["row %03d" % i for i in range(300)]
    finally:
        subprocess.run(["tmux", "-S", sock, "kill-server"], stderr=subprocess.DEVNULL)
