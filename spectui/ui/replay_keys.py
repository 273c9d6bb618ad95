"""A replay's keys: play, pause, seek and speed (offered only in a replay). Part of
:class:`spectui.ui.app.SpectuiApp`."""

from __future__ import annotations


class ReplayKeys:
    # --- a replay's keys ----------------------------------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action.startswith("replay_"):
            return self.replay is not None
        return True

    def action_replay_pause(self) -> None:
        self.replay.toggle_pause()
        self.refresh_now()

    def action_replay_seek(self, seconds: float) -> None:
        self.replay.seek(self.replay.position_s + seconds)
        self.refresh_now()

    def action_replay_to(self, where: str) -> None:
        self.replay.seek(0.0 if where == "start" else self.replay.duration_s)
        self.refresh_now()

    def action_replay_speed(self, step: int) -> None:
        speed = self.replay.faster() if step > 0 else self.replay.slower()
        self.notify(f"Replaying at {speed:g}x.")
        self.refresh_now()
