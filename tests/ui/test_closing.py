"""The console's timers may fire once more while it closes (Textual takes the screens down before it stops
the timers): each one then does nothing instead of raising."""
from tests.ui.support import connected
from tests.ui.test_console_pilot import SIZE, make_app


async def test_the_timers_firing_after_the_screens_are_gone_do_nothing(ui_env):
    app = make_app(ui_env)
    async with app.run_test(size=SIZE) as pilot:
        await connected(pilot, app)
    assert not app.screen_stack  # what the timers see in the window between the two steps
    app.clock()
    app.logs.follow()
    app.changed()
    app.refresh_now()

