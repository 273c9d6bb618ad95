"""Every key of the console, declared once.

The screens take their ``BINDINGS`` from here; the footer, the help screen (``?``) and the
command palette (``ctrl+p``) are all generated from these same declarations. A binding's
``description`` is the footer label; its ``tooltip`` is the longer help text.
"""

from __future__ import annotations

from textual.binding import Binding

DIGITS = tuple(str(n) for n in range(1, 10))

DASHBOARD = [
    Binding("up,k", "move(-1)", "Up", show=False, tooltip="Highlight the previous profile"),
    Binding("down,j", "move(1)", "Down", show=False, tooltip="Highlight the next profile"),
    Binding("enter,s", "switch", "Switch", tooltip="Switch to the highlighted profile (asks before stopping a running server)"),
    *[Binding(d, f"switch_number({d})", f"Profile {d}", show=False,
              tooltip=f"Select profile {d} and switch to it") for d in DIGITS],
    Binding("x", "stop", "Stop", tooltip="Stop the server shown in the server panel (asks first)"),
    Binding("r", "restart", "Restart", tooltip="Restart the server shown in the server panel (asks first)"),
    Binding("l", "logs", "Logs", tooltip="Open the full log: search, wrap, follow, save"),
    Binding("slash", "filter", "Filter", show=False, tooltip="Filter the log tail (escape clears)"),
    Binding("f", "source", "Source", tooltip="Browse SGLang's speculative decoding source (the demo offers to "
                                             "fetch the published wheel)"),
    Binding("space", "mark", "Mark", show=False, tooltip="Mark or unmark the highlighted profile for a comparison (B)"),
    Binding("b", "bench", "Bench", tooltip="Benchmark the ready server with a preset (pick one; saved to history); "
                                           "while one runs: its progress"),
    Binding("B", "compare", "Compare", tooltip="Compare the marked profiles with a preset (baseline: the first "
                                               "without speculation, else the first marked)"),
    Binding("v", "results", "Results", show=False, tooltip="The benchmark screen: the one running, or the last "
                                                            "results"),
    Binding("p", "probe", "Probe", tooltip="Run the verify-cost probe for the highlighted profile: its predicted "
                                           "break-even L* (saved to history)"),
    Binding("t", "traffic", "Traffic", tooltip="Demo only: toggle the background load (varied prompts, sampled)"),
    Binding("c", "traffic_concurrency", "Streams", show=False,
            tooltip="Demo only: cycle the background load's concurrent requests, 1 / 4 / 16"),
    Binding("a", "rate_formula", "Rate formula", show=False,
            tooltip="Show the accept rate in the other formula (the server's release decides the first)"),
    Binding("question_mark", "help", "Help", tooltip="Show every key"),
    Binding("q", "quit_console", "Quit", tooltip="Quit (servers on a real host keep running; the demo stops its own)"),
]

LOGS = [
    Binding("slash", "search", "Search", tooltip="Search the log (enter jumps to the first match)"),
    Binding("n", "next_match", "Next", tooltip="Jump to the next match"),
    Binding("N", "previous_match", "Previous", show=False, tooltip="Jump to the previous match"),
    Binding("w", "toggle_wrap", "Wrap", tooltip="Wrap long lines on or off"),
    Binding("f", "toggle_follow", "Follow", tooltip="Follow new lines on or off"),
    Binding("ctrl+s", "save", "Save", tooltip="Save the log to a local file"),
    Binding("escape,q", "close", "Back", tooltip="Back to the dashboard"),
]

BENCH = [
    Binding("c", "cancel_bench", "Stop", tooltip="Stop the benchmark (asks; what it measured is saved, marked "
                                                 "interrupted)"),
    Binding("e", "export", "Export", tooltip="Export the results as Markdown to a file (says where)"),
    Binding("escape,q", "close", "Back", tooltip="Back to the dashboard (a benchmark goes on; v comes back)"),
]

SOURCE = [
    Binding("slash", "search", "Search", tooltip="Search the package with a regular expression (run on the host)"),
    Binding("g", "definition", "Definition", tooltip="Go to the definition of the name under the cursor"),
    Binding("d", "ask_definition", "Go to name", tooltip="Type a class, function or --flag name and go to it"),
    Binding("n", "next_hit(1)", "Next hit", tooltip="Jump to the next search hit"),
    Binding("N", "next_hit(-1)", "Previous hit", show=False, tooltip="Jump to the previous search hit"),
    Binding("a", "algorithms", "Algorithms", tooltip="The speculative algorithms and their worker modules"),
    Binding("p", "flags", "Flags", tooltip="The profile's speculative-* flags, where they are defined"),
    Binding("t", "focus_tree", "Tree", show=False, tooltip="Focus the file tree"),
    Binding("v", "focus_view", "View", show=False, tooltip="Focus the file view"),
    Binding("escape,q", "close", "Back", tooltip="Back to the dashboard"),
]

PICKER = [Binding("escape", "cancel", "Cancel", tooltip="Close without choosing")]

CLOSE = [Binding("escape,q,question_mark", "close", "Close", tooltip="Close this screen")]

CONFIRM = [
    Binding("y,enter", "confirm", "Yes", tooltip="Go ahead"),
    Binding("n,escape", "cancel", "No", tooltip="Cancel"),
]

PALETTE_KEY = "ctrl+p"
PALETTE_HELP = "Command palette: Switch to / Stop for each profile, and every key above"

# Groups shown by the help screen, in order.
HELP_GROUPS = (("Dashboard", DASHBOARD), ("Log screen", LOGS), ("Benchmark screen", BENCH),
               ("Source screen", SOURCE))

# Actions that make sense as palette commands (digits and movement do not).
PALETTE_ACTIONS = ("switch", "stop", "restart", "logs", "filter", "source", "bench", "compare", "results", "probe",
                   "traffic", "help", "quit_console")
# A palette title where the footer's short label would not say enough.
PALETTE_TITLES = {"probe": "Run verify-cost probe", "bench": "Benchmark the ready server",
                  "compare": "Compare the marked profiles", "results": "Benchmark results"}


def key_names(binding: Binding) -> list[str]:
    return [k.strip() for k in binding.key.split(",") if k.strip()]


def palette_title(binding: Binding) -> str:
    return PALETTE_TITLES.get(binding.action.split("(")[0], binding.description)
