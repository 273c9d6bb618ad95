"""`p` on a multi-node profile over real hosts: the console starts the probe's ranks on every node's host together,
confirms once with each node's GPUs, keeps node 0's result under the rank 0 host and shows its predicted L*; a
node that cannot run it is named, and the other is cancelled rather than left waiting. Two real OpenSSH sshd on
loopback, real (not simulated) agents, Gloo CPU ranks as the settings file's probe section asks (no GPUs here)."""

from __future__ import annotations

import json
import sys

import pytest

from spectui.core.history import HistoryStore
from spectui.core.profiles import load_profiles
from spectui.core.settings import load_settings
from spectui.ui.app import SpectuiApp
from spectui.ui.screens.confirm import ConfirmScreen
from tests.ui.support import notified, wait_for
from tests.ui.test_console_pilot import SIZE

pytestmark = [pytest.mark.sshd, pytest.mark.timeout(300)]



def write_duo(ui_env, first, second, *, name="duo", python=sys.executable):
    model = ui_env.tmp / "tiny-model"
    model.mkdir(exist_ok=True)
    (model / "config.json").write_text(json.dumps({"hidden_size": 512, "num_hidden_layers": 4,
                                                    "torch_dtype": "bfloat16"}))
    (ui_env.profiles / f"{name}.yaml").write_text(
        f"name: {name}\nmodel: {model}\npython: {python}\ngpus: [0, 1]\n"
        f"nodes:\n  - {{host: {first.user}@127.0.0.1, ssh-port: {first.port}}}\n"
        f"  - {{host: {second.user}@127.0.0.1, ssh-port: {second.port}}}\n"
        "args:\n  tp-size: 4\n  speculative-algorithm: EAGLE3\n"
        f"  speculative-draft-model-path: {model}\n  speculative-num-steps: 3\n  speculative-eagle-topk: 1\n"
        "  speculative-num-draft-tokens: 4\n")


def gloo_settings(ui_env):
    path = ui_env.tmp / "settings.yaml"
    path.write_text("probe:\n  backend: gloo\n  device: cpu\n")
    settings = load_settings(path)
    assert not settings.errors, [str(e) for e in settings.errors]
    return settings


async def highlight(pilot, app, name):
    await wait_for(pilot, lambda: all(h.link is not None and h.link.connected for h in app.hosts), 60, "both hosts")
    await pilot.press("enter")
    await wait_for(pilot, lambda: app.screen is app.dashboard, 5, "the dashboard")
    for _ in range(app.row_names().index(name)):
        await pilot.press("down")
    assert app.highlighted_name() == name


async def test_p_probes_across_two_real_sshd_nodes(ui_env, sshd, other_sshd, tmp_path):
    pytest.importorskip("torch")
    write_duo(ui_env, sshd, other_sshd)
    state2 = tmp_path / "other-state"
    state2.mkdir()
    targets = [sshd.host_target(ui_env.state, simulated=False), other_sshd.host_target(state2, simulated=False)]
    app = SpectuiApp(targets[0], hosts=[(t, load_profiles()) for t in targets], traffic=False,
                     settings=gloo_settings(ui_env))
    async with app.run_test(size=SIZE) as pilot:
        await highlight(pilot, app, "duo")
        await pilot.press("p")
        confirm = await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen) and app.screen, 10,
                                 "the confirmation")
        text = "\n".join(confirm.lines)
        assert "4 torch.distributed ranks (gloo on cpu, from the settings file's probe section) over 2 nodes, " \
               "2 on each" in text
        assert f"node 0 on {sshd.dest}: GPUs 0, 1 with {sys.executable}" in text
        assert f"node 1 on {other_sshd.dest}: GPUs 0, 1 with {sys.executable}" in text
        assert "The ranks meet at 127.0.0.1 on a port free there now" in text
        await pilot.press("y")
        await wait_for(pilot, lambda: "duo" in app.probe.probes, 240, "the probe across both nodes")
        rec = app.probe.probes["duo"]
        prov = rec["provenance"]
        assert prov["kind"] == "measured" and prov["nnodes"] == 2 and prov["world_size"] == 4
        assert prov["hosts"] == [sshd.dest, other_sshd.dest]
        assert rec["allreduce"]["combine"] == "slowest rank of all nodes per iteration"
        assert rec["profile_l_star"]["draft_tokens"] == 4 and rec["profile_l_star"]["verify_comm_ms"] > 0
        await wait_for(pilot, lambda: notified(app, f"saved as probe {rec['id']}"), 5, "the notification")
        # kept under the rank 0 host: a console on these hosts shows it again
        kept = HistoryStore().latest_probe(sshd.dest, "duo", app.library.get("duo").content_hash)
        assert kept["id"] == rec["id"]
        assert app.probe._worker is None and app.activities.get("probe") is None


async def test_a_node_that_cannot_run_the_probe_is_named_and_the_other_cancelled(ui_env, sshd, other_sshd, tmp_path):
    pytest.importorskip("torch")
    write_duo(ui_env, sshd, other_sshd)
    missing = str(tmp_path / "no-venv" / "bin" / "python")
    broken = tmp_path / "broken"      # node 1's copy of the profile names a Python that is not there
    broken.mkdir()
    (broken / "duo.yaml").write_text((ui_env.profiles / "duo.yaml").read_text()
                                     .replace(f"python: {sys.executable}", f"python: {missing}"))
    lib2 = load_profiles()
    lib2.profiles["duo"] = load_profiles([str(broken)]).get("duo")
    state2 = tmp_path / "other-state"
    state2.mkdir()
    targets = [sshd.host_target(ui_env.state, simulated=False), other_sshd.host_target(state2, simulated=False)]
    app = SpectuiApp(targets[0], hosts=[(targets[0], load_profiles()), (targets[1], lib2)], traffic=False,
                     settings=gloo_settings(ui_env))
    async with app.run_test(size=SIZE) as pilot:
        await highlight(pilot, app, "duo")
        await pilot.press("p")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), 10, "the confirmation")
        assert f"node 1 on {other_sshd.dest}: GPUs 0, 1 with {missing}" in "\n".join(app.screen.lines)
        await pilot.press("y")
        await wait_for(pilot, lambda: notified(app, "Probe duo across 2 nodes: "), 60, "the failure")
        assert notified(app, f"Probe duo across 2 nodes: node 1 ({other_sshd.dest}) failed: {missing} does not "
                             f"exist on the host; then node 0 ({sshd.dest}): the probe was cancelled")
        assert "duo" not in app.probe.probes and app.probe._worker is None
        # nothing is left running on node 0: a probe starts there again at once
        assert app.hosts[0].link.session is not None


async def test_p_on_a_node_not_connected_says_which(ui_env, sshd, other_sshd, tmp_path):
    write_duo(ui_env, sshd, other_sshd)
    state2 = tmp_path / "other-state"
    state2.mkdir()
    target = sshd.host_target(ui_env.state, simulated=False)
    app = SpectuiApp(target, library=load_profiles(), traffic=False, settings=gloo_settings(ui_env))
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.link is not None and app.link.connected, 60, "the host")
        for _ in range(app.row_names().index("duo")):
            await pilot.press("down")
        await pilot.press("p")
        await wait_for(pilot, lambda: notified(app, "A probe of duo starts ranks on each of its 2 nodes together: "),
                       10, "the sentence")
        assert notified(app, f"{other_sshd.user}@127.0.0.1 is not one of the hosts of this console")
        assert not isinstance(app.screen, ConfirmScreen) and app.probe._worker is None
