"""Turning a real SGLang launch command into a profile.

``import_launch_command`` reads the command (``launch_command.read_launch_command``), maps its
flags onto profile fields and returns the profile as data plus the notes a reader needs:

- ``--model-path``/``--model``, ``--host`` and ``--port`` become the top-level fields;
  ``CUDA_VISIBLE_DEVICES`` becomes ``gpus``; every other flag goes under ``args`` by its full
  name, its values as written (a number stays a number only when YAML writes it back the same);
- abbreviated flags (``--tp``, ``--speculative-algo``) are resolved the way SGLang's argparse
  does (``allow_abbrev``: a unique prefix of one option; sglang 0.5.23 wheel,
  sglang/srt/server_args.py:679 builds a plain ``argparse.ArgumentParser``), against the
  ``FlagSet`` of the host's or the local ``--help`` when one is given; without one they are kept
  as written and a note says so;
- secrets never reach the file: ``--api-key``/``--admin-api-key`` values and secret-looking
  environment variables (``HF_TOKEN``, ``HUGGING_FACE_HUB_TOKEN``, ``*_TOKEN``, ``*_API_KEY``...)
  are replaced by ``${NAME}`` references, which the agent fills in from the host's environment
  when it starts the server (``env`` values and argv words alike);
- the name is the model's last path part and the speculative algorithm (``llama-3.1-8b-eagle3``).
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass, field
from typing import Any

import yaml

from spectui.core.profiles.flags import FlagInfo, FlagSet
from spectui.core.profiles.launch_command import LaunchCommand, LaunchCommandError, Word, read_launch_command
from spectui.core.profiles.model import DEFAULT_HOST, DEFAULT_PORT
from spectui.core.profiles.schema import NAME_RE, parse_gpus
from spectui.core.profiles.secret_flags import is_secret_flag

#: Flags whose value is a secret, and the host variable the profile refers to instead.
SECRET_FLAGS = {"api-key": "SGLANG_API_KEY", "admin-api-key": "SGLANG_ADMIN_API_KEY"}
#: Environment variables whose value is a secret (by exact name, then by ending).
SECRET_ENV_NAMES = {"HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HUGGINGFACE_HUB_TOKEN", "HF_API_TOKEN",
                    "HUGGINGFACEHUB_API_TOKEN"}
SECRET_ENV_RE = re.compile(r"(TOKEN|SECRET|PASSWORD|PASSWD|API_KEY|APIKEY|ACCESS_KEY|SECRET_KEY|CREDENTIALS?)$")
_REFERENCE_RE = re.compile(r"^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$")
_NEGATIVE_NUMBER_RE = re.compile(r"^-\d+(\.\d+)?$")
_INT_RE = re.compile(r"^-?[0-9]+$")
_FLOAT_RE = re.compile(r"^-?[0-9]+\.[0-9]+$")
_PLAIN_INTERPRETERS = {"python", "python3"}
MODEL_FLAGS = ("--model-path", "--model")


def is_secret_env(name: str) -> bool:
    return name in SECRET_ENV_NAMES or bool(SECRET_ENV_RE.search(name))


@dataclass
class ImportedProfile:
    """A profile made from a launch command: its fields in file order, and notes for the reader."""

    data: dict[str, Any]
    notes: list[str] = field(default_factory=list)
    #: What it was made from, for the file's header.
    source: str = "a launch command"

    @property
    def name(self) -> str:
        return self.data["name"]

    def to_yaml(self) -> str:
        """The profile file: a comment header with the notes, then the fields."""
        lines = [f"# Imported by 'spectui profiles import' from {self.source}."]
        for note in self.notes:
            lines.append("# - " + note.replace("\n", " "))
        body = yaml.safe_dump(self.data, sort_keys=False, default_flow_style=False, allow_unicode=True,
                              width=100000)
        return "\n".join(lines) + "\n" + body


# -- flags -------------------------------------------------------------------------------------


def _looks_like_flag(text: str) -> bool:
    return len(text) > 1 and text.startswith("-") and not _NEGATIVE_NUMBER_RE.match(text)


def resolve_flag(written: str, flagset: FlagSet | None) -> tuple[str, FlagInfo | None, str | None]:
    """``(option, info, note)`` for a flag as written: the option's full primary name when
    ``flagset`` knows it exactly or by a unique prefix (as argparse's ``allow_abbrev`` does), else
    the flag as written with a note saying why."""
    if flagset is None:
        return written, None, None
    info = flagset.get(written)
    if info is not None:
        return info.name, info, None
    if not written.startswith("--"):
        return written, None, f"{written} is not a flag of this SGLang; kept as written"
    matches: dict[str, FlagInfo] = {}
    for option, candidate in flagset.flags.items():
        if option.startswith(written):
            matches.setdefault(candidate.name, candidate)
    if len(matches) == 1:
        (name, info), = matches.items()
        return name, info, f"{written} is short for {name}"
    if matches:
        listed = ", ".join(sorted(matches))
        return written, None, (f"{written} is ambiguous in this SGLang (it could be {listed}); kept as "
                               "written, SGLang will refuse it: write the full flag")
    return written, None, f"{written} is not a flag of this SGLang; kept as written"


def _take_values(args: list[Word], i: int, info: FlagInfo | None) -> tuple[list[str], int]:
    """The values following the flag at ``args[i - 1]``, and the index after them."""
    if info is not None and not info.takes_value:
        return [], i
    if info is not None and not info.multiple and not info.optional_value:
        if i < len(args):
            return [args[i].text], i + 1
        return [], i
    values: list[str] = []
    while i < len(args) and not _looks_like_flag(args[i].text):
        values.append(args[i].text)
        i += 1
        if info is not None and not info.multiple:
            break
    return values, i


def parse_server_args(launch: LaunchCommand, flagset: FlagSet | None,
                      notes: list[str]) -> list[tuple[str, list[str] | None, Word]]:
    """``[(option, values or None for a switch, word), ...]`` in command order."""
    args = launch.args
    out: list[tuple[str, list[str] | None, Word]] = []
    i = 0
    while i < len(args):
        word = args[i]
        text = word.text
        if not _looks_like_flag(text):
            if launch.entry == "serve" and not out and i == 0:
                out.append(("--model-path", [text], word))
                i += 1
                continue
            raise LaunchCommandError(
                f"line {word.line}: '{text}' is neither a flag nor the value of one"
                + (f" ({out[-1][0]} takes no value here)" if out else "")
                + "; remove it or fix the flag before it")
        if not text.startswith("--"):
            raise LaunchCommandError(
                f"line {word.line}: the short option '{text}' cannot be written in a profile; use its "
                "long --form")
        written, eq, inline = text.partition("=")
        option, info, note = resolve_flag(written, flagset)
        if note:
            notes.append(note)
        if eq:
            values: list[str] | None = [inline]
            i += 1
        else:
            taken, i = _take_values(args, i + 1, info)
            if info is not None and info.takes_value and not info.optional_value and not taken:
                raise LaunchCommandError(f"line {word.line}: {option} needs a value, but the command ends "
                                         "there; add its value")
            values = taken or None
        out.append((option, values, word))
    return out


# -- values ------------------------------------------------------------------------------------


def yaml_value(text: str) -> Any:
    """A number when YAML writes it back as the same text, else the text itself."""
    if _INT_RE.match(text) and str(int(text)) == text:
        return int(text)
    if _FLOAT_RE.match(text) and repr(float(text)) == text:
        return float(text)
    return text


def _arg_value(values: list[str] | None) -> Any:
    if values is None:
        return True
    if len(values) == 1:
        return yaml_value(values[0])
    return [yaml_value(v) for v in values]


def _secret_reference(value: str, default_name: str) -> str:
    """A ``${NAME}`` reference for a secret: the variable already named, or ``default_name``."""
    return value if _REFERENCE_RE.match(value) else "${" + default_name + "}"


def derive_name(model: str, algorithm: str | None) -> str:
    """``<model's last path part>[-<algorithm>]``, lower case, valid under the profile name rule."""
    base = model.rstrip("/").rsplit("/", 1)[-1]
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", base).strip("-._").lower()
    parts = [slug or "model"]
    if algorithm:
        parts.append(re.sub(r"[^A-Za-z0-9]+", "-", algorithm).strip("-").lower())
    name = "-".join(p for p in parts if p)
    return name if NAME_RE.match(name) else "imported"


# -- the profile ---------------------------------------------------------------------------------


class _Builder:
    def __init__(self, launch: LaunchCommand, flagset: FlagSet | None, flag_source: str | None) -> None:
        self.launch = launch
        self.flagset = flagset
        self.flag_source = flag_source
        self.notes: list[str] = []
        self.model: str | None = None
        self.host: str | None = None
        self.port: int | None = None
        self.args: dict[str, Any] = {}
        self.env: dict[str, str] = {}
        self.gpus: list[Any] | None = None
        self.python: str | None = None
        self.metrics_given = False

    def build(self, name: str | None) -> ImportedProfile:
        launch = self.launch
        if self.flagset is None:
            self.notes.append("flags are kept as written (abbreviations unresolved): no SGLang flag list was "
                              "available; give --host DEST, or --python for a local SGLang")
        elif self.flag_source:
            self.notes.append(f"flags checked against {self.flag_source}")
        for option, values, word in parse_server_args(launch, self.flagset, self.notes):
            self.flag(option, values, word)
        for env_name, value in launch.env:
            self.env_var(env_name, value)
        self.interpreter()
        if not self.metrics_given:
            self.notes.append("spectui adds --enable-metrics (its panels read /metrics); set 'metrics: false' "
                              "to leave it out")
        if self.model is None:
            raise LaunchCommandError("the launch command has no --model-path (or --model); add the model "
                                     "and import again")
        algorithm = self.args.get("speculative-algorithm")
        algorithm = str(algorithm) if isinstance(algorithm, (str, int)) else None
        profile_name = name or derive_name(self.model, algorithm)
        if not NAME_RE.match(profile_name):
            raise LaunchCommandError(f"'{profile_name}' is not a usable profile name: use letters, digits, "
                                     "'.', '_' and '-', starting with a letter or digit")
        data: dict[str, Any] = {
            "name": profile_name,
            "description": self.description(algorithm),
            "model": self.model,
        }
        if self.python:
            data["python"] = self.python
        if self.host is not None and self.host != DEFAULT_HOST:
            data["host"] = self.host
        data["port"] = self.port if self.port is not None else DEFAULT_PORT
        if self.gpus is not None:
            data["gpus"] = self.gpus
        if self.env:
            data["env"] = self.env
        if self.args:
            data["args"] = self.args
        data["tags"] = ["imported"] + ([algorithm.lower()] if algorithm else [])
        notes = self.notes + launch.notes
        return ImportedProfile(data=data, notes=list(dict.fromkeys(notes)))

    def description(self, algorithm: str | None) -> str:
        base = self.model.rstrip("/").rsplit("/", 1)[-1] if self.model else "model"
        spec = f"{algorithm} speculative decoding" if algorithm else "no speculative decoding"
        return f"{base}, {spec} (imported from a launch command)"

    def flag(self, option: str, values: list[str] | None, word: Word) -> None:
        key = option[2:]
        if option in MODEL_FLAGS:
            self.model = self.single(option, values, word)
            return
        if option == "--host":
            self.host = self.single(option, values, word)
            return
        if option == "--port":
            text = self.single(option, values, word)
            if not text.isdigit() or not 1 <= int(text) <= 65535:
                raise LaunchCommandError(f"line {word.line}: --port is '{text}', not a port number; write the "
                                         "number in the command and import again")
            self.port = int(text)
            return
        if option == "--enable-metrics":
            self.metrics_given = True
            return  # the profile's 'metrics' field, true by default
        if values and (key in SECRET_FLAGS or is_secret_flag(key)):
            value = self.single(option, values, word)
            default = SECRET_FLAGS.get(key) or "SGLANG_" + re.sub(r"[^A-Za-z0-9]+", "_", key).upper()
            reference = _secret_reference(value, default)
            self.args[key] = reference
            self.notes.append(f"{option} is a secret: the profile refers to {reference}, so set that "
                              "variable on the host")
            return
        if key in self.args:
            self.notes.append(f"{option} is given twice; the last value is kept, as SGLang does")
        self.args[key] = _arg_value(values)

    def single(self, option: str, values: list[str] | None, word: Word) -> str:
        if not values:
            raise LaunchCommandError(f"line {word.line}: {option} needs a value; add it and import again")
        if len(values) > 1:
            raise LaunchCommandError(f"line {word.line}: {option} takes one value, not {len(values)} "
                                     f"({' '.join(values)}); fix the command and import again")
        return values[0]

    def env_var(self, env_name: str, value: str) -> None:
        if env_name == "CUDA_VISIBLE_DEVICES":
            gpus = parse_gpus(value) if "$" not in value else None
            if gpus is None:
                self.notes.append("CUDA_VISIBLE_DEVICES was left out: it is not a GPU list ('gpus' needs "
                                  "numbers such as 0,1); set 'gpus' by hand")
                return
            self.gpus = [int(g) if g.isdigit() else g for g in gpus]
            return
        if is_secret_env(env_name):
            reference = _secret_reference(value, env_name)
            self.env[env_name] = reference
            self.notes.append(f"env {env_name} is a secret: the profile refers to {reference}, so set that "
                              "variable on the host")
            return
        self.env[env_name] = value

    def interpreter(self) -> None:
        launch = self.launch
        if launch.image:
            self.notes.append(f"the command ran in the container image {launch.image}; spectui starts the "
                              "server on the host, so set 'python' to the host's SGLang interpreter if it is "
                              "not python3")
            return
        if launch.entry == "serve":
            self.notes.append("'sglang serve' runs the same server as 'python3 -m sglang.launch_server', "
                              "which the profile uses")
            return
        if launch.interpreter and launch.interpreter not in _PLAIN_INTERPRETERS:
            self.python = launch.interpreter
            if not os.path.isabs(launch.interpreter) and "/" in launch.interpreter:
                self.notes.append(f"python {launch.interpreter} is a relative path; make it absolute for "
                                  "the host")


def import_launch_command(text: str, *, flagset: FlagSet | None = None, flag_source: str | None = None,
                          name: str | None = None) -> ImportedProfile:
    """The profile for the one SGLang launch command in ``text``.

    ``flagset`` is the server's option list (from the host's or the local ``--help``), used to
    resolve abbreviated flags and to tell switches from flags with values; ``flag_source`` says
    where it came from, for the notes. Raises ``LaunchCommandError`` (one sentence) when the text
    holds no usable launch command.
    """
    launch = read_launch_command(text)
    return _Builder(launch, flagset, flag_source).build(name)


# -- a running server ----------------------------------------------------------------------------

#: The simulated host's launcher module: its servers take SGLang's flags plus ``--sim-*`` knobs.
SIM_MODULE = "spectui.sim.server"
SIM_FLAG_PREFIX = "sim-"
METRICS_ON_NOTE = "spectui adds --enable-metrics (its panels read /metrics); set 'metrics: false' to leave it out"


def _launch_words(argv: list[str]) -> tuple[list[str], bool, str | None]:
    """``(words the launch reader understands, simulated, interpreter)`` for a server's argv.

    The simulated server (``python -m spectui.sim.server``) is read as ``python -m sglang.launch_server``;
    the ``sglang serve`` console script runs as ``PYTHON /path/bin/sglang serve ...`` in /proc
    (sglang 0.5.23 wheel, sglang/cli/main.py), read as ``sglang serve ...`` with PYTHON kept."""
    words = [str(w) for w in argv]
    if len(words) >= 3 and words[1] == "-m" and words[2] == SIM_MODULE:
        return [words[0], "-m", "sglang.launch_server", *words[3:]], True, None
    if (len(words) >= 3 and os.path.basename(words[1]) == "sglang" and words[2] == "serve"
            and os.path.basename(words[0]).startswith("python")):
        return words[1:], False, words[0]
    return words, False, None


def import_running_server(view: dict[str, Any], *, flagset: FlagSet | None = None, flag_source: str | None = None,
                          name: str | None = None, where: str | None = None) -> ImportedProfile:
    """The profile that starts the server ``view`` (a ``servers.list`` entry) the way it runs now.

    Its argv is read like a pasted launch command; the GPUs it holds become ``gpus``; a simulated
    server's ``--sim-*`` knobs go under ``sim``. When it runs without ``--enable-metrics`` (its
    ``/metrics`` is off) the profile says ``metrics: true`` and a note says so. ``where`` names the
    host, for the header. Raises ``LaunchCommandError`` when the argv holds no SGLang launch."""
    argv = view.get("argv") or []
    words, simulated, serve_python = _launch_words(argv)
    if not words:
        raise LaunchCommandError(f"the host gave no command line for {view.get('name')}; it cannot be imported")
    launch = read_launch_command(shlex.join(words))
    builder = _Builder(launch, flagset, flag_source)
    imported = builder.build(name)
    data = imported.data
    notes = [n for n in imported.notes if n != METRICS_ON_NOTE]
    if simulated:
        data.pop("python", None)
        sim = {k[len(SIM_FLAG_PREFIX):]: v for k, v in data.get("args", {}).items() if k.startswith(SIM_FLAG_PREFIX)}
        if sim:
            data["args"] = {k: v for k, v in data["args"].items() if not k.startswith(SIM_FLAG_PREFIX)}
            if not data["args"]:
                del data["args"]
            data["sim"] = sim
    elif serve_python and serve_python not in _PLAIN_INTERPRETERS:
        data["python"] = serve_python
    gpus = view.get("gpus")
    if gpus and "gpus" not in data:
        data["gpus"] = [int(g) if str(g).isdigit() else g for g in gpus]
        notes.append(f"gpus {','.join(map(str, gpus))} are the GPUs it holds now")
    data["metrics"] = True
    if not builder.metrics_given:
        notes.append("it runs without --enable-metrics (its /metrics is off); the profile adds it "
                     "(metrics: true), so a server started from it feeds spectui's panels")
    env_keys = [k for k in view.get("env_keys") or [] if k != "CUDA_VISIBLE_DEVICES"]
    if env_keys:
        notes.append(f"it was started with {', '.join(env_keys)} set; their values stay on the host: add the "
                     "ones it needs under 'env'")
    data["description"] = data["description"].replace("(imported from a launch command)",
                                                      "(imported from a running server)")
    order = ("name", "description", "model", "python", "host", "port", "gpus", "env", "args", "sim", "metrics", "tags")
    data = {k: data[k] for k in order if k in data} | {k: v for k, v in data.items() if k not in order}
    source = f"the running server {view.get('name')}" + (f" on {where}" if where else "")
    return ImportedProfile(data=data, notes=list(dict.fromkeys(notes)), source=source)
