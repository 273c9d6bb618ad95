"""The alert rules on the simulated host, read through a real HostLink: n-gram acceptance collapsing when the
demo traffic's workload shifts fires accept_collapse (and below_break_even against the L* it had), the same
server under steady traffic fires nothing; a server whose forward passes slow down while requests queue fires
throughput_collapse; a crash fires server_down; a server that takes 99% of its GPUs' memory fires gpu_memory."""

from __future__ import annotations

import asyncio
import time

import pytest

from spectui.core.alerts import AlertConfig, AlertEngine, RuleConfig, inputs_from_link
from spectui.core.live import HostLink
from spectui.core.profiles import load_profiles
from spectui.core.session import HostTarget
from tests.support.sshd import free_port
from tests.core.test_live import wait_until

FAST = AlertConfig(rules={
    "below_break_even": RuleConfig(for_s=2.0),
    "accept_collapse": RuleConfig(for_s=2.0, ratio=0.6),
    "server_down": RuleConfig(for_s=0.0),
    "gpu_memory": RuleConfig(for_s=1.0, fraction=0.98),
    "throughput_collapse": RuleConfig(for_s=2.0, ratio=0.3),
})


@pytest.fixture
def profiles(tmp_path, monkeypatch):
    port = free_port()
    (tmp_path / "profiles").mkdir()
    common = f"model: sim/alerts\nport: {port}\ngpus: [0, 1]\n"
    (tmp_path / "profiles" / "ngram.yaml").write_text(
        f"name: ngram\n{common}args:\n  tp-size: 2\n  speculative-algorithm: NGRAM\n"
        "  speculative-num-draft-tokens: 8\nsim:\n  load-time: 0.3\n")
    (tmp_path / "profiles" / "crashes.yaml").write_text(
        f"name: crashes\n{common}args:\n  tp-size: 2\nsim:\n  load-time: 0.3\n  crash-after: 3\n")
    (tmp_path / "profiles" / "slows.yaml").write_text(
        f"name: slows\n{common}args:\n  tp-size: 2\n  speculative-algorithm: NGRAM\n"
        "  speculative-num-draft-tokens: 8\n  max-running-requests: 2\n"
        "sim:\n  load-time: 0.3\n  slow-after: 10\n  slow-factor: 6\n")
    (tmp_path / "profiles" / "greedy.yaml").write_text(
        f"name: greedy\n{common}args:\n  tp-size: 2\n  mem-fraction-static: 0.99\nsim:\n  load-time: 0.3\n")
    monkeypatch.setenv("SPECTUI_PROFILES_PATH", str(tmp_path / "profiles"))
    return load_profiles()


async def watch(state_dir, profile, seconds, *, traffic=None, l_star=None, until=None):
    """Serve ``profile`` on the demo host for ``seconds`` (or until ``until(changes)``), evaluating the rules
    on every link change; every change that happened, and the accept lengths seen."""
    link = HostLink(HostTarget.demo(str(state_dir)), gpu_interval_s=0.25, server_interval_s=0.25)
    engine = AlertEngine(FAST)
    task = asyncio.create_task(link.run())
    changes = []
    try:
        await wait_until(lambda: link.connected)
        await link.switch_to(profile)
        if traffic:
            await link.session.client.call("traffic.start", traffic)
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and not (until and until(changes)):
            await asyncio.sleep(0.25)
            stars = {profile.name: l_star(link)} if l_star and l_star(link) else None
            changes += engine.evaluate(time.monotonic(), inputs_from_link(link, stars))
        series = link.series.get(profile.name)
        accepts = [v for v in (series.accept_length.values() if series else []) if v == v]
    finally:
        if link.connected:   # whatever happened, nothing is left running
            await link.session.client.call("traffic.stop")
            await link.stop_all()
        await link.close()
        await asyncio.wait_for(task, 20)
    return changes, accepts


def fired(changes, rule):
    return [c for c in changes if c.kind == "fired" and c.alert.rule == rule]


async def test_a_workload_shift_fires_accept_collapse(state_dir, profiles):
    prof = profiles.get("ngram")
    reached = {}

    def l_star(link):   # the break-even the recurring job made look easy: its own accept length, once measured
        s = link.series.get(prof.name)
        if "v" not in reached and s is not None and len([v for v in s.accept_length.values() if v == v]) >= 30:
            reached["v"] = (0.9 * s.accept_length.latest() if s.accept_length.latest() else None, "measured")
        return reached.get("v") if reached.get("v") and reached["v"][0] else None

    changes, accepts = await watch(state_dir, prof, 90, l_star=l_star,
                                   traffic={"concurrency": 2, "scenario": "shift", "shift_after_s": 15},
                                   until=lambda ch: fired(ch, "accept_collapse") and fired(ch, "below_break_even"))
    (collapse,) = fired(changes, "accept_collapse")
    assert "accept length fell to" in collapse.alert.message
    assert fired(changes, "below_break_even")
    assert max(accepts[:40]) > 1.5 * min(accepts[-10:]), accepts


async def test_steady_traffic_fires_nothing(state_dir, profiles):
    changes, accepts = await watch(state_dir, profiles.get("ngram"), 30, traffic={"concurrency": 2, "seed": 5})
    assert len(accepts) > 40 and changes == []


async def test_a_throughput_collapse_while_requests_queue_fires_throughput_collapse(state_dir, profiles):
    # Two requests run at once and six wait; 10 s after ready (some 40 frames at 4 Hz, more than the rule's
    # 30 reference frames) every forward pass gets 6 times slower, as on a GPU that throttles its clocks.
    changes, _ = await watch(state_dir, profiles.get("slows"), 40, traffic={"concurrency": 8, "seed": 5},
                             until=lambda ch: fired(ch, "throughput_collapse"))
    (collapse,) = fired(changes, "throughput_collapse")
    assert collapse.alert.subject == "slows"
    assert "generation fell to" in collapse.alert.message and "requests queued" in collapse.alert.message
    assert [c.alert.rule for c in changes] == ["throughput_collapse"]   # nothing else: acceptance held


async def test_a_crash_fires_server_down(state_dir, profiles):
    changes, _ = await watch(state_dir, profiles.get("crashes"), 30, until=lambda ch: fired(ch, "server_down"))
    (down,) = fired(changes, "server_down")
    assert down.alert.message == "crashes is crashed."


async def test_a_server_holding_nearly_all_gpu_memory_fires_gpu_memory(state_dir, profiles):
    changes, _ = await watch(state_dir, profiles.get("greedy"), 30, until=lambda ch: len(fired(ch, "gpu_memory")) >= 2)
    subjects = sorted(c.alert.subject for c in fired(changes, "gpu_memory"))
    assert subjects == ["GPU 0", "GPU 1"]
