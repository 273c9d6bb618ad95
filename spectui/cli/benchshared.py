"""What ``spectui bench``, its ``--sweep`` and ``spectui tune`` share: the preset and concurrency options,
a comparison's progress lines, and following a run on after a dropped connection."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace

from spectui.cli.hostopts import command_line, host_words
from spectui.cli.output import ProgressLine
from spectui.core.bench import CompareEvent, load_presets
from spectui.core.bench.presets import Preset
from spectui.core.bench.runs import host_label
from spectui.core.errors import Disconnected, SpectuiError
from spectui.core.session import HostTarget, Session, reopen_session


def concurrency_list(text: str) -> tuple[int, ...]:
    """``1,8`` -> ``(1, 8)`` (an argparse type)."""
    try:
        values = tuple(int(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: give whole numbers such as 1,8") from None
    if not values or any(v < 1 for v in values):
        raise argparse.ArgumentTypeError(f"{text!r}: give concurrencies of 1 or more, such as 1,8")
    return values


def preset_for(name: str, concurrency: tuple[int, ...] | None) -> Preset:
    preset = load_presets().get(name)
    return replace(preset, concurrency=tuple(concurrency)) if concurrency else preset


class CompareProgress:
    """A comparison's steps: on a terminal one line updated in place; in a file or a pipe one line per
    switch, per state of each run on the host (starting, warmup, flushing, running, finishing) and per
    finished run."""

    def __init__(self) -> None:
        self.out = ProgressLine()

    def __call__(self, ev: CompareEvent) -> None:
        where = f"[{ev.index}/{ev.total}]"
        run = f"{where} {ev.profile} c={ev.concurrency} repeat {ev.repeat}"
        if ev.kind == "switching":
            self.out.show(f"{where} switching to {ev.profile}")
        elif ev.kind == "switch_failed":
            self.out.show(f"{where} {ev.profile}: {ev.detail}")
        elif ev.kind == "run_started":
            self.out.show(f"{run}: starting", stage=(run, "starting"))
        elif ev.kind == "progress" and ev.progress is not None and not ev.progress.finished:
            # the run's last state is the run_finished line
            self.out.show(f"{run}: {ev.progress.line()}", stage=(run, ev.progress.state))
        elif ev.kind == "run_finished" and ev.result is not None:
            s = ev.result.stats
            tok = s.get("output_tok_s")
            self.out.show(f"{where} {ev.profile} c={ev.concurrency} repeat {ev.repeat}: {ev.result.state}, "
                          f"{tok:.1f} tok/s" if tok is not None else f"{where} {ev.profile}: {ev.result.state}")
        elif ev.kind in ("finished", "interrupted"):
            self.out.done()


def collect_command(args: argparse.Namespace, run_id: str) -> str:
    """The exact ``spectui bench --collect RUN_ID`` command for the host these ``args`` name."""
    return command_line(["spectui", "bench", "--collect", run_id, *host_words(args)])


class Reconnector:
    """Opens a new session after a drop, within ``--reconnect-for`` seconds; else raises
    :class:`Disconnected` with the sentence that says the run goes on and how to collect it."""

    def __init__(self, args: argparse.Namespace, target: HostTarget, session: Session):
        self.args, self.target, self.session = args, target, session

    async def __call__(self, lost: Disconnected, run_id: str) -> Session:
        where = host_label(self.session)
        await self.session.close()
        within = max(0.0, self.args.reconnect_for)
        if within > 0:
            print(f"spectui: {lost} Run {run_id} goes on on the host; reconnecting for up to {within:g} s",
                  file=sys.stderr)
            try:
                self.session = await reopen_session(
                    self.target, within_s=within,
                    on_retry=lambda why, wait: print(f"spectui: {why} (again in {wait:.0f} s)", file=sys.stderr))
                print(f"spectui: reconnected to {where}; following run {run_id} on", file=sys.stderr)
                return self.session
            except SpectuiError as exc:
                lost = Disconnected(str(exc))
        why = str(lost).rstrip(".")
        tried = f" and could not reconnect within {within:g} s" if within > 0 else ""
        raise Disconnected(f"{why}{tried}: run {run_id} goes on on the host; collect it with: "
                           f"{collect_command(self.args, run_id)}") from None
