"""The header row (host, GPUs and their interconnect, SGLang, connection, latency, GPU telemetry rate,
paused, demo traffic, the demo's moved ports, what blocks the keys) and the banner row (a lost
connection, else work going on)."""

from __future__ import annotations

from spectui.ui.draw import Row, Styles
from spectui.ui.views import BannerView, HeaderView
from spectui.ui.widgets.base import LinePanel

STATE_MARK = {"connected": "●", "connecting": "◌", "reconnecting": "◌", "closed": "○", "replaying": "▶",
              "paused": "Ⅱ", "end": "■"}  # the last three: a replay's (its banner says the same)


def _gpus(view: HeaderView, st: Styles, *, interconnect: bool, model: bool = True) -> list[tuple[str, object]] | None:
    if interconnect and view.interconnect:
        return [(view.interconnect, st.text)]
    if view.gpu_count and not model:
        return [(f"{view.gpu_count} GPU" + ("s" if view.gpu_count > 1 else ""), st.text)]
    if view.gpu_count:
        name = (view.gpu_model or "GPU").replace("NVIDIA ", "")
        return [(f"{view.gpu_count}× {name}", st.text)]
    if view.link_state == "connected":
        return [("no GPUs seen", st.dim)]
    return None


def header_row(view: HeaderView | None, st: Styles, *, rtt: bool = True, simulated: str = " (simulated)",
               interconnect: bool = True, traffic: bool = True, state_word: bool = True, ports: str = "long",
               rate: bool = True, model: bool = True) -> Row:
    row = Row(" spectui ", st.title)
    if view is None:
        return row
    sep = (" │ ", st.dim)
    row.add(*sep).add(view.host, st.bold)
    gpus = _gpus(view, st, interconnect=interconnect, model=model)
    if gpus:
        row.add(*sep)
        for text, style in gpus:
            row.add(text, style)
    row.add(*sep)
    if view.sglang:
        row.add(f"SGLang {view.sglang}", st.text)
    else:
        row.add(view.sglang_note or "SGLang …", st.dim)
    if view.simulated and simulated:
        row.add(simulated, st.dim)
    style = {"connected": st.ok, "reconnecting": st.warn, "closed": st.dim, "replaying": st.accent, "paused": st.warn,
             "end": st.dim}.get(
        view.link_state, st.info)
    quiet = view.link_state == "connected" and view.reply_age_s is None
    if state_word or not quiet:
        row.add(*sep)
        mark = STATE_MARK.get(view.link_state, '?')
        row.add(f"{mark} {view.link_state}" if state_word or view.link_state != "connected" else mark, style)
    # else: connected and answering: the last thing to give way, mark and separator together (never a bare mark)
    if view.link_state == "connected" and view.reply_age_s is not None:
        row.add(f" last reply {view.reply_age_s} s ago", st.warn)  # stays when the row is short: it is news
    elif rtt and view.rtt_ms is not None and view.link_state == "connected":
        row.add(f" {view.rtt_ms:.1f} ms", st.dim)
    if rate and view.telemetry_hz:
        row.add(f" · GPU {view.telemetry_hz:g} Hz", st.dim)
    if view.paused:
        row.add(*sep).add("paused", st.warn)  # stays when the row is short: the panels hold still
    if view.recording:
        row.add(*sep).add(f"● {view.recording}", st.bad)  # stays: what is written to disk is news
    if traffic and view.traffic is not None:
        if view.traffic_paused:
            row.add(*sep).add("traffic paused", st.warn)
        elif view.traffic and view.traffic_note:  # on, but the host sends nothing: why, not "traffic on"
            row.add(*sep).add(view.traffic_note, st.warn)
        else:
            on = "traffic on" + (f" ×{view.traffic_streams}" if view.traffic_streams else "")
            row.add(*sep).add(on if view.traffic else "traffic off", st.accent if view.traffic else st.dim)
    ports_note = {"long": view.ports_note, "short": view.ports_short}.get(ports)
    if ports_note:
        row.add(*sep).add(ports_note, st.warn)
    if view.busy:
        row.add(*sep).add(view.busy, st.warn)
    return row


# What gives way first when the row does not fit: the round trip, "(simulated)" shortens to "(sim)",
# the GPU telemetry rate, then the demo's moved ports shorten to the ports used, the interconnect
# goes (the GPU count and model stay), the GPU model goes ("8 GPUs"), then the traffic mark and the
# moved ports. The state word "connected" goes last, with its mark and separator (a lost or
# replayed connection keeps its word; "last reply N s ago" stays). What is busy, and "paused", stay.
_LEAN = {"rtt": False, "simulated": " (sim)", "rate": False}
_BARE = dict(_LEAN, interconnect=False, model=False, ports="short")
SHORTER = (
    {},
    {"rtt": False},
    {"rtt": False, "simulated": " (sim)"},
    _LEAN,
    dict(_LEAN, ports="short"),
    dict(_LEAN, interconnect=False, ports="short"),
    _BARE,
    dict(_BARE, traffic=False),
    dict(_BARE, traffic=False, ports=""),
    dict(_BARE, traffic=False, ports="", simulated=""),
    dict(_BARE, traffic=False, ports="", simulated="", state_word=False),
)


class HeaderBar(LinePanel):
    DEFAULT_CSS = "HeaderBar { height: 1; overflow-y: hidden; }"

    def draw(self, view: HeaderView | None, width: int, st: Styles) -> list[Row]:
        row = Row()
        for options in SHORTER:
            row = header_row(view, st, **options)
            if row.width <= width:
                break
        return [row]


class Banner(LinePanel):
    """An alert (connection lost, reconnecting in N s), or work going on (a benchmark's progress, a
    probe, a fetch); hidden when there is none. A sentence longer than the row wraps onto the rows
    it needs: never cut."""

    DEFAULT_CSS = "Banner { height: auto; overflow-y: hidden; display: none; }"

    def show(self, view: BannerView | None, *, force: bool = False) -> bool:
        self.display = bool(view and view.text)
        self.set_class(bool(view and view.level == "info"), "info")
        return super().show(view, force=force)

    def draw(self, view: BannerView | None, width: int, st: Styles) -> list[Row]:
        if view is None or not view.text:
            return []
        if view.level == "info":
            return [Row(" ▸ " + view.text, st.bold)]
        style = {"error": st.bad}.get(view.level, st.warn)
        return [Row(" ⚠ " + view.text, style)]
