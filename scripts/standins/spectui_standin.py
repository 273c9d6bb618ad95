"""Import-only stand-ins for packages that SGLang imports on a CPU-only machine but never calls there.

There is no CPU build of ``sgl_kernel`` on PyPI, and PyPI's ``torchvision`` is built for another torch than the
CPU build these venvs hold (it fails to import: "operator torchvision::nms does not exist"). Plain CPU serving
with ``--device cpu --attention-backend torch_native`` imports both on its way (sglang 0.5.23 wheel:
sglang/srt/multimodal/internvl_utils.py:5 imports torchvision.transforms; sglang/srt/mem_cache/allocation.py and
sglang/kernels/ops/kvcache/cache_move.py import sgl_kernel) and calls neither. A stand-in's every attribute is a
placeholder that raises when it is called, so a code path that does need the real package fails loudly, naming
what it called, instead of computing anything.

It has no ``dist-info``: ``importlib.metadata`` does not find it, so ``transformers`` does not count torchvision
as installed and never takes its image paths.
"""
import importlib.abc
import importlib.machinery
import sys
import types


class StandInCalled(RuntimeError):
    pass


class _Placeholder(type):
    """A class that stands for anything: any attribute is another placeholder; calling one raises."""

    def __getattr__(cls, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _Placeholder("%s.%s" % (cls.__qualname__, name), (), {"__qualname__": "%s.%s" % (cls.__qualname__, name)})

    def __call__(cls, *args, **kwargs):
        raise StandInCalled("%s was called, but this is an import-only stand-in: the real package is not "
                            "installed in this CPU venv" % cls.__qualname__)

    def __getitem__(cls, key):
        return cls

    def __iter__(cls):
        return iter(())

    def __bool__(cls):
        return False


class _StandInModule(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        value = _Placeholder("%s.%s" % (self.__name__, name), (), {"__qualname__": "%s.%s" % (self.__name__, name)})
        setattr(self, name, value)
        return value


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self, top):
        self.top = top

    def find_spec(self, fullname, path, target=None):
        if fullname.startswith(self.top + "."):
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec):
        module = _StandInModule(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module):
        pass


def install(package):
    """Make ``package`` (already imported: the caller's ``__name__``) and every submodule of it a stand-in."""
    module = sys.modules[package]
    module.__class__ = _StandInModule
    module.__standin__ = True
    sys.meta_path.append(_Finder(package))
