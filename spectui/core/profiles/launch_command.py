"""Reading a pasted SGLang launch command: shell words, then the launcher inside its wrappers.

An operator's command comes as they run it: ``VAR=value`` prefixes, ``env A=B``, ``nohup ... >
log 2>&1 &``, ``\\``-newline continuations, comments, several lines of a script, or a ``docker
run ... IMAGE python3 -m sglang.launch_server ...``. ``read_launch_command`` finds the one SGLang
launch in such text and returns its environment and server arguments, never running a shell.

Quoting reads as bash reads it: ``'...'``, ``"..."``, backslashes, and bash's ANSI-C quoting ``$'...'``
(``\\n``, ``\\t``, ``\\e``, ``\\'``, ``\\xHH``, ``\\NNN`` octal, ``\\uHHHH``, ``\\cX``; the value ends at a NUL, as a
C string does; bash's lib/sh/strtrans.c, ``ansicstr``). Text longer than :data:`MAX_COMMAND_BYTES` is
refused before it is read.

Shell variables (``$NAME``, ``${NAME}``) become ``${NAME}`` references, the form profiles use for
values taken from the host's environment. Anything a shell would have to compute (``$(...)``,
backticks, ``${NAME:-default}``) ends in a ``LaunchCommandError``, as do unclosed quotes and
wrappers this reader does not know.

Both launch forms run the same parser: ``sglang serve`` hands its arguments to
``prepare_server_args``, as ``python -m sglang.launch_server`` does (sglang 0.5.23 wheel,
sglang/cli/serve.py:97-106, sglang/launch_server.py:70), and takes a first bare word as the
model path (sglang/cli/serve.py:62).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from spectui.core.errors import SpectuiError

ASSIGNMENT_RE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.S)
_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PYTHON_RE = re.compile(r"^python(\d+(\.\d+)*)?$")
#: Interpreter options that may come before ``-m`` (``python3 -u -m sglang.launch_server``).
_PYTHON_SWITCHES = {"-u", "-B", "-O", "-OO", "-E", "-s", "-S", "-I", "-q"}
_PYTHON_VALUED = {"-W", "-X"}
LAUNCH_MODULE = "sglang.launch_server"
#: ``docker run`` options that take a value (the docker run reference); others are switches.
_DOCKER_VALUED = {
    "-e", "--env", "--env-file", "-v", "--volume", "-p", "--publish", "--name", "--gpus", "--shm-size",
    "--ipc", "--network", "--net", "-w", "--workdir", "--runtime", "--device", "--entrypoint", "-u",
    "--user", "--ulimit", "--cap-add", "--cap-drop", "--security-opt", "--mount", "--group-add", "-h",
    "--hostname", "-l", "--label", "--label-file", "--add-host", "--cpus", "-m", "--memory",
    "--memory-swap", "--platform", "--pid", "--restart", "--log-driver", "--log-opt", "--cpuset-cpus",
    "--uts", "--userns", "--cgroupns", "--tmpfs", "--dns", "--expose", "--stop-signal", "--volumes-from",
    "--link", "--pull", "--sysctl", "--oom-score-adj", "--device-cgroup-rule", "--cidfile", "--ip",
    "--ip6", "--mac-address", "--storage-opt", "--health-cmd", "--stop-timeout", "--cgroup-parent",
}
_SUDO_VALUED = {"-u", "--user", "-g", "--group", "-C", "-D", "-h", "-p", "-r", "-t", "-U"}
_SIMPLE_WRAPPERS = {"nohup", "exec", "time", "command", "builtin"}
_SHELLS = {"sh", "bash", "zsh", "dash"}
#: The longest text read as a launch command: a real one, script lines and all, is a few KB.
MAX_COMMAND_BYTES = 256 * 1024
#: ANSI-C quoting's one-letter escapes (bash, lib/sh/strtrans.c).
_ANSI_C_ESCAPES = {"a": 7, "b": 8, "e": 27, "E": 27, "f": 12, "n": 10, "r": 13, "t": 9, "v": 11, "\\": 92, "'": 39,
                   '"': 34, "?": 63}
_OCTAL = "01234567"
_HEX = "0123456789abcdefABCDEF"


class LaunchCommandError(SpectuiError):
    """The text holds no usable launch command; ``str()`` says why and what to do, in one sentence."""


@dataclass(frozen=True)
class Word:
    """One shell word after quote removal, with the 1-based line it starts on."""

    text: str
    line: int


@dataclass
class LaunchCommand:
    """The SGLang launch found in the text."""

    #: ``NAME=value`` pairs in the order given (prefixes, ``env``, ``export``, ``docker -e``).
    env: list[tuple[str, str]] = field(default_factory=list)
    #: The interpreter as written (``python3``, ``/opt/venv/bin/python``); None for ``sglang serve``.
    interpreter: str | None = None
    #: ``launch_server`` or ``serve``.
    entry: str = "launch_server"
    #: The server's own arguments.
    args: list[Word] = field(default_factory=list)
    line: int = 1
    #: The container image when the launch ran under ``docker run``.
    image: str | None = None
    #: What was left out, for the reader.
    notes: list[str] = field(default_factory=list)


# -- shell words -------------------------------------------------------------------------------


class _Reader:
    """A small POSIX-shell word splitter: quotes, escapes, comments, operators, redirections."""

    def __init__(self, text: str) -> None:
        self.text = text.replace("\r\n", "\n")
        self.i = 0
        self.line = 1
        self.commands: list[list[Word]] = []
        self.current: list[Word] = []
        self.redirected = False

    def fail(self, message: str) -> LaunchCommandError:
        return LaunchCommandError(message)

    def peek(self, k: int = 0) -> str:
        j = self.i + k
        return self.text[j] if j < len(self.text) else ""

    def end_command(self) -> None:
        if self.current:
            self.commands.append(self.current)
        self.current = []

    def read(self) -> list[list[Word]]:
        skip_next_word = False
        while self.i < len(self.text):
            c = self.peek()
            if c == "\\" and self.peek(1) == "\n":
                self.i += 2
                self.line += 1
                continue
            if c in " \t":
                self.i += 1
                continue
            if c == "\n":
                self.end_command()
                self.i += 1
                self.line += 1
                continue
            if c == "#":
                while self.i < len(self.text) and self.peek() != "\n":
                    self.i += 1
                continue
            if c in ";&|()":
                if c == "&" and self.peek(1) == ">":
                    self.i += 2 + (self.peek(2) == ">")
                    skip_next_word = True
                    self.redirected = True
                    continue
                two = self.text[self.i:self.i + 2]
                self.i += 2 if two in ("&&", "||", "|&") else 1
                self.end_command()
                continue
            if c in "<>":
                self.i += self._redirection_length()
                skip_next_word = True
                self.redirected = True
                continue
            start_line = self.line
            word = self._word()
            if skip_next_word:
                skip_next_word = False
                continue
            # "2>&1": a file descriptor number written right before a redirection
            if word.isdigit() and self.peek() in ("<", ">"):
                continue
            self.current.append(Word(word, start_line))
        self.end_command()
        return self.commands

    def _redirection_length(self) -> int:
        c = self.peek()
        if c == "<" and self.peek(1) == "<":
            raise self.fail(f"line {self.line} has a here-document (<<), which cannot be imported; "
                            "paste the launch command alone")
        n = 1
        if self.peek(1) in (">", "&", "|") and c == ">":
            n = 2
        elif c == "<" and self.peek(1) == "&":
            n = 2
        return n

    def _word(self) -> str:
        out: list[str] = []
        while self.i < len(self.text):
            c = self.peek()
            if c in " \t\n;&|()<>":
                break
            if c == "\\":
                nxt = self.peek(1)
                self.i += 2
                if nxt == "\n":
                    self.line += 1
                elif nxt:
                    out.append(nxt)
                continue
            if c == "'":
                end = self.text.find("'", self.i + 1)
                if end < 0:
                    raise self.fail(f"line {self.line} opens a single quote (') that is never closed; "
                                    "close it and import again")
                chunk = self.text[self.i + 1:end]
                self.line += chunk.count("\n")
                out.append(chunk)
                self.i = end + 1
                continue
            if c == '"':
                out.append(self._double_quoted())
                continue
            if c == "$" and self.peek(1) == "'":
                out.append(self._ansi_c())
                continue
            if c == "$" and self.peek(1) == '"':   # $"...": a translated string, which is the string itself
                self.i += 1
                continue
            if c == "$":
                out.append(self._expansion())
                continue
            if c == "`":
                raise self.fail(f"line {self.line} runs a command in backticks, which cannot be imported; "
                                "replace it with its value")
            out.append(c)
            self.i += 1
        return "".join(out)

    def _ansi_c(self) -> str:
        """``$'...'`` at ``self.i``: its end found as bash finds it (a backslash hides the next character),
        then its escapes turned into the bytes bash makes, up to a NUL, read as UTF-8."""
        opened, j = self.line, self.i + 2
        while j < len(self.text) and self.text[j] != "'":
            j += 2 if self.text[j] == "\\" else 1
        if j >= len(self.text):
            raise self.fail(f"line {opened} opens an ANSI-C quote ($') that is never closed; close it and "
                            "import again")
        content = self.text[self.i + 2:j]
        self.line += content.count("\n")
        self.i = j + 1
        value = ansi_c_bytes(content).split(b"\0", 1)[0]
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            raise self.fail(f"line {opened} has an ANSI-C quote ($'...') whose escapes make bytes that are not "
                            "UTF-8 text; write the characters themselves") from None

    def _double_quoted(self) -> str:
        opened = self.line
        self.i += 1
        out: list[str] = []
        while True:
            if self.i >= len(self.text):
                raise self.fail(f'line {opened} opens a double quote (") that is never closed; '
                                "close it and import again")
            c = self.peek()
            if c == '"':
                self.i += 1
                return "".join(out)
            if c == "\\" and self.peek(1) in ('"', "\\", "$", "`", "\n"):
                if self.peek(1) == "\n":
                    self.line += 1
                else:
                    out.append(self.peek(1))
                self.i += 2
                continue
            if c == "$":
                out.append(self._expansion())
                continue
            if c == "`":
                raise self.fail(f"line {self.line} runs a command in backticks, which cannot be imported; "
                                "replace it with its value")
            if c == "\n":
                self.line += 1
            out.append(c)
            self.i += 1

    def _expansion(self) -> str:
        """``$NAME`` / ``${NAME}`` -> ``${NAME}``; anything a shell must compute is refused."""
        nxt = self.peek(1)
        if nxt == "{":
            end = self.text.find("}", self.i)
            inner = self.text[self.i + 2:end] if end > 0 else ""
            if end > 0 and _NAME_RE.fullmatch(inner):
                self.i = end + 1
                return "${" + inner + "}"
            shown = self.text[self.i:end + 1] if end > 0 else self.text[self.i:self.i + 12]
            raise self.fail(f"line {self.line} uses the shell expansion '{shown}', which cannot be imported; "
                            "replace it with its value or a plain ${NAME}")
        if nxt == "(":
            raise self.fail(f"line {self.line} runs a command with $(...), which cannot be imported; "
                            "replace it with its value")
        m = _NAME_RE.match(self.text, self.i + 1)
        if m:
            self.i = m.end()
            return "${" + m.group(0) + "}"
        if nxt and (nxt.isdigit() or nxt in "@*#?$!-"):
            raise self.fail(f"line {self.line} uses the shell parameter '${nxt}', which cannot be imported; "
                            "replace it with its value")
        self.i += 1
        return "$"


def ansi_c_bytes(content: str) -> bytes:
    """The bytes bash makes of the inside of ``$'...'`` (bash's ``ansicstr``): an unknown escape keeps its
    backslash, ``\\x``, ``\\u`` and ``\\U`` without digits stay as written, octal and ``\\x`` values wrap at a byte,
    and ``\\u``/``\\U`` code points are written in UTF-8."""
    out = bytearray()
    i, n = 0, len(content)

    def digits(start: int, allowed: str, most: int) -> str:
        end = start
        while end < n and end - start < most and content[end] in allowed:
            end += 1
        return content[start:end]

    while i < n:
        c = content[i]
        if c != "\\" or i + 1 >= n:
            out += c.encode("utf-8", "surrogatepass")
            i += 1
            continue
        e, i = content[i + 1], i + 2
        if e in _ANSI_C_ESCAPES:
            out.append(_ANSI_C_ESCAPES[e])
        elif e in _OCTAL:
            more = digits(i, _OCTAL, 2)
            out.append(int(e + more, 8) & 0xFF)
            i += len(more)
        elif e in "xuU":
            hexa = digits(i, _HEX, {"x": 2, "u": 4, "U": 8}[e])
            i += len(hexa)
            if not hexa:
                out += b"\\" + e.encode()
            elif e == "x" or int(hexa, 16) < 0x80:
                out.append(int(hexa, 16) & 0xFF)
            else:
                code = int(hexa, 16)
                out += chr(code).encode("utf-8", "surrogatepass") if code <= 0x10FFFF else b"\xff"
        elif e == "c" and i < n:
            target = content[i].encode("utf-8", "surrogatepass")
            i += 1
            if target == b"\\" and i < n and content[i] == "\\":
                i += 1   # $'\c\\' is one backslash's control character
            first = target[0]
            out.append(0x7F if first == ord("?") else (first - 32 if 97 <= first <= 122 else first) & 0x1F)
            out += target[1:]
        else:
            out += b"\\" + e.encode("utf-8", "surrogatepass")
    return bytes(out)


def split_commands(text: str) -> list[list[Word]]:
    """The simple commands in ``text``: words after quote removal, comments and redirections dropped,
    split at newlines, ``;``, ``&``, ``&&``, ``||``, ``|`` and parentheses."""
    return _Reader(text).read()


# -- the launcher inside its wrappers ----------------------------------------------------------


def _launch_at(words: list[Word], i: int) -> tuple[str, str | None, int] | None:
    """``(entry, interpreter, index of the first server argument)`` if a launcher starts at ``i``."""
    base = os.path.basename(words[i].text)
    if base == "sglang" and i + 1 < len(words) and words[i + 1].text == "serve":
        return "serve", None, i + 2
    if not _PYTHON_RE.match(base):
        return None
    j = i + 1
    while j < len(words):
        w = words[j].text
        if w in _PYTHON_SWITCHES:
            j += 1
        elif w in _PYTHON_VALUED:
            j += 2
        elif w == "-m" and j + 1 < len(words):
            module = words[j + 1].text
            if module == LAUNCH_MODULE:
                return "launch_server", words[i].text, j + 2
            if module.startswith("sglang"):
                raise LaunchCommandError(
                    f"line {words[j].line} runs 'python -m {module}', not SGLang's server launcher "
                    f"({LAUNCH_MODULE}); import a 'python -m {LAUNCH_MODULE}' or 'sglang serve' command")
            return None
        else:
            return None
    return None


def _mentions_launch(words: list[Word]) -> bool:
    texts = [w.text for w in words]
    return LAUNCH_MODULE in texts or any(
        os.path.basename(a) == "sglang" and b == "serve" for a, b in zip(texts, texts[1:]))


class _Unwrapper:
    def __init__(self, words: list[Word], launch: LaunchCommand) -> None:
        self.words = words
        self.launch = launch

    def unwrap(self, i: int = 0) -> LaunchCommand | None:
        words, launch = self.words, self.launch
        while i < len(words):
            w = words[i].text
            m = ASSIGNMENT_RE.match(w)
            if m:
                launch.env.append((m.group(1), m.group(2)))
                i += 1
                continue
            found = _launch_at(words, i)
            if found:
                launch.entry, launch.interpreter, start = found
                launch.args = words[start:]
                launch.line = words[i].line
                return launch
            base = os.path.basename(w)
            if base == "env":
                i = self._env_options(i + 1)
            elif base in _SIMPLE_WRAPPERS:
                i += 1
                while i < len(words) and words[i].text.startswith("-") and base == "time":
                    i += 1
            elif base == "sudo":
                i = self._sudo_options(i + 1)
            elif base in ("docker", "podman"):
                i = self._docker_run(i)
            elif base in _SHELLS and i + 2 < len(words) and words[i + 1].text == "-c":
                return self._shell_script(words[i + 2])
            elif base == "export":
                return None
            else:
                if _mentions_launch(words[i + 1:]):
                    raise LaunchCommandError(
                        f"line {words[i].line} runs the launch command under '{w}', a wrapper spectui "
                        "does not know; remove it and import the launch command alone")
                return None
        return None

    def _env_options(self, i: int) -> int:
        words = self.words
        while i < len(words) and words[i].text.startswith("-"):
            opt = words[i].text
            if opt in ("-u", "--unset"):
                self.launch.notes.append(f"env {opt} {words[i + 1].text if i + 1 < len(words) else ''} "
                                         "was left out: a profile only adds variables".rstrip())
                i += 2
                continue
            if opt in ("-i", "--ignore-environment", "-"):
                self.launch.notes.append("env -i was left out: spectui starts the server with the "
                                         "host's environment plus the profile's env")
            i += 1
            if opt == "--":
                break
        return i

    def _sudo_options(self, i: int) -> int:
        words = self.words
        self.launch.notes.append("sudo was left out: spectui starts the server as the SSH user")
        while i < len(words) and words[i].text.startswith("-"):
            i += 2 if words[i].text in _SUDO_VALUED else 1
        return i

    def _docker_run(self, i: int) -> int:
        words = self.words
        j = i + 1
        if j < len(words) and words[j].text == "container":
            j += 1
        if j >= len(words) or words[j].text != "run":
            shown = " ".join(w.text for w in words[i:j + 1])
            raise LaunchCommandError(
                f"line {words[i].line} runs '{shown}'; only 'docker run ... IMAGE python3 -m "
                "sglang.launch_server ...' can be imported")
        j += 1
        dropped: list[str] = []
        while j < len(words) and words[j].text.startswith("-"):
            written = words[j].text
            opt, eq, inline = written.partition("=")
            valued = opt in _DOCKER_VALUED
            value = inline if eq else (words[j + 1].text if valued and j + 1 < len(words) else None)
            j += 1 if (eq or not valued) else 2
            if opt in ("-e", "--env") and value is not None:
                m = ASSIGNMENT_RE.match(value)
                if m:
                    self.launch.env.append((m.group(1), m.group(2)))
                elif _NAME_RE.fullmatch(value):
                    self.launch.env.append((value, "${" + value + "}"))
                continue
            dropped.append(written if (eq or value is None) else f"{opt} {value}")
        if j >= len(words):
            raise LaunchCommandError(
                f"the docker run on line {words[i].line} names no image and command; import a "
                "'docker run ... IMAGE python3 -m sglang.launch_server ...' command")
        self.launch.image = words[j].text
        if dropped:
            self.launch.notes.append("docker options left out (spectui runs the server on the host, not in "
                                     "a container): " + ", ".join(dropped))
        if j + 1 >= len(words):
            raise LaunchCommandError(
                f"the docker run on line {words[i].line} runs the image's default command; put the "
                "launch command after the image name and import again")
        return j + 1

    def _shell_script(self, script: Word) -> LaunchCommand | None:
        found = _find_in(split_commands(script.text), self.launch)
        return found


def _exports(words: list[Word], env: list[tuple[str, str]]) -> bool:
    if not words or words[0].text != "export":
        return False
    for w in words[1:]:
        m = ASSIGNMENT_RE.match(w.text)
        if m:
            env.append((m.group(1), m.group(2)))
    return True


def _find_in(commands: list[list[Word]], base: LaunchCommand) -> LaunchCommand | None:
    found: list[LaunchCommand] = []
    exported: list[tuple[str, str]] = []
    ignored: list[str] = []
    for words in commands:
        if _exports(words, exported):
            continue
        launch = LaunchCommand(env=list(base.env) + list(exported), notes=list(base.notes), image=base.image)
        result = _Unwrapper(words, launch).unwrap()
        if result is not None:
            found.append(result)
        elif words:
            ignored.append(words[0].text)
    if len(found) > 1:
        lines = ", ".join(str(f.line) for f in found)
        raise LaunchCommandError(f"the text holds {len(found)} SGLang launch commands (lines {lines}); "
                                 "import one at a time")
    if not found:
        return None
    result = found[0]
    if ignored:
        shown = sorted(set(ignored))
        result.notes.append("other commands in the text were left out: " + ", ".join(shown))
    return result


def read_launch_command(text: str) -> LaunchCommand:
    """The one SGLang launch command in ``text`` (see the module docstring)."""
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_COMMAND_BYTES:
        raise LaunchCommandError(f"the text holds {size} bytes, more than the {MAX_COMMAND_BYTES // 1024} KB a launch "
                                 "command may have; give the launch command alone")
    commands = split_commands(text)
    if not commands:
        raise LaunchCommandError("the input is empty; give a launch command such as "
                                 "'python3 -m sglang.launch_server --model-path MODEL ...'")
    launch = _find_in(commands, LaunchCommand())
    if launch is None:
        raise LaunchCommandError("no SGLang launch command found: expected 'python3 -m sglang.launch_server "
                                 "...' or 'sglang serve ...', possibly after VAR=value, env, nohup or docker run")
    return launch
