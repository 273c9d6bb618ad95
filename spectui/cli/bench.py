"""``spectui bench``: run a preset against a server, or compare profiles against a baseline.

- ``spectui bench --demo --profiles A,B,C --preset NAME [--repeat N] [--baseline A]``: switch the
  server to each profile, warm up, run the preset N times, print the comparison;
- ``spectui bench --host DEST --preset NAME [--server NAME]``: one run against a running server;
- ``spectui bench --host DEST --collect [RUN_ID]``: fetch runs that finished while nobody was connected
  (with RUN_ID: wait for that run to end first);
- ``spectui bench --host DEST --cancel RUN_ID``: stop a run on the host (another console's, say);
- ``spectui bench --list-presets``;
- ``spectui bench PROFILE --demo --sweep FLAG=V1,V2 [--concurrency 1,8]``: variants of PROFILE compared with
  its baseline, predicted before and beside the measurement (``spectui.cli.sweep``, docs/tune.md).

Every run goes to the history (``spectui history``) as it ends, interrupted ones included. One
benchmark per server at a time: the host refuses a run against a server another run measures,
in one sentence naming that run, unless ``--allow-overlap`` (the runs are then marked
overlapped). A run that shared its server with requests spectui did not send (another user's, another
console's demo traffic) is marked with that foreign load (``‡``) wherever its figures show;
``--require-idle`` refuses to start while the server serves such requests.

A run lives on the host: when the connection drops while it measures, the command reconnects
(waits of 1, 2, 4 ... s, for ``--reconnect-for`` seconds) and follows it on; if the host stays out of
reach it ends saying so, with the exact ``--collect`` command that fetches the run later.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys

from spectui.agent.protocol import BENCH_FINAL_STATES, Method, ServerState
from spectui.cli.hostopts import (add_host_options, demo_profiles, explain_connect_error, has_host, refuse_on_problems, run_with_passphrase_prompt, target_from_args)
from spectui.cli.output import ProgressLine
from spectui.cli.benchshared import CompareProgress, Reconnector, concurrency_list, preset_for
from spectui.cli.sweep import sweep
from spectui.core.bench import (
    BenchClient,
    BenchError,
    PresetError,
    load_presets,
    render_comparison,
    run_comparison,
    start_run,
)
from spectui.core.bench.compare import link_collected_runs
from spectui.core.bench.presets import PRESETS_PATH_ENV, user_preset_dir
from spectui.core.bench.runs import RunCollector, collect_unsaved, host_label, result_from, watch_running
from spectui.core.bench.table import render_run_detail, render_runs, to_json
from spectui.core.errors import Disconnected, SpectuiError
from spectui.core.flagcheck import check_on_host
from spectui.core.history import HistoryStore
from spectui.core.profiles import ProfileError, load_profiles
from spectui.core.session import HostTarget, Session, open_session

RECONNECT_FOR_S = 120.0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "bench", help="benchmark a server, or compare profiles against a baseline",
        description=("Run a benchmark preset against a running server, or compare profiles: for each profile "
                     "switch the server, warm up, run the preset N times with the same prompts, and print one "
                     "row per profile with tok/s, speedup, accept length and rate, TTFT, ITL, step time and the "
                     f"break-even accept length L*. Presets: shipped (or ${PRESETS_PATH_ENV}) and "
                     f"{user_preset_dir()}. Every run is kept in the history (spectui history)."))
    p.add_argument("sweep_profile", metavar="PROFILE", nargs="?",
                   help="with --sweep: the profile whose variants are compared with its baseline")
    add_host_options(p, required=False)
    p.add_argument("--profiles", metavar="A,B,C", help="profiles to compare (comma-separated)")
    p.add_argument("--sweep", metavar="FLAG=V1,V2", action="append",
                   help="compare variants of PROFILE with these flag values (repeatable: their product; LO..HI "
                        "a range), with the predicted table before and predicted beside measured after")
    p.add_argument("--preset", metavar="NAME", help="benchmark preset name, or a preset YAML file")
    p.add_argument("--repeat", type=int, metavar="N", help="runs per profile (default: the preset's repeats)")
    p.add_argument("--baseline", metavar="PROFILE", help="the profile others are compared with "
                   "(default: the first one without speculation)")
    p.add_argument("--server", metavar="NAME", help="without --profiles: the running server to benchmark")
    p.add_argument("--concurrency", type=concurrency_list, metavar="N[,N]",
                   help="the concurrencies to run instead of the preset's (e.g. 1,8)")
    p.add_argument("--engine", choices=("spectui", "sglang"), default="spectui",
                   help="spectui's runner, or the host's sglang.benchmark.serving (random dataset only)")
    p.add_argument("--profile-path", metavar="PATH", action="append", dest="profile_paths",
                   help="extra profile file or folder (repeatable)")
    p.add_argument("--force", action="store_true", help="start servers even if GPUs are used by other processes")
    p.add_argument("--stop-after", action=argparse.BooleanOptionalAction, default=None,
                   help="stop the compared servers at the end (default: yes with --demo, no on a host)")
    p.add_argument("--allow-overlap", action="store_true",
                   help="run even if another benchmark measures the same server now (both runs are marked "
                        "overlapped: their latency and throughput are not those of a lone run)")
    p.add_argument("--require-idle", action="store_true",
                   help="refuse to start a run while the server runs or queues requests spectui did not send "
                        "(without it, such a run is measured and marked with the foreign load it shared the "
                        "server with)")
    p.add_argument("--collect", nargs="?", const=True, default=False, metavar="RUN_ID",
                   help="fetch finished runs from the host that are not in the history yet; with RUN_ID, wait "
                        "for that run to end and fetch it")
    p.add_argument("--reconnect-for", type=float, default=RECONNECT_FOR_S, metavar="S",
                   help=f"after a dropped connection, keep reconnecting this long (default {RECONNECT_FOR_S:g} s; "
                        "0: do not) before leaving the run to go on on the host")
    p.add_argument("--cancel", metavar="RUN_ID", help="stop a benchmark run on the host (its id, as the "
                   "refusal of a busy server names it); what it measured is kept in its folder there")
    p.add_argument("--list-presets", action="store_true", help="list the benchmark presets and exit")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_const", const="json", dest="format", help="print JSON")
    out.add_argument("--markdown", action="store_const", const="markdown", dest="format", help="print Markdown")
    out.add_argument("--csv", action="store_const", const="csv", dest="format", help="print CSV")
    p.set_defaults(func=run, format="text")


def _profile_list(text: str) -> list[str]:
    return [n.strip() for n in text.split(",") if n.strip()]


def _list_presets(fmt: str) -> int:
    lib = load_presets()
    for e in lib.errors:
        print(f"spectui: {e}", file=sys.stderr)
    if fmt == "json":
        print(to_json({"presets": [p.to_dict() for p in lib.presets.values()]}))
    else:
        for p in sorted(lib.presets.values(), key=lambda x: x.name):
            print(f"{p.name:<20} {p.describe()}, {p.repeats} repeats")
            if p.description:
                print(f"{'':<20} {p.description}")
    return 1 if lib.errors else 0


async def _compare(args: argparse.Namespace, target: HostTarget) -> int:
    lib = demo_profiles(args, load_profiles(args.profile_paths))
    names = _profile_list(args.profiles)
    profiles = [lib.get(n) for n in names]  # ProfileError: unknown name, with close matches
    for prof in profiles:
        broken = [e for e in lib.errors if e.profile == prof.name or e.path == prof.source]
        if broken:
            raise broken[0]
    preset = preset_for(args.preset, args.concurrency)
    if args.repeat is not None and args.repeat < 1:
        raise BenchError("--repeat must be at least 1")
    store = HistoryStore()
    stop_after = args.stop_after if args.stop_after is not None else target.kind == "demo"
    session = await open_session(target)
    reconnect = Reconnector(args, target, session)
    try:
        for prof in profiles:
            if refuse_on_problems(await check_on_host(session, prof),
                                  f"nothing was benchmarked: fix profile {prof.name} first."):
                return 1
        progress = CompareProgress()
        try:
            comp = await run_comparison(session, profiles, preset, repeats=args.repeat, baseline=args.baseline,
                                        engine=args.engine, store=store, on_event=progress, force=args.force,
                                        stop_after=stop_after, allow_overlap=args.allow_overlap,
                                        require_idle=args.require_idle, reconnect=reconnect)
        finally:
            progress.out.done()
        print(render_comparison(comp, args.format), end="")
        if args.format == "text":
            print(f"\nsaved as {comp.get('id')} in {store.path} (spectui history show {comp.get('id')})")
        failed = any(row.get("failed") for row in comp["profiles"])
        return 1 if failed else 0
    finally:
        await reconnect.session.close()


async def _single(args: argparse.Namespace, target: HostTarget) -> int:
    preset = load_presets().get(args.preset)
    store = HistoryStore()
    session = await open_session(target)
    reconnect = Reconnector(args, target, session)
    try:
        server = args.server
        if not server:
            ready = [s["name"] for s in (await session.client.call(Method.SERVERS_LIST, timeout=30))["servers"]
                     if s["state"] == ServerState.READY]
            if len(ready) != 1:
                raise BenchError("no server is ready on the host: start one (spectui servers start PROFILE) or "
                                 "compare profiles with --profiles" if not ready else
                                 f"several servers are ready ({', '.join(ready)}): pick one with --server")
            server = ready[0]
        if args.concurrency:
            levels = list(args.concurrency)
        elif preset.sweep:
            levels = list(preset.concurrency)
        else:
            levels = [preset.concurrency[0]]
        progress = ProgressLine()
        results = []
        for conc in levels:
            handle = await start_run(reconnect.session, preset, server=server, concurrency=conc, engine=args.engine,
                                     labels={"repeat": 1}, allow_overlap=args.allow_overlap,
                                     require_idle=args.require_idle)
            others = handle.started.get("overlapped_with") or []
            if others:
                print(f"spectui: run {handle.run_id} shares {server} with run{'s' if len(others) > 1 else ''} "
                      f"{', '.join(others)} (--allow-overlap): both are marked overlapped, as their latency and "
                      f"throughput are not those of a lone run", file=sys.stderr)
            while True:
                stop = BenchClient(handle.session).on_progress(
                    lambda p, c=conc, rid=handle.run_id: progress.show(f"{server} c={c}: {p.line()}",
                                                                       stage=(rid, p.state))
                    if p.run_id == rid else None)
                try:
                    result = await handle.wait()
                    break
                except Disconnected as lost:
                    progress.done()
                    handle.session = await reconnect(lost, handle.run_id)
                    await watch_running(handle.session)
                except BaseException:
                    try:
                        partial = await asyncio.shield(handle.cancel())
                        store.save_run(partial)
                    except Exception:  # the interruption is what the user hears of; the reason is logged
                        logging.getLogger(__name__).warning("the interrupted run %s was not saved", handle.run_id,
                                                            exc_info=True)
                    raise
                finally:
                    stop()
            progress.done()
            rid = store.save_run(result)
            results.append(dict(result.to_dict(), id=rid))
        if args.format == "json":
            print(to_json({"runs": results}))
        elif args.format in ("markdown", "csv"):
            print(render_runs(results, args.format), end="")
        else:
            refs = store.refs()
            for r in results:
                print(render_run_detail(r, refs=refs))
        return 0 if all(r["state"] == "done" for r in results) else 1
    finally:
        await reconnect.session.close()


async def _cancel(args: argparse.Namespace, target: HostTarget) -> int:
    session = await open_session(target)
    try:
        st = await BenchClient(session).cancel(args.cancel)
    finally:
        await session.close()
    if st.get("already_finished"):
        print(f"run {args.cancel} had already ended: {st.get('state')}")
    else:
        print(f"run {args.cancel}: {st.get('state')}" + (f" ({st['reason']})" if st.get("reason") else ""))
    print("the console or command that started it saves what it measured; if none follows it any more, "
          "spectui bench --collect does")
    return 0 if st.get("state") in BENCH_FINAL_STATES else 1


async def _collect_one(session: Session, store: HistoryStore, run_id: str) -> list:
    """Wait for ``run_id`` on the host to end (showing its progress), then save it."""
    progress = ProgressLine()
    stop = BenchClient(session).on_progress(lambda p: progress.show(f"run {run_id}: {p.line()}", stage=p.state)
                                            if p.run_id == run_id else None)
    try:
        st = await BenchClient(session).status(run_id)  # an unknown id: the host's one sentence
        if st.get("state") not in BENCH_FINAL_STATES:
            await BenchClient(session).watch(run_id)
        col = await RunCollector(run_id).wait(session)
    finally:
        stop()
        progress.done()
    result = result_from(col, host=(st.get("labels") or {}).get("host") or host_label(session))
    store.save_run(result)
    return [result]


async def _collect(args: argparse.Namespace, target: HostTarget) -> int:
    store = HistoryStore()
    session = await open_session(target)
    try:
        if isinstance(args.collect, str):
            saved = await _collect_one(session, store, args.collect)
        else:
            saved = await collect_unsaved(session, store)
    finally:
        await session.close()
    if not saved:
        print("no new finished runs on the host")
        return 0
    print(render_runs([dict(r.to_dict(), id=None) for r in saved], "text"), end="")
    print(f"{len(saved)} run(s) added to {store.path}")
    for cid in link_collected_runs(store, saved):
        print(f"comparison {cid} now includes them (spectui history show {cid})")
    return 0


def run(args: argparse.Namespace) -> int:
    try:
        if args.list_presets:
            return _list_presets(args.format)
        if not has_host(args):
            print("spectui: say where to benchmark: --host DEST or --demo", file=sys.stderr)
            return 2
        if args.collect:
            action = _collect
        elif args.cancel:
            action = _cancel
        elif args.sweep or args.sweep_profile:
            if not (args.sweep and args.sweep_profile) or args.profiles:
                print("spectui: a sweep takes one PROFILE and --sweep FLAG=V1,V2 (not --profiles), e.g. "
                      "spectui bench kimi-ngram --sweep num-draft-tokens=3,4 --demo", file=sys.stderr)
                return 2
            action = sweep
        else:
            if not args.preset:
                print("spectui: give a benchmark preset with --preset (see spectui bench --list-presets)",
                      file=sys.stderr)
                return 2
            action = _compare if args.profiles else _single
        target = target_from_args(args)
        return run_with_passphrase_prompt(target, lambda t: action(args, t))
    except (ProfileError, PresetError) as exc:
        print(f"spectui: {exc}", file=sys.stderr)
        return 1
    except SpectuiError as exc:
        print("spectui: " + explain_connect_error(exc, args.argv),
              file=sys.stderr)
        return 1
    except ValueError as exc:  # e.g. the sglang engine with a reasoning preset
        print(f"spectui: {exc}", file=sys.stderr)
        return 1
