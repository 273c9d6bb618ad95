"""The console's start does the footer's work once: the dashboard's footer recomposes when the keys it shows
change while it is shown, not each time the dashboard's bindings are refreshed (under the connecting screen too);
it then shows the dashboard's keys as always."""

from __future__ import annotations

from textual.widgets import Footer

from spectui.core.profiles import load_profiles
from spectui.core.session import HostTarget
from spectui.ui.app import SpectuiApp
from spectui.ui.widgets.footer import KeyFooter
from tests.ui.support import connected, wait_for

# the recomposes a start may need: the keys once the dashboard shows, and once more where they change as it starts
MAX_START_RECOMPOSES = 2


def footer_line(app) -> str:
    footer = app.dashboard.query_one(KeyFooter)
    return " ".join(str(w.render()) for w in footer.query("FooterKey") if w.display)


async def test_the_footer_recomposes_at_most_twice_until_the_first_frame(ui_env, monkeypatch):
    recomposes = []
    recompose = Footer.recompose

    async def counted(self):
        if isinstance(self, KeyFooter):
            recomposes.append(self.screen.id)
        return await recompose(self)

    monkeypatch.setattr(Footer, "recompose", counted)
    app = SpectuiApp(HostTarget.demo(str(ui_env.state)), library=load_profiles(), traffic=False)
    async with app.run_test(size=(160, 50)) as pilot:
        await connected(pilot, app, timeout=120)
        gpus = app.dashboard.query_one("#gpus")
        await wait_for(pilot, lambda: app.refreshes > 0 and "GPUs" in (gpus.title_text or ""), 60, "the first frame")
        await wait_for(pilot, lambda: "Help" in footer_line(app) and "Quit" in footer_line(app), 30,
                       "the footer's keys")
        assert 1 <= len(recomposes) <= MAX_START_RECOMPOSES, recomposes

