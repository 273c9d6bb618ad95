"""What the source browser shows, as plain dataclasses built from the agent's replies."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class SglangLocation:
    """What an interpreter on the host says about its SGLang."""

    python: str
    installed: bool
    path: str | None = None
    version: str | None = None
    message: str | None = None

    @classmethod
    def from_reply(cls, d: dict) -> "SglangLocation":
        return cls(python=d.get("python") or d.get("asked") or "?", installed=bool(d.get("installed")),
                   path=d.get("path"), version=d.get("version"), message=d.get("message"))


@dataclass(frozen=True)
class SourceInfo:
    """The open tree: its active root (relative paths start there), roots served, where SGLang is in it."""

    root: str
    roots: tuple[str, ...]
    origin: str                 # "installed" (an interpreter's package) or "configured" (a given root)
    package: str | None         # the sglang package, relative to root ("" when root is the package)
    start: str                  # where the tree opens: <package>/srt/speculative when it exists
    version: str | None
    python: str | None = None
    note: str | None = None     # e.g. "the demo reads sglang 0.5.23's published wheel from ..."

    @classmethod
    def from_reply(cls, d: dict, note: str | None = None) -> "SourceInfo":
        return cls(root=d["root"], roots=tuple(d.get("roots") or ()), origin=d.get("origin", "configured"),
                   package=d.get("package"), start=d.get("start") or "", version=d.get("version"),
                   python=d.get("python"), note=note)

    @property
    def label(self) -> str:
        return f"sglang {self.version or '(unknown version)'} at {self.root}"


@dataclass(frozen=True)
class TreeEntry:
    name: str
    path: str
    kind: str                   # dir | file | special | outside | broken
    depth: int = 0
    size: int | None = None
    link: bool = False
    what: str | None = None     # for kind == "special": "named pipe (FIFO)", ...

    @classmethod
    def from_reply(cls, d: dict) -> "TreeEntry":
        return cls(name=d["name"], path=d["path"], kind=d["kind"], depth=d.get("depth", 0), size=d.get("size"),
                   link=bool(d.get("link")), what=d.get("what"))

    @property
    def is_dir(self) -> bool:
        return self.kind == "dir"


@dataclass(frozen=True)
class TreeListing:
    path: str
    entries: tuple[TreeEntry, ...]
    truncated: bool = False


@dataclass(frozen=True)
class FilePage:
    """Lines ``start..end`` (1-based, inclusive) of a file; ``total_lines`` counts what the cap let in."""

    path: str
    start: int
    end: int
    lines: tuple[str, ...]
    total_lines: int
    size: int
    eof: bool
    truncated: bool = False     # the file is larger than the viewer's cap
    note: str | None = None     # says so, in one sentence
    module: str | None = None
    language: str = "text"
    long_lines: int = 0

    @classmethod
    def from_reply(cls, d: dict) -> "FilePage":
        return cls(path=d["path"], start=d["start"], end=d["end"], lines=tuple(d["lines"]),
                   total_lines=d["total_lines"], size=d["size"], eof=d["eof"], truncated=d["truncated"],
                   note=d.get("note"), module=d.get("module"), language=d.get("language") or "text",
                   long_lines=d.get("long_lines", 0))


@dataclass(frozen=True)
class GrepHit:
    path: str
    line: int
    col: int
    text: str

    @classmethod
    def from_reply(cls, d: dict) -> "GrepHit":
        return cls(path=d["path"], line=d["line"], col=d.get("col", 0), text=d.get("text", ""))

    @property
    def ref(self) -> str:
        return f"{self.path}:{self.line}"


@dataclass
class GrepResult:
    pattern: str
    hits: list[GrepHit] = field(default_factory=list)
    truncated: bool = False     # stopped at max_hits
    cancelled: bool = False
    files_scanned: int = 0
    files_matched: int = 0
    binary_skipped: int = 0
    max_hits: int = 0
    elapsed_s: float = 0.0


@dataclass(frozen=True)
class Definition:
    path: str
    line: int
    kind: str                   # class | function | method | assignment
    text: str

    @property
    def ref(self) -> str:
        return f"{self.path}:{self.line}"


@dataclass(frozen=True)
class FlagDefinition:
    """Where a server flag is defined: an ``add_argument`` call or a config field, with its help."""

    flag: str
    path: str
    line: int
    kind: str                   # add_argument | field
    help: str | None
    end_line: int | None = None
    context: str | None = None  # enclosing class/function, e.g. "ServerArgs.add_cli_args"
    default: str | None = None  # source text
    type: str | None = None
    choices: str | None = None
    alias: str | None = None    # set when the flag is an alias of this definition
    text: str | None = None
    names: tuple[str, ...] = () # the flag names this definition declares

    @classmethod
    def from_reply(cls, flag: str, d: dict) -> "FlagDefinition":
        return cls(flag=flag, path=d["path"], line=d["line"], kind=d["kind"], help=d.get("help"),
                   end_line=d.get("end_line"), context=d.get("context"), default=d.get("default"),
                   type=d.get("type"), choices=d.get("choices"), alias=d.get("alias"), text=d.get("text"),
                   names=tuple(d.get("names") or ()))

    @property
    def ref(self) -> str:
        return f"{self.path}:{self.line}"


@dataclass(frozen=True)
class ProfileFlag:
    """One ``speculative-*`` argument of a profile, and where the host's SGLang defines it."""

    flag: str
    value: object
    definition: FlagDefinition | None
    others: tuple[FlagDefinition, ...] = ()


@dataclass(frozen=True)
class WorkerImpl:
    """A worker class a dispatch site picks for an algorithm."""

    cls: str
    module: str | None
    path: str | None
    line: int | None
    conditional: bool           # picked only when a further condition holds
    condition: str | None
    site_path: str
    site_line: int
    site_function: str | None

    @classmethod
    def from_reply(cls, d: dict) -> "WorkerImpl":
        s = d.get("site") or {}
        return cls(cls=d["class"], module=d.get("module"), path=d.get("path"), line=d.get("line"),
                   conditional=bool(d.get("conditional")), condition=d.get("condition"),
                   site_path=s.get("path", ""), site_line=s.get("line", 0), site_function=s.get("function"))


@dataclass(frozen=True)
class Algorithm:
    name: str
    value: str | None
    line: int
    predicates: tuple[str, ...]
    workers: tuple[WorkerImpl, ...]

    @property
    def main_worker(self) -> WorkerImpl | None:
        """The unconditional choice, if there is one (else the first conditional one)."""
        for w in self.workers:
            if not w.conditional:
                return w
        return self.workers[0] if self.workers else None


@dataclass(frozen=True)
class AlgorithmsView:
    enum_class: str
    enum_path: str
    enum_line: int
    enum_bases: tuple[str, ...]
    enum_module: str | None
    algorithms: tuple[Algorithm, ...]
    version: str | None
    raw: dict = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def from_reply(cls, d: dict) -> "AlgorithmsView":
        e = d["enum"]
        algos = tuple(Algorithm(name=a["name"], value=a.get("value"), line=a["line"],
                                predicates=tuple(a.get("predicates") or ()),
                                workers=tuple(WorkerImpl.from_reply(w) for w in a.get("workers") or ()))
                      for a in d["algorithms"])
        return cls(enum_class=e["class"], enum_path=e["path"], enum_line=e["line"], enum_bases=tuple(e["bases"]),
                   enum_module=e.get("module"), algorithms=algos, version=d.get("version"), raw=d)

    @property
    def names(self) -> list[str]:
        return [a.name for a in self.algorithms]

    def get(self, name: str) -> Algorithm | None:
        for a in self.algorithms:
            if a.name == name.upper():
                return a
        return None
