"""The header row (host, GPUs, SGLang, connection, latency, demo traffic) and the banner row."""

from __future__ import annotations

from spectui.ui.draw import Row, Styles
from spectui.ui.views import BannerView, HeaderView
from spectui.ui.widgets.base import LinePanel

STATE_MARK = {"connected": "●", "connecting": "◌", "reconnecting": "◌", "closed": "○"}


class HeaderBar(LinePanel):
    DEFAULT_CSS = "HeaderBar { height: 1; overflow-y: hidden; }"

    def draw(self, view: HeaderView | None, width: int, st: Styles) -> list[Row]:
        row = Row(" spectui ", st.title)
        if view is None:
            return [row]
        sep = (" │ ", st.dim)
        row.add(*sep).add(view.host, st.bold)
        if view.gpu_count:
            model = (view.gpu_model or "GPU").replace("NVIDIA ", "")
            row.add(*sep).add(f"{view.gpu_count}× {model}", st.text)
        elif view.link_state == "connected":
            row.add(*sep).add("no GPUs seen", st.dim)
        row.add(*sep)
        if view.sglang:
            row.add(f"SGLang {view.sglang}", st.text)
        else:
            row.add("SGLang ?", st.dim)
        if view.simulated:
            row.add(" (simulated)", st.dim)
        row.add(*sep)
        style = {"connected": st.ok, "reconnecting": st.warn, "closed": st.dim}.get(view.link_state, st.info)
        row.add(f"{STATE_MARK.get(view.link_state, '?')} {view.link_state}", style)
        if view.rtt_ms is not None and view.link_state == "connected":
            row.add(f" {view.rtt_ms:.1f} ms", st.dim)
        if view.traffic is not None:
            row.add(*sep).add("traffic on" if view.traffic else "traffic off", st.accent if view.traffic else st.dim)
        if view.busy:
            row.add(*sep).add(view.busy, st.warn)
        return [row]


class Banner(LinePanel):
    """A one-line alert (connection lost, reconnecting in N s); hidden when there is none."""

    DEFAULT_CSS = "Banner { height: 1; overflow-y: hidden; display: none; }"

    def show(self, view: BannerView | None, *, force: bool = False) -> bool:
        self.display = bool(view and view.text)
        return super().show(view, force=force)

    def draw(self, view: BannerView | None, width: int, st: Styles) -> list[Row]:
        if view is None or not view.text:
            return []
        style = {"error": st.bad, "info": st.info}.get(view.level, st.warn)
        return [Row(" ⚠ " + view.text, style)]
