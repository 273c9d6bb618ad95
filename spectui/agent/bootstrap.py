"""How agent code runs on a host from memory: the payload loader, and detached runs.

The client builds a payload (this loader + every agent module's source, those of
subpackages under dotted names) and sends it on the SSH channel's stdin; the host's
Python runs it with a short ``-c`` bootstrap. The agent uses
the same loader to start a detached helper process of its own (e.g. a benchmark runner that
must outlive the connection): the payload goes to the new process's stdin, nothing is
written to disk.
"""

from __future__ import annotations

import hashlib
import logging
import os
import subprocess
import sys

log = logging.getLogger(__name__)

PACKAGE = "spectui_agent"

_LOADER = r'''
import sys, types, hashlib, importlib, importlib.util
PKG = %(pkg)r
SOURCES = %(sources)r
ENTRY = %(entry)r
CODE = %(code)r
_h = hashlib.sha256()
for _n in sorted(SOURCES):
    _h.update(_n.encode() + b"\0" + SOURCES[_n].encode("utf-8") + b"\0")
_pkg = types.ModuleType(PKG)
_pkg.__path__ = []
_pkg.__package__ = PKG
_pkg.__bundle_hash__ = _h.hexdigest()
_pkg.__bundle_sources__ = SOURCES
sys.modules[PKG] = _pkg

_PACKAGES = set(_n.rsplit(".", 1)[0] for _n in SOURCES if "." in _n)
_CODE = {}
if CODE and CODE[0] == importlib.util.MAGIC_NUMBER.hex():
    import base64, marshal, zlib
    try:
        _CODE = marshal.loads(zlib.decompress(base64.b64decode(CODE[1])))
    except Exception:
        _CODE = {}

class _BundleLoader(object):
    def create_module(self, spec):
        return None
    def exec_module(self, module):
        short = module.__name__[len(PKG) + 1:]
        compiled = _CODE.get(short)
        if compiled is not None:
            import marshal
            exec(marshal.loads(compiled), module.__dict__)
            return
        path = short.replace(".", "/") + ("/__init__" if short in _PACKAGES else "")
        exec(compile(SOURCES[short], "<spectui-agent>/%%s.py" %% path, "exec"), module.__dict__)

class _BundleFinder(object):
    def find_spec(self, name, path=None, target=None):
        if name.startswith(PKG + ".") and name[len(PKG) + 1:] in SOURCES:
            short = name[len(PKG) + 1:]
            return importlib.util.spec_from_loader(name, _BundleLoader(), is_package=short in _PACKAGES)
        return None

sys.meta_path.insert(0, _BundleFinder())
importlib.import_module(PKG + "." + ENTRY).run_and_exit(sys.argv[1:])
'''


def bundle_hash(sources):
    h = hashlib.sha256()
    for n in sorted(sources):
        h.update(n.encode() + b"\0" + sources[n].encode("utf-8") + b"\0")
    return h.hexdigest()


def make_payload(sources, entry="main", code=None):
    """The bytes a host Python executes: the loader, the modules, and which one to run. ``code``: the modules
    compiled (:func:`compiled_code`), which the loader runs instead of compiling each source, but only on a Python
    whose compiled files have the same format (the same magic number); any other compiles the sources."""
    return (_LOADER % {"pkg": PACKAGE, "sources": sources, "entry": entry, "code": code or ()}).encode("utf-8")


def module_filename(short, sources):
    """The file name the loader gives module ``short`` of ``sources`` (in tracebacks and compiled code)."""
    packages = set(n.rsplit(".", 1)[0] for n in sources if "." in n)
    return "<spectui-agent>/%s.py" % (short.replace(".", "/") + ("/__init__" if short in packages else ""))


def compiled_code(sources):
    """Every module of ``sources`` compiled by this Python, as the loader takes it: this Python's magic number and
    the modules' code, marshalled, compressed and in base64 (a plain string in the payload's source)."""
    import base64
    import importlib.util
    import marshal
    import zlib

    code = dict((n, marshal.dumps(compile(text, module_filename(n, sources), "exec"))) for n, text in sources.items())
    return (importlib.util.MAGIC_NUMBER.hex(), base64.b64encode(zlib.compress(marshal.dumps(code), 6)).decode("ascii"))


def bootstrap_code(payload_len):
    return ("import sys\n"
            "if sys.version_info < (3, 8): sys.exit('spectui agent needs Python 3.8 or newer, this is ' + "
            "sys.version.split()[0])\n"
            "exec(sys.stdin.buffer.read(%d))" % payload_len)


def own_sources():
    """This agent's module sources: from the shipped bundle, or from the files next to this one."""
    pkg = sys.modules.get(__package__)
    shipped = getattr(pkg, "__bundle_sources__", None)
    if shipped is not None:
        return shipped
    return read_sources(os.path.dirname(os.path.abspath(__file__)))


def read_sources(directory):
    """The agent's module sources under ``directory``, by dotted name relative to it:
    ``main`` for ``main.py``, ``logs`` for ``logs/__init__.py`` (a subpackage: a folder
    with an ``__init__.py``), ``logs.parser`` for ``logs/parser.py``. The top folder's
    own ``__init__.py`` is not one: the payload makes that package."""
    out = {}
    for name in sorted(os.listdir(directory)):
        path = os.path.join(directory, name)
        if name.endswith(".py") and name != "__init__.py":
            with open(path, encoding="utf-8") as fh:
                out[name[:-3]] = fh.read()
        elif name.isidentifier() and os.path.isfile(os.path.join(path, "__init__.py")):
            with open(os.path.join(path, "__init__.py"), encoding="utf-8") as fh:
                out[name] = fh.read()
            for sub, text in read_sources(path).items():
                out[name + "." + sub] = text
    return out


def spawn_detached(entry, args, log_path, python=None, env=None):
    """Run agent module ``entry`` (its ``run_and_exit(argv)``) as a detached process.

    It gets its own session and process group, so it outlives this agent and the SSH
    connection; stdout and stderr go to ``log_path``. Returns the Popen.
    """
    payload = make_payload(own_sources(), entry)
    argv = [python or sys.executable, "-u", "-c", bootstrap_code(len(payload))] + list(args)
    log = open(log_path, "ab", buffering=0)
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True, close_fds=True, env=env)
    finally:
        log.close()
    proc.stdin.write(payload)
    proc.stdin.close()
    return proc


def exit_now(code):
    """End a payload process (an entry's ``run_and_exit``) at once, leaving no thread behind:
    flush what it printed, then ``os._exit(code)``."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            log.debug('an output stream could not be flushed before exit', exc_info=True)
    os._exit(code)
