"""Go to definition: where a Python class or function is defined, and where a server flag is.

A flag is found in either shape SGLang has used: an ``add_argument("--flag", help=...)`` call
(older ``server_args.py``) or an annotated config field named after the flag whose annotation
carries the help text (``speculative_num_steps: A[Optional[int], "help"]`` or
``A[..., Arg(help=..., aliases=[...])]``), from which newer releases generate the CLI.
"""

from __future__ import annotations

import ast
import re

from ..protocol import AgentError
from .pyast import call_name, const_str, keyword, walk_with_parents

IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
FLAG = re.compile(r"^-{0,2}([A-Za-z0-9][A-Za-z0-9_-]*)$")
PY_FILES = ["*.py", "*.pyi"]

_KIND_RANK = {"class": 0, "function": 1, "method": 2, "assignment": 3}


def is_test_path(path):
    parts = path.split("/")
    return any(p in ("test", "tests", "testing", "benchmark", "examples") for p in parts[:-1]) or \
        parts[-1].startswith("test_")


def find_definitions(tree, name, max_results=200):
    """Where ``name`` is defined (class, def, or module-level assignment), best first."""
    name = (name or "").strip()
    if "." in name:
        name = name.rsplit(".", 1)[1]
    if not IDENT.match(name):
        raise AgentError("bad_name", "%r is not a Python name (a class or function name, such as NGRAMWorker)" % name)
    pattern = (r"^[ \t]*(?:async[ \t]+)?(?:def|class)[ \t]+%s\b|^%s[ \t]*(?::[^=\n]*)?=(?!=)" % (name, name))
    hits, stats = tree.grep(pattern, include=PY_FILES, max_hits=max_results)
    out = []
    for h in hits:
        text = h["text"]
        stripped = text.lstrip()
        if stripped.startswith("class"):
            kind = "class"
        elif stripped.startswith(("def", "async")):
            kind = "function" if text == stripped else "method"
        else:
            kind = "assignment"
        out.append({"path": h["path"], "line": h["line"], "kind": kind, "text": text.strip()})
    out.sort(key=lambda d: (_KIND_RANK[d["kind"]], is_test_path(d["path"]), d["path"], d["line"]))
    return {"name": name, "definitions": out, "truncated": stats.truncated}


def _flag_names(flag):
    m = FLAG.match((flag or "").strip())
    if not m:
        raise AgentError("bad_flag", "%r is not a server flag name (such as --speculative-num-steps)" % flag)
    dashed = m.group(1).replace("_", "-")
    return "--" + dashed, dashed.replace("-", "_")


def _help_of_annotation(parsed, ann):
    """``(help, extra)`` from ``A[type, "help"]`` or ``A[type, Arg(help=..., ...)]``; (None, {}) otherwise."""
    if not isinstance(ann, ast.Subscript):
        return None, {}
    sl = ann.slice
    if type(sl).__name__ == "Index":  # Python 3.8 wraps a subscript in ast.Index
        sl = sl.value
    elts = sl.elts if isinstance(sl, ast.Tuple) else [sl]
    for e in elts[1:]:
        s = const_str(e)
        if s is not None:
            return s, {"type": parsed.segment(elts[0], 200)}
        if isinstance(e, ast.Call):
            h = keyword(e, "help")
            extra = {"type": parsed.segment(elts[0], 200)}
            for k in ("choices", "aliases", "action"):
                v = keyword(e, k)
                if v is not None:
                    extra[k] = parsed.segment(v, 500)
            if h is not None:
                return const_str(h) if const_str(h) is not None else parsed.segment(h, 2000), extra
            return None, extra
    return None, {}


def _from_add_argument(parsed, call, flag):
    names = [const_str(a) for a in call.args]
    if flag not in names:
        return None
    h = keyword(call, "help")
    d = {"kind": "add_argument", "names": [n for n in names if n],
         "help": None if h is None else (const_str(h) if const_str(h) is not None else parsed.segment(h))}
    for k in ("type", "default", "choices", "action", "nargs"):
        v = keyword(call, k)
        if v is not None:
            d[k] = parsed.segment(v, 500)
    return d


def _from_field(parsed, node, field, flag):
    """An annotated field that is the flag (named after it, or listing it among its aliases)."""
    if not isinstance(node, ast.AnnAssign) or not isinstance(node.target, ast.Name):
        return None
    named = node.target.id == field
    aliased = any(const_str(n) == flag for n in ast.walk(node.annotation))
    if not (named or aliased):
        return None
    help_text, extra = _help_of_annotation(parsed, node.annotation)
    d = {"kind": "field", "names": ["--" + node.target.id.replace("_", "-")], "help": help_text,
         "field": node.target.id}
    d.update(extra)
    if node.value is not None:
        d["default"] = parsed.segment(node.value, 500)
    if aliased and not named:
        d["alias"] = flag
    return d


def find_flags(tree, flags, max_files=60):
    """For each flag, where it is defined and its help text, best first (one pass over the tree)."""
    wanted = []
    for f in flags:
        flag, field = _flag_names(f)
        if (flag, field) not in wanted:
            wanted.append((flag, field))
    if not wanted:
        return []
    quoted = "|".join(re.escape(flag) for flag, _ in wanted)
    fields = "|".join(field for _, field in wanted)
    pattern = r"""["'](?:%s)["']|^[ \t]+(?:%s)[ \t]*:""" % (quoted, fields)
    hits, _ = tree.grep(pattern, include=["*.py"], max_hits=5000)
    files = []
    for h in hits:
        if h["path"] not in files:
            files.append(h["path"])
    # Files that quote a flag first: they hold add_argument calls and alias lists.
    quoted_files = set(h["path"] for h in hits if '"--' in h["text"] or "'--" in h["text"])
    files.sort(key=lambda p: (p not in quoted_files, is_test_path(p)))
    found = dict((flag, []) for flag, _ in wanted)
    for path in files[:max_files]:
        parsed = tree.parse(path)
        if parsed is None:
            continue
        for node, parents in walk_with_parents(parsed.tree):
            is_call = isinstance(node, ast.Call) and call_name(node) == "add_argument"
            if not is_call and not isinstance(node, ast.AnnAssign):
                continue
            for flag, field in wanted:
                d = _from_add_argument(parsed, node, flag) if is_call else _from_field(parsed, node, field, flag)
                if d is None:
                    continue
                owner = [p.name for p in parents if isinstance(p, (ast.ClassDef, ast.FunctionDef))]
                d.update(path=path, line=node.lineno, end_line=getattr(node, "end_lineno", node.lineno),
                         context=".".join(owner) or None, text=parsed.segment(node, 1500))
                found[flag].append(d)
    rank = {"add_argument": 0, "field": 1}
    out = []
    for flag, _ in wanted:
        defs = found[flag]
        helpful = set(d["path"] for d in defs if d["help"])
        if helpful:  # a field without help elsewhere is some other class's attribute of that name
            defs = [d for d in defs if d["help"] or d["path"] in helpful]
        defs.sort(key=lambda d: (d["help"] is None, rank[d["kind"]], is_test_path(d["path"]), d["path"], d["line"]))
        out.append({"flag": flag, "definitions": defs})
    return out
