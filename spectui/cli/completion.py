"""``spectui completion bash|zsh|fish``: the shell's completion script, and ``spectui __complete``, which
the script calls on each TAB.

The scripts are a few lines each that hand the words typed so far to ``spectui __complete SHELL CWORD --
WORDS...``; that walks spectui's own argparse parsers (every command's module is imported for it) and
prints one candidate a line. A small hand-written completer, rather than argcomplete or shtab, because:

- the candidates that matter most are dynamic and local (profile names from the profile folders, host
  aliases from the SSH config, history ids from the history database), which a static script (shtab)
  cannot know and argcomplete would need its own hooks and a runtime dependency for;
- the commands are registered lazily (:mod:`spectui.cli.main`): the completer loads them all, while
  ``spectui --help`` still loads none;
- one Python walker serves bash, zsh and fish alike, so the three never disagree.

Nothing here opens an SSH connection: server names are the names of the profiles found locally (a
server started from a profile carries its name); servers started outside spectui are not offered.
"""

from __future__ import annotations

import argparse
import glob
import os
import sys
from collections.abc import Iterable

SHELLS = ("bash", "zsh", "fish")

BASH = r"""# spectui completion for bash: source it, or save it as
# ~/.local/share/bash-completion/completions/spectui
_spectui_complete() {
    local IFS=$'\n'
    COMPREPLY=($(spectui __complete bash "$COMP_CWORD" -- "${COMP_WORDS[@]}" 2>/dev/null))
}
complete -o default -F _spectui_complete spectui
"""

ZSH = r"""#compdef spectui
# spectui completion for zsh: save it as _spectui in a folder of $fpath, or source it after compinit
_spectui() {
    local -a candidates
    candidates=("${(@f)$(spectui __complete zsh $((CURRENT - 1)) -- "${words[@]}" 2>/dev/null)}")
    if (( ${#candidates[@]} )) && [[ -n "${candidates[1]}" ]]; then
        compadd -- "${candidates[@]}"
    else
        _files
    fi
}
if [[ "$funcstack[1]" = "_spectui" ]]; then
    _spectui "$@"
else
    compdef _spectui spectui
fi
"""

FISH = r"""# spectui completion for fish: save it as ~/.config/fish/completions/spectui.fish
function __spectui_complete
    set -l words (commandline -opc) (commandline -ct)
    spectui __complete fish (math (count $words) - 1) -- $words 2>/dev/null
end
complete -c spectui -f -a '(__spectui_complete)'
"""

SCRIPTS = {"bash": BASH, "zsh": ZSH, "fish": FISH}

# What an argument's candidates are, by its ``dest``.
HOST_DESTS = {"destination", "destinations", "jump"}
PROFILE_DESTS = {"profile", "baseline", "sweep_profile", "profiles", "name", "server", "from_running"}
HISTORY_DESTS = {"id", "ids"}
# Destinations that are not profiles although they share a name with one above.
NOT_PROFILES = {("profiles", "PATH"), ("name", None)}


def register(sub) -> None:
    p = sub.add_parser("completion", help="print the shell completion script (bash, zsh or fish)",
                       description="Print the completion script for SHELL; see docs/completion.md to install it.")
    p.add_argument("shell", choices=SHELLS, metavar="SHELL", help="bash, zsh or fish")
    p.set_defaults(func=run)
    c = sub.add_parser("__complete")  # no help: not listed
    c.add_argument("shell", choices=SHELLS)
    c.add_argument("cword", type=int)
    c.add_argument("words", nargs=argparse.REMAINDER)
    c.set_defaults(func=run_complete)


def run(args: argparse.Namespace) -> int:
    sys.stdout.write(SCRIPTS[args.shell])
    return 0


def run_complete(args: argparse.Namespace) -> int:
    words = list(args.words)
    if words and words[0] == "--":
        words = words[1:]
    for candidate in complete(words, args.cword):
        print(candidate)
    return 0


# --- the walker --------------------------------------------------------------------------------------------------
def _all_commands() -> argparse.ArgumentParser:
    from spectui.cli.main import COMMANDS, build_parser

    parser = build_parser()
    commands = _subparsers(parser)
    for name in COMMANDS:
        try:
            commands.load(name)
        except ImportError:  # a command whose module is not there: complete the others
            continue
    return parser


def _subparsers(parser: argparse.ArgumentParser) -> argparse._SubParsersAction | None:
    return next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)


def _option(parser: argparse.ArgumentParser, word: str) -> argparse.Action | None:
    return parser._option_string_actions.get(word.split("=", 1)[0])


def complete(words: list[str], cword: int) -> list[str]:
    """The candidates for word ``cword`` of ``words`` (``words[0]`` is the program), sorted."""
    if cword < 1:
        return []
    current = words[cword] if cword < len(words) else ""
    parser, seen, positionals, pending = _walk(_all_commands(), words[1:cword])
    if pending is not None:
        return _values(pending, current, seen)
    if current.startswith("-"):
        return sorted(o for a in parser._actions if a.help != argparse.SUPPRESS
                      for o in a.option_strings if o.startswith(current))
    commands = _subparsers(parser)
    if commands is not None and not positionals:
        return sorted(n for n, _ in _visible_commands(commands) if n.startswith(current))
    action = _positional(parser, len(positionals))
    return _values(action, current, seen) if action is not None else []


def _walk(parser: argparse.ArgumentParser, words: list[str]):
    """Follow the words before the cursor: the (sub)command's parser reached, the option values given
    (dest -> value), the positional words, and the option still waiting for its value (or None)."""
    seen: dict[str, object] = {}
    positionals: list[str] = []
    pending = None
    for word in words:
        if pending is not None:
            seen[pending.dest], pending = word, None
        elif word.startswith("-") and word != "-":
            action = _option(parser, word)
            if action is not None and action.nargs != 0 and "=" not in word:
                pending = action
            elif action is not None:
                seen[action.dest] = word.split("=", 1)[1] if "=" in word else True
        else:
            commands = _subparsers(parser)
            if commands is not None and not positionals and word in commands.choices:
                parser = commands.choices[word] or commands.load(word)
            else:
                positionals.append(word)
    return parser, seen, positionals, pending


def _visible_commands(commands: argparse._SubParsersAction) -> Iterable[tuple[str, object]]:
    shown = {a.dest for a in commands._choices_actions}
    return [(n, p) for n, p in commands.choices.items() if n in shown]


def _positional(parser: argparse.ArgumentParser, index: int) -> argparse.Action | None:
    """The positional argument that the ``index``-th positional word fills."""
    n = 0
    for action in parser._actions:
        if action.option_strings or isinstance(action, argparse._SubParsersAction):
            continue
        if action.nargs in ("*", "+", argparse.REMAINDER):
            return action
        n += 1 if action.nargs in (None, "?") else int(action.nargs)
        if index < n:
            return action
    return None


def _values(action: argparse.Action, current: str, seen: dict) -> list[str]:
    if action.choices is not None:
        return sorted(str(c) for c in action.choices if str(c).startswith(current))
    if (action.dest, action.metavar) in NOT_PROFILES:
        return []
    if action.dest in HOST_DESTS:
        names = host_aliases(seen)
    elif action.dest in PROFILE_DESTS:
        names = profile_names(seen)
        if action.metavar == "A,B,C":  # a comma-separated list: complete its last name
            head, _, current = current.rpartition(",")
            return sorted((head + "," if head else "") + n for n in names if n.startswith(current))
    elif action.dest in HISTORY_DESTS:
        names = history_ids(seen)
    else:
        return []
    return sorted(n for n in set(names) if n.startswith(current))


# --- the candidates ----------------------------------------------------------------------------------------------
def _quietly(read, default):
    """A candidate source's answer, or ``default`` when it fails: a TAB never prints a traceback."""
    try:
        return read()
    except Exception:
        return default


def profile_names(seen: dict) -> list[str]:
    """The profiles found locally: shipped (or ``$SPECTUI_PROFILES_PATH``), the user's, and ``--profiles``."""
    def read() -> list[str]:
        from spectui.core.profiles import load_profiles

        extra = seen.get("profile_paths") or seen.get("profiles")
        paths = [extra] if isinstance(extra, str) and os.path.exists(os.path.expanduser(extra)) else None
        return list(load_profiles(paths).profiles)
    return _quietly(read, [])


def host_aliases(seen: dict) -> list[str]:
    """The ``Host`` aliases (no patterns) of the SSH config (``-F``, else the settings' ssh.config, else
    ``~/.ssh/config``, with its ``Include`` files), and the settings' default_host and hosts."""
    def read() -> list[str]:
        from spectui.core.settings import load_settings

        settings = load_settings()
        config = seen.get("ssh_config") or settings.ssh.config_file or "~/.ssh/config"
        names = _ssh_hosts(os.path.expanduser(str(config)), set())
        return names + settings.hosts + ([settings.default_host] if settings.default_host else [])
    return _quietly(read, [])


def _ssh_hosts(path: str, visited: set[str]) -> list[str]:
    if path in visited or len(visited) > 32:
        return []
    visited.add(path)
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return []
    names: list[str] = []
    for line in lines:
        parts = line.replace("=", " ", 1).split()
        if len(parts) < 2 or parts[0].startswith("#"):
            continue
        keyword = parts[0].lower()
        if keyword == "host":
            names += [p for p in parts[1:] if not any(c in p for c in "*?!")]
        elif keyword == "include":
            for pattern in parts[1:]:
                pattern = os.path.expanduser(pattern)
                if not os.path.isabs(pattern):  # ssh_config(5): relative to ~/.ssh
                    pattern = os.path.join(os.path.expanduser("~/.ssh"), pattern)
                for included in sorted(glob.glob(pattern)):
                    names += _ssh_hosts(included, visited)
    return names


def history_ids(seen: dict) -> list[str]:
    """The ids in the local history database, only those of the host given on the line when one is."""
    def read() -> list[str]:
        from spectui.core.history import HistoryStore, default_path

        if not default_path().is_file():
            return []
        host = seen.get("destination")
        entries = HistoryStore().entries()
        return [e.id for e in entries if not isinstance(host, str) or e.host == host]
    return _quietly(read, [])
