"""``p`` on a multi-node profile in the console: on two simulated hosts it probes on rank 0's host with the
node count (whichever host the dashboard shows) and says the result is across nodes; on real hosts it says in
one sentence when a node's host is not connected."""

import dataclasses
from types import SimpleNamespace

import pytest

from spectui.core.profiles import load_profiles
from spectui.core.session import HostTarget
from spectui.sim.hardware import cost_model
from spectui.ui.app import SpectuiApp
from spectui.ui.controllers.probe import ProbeController
from spectui.ui.fleet import FleetHost
from spectui.ui.screens.fleet import FleetScreen
from tests.support.sshd import free_port
from tests.ui.support import kill_recorded_servers, notified, wait_for

TWONODE = "twonode-kimi-eagle3"
SIZE = (160, 50)


@pytest.fixture
def console_env(tmp_path, monkeypatch):
    """The shipped profiles, private history and caches, and two demo hosts' state folders; servers killed at
    the end."""
    monkeypatch.delenv("SPECTUI_PROFILES_PATH", raising=False)
    for var, sub in (("SPECTUI_CONFIG_DIR", "config"),
                     ("SPECTUI_DATA_DIR", "data"), ("XDG_CACHE_HOME", "cache"), ("SPECTUI_DEMO_STATE", "host-1")):
        (tmp_path / sub).mkdir()
        monkeypatch.setenv(var, str(tmp_path / sub))
    (tmp_path / "host-2").mkdir()
    yield tmp_path
    for host in ("host-1", "host-2"):
        kill_recorded_servers(tmp_path / host)



@pytest.mark.timeout(180)
async def test_p_on_two_demo_hosts_probes_on_rank_0_with_the_node_count(console_env):
    first = load_profiles()
    second = dataclasses.replace(first, profiles={n: dataclasses.replace(p, port=free_port())
                                                  for n, p in first.profiles.items()})
    hosts = [(HostTarget.demo(str(console_env / "host-1"), name="demo-1"), first),
             (HostTarget.demo(str(console_env / "host-2"), name="demo-2"), second)]
    app = SpectuiApp(hosts[0][0], hosts=hosts, traffic=False)
    expected = cost_model("pcie-2x8gpu-100gbe", 16, 600.0, nnodes=2).break_even_accept_length("EAGLE3", 3, 1, 4)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, FleetScreen), 10, "the overview")
        await wait_for(pilot, lambda: all(r.state == "connected" for r in app.fleet_view(0).rows), 60, "both hosts")
        await pilot.press("down", "enter")  # the dashboard shows node 1's host
        await wait_for(pilot, lambda: app.screen is app.dashboard and app.current_host == 1, 10, "demo-2")
        app.highlight_row(TWONODE)
        assert app.highlighted_name() == TWONODE
        await pilot.press("p")
        await wait_for(pilot, lambda: TWONODE in app.probe.probes, 30, "the probe")
        rec = app.probe.probes[TWONODE]
        assert rec["host"] == "demo-1"  # rank 0's host
        assert rec["provenance"]["nnodes"] == 2 and rec["provenance"]["preset"] == "pcie-2x8gpu-100gbe"
        assert rec["profile_l_star"]["predicted"] == pytest.approx(expected)
        await wait_for(pilot, lambda: notified(app, f"{TWONODE}, TP16 over 2 nodes, 100 GbE (simulated): predicted "
                                                    f"L* {expected:.2f}"), 5, "the notification")
        assert notified(app, "all-reduce is between nodes") and notified(app, f"saved as probe {rec['id']}")
        # read back from the history under rank 0's host, as when the dashboard comes to this host again
        app.probe.probes.clear()
        app.probe._load_probes(app.link.session)  # read on a thread of its own
        await wait_for(pilot, lambda: TWONODE in app.probe.probes, 10, "the probe read back")
        assert app.probe.probes[TWONODE]["id"] == rec["id"]
        app.quit_console()
        await wait_for(pilot, lambda: app.exit_note is not None, 60, "quitting")


def test_p_on_real_hosts_waits_for_every_node_to_be_connected():
    library = load_profiles()
    profile = library.get(TWONODE)
    notes = []
    hosts = [FleetHost(HostTarget(kind="ssh", destination=node.host), library) for node in profile.nodes]
    app = SimpleNamespace(hosts=hosts, target=hosts[0].target, library=library, link=None,
                          notify=lambda message, **kw: notes.append((message, kw.get("severity"))))
    probe = ProbeController(app)
    probe._request_nodes_probe(profile)
    names = ", ".join(node.host for node in profile.nodes)
    assert notes == [(f"A probe of twonode-kimi-eagle3 needs all its 2 nodes connected, and {names} are not: wait "
                      "for them, then p again.", "warning")]
    assert probe._worker is None
