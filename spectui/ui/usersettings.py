"""The settings file in the console: its theme and keymap applied at start, the theme saved on change, and the
panels' colours (the App's ``draw_styles``) following the theme.

The theme and the binding ids are known here (Textual's registered themes, ``spectui.ui.keys``), so
this is where they are checked; each problem is located in the file like the others
(:meth:`spectui.core.settings.Settings.error_at`) and shown once, as a notification.
"""

from __future__ import annotations

from spectui.core.settings import Settings, SettingsSaveError, save_theme
from spectui.ui import keys
from spectui.ui.draw import Styles


class SettingsInConsole:
    """Applies ``settings`` to ``app`` and saves its theme; does nothing without settings (tests, embedding)."""

    def __init__(self, app, settings: Settings | None) -> None:
        self.app = app
        self.settings = settings
        self.problems: list[str] = []
        self._saved_theme: str | None = None
        self.keymap: dict[str, str] = {}  # binding id -> keys, as the settings file's keymap set them
        self._save_failed = False

    def apply(self) -> None:
        """Set the theme and the keymap; notify the problems found in the file (if any). From now on the panels'
        colours follow the theme, and a theme the user picks is saved."""
        self._read_styles()
        self.app.theme_changed_signal.subscribe(self.app, lambda _theme: self._theme_changed(self.app.theme))
        s = self.settings
        if s is None:
            return
        problems = list(s.errors)
        if s.theme is not None:
            if s.theme in self.app.available_themes:
                self.app.theme = s.theme
            else:
                problems.append(s.error_at(("theme",), f"there is no theme '{s.theme}'; the palette's "
                                                        "Theme command (ctrl+p) lists them and saves the one you pick"))
        self._saved_theme = self.app.theme
        usable, keymap_problems = keys.check_keymap(s.keymap)
        problems += [s.error_at(("keymap", bid), text) for bid, text in keymap_problems]
        if usable:
            self.keymap = dict(usable)
            self.app.set_keymap(usable)
        self.problems = [str(p) for p in problems]
        if self.problems:
            more = f" (and {len(self.problems) - 1} more: n lists them)" if len(self.problems) > 1 else ""
            self.app.notify(f"Settings: {self.problems[0]}{more}; the other settings apply.",
                            severity="warning", timeout=10)

    def _read_styles(self) -> None:
        self.app.draw_styles = Styles.from_variables(self.app.get_css_variables())

    def _theme_changed(self, theme: str) -> None:
        """A theme the user picked: saved, and the panels' colours follow it."""
        self._save_theme(theme)
        self._read_styles()
        app = self.app
        if app.dashboard is not None and app.link is not None:
            app.dashboard.show(app.build_views(), force=True)

    def _save_theme(self, theme: str) -> None:
        """Save a theme the user picked (read-modify-write: the file's other keys stay)."""
        if self.settings is None or theme == self._saved_theme:
            return
        try:
            save_theme(theme, self.settings.path)
        except SettingsSaveError as exc:
            if not self._save_failed:  # once: each theme previewed would say it again
                self._save_failed = True
                self.app.notify(f"{str(exc)[:1].upper()}{str(exc)[1:]}.", severity="warning", timeout=10)
            return
        self._saved_theme = theme
        self.settings.theme = theme
