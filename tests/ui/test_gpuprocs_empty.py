"""The GPU process screen (``g``) on a host where no GPU runs a process: every GPU says so, and the console
goes on (no crash while sizing the server column of an empty list)."""

from __future__ import annotations

from spectui.ui.screens.gpuprocs import GpuProcsScreen
from tests.ui.support import connected, wait_for
from tests.ui.test_console_pilot import SIZE, make_app


async def test_g_with_no_process_on_any_gpu(ui_env):
    app = make_app(ui_env)
    async with app.run_test(size=SIZE) as pilot:
        await connected(pilot, app)
        gpus = app.link.gpu.gpus
        assert gpus and all(g.processes == () for g in gpus)   # a fresh demo host: nothing runs on its GPUs
        await pilot.press("g")
        await wait_for(pilot, lambda: isinstance(app.screen, GpuProcsScreen), 5, "the GPU process screen")
        panel = app.screen.panel
        await wait_for(pilot, lambda: panel.text.count("no processes") == len(gpus), 10, "every GPU's line")
        lines = panel.text.splitlines()
        for g in gpus:
            at = lines.index(next(line for line in lines if line.startswith(f"GPU {g.index} ")))
            assert lines[at + 1].strip() == "no processes"
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is app.dashboard, 5, "the dashboard")
    assert app.return_code in (None, 0)
