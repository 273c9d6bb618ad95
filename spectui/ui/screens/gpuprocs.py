"""The GPU process screen (``g``): the header, then each GPU's processes as nvitop lists them.

The app hands it the header and the process list at each refresh (:meth:`GpuProcsScreen.show`),
as it does the dashboard's panels; paused (``z``), only the header moves on.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Footer

from spectui.ui import keys
from spectui.ui.gpu_processes import GpuProcessesView
from spectui.ui.views import HeaderView
from spectui.ui.widgets.gpuprocs import GpuProcsPanel
from spectui.ui.widgets.header import HeaderBar


class GpuProcsScreen(Screen):
    BINDINGS = keys.GPU_PROCESSES

    def __init__(self) -> None:
        super().__init__(id="gpu-processes")

    def compose(self) -> ComposeResult:
        yield HeaderBar(id="procs-header")
        yield GpuProcsPanel(id="gpuprocs", classes="panel")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(GpuProcsPanel).focus()
        self.app.refresh_now()

    @property
    def panel(self) -> GpuProcsPanel:
        return self.query_one(GpuProcsPanel)

    def show(self, header: HeaderView, procs: GpuProcessesView | None) -> None:
        """The header each refresh; the process list unless the display is paused (None)."""
        if not self.is_mounted:
            return
        self.query_one(HeaderBar).show(header)
        if procs is not None:
            self.panel.show(procs)

    def action_pause(self) -> None:
        self.app.toggle_pause()

    def action_close(self) -> None:
        self.dismiss()
