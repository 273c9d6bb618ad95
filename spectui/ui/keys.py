"""Every key of the console, declared once.

The screens take their ``BINDINGS`` from here; the footer, the help screen (``?``) and the
command palette (``ctrl+p``) are all generated from these same declarations. A binding's
``description`` is the footer label; its ``tooltip`` is the longer help text.

Every binding has an ``id`` (``screen.name``, e.g. ``dashboard.stop``). The settings file's
``keymap`` gives an id other keys; the console hands the checked keymap to Textual's
``App.set_keymap``, so the footer follows, and the help screen and the palette read the keys
through :func:`key_names` with the same keymap.
"""

from __future__ import annotations

from textual.binding import Binding
from textual.keys import Keys, _character_to_key

from spectui.core.profiles.errors import close_matches, did_you_mean

DIGITS = tuple(str(n) for n in range(1, 10))

DASHBOARD = [
    Binding("up,k", "move(-1)", "Up", id="dashboard.up", show=False, tooltip="Highlight the previous profile"),
    Binding("down,j", "move(1)", "Down", id="dashboard.down", show=False, tooltip="Highlight the next profile"),
    Binding("enter,s", "switch", "Switch", id="dashboard.switch",
            tooltip="Switch to the highlighted profile (asks before stopping a running server)"),
    *[Binding(d, f"switch_number({d})", f"Profile {d}", id=f"dashboard.profile_{d}", show=False,
              tooltip=f"Select profile {d} and switch to it") for d in DIGITS],
    Binding("x", "stop", "Stop", id="dashboard.stop",
            tooltip="Stop the server shown in the server panel (asks first, listing what it signals)"),
    Binding("A", "adopt", "Adopt", id="dashboard.adopt",
            tooltip="Adopt the highlighted external server: treated as spectui's own (asks)"),
    Binding("I", "import_profile", "Import", id="dashboard.import",
            tooltip="Import a profile from the highlighted external server (says where)"),
    Binding("r", "restart", "Restart", id="dashboard.restart",
            tooltip="Restart the server shown in the server panel (asks first)"),
    Binding("l", "logs", "Logs", id="dashboard.logs", tooltip="Open the full log: search, wrap, follow, save"),
    Binding("slash", "filter", "Filter", id="dashboard.filter", show=False, priority=True,
            tooltip="Filter the log tail (escape clears)"),
    Binding("f", "source", "Source", id="dashboard.source",
            tooltip="Browse SGLang's speculative decoding source (the demo offers to "
                    "fetch the published wheel)"),
    Binding("space", "mark", "Mark", id="dashboard.mark", show=False,
            tooltip="Mark or unmark the highlighted profile for a comparison (B)"),
    Binding("b", "bench", "Bench", id="dashboard.bench",
            tooltip="Benchmark the ready server with a preset (pick one; saved to history); "
                    "while one runs: its progress"),
    Binding("B", "compare", "Compare", id="dashboard.compare",
            tooltip="Compare the marked profiles with a preset (baseline: the first "
                    "without speculation, else the first marked)"),
    Binding("v", "results", "Results", id="dashboard.results", show=False,
            tooltip="The benchmark screen: the one running, or the last "
                    "results"),
    Binding("p", "probe", "Probe", id="dashboard.probe",
            tooltip="Run the verify-cost probe for the highlighted profile: its predicted "
                    "break-even L* (saved to history)"),
    Binding("t", "traffic", "Traffic", id="dashboard.traffic",
            tooltip="Demo only: toggle the background load (varied prompts, sampled)"),
    Binding("c", "traffic_concurrency", "Streams", id="dashboard.traffic_streams", show=False,
            tooltip="Demo only: cycle the background load's concurrent requests, 1 / 4 / 16"),
    Binding("a", "rate_formula", "Rate formula", id="dashboard.rate_formula", show=False,
            tooltip="Show the accept rate in the other formula (the server's release decides the first)"),
    Binding("R", "retry_now", "Retry now", id="dashboard.retry_now", show=False,
            tooltip="While reconnecting: try again now instead of waiting"),
    Binding("pageup", "page(-1)", "Page up", id="dashboard.page_up", show=False,
            tooltip="Narrow terminals: scroll the stacked panels up a page"),
    Binding("pagedown", "page(1)", "Page down", id="dashboard.page_down", show=False,
            tooltip="Narrow terminals: scroll the stacked panels down a page"),
    Binding("g", "gpu_processes", "GPU procs", id="dashboard.gpu_processes", show=False,
            tooltip="Every GPU's processes: pid, user, GPU memory, the server each belongs to, command"),
    Binding("d", "describe", "Describe", id="dashboard.describe", show=False,
            tooltip="The highlighted server in full: command, env keys, log, start time, pid, origin, GPUs, port"),
    Binding("z", "pause", "Pause", id="dashboard.pause", show=False,
            tooltip="Pause or resume the display (telemetry keeps arriving; the panels catch up on resume)"),
    Binding("plus", "telemetry_faster", "Faster", id="dashboard.telemetry_faster", show=False,
            tooltip="Raise the GPU telemetry rate: 1, 2, 5, 10 Hz (the header shows it)"),
    Binding("minus", "telemetry_slower", "Slower", id="dashboard.telemetry_slower", show=False,
            tooltip="Lower the GPU telemetry rate: 10, 5, 2, 1 Hz"),
    Binding("F", "filter_profiles", "Find", id="dashboard.filter_profiles", show=False, priority=True,
            tooltip="Filter the profile list by name, algorithm or model (escape clears)"),
    Binding("o", "found_group", "Found", id="dashboard.found_group", show=False,
            tooltip="Fold or unfold the group of servers found on this host (under the profiles)"),
    Binding("full_stop", "found_stopped", "Stopped", id="dashboard.found_stopped", show=False,
            tooltip="Show or hide the found servers that stopped (forgotten 5 minutes after they stop)"),
    Binding("u", "found_owner", "Owner", id="dashboard.found_owner", show=False,
            tooltip="Found servers: only yours (the user spectui runs as on the host), or every user's"),
    Binding("D", "debug_log", "Debug log", id="dashboard.debug_log", show=False,
            tooltip="spectui's own log, the console's and the host agent's records, and the log file to attach "
                    "to a report"),
    Binding("exclamation_mark", "alerts", "Alerts", id="dashboard.alerts", show=False,
            tooltip="The alerts firing now, and every change"),
    Binding("n", "app.notifications", "Notifications", id="dashboard.notifications", show=False,
            tooltip="Every notification of this session in full, newest first, and the settings file's problems"),
    Binding("H", "hosts", "Hosts", id="dashboard.hosts",
            tooltip="Several hosts: the fleet overview, one row a host; enter opens a host's dashboard"),
    Binding("less_than_sign", "host(-1)", "Prev host", id="dashboard.previous_host", show=False,
            tooltip="Several hosts: the previous host's dashboard"),
    Binding("greater_than_sign", "host(1)", "Next host", id="dashboard.next_host", show=False,
            tooltip="Several hosts: the next host's dashboard"),
    Binding("ctrl+r", "record", "Record", id="dashboard.record", show=False,
            tooltip="Start recording the session to a file (spectui replay plays it), or stop"),
    Binding("question_mark", "help", "Help", id="dashboard.help", tooltip="Show every key"),
    Binding("q", "quit_console", "Quit", id="dashboard.quit",
            tooltip="Quit (servers on a real host keep running; the demo stops its own)"),
]

LOGS = [
    Binding("slash", "search", "Search", id="logs.search", priority=True, tooltip="Search the log (enter jumps to the first match)"),
    Binding("ctrl+t", "toggle_search_mode", "Regex/text", id="logs.search_mode", show=False,
            tooltip="Search with a regular expression or for plain text, as typed (the search line says which)"),
    Binding("n", "next_match", "Next", id="logs.next", tooltip="Jump to the next match"),
    Binding("N", "previous_match", "Previous", id="logs.previous", show=False, tooltip="Jump to the previous match"),
    Binding("w", "toggle_wrap", "Wrap", id="logs.wrap", tooltip="Wrap long lines on or off"),
    Binding("f", "toggle_follow", "Follow", id="logs.follow", tooltip="Follow new lines on or off"),
    Binding("ctrl+s", "save", "Save", id="logs.save", tooltip="Save the log to a local file"),
    Binding("p", "toggle_polls", "Polls", id="logs.polls", show=False,
            tooltip="Show or hide spectui's own polls (GET /metrics, /server_info); hidden at first, counted"),
    Binding("y", "copy_line", "Copy line", id="logs.copy",
            tooltip="Copy the line of the current search match, else the last line shown, to the clipboard"),
    Binding("escape,q", "close", "Back", id="logs.back", tooltip="Back to the dashboard"),
]

BENCH = [
    Binding("c", "cancel_bench", "Stop", id="bench.stop",
            tooltip="Stop the benchmark (asks; what it measured is saved, marked "
                    "interrupted)"),
    Binding("e", "export", "Export", id="bench.export",
            tooltip="Export the results as Markdown to a file (says where)"),
    Binding("T", "tune", "Tune", id="bench.tune",
            tooltip="Tune the highlighted profile: predict, measure the best few, recommend one"),
    Binding("left", "scroll_cols(-1)", "◀ cols", id="bench.left", show=False, priority=True,
            tooltip="Move the tables left (their columns beyond the screen; the line above them says which show)"),
    Binding("right", "scroll_cols(1)", "cols ▶", id="bench.right", show=False, priority=True,
            tooltip="Move the tables right"),
    Binding("escape,q", "close", "Back", id="bench.back",
            tooltip="Back to the dashboard (a benchmark goes on; v comes back)"),
]

SOURCE = [
    Binding("slash", "search", "Search", id="source.search", priority=True,
            tooltip="Search the package with a regular expression (run on the host)"),
    Binding("ctrl+t", "toggle_search_mode", "Regex/text", id="source.search_mode", show=False,
            tooltip="Search with a regular expression or for plain text, as typed (the search line says which)"),
    Binding("g", "definition", "Definition", id="source.definition",
            tooltip="Go to the definition of the name under the cursor"),
    Binding("d", "ask_definition", "Go to name", id="source.go_to_name", priority=True,
            tooltip="Type a class, function or --flag name and go to it"),
    Binding("n", "next_hit(1)", "Next hit", id="source.next_hit", tooltip="Jump to the next search hit"),
    Binding("N", "next_hit(-1)", "Previous hit", id="source.previous_hit", show=False,
            tooltip="Jump to the previous search hit"),
    Binding("a", "algorithms", "Algorithms", id="source.algorithms",
            tooltip="The speculative algorithms and their worker modules"),
    Binding("p", "flags", "Flags", id="source.flags",
            tooltip="The profile's speculative-* flags, where they are defined"),
    Binding("t", "focus_tree", "Tree", id="source.tree", show=False, tooltip="Focus the file tree"),
    Binding("v", "focus_view", "View", id="source.view", show=False, tooltip="Focus the file view"),
    Binding("escape,q", "close", "Back", id="source.back", tooltip="Back to the dashboard"),
]

GPU_PROCESSES = [
    Binding("z", "pause", "Pause", id="gpu_processes.pause",
            tooltip="Pause the display or resume it (telemetry keeps arriving)"),
    Binding("escape,q,g", "close", "Back", id="gpu_processes.back", tooltip="Back to the dashboard"),
]

DESCRIBE = [
    Binding("y", "copy", "Copy command", id="describe.copy",
            tooltip="Copy the server's command line to the clipboard (secret values stay masked)"),
    Binding("escape,q,d", "close", "Back", id="describe.back", tooltip="Back to the dashboard"),
]

DEBUG_LOG = [
    Binding("l", "cycle_level", "Level", id="debug_log.level",
            tooltip="Show records from this level up: debug, info, warning, error"),
    Binding("y", "copy_path", "Copy path", id="debug_log.copy_path",
            tooltip="Copy the log file's path to the clipboard (to attach the file to a report)"),
    Binding("escape,q,D", "close", "Back", id="debug_log.back", tooltip="Back to the dashboard"),
]

FLEET = [
    Binding("up,k", "move(-1)", "Up", id="fleet.up", show=False, tooltip="Highlight the previous host"),
    Binding("down,j", "move(1)", "Down", id="fleet.down", show=False, tooltip="Highlight the next host"),
    Binding("enter", "open", "Open", id="fleet.open", tooltip="Open the highlighted host's dashboard"),
    Binding("escape", "close", "Back", id="fleet.back", tooltip="Back to the dashboard"),
    Binding("q", "quit_console", "Quit", id="fleet.quit",
            tooltip="Quit (servers on real hosts keep running; the demo stops its own)"),
]

# The App's own: offered only while replaying a recording (spectui replay FILE).
REPLAY = [
    Binding("space", "replay_pause", "Play/pause", id="replay.pause", tooltip="Replay: pause or play"),
    Binding("left", "replay_seek(-10)", "-10 s", id="replay.back", tooltip="Replay: back 10 seconds"),
    Binding("right", "replay_seek(10)", "+10 s", id="replay.forward", tooltip="Replay: forward 10 seconds"),
    Binding("shift+left", "replay_seek(-60)", "-1 min", id="replay.back_minute", show=False,
            tooltip="Replay: back a minute"),
    Binding("shift+right", "replay_seek(60)", "+1 min", id="replay.forward_minute", show=False,
            tooltip="Replay: forward a minute"),
    Binding("left_square_bracket", "replay_speed(-1)", "Slower", id="replay.slower",
            tooltip="Replay: slower (60, 30, 10, 5, 2, 1x)"),
    Binding("right_square_bracket", "replay_speed(1)", "Faster", id="replay.faster",
            tooltip="Replay: faster (1, 2, 5, 10, 30, 60x)"),
    Binding("home", "replay_to('start')", "Start", id="replay.start", show=False,
            tooltip="Replay: back to the start"),
    Binding("end", "replay_to('end')", "End", id="replay.end", show=False, tooltip="Replay: to the end"),
]

ALERTS = [Binding("escape,q,exclamation_mark", "close", "Back", id="alerts.back", tooltip="Back to the dashboard")]

NOTIFICATIONS = [Binding("escape,q,n", "close", "Back", id="notifications.back", tooltip="Back to the dashboard")]

PICKER = [Binding("escape", "cancel", "Cancel", id="picker.cancel", tooltip="Close without choosing")]

CLOSE = [Binding("escape,q,question_mark", "close", "Close", id="help.close", tooltip="Close this screen")]

CONFIRM = [
    Binding("y,enter", "confirm", "Yes", id="confirm.yes", tooltip="Go ahead"),
    Binding("n,escape", "cancel", "No", id="confirm.no", tooltip="Cancel"),
]

PALETTE_KEY = "ctrl+p"
PALETTE_HELP = "Command palette: Switch to / Stop for each profile, and every key above"

# Groups shown by the help screen, in order.
HELP_GROUPS = (("Dashboard", DASHBOARD), ("Log screen", LOGS), ("Benchmark screen", BENCH),
               ("Source screen", SOURCE), ("GPU process screen", GPU_PROCESSES), ("Describe screen", DESCRIBE),
               ("Debug log screen", DEBUG_LOG), ("Alerts screen", ALERTS),
               ("Notifications screen", NOTIFICATIONS), ("Hosts screen", FLEET),
               ("Replay (spectui replay)", REPLAY))

# Actions that make sense as palette commands (digits and movement do not).
PALETTE_ACTIONS = ("switch", "stop", "adopt", "import_profile", "restart", "logs", "filter", "source", "bench", "compare", "results", "probe",
                   "traffic", "retry_now", "gpu_processes", "describe", "pause", "telemetry_faster",
                   "telemetry_slower", "filter_profiles", "found_group", "found_stopped", "found_owner",
                   "debug_log", "alerts", "app.notifications", "record", "hosts", "help", "quit_console")
# A palette title where the footer's short label would not say enough.
PALETTE_TITLES = {"probe": "Run verify-cost probe", "bench": "Benchmark the ready server",
                  "adopt": "Adopt the highlighted server", "import_profile": "Import a profile from the server",
                  "compare": "Compare the marked profiles", "results": "Benchmark results",
                  "gpu_processes": "GPU processes", "describe": "Describe the highlighted server",
                  "pause": "Pause or resume the display", "telemetry_faster": "GPU telemetry faster",
                  "telemetry_slower": "GPU telemetry slower", "filter_profiles": "Filter the profile list",
                  "found_group": "Found servers: fold or unfold the group",
                  "found_stopped": "Found servers: show or hide the stopped ones",
                  "found_owner": "Found servers: yours only, or every user's",
                  "debug_log": "Debug log (spectui's own)", "alerts": "Alerts",
                  "app.notifications": "Notifications in full",
                  "record": "Record the session, or stop recording", "hosts": "Hosts (fleet overview)"}


def key_names(binding: Binding, keymap: dict[str, str] | None = None) -> list[str]:
    """The keys that trigger ``binding``: the keymap's for its id when it has some, else the declared ones."""
    keys = (keymap or {}).get(binding.id or "") or binding.key
    return [k.strip() for k in keys.split(",") if k.strip()]


def active_keymap(app) -> dict[str, str]:
    """The keymap the app runs with: what the settings file's ``keymap:`` gave ``App.set_keymap``."""
    return dict(app.user_settings.keymap)


def key_label(app, binding_id: str) -> str:
    """The first key of the binding ``binding_id`` as a sentence names it (``ctrl+t``), keymap applied."""
    binding = binding_ids()[binding_id]
    settings = getattr(app, "user_settings", None)  # an app that is not the console has no keymap
    return key_names(binding, dict(settings.keymap) if settings is not None else None)[0]


def key_display(app, binding: Binding) -> str:
    """``binding``'s keys as the footer shows them, keymap applied: ``enter / s``."""
    return " / ".join(app.get_key_display(Binding(k, binding.action, binding.description))
                      for k in key_names(binding, active_keymap(app)))


def palette_title(binding: Binding) -> str:
    return PALETTE_TITLES.get(binding.action.split("(")[0], binding.description)


# --- the keymap of the settings file ---------------------------------------------------------------------------------
# The screens whose keys share one keymap id space, each checked for two bindings on one key.
KEYMAP_GROUPS = (DASHBOARD, LOGS, BENCH, SOURCE, GPU_PROCESSES, DESCRIBE, DEBUG_LOG, ALERTS, NOTIFICATIONS, FLEET, REPLAY,
                 PICKER,
                 CLOSE, CONFIRM)
_MODIFIERS = ("ctrl", "shift", "alt", "meta", "super", "hyper")
# Named keys Textual reports: escape, enter, f1..f24, up, pageup, ... and printable characters by name
# (question_mark, slash, space, ...), as textual.keys._character_to_key names them.
_NAMED_KEYS = frozenset({k.value for k in Keys if "+" not in k.value and not k.value.startswith("<")}
                        | {_character_to_key(chr(c)) for c in range(32, 127)})


def binding_ids() -> dict[str, Binding]:
    """Every binding of the console by id."""
    return {b.id: b for group in KEYMAP_GROUPS for b in group}


def is_key_name(name: str) -> bool:
    """Whether Textual can report ``name``: ``x``, ``X``, ``?``, ``question_mark``, ``f5``, ``ctrl+shift+up``."""
    *mods, base = name.split("+")
    if not base or any(m not in _MODIFIERS for m in mods):
        return False
    if len(base) == 1:
        return base.isprintable() and not base.isspace()
    return base in _NAMED_KEYS


def check_keymap(keymap: dict[str, str]) -> tuple[dict[str, str], list[tuple[str, str]]]:
    """The usable part of a keymap, and ``(binding id, sentence)`` for each entry left out.

    Left out: an unknown id, a key name Textual never reports, and a key that another binding of
    the same screen keeps (after the whole keymap is applied, so swapping two keys is fine).
    """
    known = binding_ids()
    usable: dict[str, str] = {}
    problems: list[tuple[str, str]] = []
    for bid, keys in keymap.items():
        if bid not in known:
            matches = close_matches(bid, known)
            problems.append((bid, f"there is no key binding with the id '{bid}'" + did_you_mean(matches)
                             + ("" if matches else "; docs/settings.md lists the ids")))
            continue
        bad = [k for k in keys.split(",") if not is_key_name(k.strip())]
        if bad:
            problems.append((bid, f"'{bad[0]}' is not a key name (use a character such as x or ?, or a name "
                                  "such as enter, f5, ctrl+x); the binding keeps its keys"))
            continue
        usable[bid] = ",".join(_character_to_key(k.strip()) if len(k.strip()) == 1 else k.strip()
                               for k in keys.split(","))
    while True:
        clash = _first_clash(usable)
        if clash is None:
            return usable, problems
        bid, key, other = clash
        del usable[bid]
        problems.append((bid, f"the key {key} is already {other.id}'s on the same screen; give {bid} "
                              f"another key, or {other.id} one too"))


def _first_clash(keymap: dict[str, str]) -> tuple[str, str, Binding] | None:
    """The first remapped binding whose key another binding of its screen also has, with that key and binding."""
    for group in KEYMAP_GROUPS:
        owner: dict[str, Binding] = {}
        for b in group:
            if b.id in keymap:
                continue
            for k in key_names(b):
                owner.setdefault(_character_to_key(k) if len(k) == 1 else k, b)
        for b in group:
            if b.id not in keymap:
                continue
            for k in key_names(b, keymap):
                if k in owner and owner[k] is not b:
                    return b.id, k, owner[k]
                owner[k] = b
    return None


# The keys that open a text box in place: the priority bindings of the screens with such a box. The screen acts on
# them before the key goes to the focused widget, and the box takes the focus at once (focus_now), so the keys typed
# after them in one burst go into the box. Each screen refuses them while a text box has the focus, where they are text.
OPENS_A_BOX = frozenset(b.action for b in (*DASHBOARD, *LOGS, *SOURCE) if b.priority)


def typed_into_a_box(screen, action: str) -> bool:
    """Whether ``action`` opens a box while a text box has ``screen``'s focus: the key is then text for that box."""
    from textual.widgets import Input

    return action in OPENS_A_BOX and isinstance(screen.focused, Input)


def focus_now(widget) -> None:
    """Give ``widget`` the focus before the next key is handled.

    Textual's ``Widget.focus`` moves the focus after the messages already queued. When the terminal hands the
    console a burst (an operator typing fast, or pasting), ``F`` and the name after it arrive together: the name's
    letters would then go to the widget that had the focus and act as its keys (``x`` stops, ``t`` aims the demo
    traffic). The screen's ``set_focus`` moves it at once, so each key goes where the keys before it sent it."""
    widget.screen.set_focus(widget)
