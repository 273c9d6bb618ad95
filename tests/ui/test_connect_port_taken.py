"""On a real host (`spectui connect`, here through a real OpenSSH sshd on loopback) a profile's port held by
another program stays where the profile says: the switch is refused with the host's sentence, no server
starts, and the header says nothing of moved ports (moving ports is the demo's alone)."""

import subprocess
import sys

import pytest

from spectui.ui.widgets.header import header_row
from tests.ui.support import connected, wait_for
from tests.ui.test_connect_dialogs import console, ssh_target

pytestmark = pytest.mark.sshd

HOLDER = ("import socket, sys\ns = socket.socket()\ns.bind(('127.0.0.1', int(sys.argv[1])))\ns.listen()\n"
          "print('listening', flush=True)\nsys.stdin.read()\n")


async def test_a_taken_port_on_a_real_host_refuses_the_switch_and_moves_nothing(sshd, ui_env):
    port = ui_env.ports["alpha"]
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(port)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "listening"
        sshd.trust_host_key()
        app = console(ssh_target(sshd, ui_env, known_hosts=sshd.known_hosts))
        async with app.run_test(size=(120, 40)) as pilot:
            await connected(pilot, app)
            assert app.target.kind == "ssh" and app.target.ports is None
            assert app.library.profiles["alpha"].port == port
            await pilot.press(str([p.name for p in app.profiles].index("alpha") + 1))
            await wait_for(pilot, lambda: "alpha" in app.host.switches.errors, 30, "the switch to be refused")
            assert app.host.switches.errors["alpha"] == (f"port {port} on the host is in use by a program spectui did "
                                                  "not start; stop it or set another port in the profile")
            assert "alpha" not in app.link.servers
            view = app.build_views()["header"]
            assert view.ports_note is None and view.ports_short is None
            assert "taken" not in header_row(view, app.draw_styles).plain
            assert holder.poll() is None  # the program holding the port was left alone
            await app.link.close()
    finally:
        holder.kill()
        holder.wait(timeout=10)
