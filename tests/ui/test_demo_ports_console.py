"""The demo with a taken profile port: the header says which port was taken and which is used (shorter where
the row is short, gone where even that does not fit), the profile starts on the port used, and reading the
profiles again keeps it."""

import socket

from spectui.core.demo_ports import plan_demo_ports
from spectui.core.profiles import load_profiles
from spectui.core.session import HostTarget
from spectui.ui.app import SpectuiApp
from spectui.ui.widgets.header import HeaderBar
from tests.ui.support import connected, server_state, wait_for


async def test_a_taken_port_is_noted_in_the_header_and_the_server_starts_on_the_port_used(ui_env):
    port = ui_env.ports["alpha"]
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", port))
        holder.listen()
        plan = plan_demo_ports(load_profiles(), state_dir=str(ui_env.state))
        used = plan.moved[port]
        app = SpectuiApp(HostTarget.demo(str(ui_env.state), ports=plan), library=plan.apply(load_profiles()),
                         traffic=False)
        async with app.run_test(size=(160, 40)) as pilot:
            await connected(pilot, app)
            view = app.build_views()["header"]
            assert view.ports_note == f"demo: port {port} taken, using {used}"
            bar = HeaderBar()
            wide = bar.draw(view, 160, app.draw_styles)[0].plain
            assert f"demo: port {port} taken, using {used}" in wide
            narrow = bar.draw(view, 100, app.draw_styles)[0].plain
            assert f"port {used}" in narrow and "taken" not in narrow and len(narrow) <= 100
            assert len(bar.draw(view, 80, app.draw_styles)[0].plain) <= 80  # where even that does not fit, it goes
            await pilot.press(str([p.name for p in app.profiles].index("alpha") + 1))
            await wait_for(pilot, lambda: server_state(app, "alpha") == "ready", 60, "alpha ready")
            assert app.link.servers["alpha"]["port"] == used
            app.reload_profiles()
            assert app.library.profiles["alpha"].port == used
            await pilot.press("q")
