"""Replaying a recording: a :class:`~spectui.core.live.HostLink` fed from a file instead of a host.

:class:`ReplayLink` is a HostLink whose events come from a :class:`~spectui.core.recording.Recording`:
each recorded agent event goes through the same ``_on_event`` as live, so every panel computes what
it computed live from the same data, and the link publishes the same typed events: like a live
link, only those of an open session (the recording marks each session's start, and each drop). It never connects,
and it is read-only: :meth:`control` refuses in one sentence, so nothing can be started or stopped
from a replay.

The play head (:attr:`position_s`, seconds since the recording began) moves at :attr:`speed` (1x to
60x) while not :attr:`paused`; :meth:`seek` goes anywhere, backwards too, by replaying from the
start up to there (an hour at 10 Hz replays in well under a second). Times are the recording's: an event is
received at the time it was recorded, and :meth:`now` is the recording's time at the play head, so an event
recorded ``d`` seconds before the play head is ``d`` seconds old, a server's uptime is its uptime then, and
nothing moves while the replay is paused. :attr:`phase` is where the replay is, for everything that shows it.
"""

from __future__ import annotations

import asyncio
import time

from spectui.core.bench.progress import ProgressBoard
from spectui.core.errors import Disconnected
from spectui.core.link_events import SessionOpened
from spectui.core.live import HostLink, LinkState, SwitchProgress
from spectui.core.profiles import Profile, ProfileLibrary
from spectui.core.profiles.model import Node
from spectui.core.recording import Recording, RecordingError
from spectui.core.rpc import Event
from spectui.core.servers import RecordError, ServerControl, ServerRecord
from spectui.core.session import HostTarget
from spectui.core.telemetry import GpuHistory

SPEEDS = (1.0, 2.0, 5.0, 10.0, 30.0, 60.0)
TICK_S = 0.1
AGENT_EVENTS = ("gpu", "server", "server_frame", "switch")


class ReplayLink(HostLink):
    read_only = True

    def __init__(self, recording: Recording, *, speed: float = 1.0, history: int = 3600) -> None:
        header = recording.header
        label = header.get("target") or (header.get("host") or {}).get("hostname") or "recording"
        simulated = header.get("kind") == "demo" or bool((header.get("host") or {}).get("simulated"))
        super().__init__(HostTarget(kind="replay", destination=f"replay of {label}", simulated=simulated),
                         history=history)
        self.recording = recording
        self.label = label
        self.speed = self._valid_speed(speed)
        self.paused = False
        self.position_s = 0.0
        self.alerts: list[dict] = []   # alert changes recorded by the console, in order, up to the play head
        self.console_events: list[tuple[float, str, object]] = []   # the console's own (bench, l_star, note)
        self.logs: dict[str, list[dict]] = {}   # each server's log reads as the console received them, in order
        self.bench = ProgressBoard()   # the benchmark runs' progress as the host reported it, up to the play head
        self.bench_job: dict | None = None   # the console's benchmark (its screen's data) as last recorded
        self.generation = 0   # bumped by each seek backwards: what was read from the replay before is gone
        self._playing = f"replaying {self.target.destination}"
        self._next = 0
        self._sessions = 0
        self.facts = dict(header.get("host") or {})

    def check_playable(self) -> None:
        """Raise :class:`RecordingError` (one sentence) when there is nothing to replay: a recording whose
        console never connected holds no session, and a replay starts at the first one."""
        if not self.recording.has_session:
            raise RecordingError(f"the recording of {self.label} holds no session "
                                 "(the recorded console never connected), so there is nothing to replay")

    @property
    def first_session_s(self) -> float:
        """Where the recording first shows a session (before it, the recorded console was connecting)."""
        return next((t for t, name, _ in self.recording.events if name == "session"), 0.0)

    def profiles(self) -> ProfileLibrary:
        """The profiles the recorded console had (as recorded: secrets masked)."""
        return profiles_of(self.recording.header)

    @staticmethod
    def _valid_speed(speed: float) -> float:
        if not SPEEDS[0] <= speed <= SPEEDS[-1]:
            raise ValueError(f"replay speed must be from {SPEEDS[0]:g}x to {SPEEDS[-1]:g}x, not {speed:g}x")
        return float(speed)

    @property
    def duration_s(self) -> float:
        return self.recording.duration_s

    @property
    def at_end(self) -> bool:
        return self._next >= len(self.recording.events)

    def faster(self) -> float:
        self.speed = next((s for s in SPEEDS if s > self.speed), SPEEDS[-1])
        return self.speed

    def slower(self) -> float:
        self.speed = next((s for s in reversed(SPEEDS) if s < self.speed), SPEEDS[0])
        return self.speed

    def toggle_pause(self) -> bool:
        self.paused = not self.paused
        return self.paused

    # --- playing ------------------------------------------------------------------------------------
    def _reset(self) -> None:
        self.gpu = None
        self.gpu_history = GpuHistory(capacity=self._history)
        self.servers = {}
        self.series = {}
        self.switch = None
        self.alerts = []
        self.console_events = []
        self.logs = {}
        self.bench = ProgressBoard()
        self.bench_job = None
        self.generation += 1
        self._next = 0
        self._sessions = 0
        self._set_state(LinkState.CONNECTING, self._playing)

    @property
    def started(self) -> float:
        """The wall time the recording began (its header's ``started``)."""
        return float(self.recording.header["started"])

    def now(self) -> float:
        return self.started + self.position_s

    @property
    def phase(self) -> str:
        """``end`` (every event shown and the play head at the end), ``paused`` or ``playing``."""
        if self.at_end and self.position_s >= self.duration_s:
            return "end"
        return "paused" if self.paused else "playing"

    def _feed_until(self, position_s: float) -> None:
        events = self.recording.events
        while self._next < len(events) and events[self._next][0] <= position_s:
            t, name, data = events[self._next]
            self._next += 1
            received_at = self.started + t
            if name in AGENT_EVENTS and isinstance(data, dict):
                self._on_event(Event(name, data, received_at))
            elif name == "session" and isinstance(data, dict):
                self.facts = data.get("facts") or self.facts
                self.servers = {rec.name: rec for s in data.get("servers") or () if (rec := _checked(s)) is not None}
                self._set_state(LinkState.CONNECTED, self._playing)
                self.events.publish(SessionOpened(None, self._sessions))  # no session to call: read-only
                self._sessions += 1
            elif name == "switch_begin" and isinstance(data, dict):
                self.switch = SwitchProgress(str(data.get("target")), "starting")
                self._switch_stage(self.switch)
            elif name == "session_lost" and isinstance(data, dict):
                self._set_state(LinkState.RECONNECTING, f"{data.get('reason') or 'disconnected'} (recorded)")
            elif name == "log" and isinstance(data, dict) and isinstance(data.get("reply"), dict):
                self.logs.setdefault(str(data.get("name")), []).append(data["reply"])
            elif name == "bench_progress" and isinstance(data, dict):
                self.bench.on_event(Event(name, data, received_at))
            elif name == "bench_job" and isinstance(data, dict):
                self.bench_job = data
            elif name == "alert" and isinstance(data, dict):
                self.alerts.append(data)
            else:
                self.console_events.append((t, name, data))
        self.position_s = position_s

    def seek(self, position_s: float) -> None:
        """Show the recording as it was at ``position_s`` (clamped to the recording)."""
        position_s = min(max(0.0, position_s), self.duration_s)
        if position_s < self.position_s:
            self._reset()
        self._feed_until(position_s)

    def advance(self, wall_s: float) -> None:
        """Move the play head by ``wall_s`` seconds of wall time at the current speed (not while paused)."""
        if not self.paused:
            self.seek(self.position_s + wall_s * self.speed)

    async def run(self, start_s: float | None = None) -> None:
        """Play until :meth:`close`, from ``start_s`` (default: the first session); a recording without a
        session ends at once, saying so."""
        try:
            self.check_playable()
        except RecordingError as exc:
            self._set_state(LinkState.CLOSED, f"{exc}.")
            return
        self._set_state(LinkState.CONNECTING, self._playing)
        self.seek(self.first_session_s if start_s is None else start_s)
        last = time.monotonic()
        while not self._closing:
            await asyncio.sleep(TICK_S)
            now = time.monotonic()
            self.advance(now - last)
            last = now
        self._set_state(LinkState.CLOSED, self.message)

    async def close(self) -> None:
        self._closing = True

    def reply_age_s(self) -> float | None:
        return None

    # --- read-only ----------------------------------------------------------------------------------
    def control(self) -> ServerControl:
        raise Disconnected("This is a replay: nothing on the host can be started, stopped or benchmarked from it.")


def _checked(record: object) -> ServerRecord | None:
    """A recorded server record the console takes (as a live link checks the agent's), else None."""
    try:
        return ServerRecord.from_wire(record)
    except RecordError:
        return None


def profiles_of(header: dict) -> ProfileLibrary:
    """A recording's profiles (its header's, as :meth:`Profile.redacted` wrote them), as a library."""
    library = ProfileLibrary()
    for d in header.get("profiles") or ():
        if not isinstance(d, dict) or not isinstance(d.get("name"), str):
            continue  # an older recording lists names only: the profile list shows the servers that ran
        try:
            nodes = tuple(Node(**n) for n in d.get("nodes") or ())
        except TypeError:
            nodes = ()
        library.profiles[d["name"]] = Profile(
            name=d["name"], model=str(d.get("model") or "?"), description=str(d.get("description") or ""),
            python=d.get("python"), host=str(d.get("host") or "127.0.0.1"), port=int(d.get("port") or 0),
            gpus=tuple(str(g) for g in d["gpus"]) if isinstance(d.get("gpus"), list) else None,
            env=dict(d.get("env") or {}), args=dict(d.get("args") or {}),
            launcher=tuple(d.get("launcher") or ()) or Profile.launcher, sim=dict(d.get("sim") or {}),
            tags=tuple(d.get("tags") or ()), metrics=bool(d.get("metrics", True)), nodes=nodes,
            dist_init_port=d.get("dist_init_port"), source=d.get("source"))
    return library
