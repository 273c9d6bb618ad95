"""Connecting through a real OpenSSH sshd: host key dialogs, changed-key refusal, passphrase, failures."""

import subprocess
import sys
from pathlib import Path

import pytest

from spectui.core.profiles import load_profiles
from spectui.core.session import HostTarget
from spectui.core.transport.ssh import SshOptions
from spectui.ui.app import SpectuiApp
from spectui.ui.screens.connecting import ConnectingScreen
from spectui.ui.screens.dialogs import FailureScreen, HostKeyChangedScreen, HostKeyScreen, PassphraseScreen
from tests.support.sshd import free_port
from tests.ui.support import connected, wait_for

pytestmark = pytest.mark.sshd


def ssh_target(sshd, ui_env, *, identity=None, known_hosts=None, dest=None):
    opts = SshOptions(config_file=str(sshd.ssh_config), identity_files=[str(identity or sshd.client_key)],
                      known_hosts=str(known_hosts or (ui_env.tmp / "known_hosts")))
    return HostTarget(kind="ssh", destination=dest or sshd.dest, ssh=opts, python=sys.executable, simulated=True,
                      state_dir=str(ui_env.state))


def console(target):
    return SpectuiApp(target, library=load_profiles(), traffic=False)


async def test_unknown_host_key_trust_once_connects_without_saving(sshd, ui_env):
    known = ui_env.tmp / "known_hosts"
    app = console(ssh_target(sshd, ui_env, known_hosts=known))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, HostKeyScreen) and app.screen.query("#fingerprint"), 30,
                       "the host key dialog")
        shown = str(app.screen.query_one("#fingerprint").render())
        assert sshd.host_fingerprint in shown
        await pilot.press("o")
        await connected(pilot, app)
        assert app.target.ssh.trusted_fingerprints == frozenset({sshd.host_fingerprint})
        assert not known.exists() or sshd.host_fingerprint not in known.read_text()
        assert not known.exists() or known.read_text().strip() == ""
        assert "ssh" == app.link.target.kind and app.link.facts["simulated"]
        await app.link.close()


async def test_unknown_host_key_trust_and_save_writes_known_hosts(sshd, ui_env):
    known = ui_env.tmp / "known_hosts"
    app = console(ssh_target(sshd, ui_env, known_hosts=known))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, HostKeyScreen), 30, "the host key dialog")
        await pilot.press("s")
        await connected(pilot, app)
        key = Path(str(sshd.host_key) + ".pub").read_text().split()[1]
        assert f"[127.0.0.1]:{sshd.port}" in known.read_text() and key in known.read_text()
        await app.link.close()


async def test_unknown_host_key_quit(sshd, ui_env):
    app = console(ssh_target(sshd, ui_env))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, HostKeyScreen), 30, "the host key dialog")
        await pilot.press("q")
        await wait_for(pilot, lambda: app.return_code is not None, 10, "the app to exit")
    assert app.return_code == 1 and (app.link is None or not app.link.connected)


async def test_changed_host_key_is_refused_with_no_way_past(sshd, ui_env):
    known = ui_env.tmp / "known_hosts"
    other = (Path(str(sshd.other_key) + ".pub")).read_text().split()
    known.write_text(f"[127.0.0.1]:{sshd.port} {other[0]} {other[1]}\n")
    app = console(ssh_target(sshd, ui_env, known_hosts=known))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, HostKeyChangedScreen) and app.screen.query("#fingerprint"),
                       30, "the refusal")
        screen = app.screen
        assert sshd.host_fingerprint in str(screen.query_one("#fingerprint").render())
        for key in ("o", "s", "y", "r", "t", "1", "ctrl+p"):
            await pilot.press(key)
            await pilot.pause(0.1)
        assert app.screen is screen and app.return_code is None
        assert app.link is not None and not app.link.connected
        await pilot.press("q")
        await wait_for(pilot, lambda: app.return_code is not None, 10, "the app to exit")
    assert app.return_code == 1
    assert app.exit_note.startswith("spectui: The host key of") and "CHANGED" in app.exit_note
    assert known.read_text().split()[2] == other[1]  # known_hosts untouched


async def test_encrypted_key_asks_for_its_passphrase(sshd, ui_env):
    key = ui_env.tmp / "id_locked"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "s3cret", "-f", str(key)], check=True)
    auth = sshd.root / "authorized_keys"
    original = auth.read_text()
    auth.write_text(original + (ui_env.tmp / "id_locked.pub").read_text())
    sshd.trust_host_key()
    try:
        app = console(ssh_target(sshd, ui_env, identity=key, known_hosts=sshd.known_hosts))
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_for(pilot, lambda: isinstance(app.screen, PassphraseScreen), 30, "the passphrase prompt")
            await pilot.press(*"s3cret")
            await pilot.press("enter")
            await connected(pilot, app)
            assert app.target.ssh.passphrase == "s3cret"
            await app.link.close()
    finally:
        auth.write_text(original)


async def test_refused_connection_offers_retry_and_quit(ui_env, sshd):
    port = free_port()
    app = console(ssh_target(sshd, ui_env, dest=f"127.0.0.1:{port}"))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, FailureScreen) and app.screen.query("#failure-message"),
                       30, "the failure screen")
        first = app.screen
        assert "refused" in str(first.query_one("#failure-message").render())
        assert first.query_one(".dialog-title").render().plain == f"Cannot reach 127.0.0.1:{port}"
        await pilot.press("r")
        await wait_for(pilot, lambda: isinstance(app.screen, FailureScreen) and app.screen is not first, 30,
                       "a second attempt")
        assert any(isinstance(s, ConnectingScreen) for s in app.screen_stack)
        await pilot.press("q")
        await wait_for(pilot, lambda: app.return_code is not None, 10, "the app to exit")
    assert app.return_code == 1
    assert app.exit_note.startswith("spectui: ") and "refused" in app.exit_note  # said again after the app
