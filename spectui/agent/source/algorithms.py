"""The algorithms view: what ``SpeculativeAlgorithm`` holds in this tree, and which worker each uses.

Nothing here knows a release. The enum is found by searching for ``class SpeculativeAlgorithm``
(wherever this version defines it) and its members are read with ``ast``. Its one-line
predicates (``is_eagle``: ``self in (EAGLE, EAGLE3)``, ``is_some``: ``self != NONE``, ...) are
evaluated to the set of members each is true for. Then every ``if``/``elif`` in the tree that
tests those predicates (``self.is_ngram()``, ``spec_algorithm.is_eagle()``) or compares with a
member, and whose branch names a ``...Worker`` class, is a dispatch site: the branch's members
(less those an earlier ``elif``, or an earlier ``if`` that returns, already took) map to that
worker class, and the class to the module it is imported from or defined in.
"""

from __future__ import annotations

import ast
import re
import time

from ..protocol import AgentError
from .defs import is_test_path
from .pyast import const_str

ENUM_CLASS = "SpeculativeAlgorithm"
WORKER_NAME = re.compile(r"^[A-Z][A-Za-z0-9_]*Worker[A-Za-z0-9_]*$")
SUBJECT_HINT = re.compile(r"spec|algo", re.I)
MAX_SITE_FILES = 400


def _dotted(node):
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return None if base is None else base + "." + node.attr
    if isinstance(node, ast.Call):
        base = _dotted(node.func)
        return None if base is None else base + "()"
    return None


def _body_without_docstring(fn):
    body = list(fn.body)
    if body and isinstance(body[0], ast.Expr) and const_str(body[0].value) is not None:
        body = body[1:]
    return body


class Truth(object):
    """For which members a condition may hold, and for which it surely holds (must within may)."""

    __slots__ = ("may", "must")

    def __init__(self, may, must):
        self.may = frozenset(may)
        self.must = frozenset(must) & self.may


class Evaluator(object):
    def __init__(self, members, predicates):
        self.all = frozenset(members)
        self.predicates = predicates          # name -> FunctionDef
        self._memo = {}
        self._busy = set()
        self.in_enum = False

    # --- references to members --------------------------------------------------
    def member(self, node):
        if isinstance(node, ast.Attribute) and node.attr in self.all:
            base = _dotted(node.value)
            if base is not None and (base.split(".")[-1] in (ENUM_CLASS, "cls") or base.endswith("__class__")):
                return node.attr
        s = const_str(node)
        if s is not None and s.upper() in self.all:
            return s.upper()
        return None

    def members(self, node):
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            out = [self.member(e) for e in node.elts]
            return None if any(m is None for m in out) else set(out)
        m = self.member(node)
        return None if m is None else {m}

    def subject_ok(self, node):
        if self.in_enum and isinstance(node, ast.Name) and node.id == "self":
            return True
        name = _dotted(node)
        return name is not None and bool(SUBJECT_HINT.search(name))

    # --- predicates ----------------------------------------------------------------
    def predicate(self, name):
        if name in self._memo:
            return self._memo[name]
        fn = self.predicates.get(name)
        if fn is None or name in self._busy:
            return None
        self._busy.add(name)
        saved, self.in_enum = self.in_enum, True
        try:
            body = _body_without_docstring(fn)
            truth = None
            if len(body) == 1 and isinstance(body[0], ast.Return) and body[0].value is not None:
                truth = self.eval(body[0].value)
        finally:
            self.in_enum = saved
            self._busy.discard(name)
        self._memo[name] = truth
        return truth

    def known_predicates(self):
        return sorted(n for n in self.predicates if self.predicate(n) is not None)

    # --- conditions ----------------------------------------------------------------
    def eval(self, node):
        """A Truth, or None when the condition says nothing about the algorithm."""
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            op, left, right = node.ops[0], node.left, node.comparators[0]
            if isinstance(op, (ast.In, ast.NotIn)):
                s = self.members(right)
                if s is None or not self.subject_ok(left):
                    return None
                return Truth(s, s) if isinstance(op, ast.In) else Truth(self.all - s, self.all - s)
            if isinstance(op, (ast.Eq, ast.Is, ast.NotEq, ast.IsNot)):
                m, other = self.member(right), left
                if m is None:
                    m, other = self.member(left), right
                if m is None or not self.subject_ok(other):
                    return None
                s = {m}
                return Truth(s, s) if isinstance(op, (ast.Eq, ast.Is)) else Truth(self.all - s, self.all - s)
            return None
        if isinstance(node, ast.BoolOp):
            vals = [self.eval(v) for v in node.values]
            known = [v for v in vals if v is not None]
            if not known:
                return None
            if isinstance(node.op, ast.Or):
                may = self.all if len(known) < len(vals) else frozenset().union(*[v.may for v in known])
                return Truth(may, frozenset().union(*[v.must for v in known]))
            may = frozenset(self.all).intersection(*[v.may for v in known])
            must = frozenset(self.all).intersection(*[v.must for v in known]) if len(known) == len(vals) else ()
            return Truth(may, must)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            v = self.eval(node.operand)
            return None if v is None else Truth(self.all - v.must, self.all - v.may)
        if isinstance(node, ast.Call) and not node.args and not node.keywords and isinstance(node.func, ast.Attribute):
            if node.func.attr in self.predicates and self.subject_ok(node.func.value):
                return self.predicate(node.func.attr)
        return None


def _parse_enum(parsed, cls):
    members = []
    predicates = {}
    for st in cls.body:
        target, value = None, None
        if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name):
            target, value = st.targets[0].id, st.value
        elif isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name) and st.value is not None:
            target, value = st.target.id, st.value
        elif isinstance(st, ast.FunctionDef):
            predicates[st.name] = st
            continue
        if target is None or target.startswith("_") or isinstance(value, ast.Lambda):
            continue
        members.append({"name": target, "value": parsed.segment(value, 200), "line": st.lineno})
    return members, predicates


def find_enum(tree):
    hits, _ = tree.grep(r"^[ \t]*class[ \t]+%s\b" % ENUM_CLASS, include=["*.py"], max_hits=50)
    paths = []
    for h in hits:
        if h["path"] not in paths:
            paths.append(h["path"])
    paths.sort(key=lambda p: (is_test_path(p), len(p), p))
    for path in paths:
        parsed = tree.parse(path)
        if parsed is None:
            continue
        for node in ast.walk(parsed.tree):
            if isinstance(node, ast.ClassDef) and node.name == ENUM_CLASS:
                return parsed, path, node, [p for p in paths if p != path]
    raise AgentError("no_enum", "no Python file under %s defines class %s, so its speculative algorithms "
                     "cannot be listed" % (tree.roots.active, ENUM_CLASS))


class SiteScanner(object):
    """Finds the dispatch sites of one file and what each branch chooses."""

    def __init__(self, tree, ev, path, parsed, in_enum):
        self.tree = tree
        self.ev = ev
        self.path = path
        self.parsed = parsed
        self.in_enum = in_enum
        self.records = []   # (members, must, worker name, branch If node, function name)
        self.imports = {}   # name -> module, every ImportFrom in the file
        module = tree.module_of(path)
        for node in ast.walk(parsed.tree):
            if isinstance(node, ast.ImportFrom):
                for a in node.names:
                    self.imports.setdefault(a.asname or a.name, self._absolute(node, module))

    def _absolute(self, node, module):
        if not node.level:
            return node.module
        if module is None:
            return None
        base = module.split(".")
        if not self.path.endswith("__init__.py"):
            base = base[:-1]
        base = base[:len(base) - (node.level - 1)] if node.level > 1 else base
        return ".".join(base + ([node.module] if node.module else []))

    def scan(self):
        self._block(self.parsed.tree.body, frozenset(), None, False)
        return self.records

    def _block(self, stmts, excluded, func, in_enum):
        excluded = set(excluded)
        for st in stmts:
            if isinstance(st, ast.If):
                excluded |= self._chain(st, frozenset(excluded), func, in_enum)
            elif isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self._block(st.body, frozenset(), st.name, in_enum)
            elif isinstance(st, ast.ClassDef):
                self._block(st.body, frozenset(), func, in_enum or (self.in_enum and st.name == ENUM_CLASS))
            else:
                for field in ("body", "orelse", "finalbody"):
                    sub = getattr(st, field, None)
                    if isinstance(sub, list):
                        self._block(sub, frozenset(excluded), func, in_enum)
                for h in getattr(st, "handlers", None) or []:
                    self._block(h.body, frozenset(excluded), func, in_enum)

    def _chain(self, node, excluded, func, in_enum):
        """Walk an if/elif/else chain; returns the members the rest of the block can no longer see."""
        taken = set()
        gone = set()
        while True:
            self.ev.in_enum = in_enum
            truth = self.ev.eval(node.test)
            if truth is None:
                self._block(node.body, excluded, func, in_enum)
            else:
                here = truth.may - excluded - taken
                if here:
                    for name in self._workers(node.body, in_enum):
                        self.records.append((frozenset(here), truth.must, name, node, func))
                inner = set(excluded) | (self.ev.all - truth.may)
                self._block(node.body, frozenset(inner), func, in_enum)
                taken |= truth.must
                if _ends(node.body):
                    gone |= truth.must
            orelse = node.orelse
            if len(orelse) == 1 and isinstance(orelse[0], ast.If):
                node = orelse[0]
                continue
            if orelse:
                self._block(orelse, frozenset(set(excluded) | taken), func, in_enum)
            return gone

    def _workers(self, body, in_enum):
        names = []
        stack = list(body)
        while stack:
            n = stack.pop(0)
            if isinstance(n, ast.If):
                self.ev.in_enum = in_enum
                if self.ev.eval(n.test) is not None:
                    continue  # a nested dispatch: handled on its own
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and WORKER_NAME.match(n.id):
                if n.id not in names:
                    names.append(n.id)
            elif isinstance(n, ast.ImportFrom):
                for a in n.names:
                    nm = a.asname or a.name
                    if WORKER_NAME.match(nm) and nm not in names:
                        names.append(nm)
            for field, value in ast.iter_fields(n):
                if field in ("annotation", "returns", "type_comment"):
                    continue
                if isinstance(value, list):
                    stack.extend(v for v in value if isinstance(v, ast.AST))
                elif isinstance(value, ast.AST):
                    stack.append(value)
        return names


def _ends(body):
    return bool(body) and isinstance(body[-1], (ast.Return, ast.Raise))


def _locate_class(tree, name, module):
    """``(module, path, line)`` of a worker class; by its import first, else by searching."""
    path = tree.module_path(module) if module else None
    if path is None:
        hits, _ = tree.grep(r"^class[ \t]+%s\b" % re.escape(name), include=["*.py"], max_hits=5)
        hits.sort(key=lambda h: (is_test_path(h["path"]), h["path"]))
        if not hits:
            return module, None, None
        return tree.module_of(hits[0]["path"]) or module, hits[0]["path"], hits[0]["line"]
    parsed = tree.parse(path)
    line = None
    if parsed is not None:
        for node in parsed.tree.body:
            if isinstance(node, ast.ClassDef) and node.name == name:
                line = node.lineno
                break
            if isinstance(node, ast.ImportFrom) and any((a.asname or a.name) == name for a in node.names):
                line = node.lineno  # re-exported here
    return module, path, line


def algorithms(tree):
    t0 = time.monotonic()
    parsed, enum_path, cls, others = find_enum(tree)
    members, predicates = _parse_enum(parsed, cls)
    if not members:
        raise AgentError("no_members", "class %s in %s has no members this agent can read" % (ENUM_CLASS, enum_path))
    names = [m["name"] for m in members]
    ev = Evaluator(names, predicates)
    known = ev.known_predicates()
    truths = {p: ev.predicate(p) for p in known}

    # Files that name a worker class and test an identity predicate (is_*) or name a member.
    tests = [r"\.%s\(\)" % re.escape(p) for p in known if p.startswith("is_")]
    tests.append(r"\b%s\.(?:%s)\b" % (ENUM_CLASS, "|".join(re.escape(n) for n in names)))
    test_rx = re.compile("|".join(tests).encode("ascii"))
    hits, _ = tree.grep(r"\b[A-Z][A-Za-z0-9_]*Worker", include=["*.py"], max_hits=100000)
    files = [enum_path]
    for h in hits:
        if h["path"] not in files and not is_test_path(h["path"]):
            files.append(h["path"])
    files = [f for f in files if f == enum_path or test_rx.search(tree.read_bytes(f) or b"")]
    scanners = {}
    for path in files[:MAX_SITE_FILES]:
        p = tree.parse(path)
        if p is None:
            continue
        scanners[path] = SiteScanner(tree, ev, path, p, path == enum_path)
        scanners[path].scan()

    located = {}
    per_member = dict((n, []) for n in names)
    sites = []
    for path, sc in scanners.items():
        for here, must, wname, node, func in sc.records:
            if wname not in located:
                module = sc.imports.get(wname)
                if module is None and any(isinstance(n, ast.ClassDef) and n.name == wname
                                          for n in ast.walk(sc.parsed.tree)):
                    module = tree.module_of(path)
                located[wname] = _locate_class(tree, wname, module)
            module, wpath, wline = located[wname]
            site = {"path": path, "line": node.lineno, "function": func}
            if site not in sites:
                sites.append(site)
            cond = sc.parsed.segment(node.test, 300)
            for m in names:
                if m in here and not any(e["class"] == wname and e["site"] == site for e in per_member[m]):
                    per_member[m].append({"class": wname, "module": module, "path": wpath, "line": wline,
                                          "conditional": m not in must, "condition": cond, "site": site})

    out = []
    for m in members:
        out.append({"name": m["name"], "value": m["value"], "line": m["line"],
                    "predicates": [p for p in known if m["name"] in truths[p].must],
                    "workers": per_member[m["name"]]})
    bases = [parsed.segment(b, 100) for b in cls.bases]
    return {"enum": {"class": ENUM_CLASS, "path": enum_path, "line": cls.lineno, "bases": bases,
                     "module": tree.module_of(enum_path), "also_defined_in": others},
            "algorithms": out, "sites": sites, "files_scanned": len(scanners),
            "elapsed_s": round(time.monotonic() - t0, 3)}
