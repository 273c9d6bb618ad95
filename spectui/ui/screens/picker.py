"""Choosing a benchmark preset: the shipped ones and the user's, the default first."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from spectui.core.bench import Preset, PresetLibrary
from spectui.core.bench.presets import user_preset_dir
from spectui.core.cells import pad, width
from spectui.core.textsafe import visible_text
from spectui.ui import keys

DEFAULT_PRESET = "single-stream"


def ordered(library: PresetLibrary, first: str | None = None) -> list[Preset]:
    """``first`` (the last one chosen, else single-stream), then the others by name."""
    presets = sorted(library.presets.values(), key=lambda p: p.name)
    lead = first if first in library.presets else DEFAULT_PRESET
    return sorted(presets, key=lambda p: p.name != lead)


def is_users(preset: Preset) -> bool:
    try:
        return bool(preset.source) and str(user_preset_dir()) in str(preset.source)
    except Exception:
        return False


class PresetPicker(ModalScreen["Preset | None"]):
    BINDINGS = keys.PICKER

    def __init__(self, library: PresetLibrary, title: str, lines: list[str] | None = None, *,
                 first: str | None = None) -> None:
        super().__init__(id="preset-picker")
        self.library = library
        self.title_text = title
        self.lines = lines or []
        self.presets = ordered(library, first)

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Static(visible_text(self.title_text), classes="dialog-title", markup=False)
            for line in self.lines:
                yield Static(visible_text(line), markup=False)
            options = []
            name_w = max((width(p.name) for p in self.presets), default=8)
            for i, p in enumerate(self.presets):
                label = Text.assemble((pad(p.name, name_w), "bold"), "  ", (p.describe(), ""))
                if p.repeats:
                    label.append(f", {p.repeats} repeat{'s' if p.repeats != 1 else ''} in a comparison", style="dim")
                if is_users(p):
                    label.append("  (yours)", style="italic")
                options.append(Option(label, id=f"preset-{i}"))
            for j, err in enumerate(self.library.errors):
                options.append(Option(Text(str(err), style="red"), id=f"broken-{j}", disabled=True))
            if not self.presets:
                options.append(Option(Text("no presets found (spectui bench --list-presets shows where they are "
                                           "read from)", style="red"), id="none", disabled=True))
            yield OptionList(*options, id="presets")
            yield Static("enter: run it · escape: cancel · your own presets: "
                         f"{user_preset_dir()}/NAME.yaml", classes="dim", markup=False)

    def on_mount(self) -> None:
        box = self.query_one(OptionList)
        box.focus()
        if self.presets:
            box.highlighted = 0

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        oid = event.option.id or ""
        if oid.startswith("preset-"):
            self.dismiss(self.presets[int(oid.split("-", 1)[1])])

    def choose(self, name: str) -> bool:
        """Highlight a preset by name (the tests and the screenshots use it); False if there is none."""
        for i, p in enumerate(self.presets):
            if p.name == name:
                self.query_one(OptionList).highlighted = i
                return True
        return False

    def action_cancel(self) -> None:
        self.dismiss(None)
