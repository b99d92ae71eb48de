"""Drop-in mode: ``import triton`` gives tilec, in this process only.

    import tilec.triton_compat
    tilec.triton_compat.install()      # or: python -m tilec.triton_compat script.py args...
    import triton, triton.language as tl   # tilec.jit, tilec.language, ...

``install()`` puts ``TritonFinder`` first on ``sys.meta_path``; from then on
``triton`` and the submodules listed in ``names.py`` resolve to tilec objects:
``triton.language`` IS ``tilec.language``, ``triton.jit`` IS ``tilec.jit``.  Any
other ``triton.*`` module, and any name a provided module lacks, fails with an
ImportError / AttributeError saying tilec's compatibility mode does not provide
it yet, so code never silently runs something else (an installed Triton
included: while the hook is on, it is unreachable).  ``uninstall()`` takes the
hook and every module it made out of the process again.

torch: torch decides whether it has a Triton to generate code for by trying
``import triton`` (``torch.utils._triton.has_triton_package``, cached), a few
``import triton...`` probes and ``importlib.util.find_spec("triton")``.  tilec
is not a Triton that inductor can drive, so when *torch's own modules* ask
(``hidden_from_importer``) they get the answers of a process without Triton:
the import fails, the spec query gives None (``PATCHES`` wraps the two entry
points, since once user code imported the alias ``sys.modules`` answers
without asking any finder).  ``torch.compile`` keeps its non-Triton backends
while user code in the same process gets tilec.
"""
from __future__ import annotations

import builtins
import contextlib
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types
from typing import Any, Callable, Optional

import tilec.language

from tilec.triton_compat import names

# Packages whose own imports of ``triton`` must not find the alias (see the module docstring).
HIDDEN_FROM = ("torch", "functorch", "torchgen")

_state: dict[str, Any] = {"finder": None, "patched": None, "explained": None, "language_extra": None}


def _is_triton(name: str) -> bool:
    return name == "triton" or name.startswith("triton.")


def hidden_from_importer(globals_: Optional[dict]) -> bool:
    """True when the module whose globals these are belongs to a package in HIDDEN_FROM."""
    importer = (globals_ or {}).get("__name__") or ""
    return importer.split(".", 1)[0] in HIDDEN_FROM


class TritonFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds and loads ``triton`` and its submodules as tilec (see the module docstring)."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Optional[importlib.machinery.ModuleSpec]:
        if not _is_triton(fullname):
            return None
        if hidden_from_importer(_importer_globals()):
            raise ModuleNotFoundError(f"No module named {fullname!r} (tilec's Triton compatibility mode hides "
                                      "it from torch: tilec is not a Triton inductor can generate code for)",
                                      name=fullname)
        if not names.provided(fullname):
            # name=None: ``from triton import knobs`` tries ``triton.knobs`` and would
            # swallow an error naming it, leaving Python's vaguer "cannot import name".
            raise ModuleNotFoundError(names.missing(fullname), name=None)
        # Every module is a package, so ``from triton.X import name`` asks this finder
        # for ``triton.X.name`` and a missing name gets the message above.
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> Optional[types.ModuleType]:
        return None  # the default module; an alias replaces it in exec_module

    def exec_module(self, module: types.ModuleType) -> None:
        """Fill a built module, or make ``sys.modules`` hold the tilec module an alias
        names: the import system returns what ``sys.modules`` holds after this
        call, so the alias is the tilec module itself and keeps its own ``__spec__``.
        Then import the submodules ``SUBMODULES`` lists for it."""
        name = module.__name__
        if name in names.ALIASES:
            sys.modules[name] = _explain_missing(importlib.import_module(names.ALIASES[name]), name)
        else:
            module.__dict__.update(names.exports(name))
            module.__getattr__ = _missing_attribute(name)
        for submodule in names.SUBMODULES.get(name, ()):
            importlib.import_module(f"{name}.{submodule}")


def _importer_globals() -> Optional[dict]:
    """The globals of the code running the import: the first frame outside the import machinery and this module."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__", "").startswith(("importlib", __name__)):
        frame = frame.f_back
    return frame.f_globals if frame is not None else None


def _explain_missing(module: types.ModuleType, triton_name: str) -> types.ModuleType:
    """``module`` (a tilec module aliased as ``triton_name``), its missing names now
    explained by ``_missing_attribute``; ``uninstall`` puts its own ``__getattr__`` back."""
    original = module.__dict__.get("__getattr__")
    _state["explained"].append((module, original))
    module.__getattr__ = _missing_attribute(triton_name, original)
    return module


def _missing_attribute(module_name: str, original: Optional[Callable] = None):
    """A module ``__getattr__`` whose AttributeError says the name is not provided
    (yet), asking the module's own ``__getattr__`` (``original``) first."""
    def __getattr__(name: str) -> Any:
        if original is not None:
            with contextlib.suppress(AttributeError):
                return original(name)
        if name.startswith("__"):  # probes like __path__ / __file__ keep Python's meaning
            raise AttributeError(f"module {module_name!r} has no attribute {name!r}")
        raise AttributeError(names.missing(f"{module_name}.{name}"))
    return __getattr__


def _hiding_import(original: Callable) -> Callable:
    """``builtins.__import__`` while installed: torch's ``import triton...`` fails as
    without Triton even once user code has imported the alias (then ``sys.modules``
    holds it and no finder is asked)."""
    def __import__(name, globals=None, locals=None, fromlist=(), level=0):
        if level == 0 and _is_triton(name) and installed() and hidden_from_importer(globals):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return original(name, globals, locals, fromlist, level)
    return __import__


def _hiding_find_spec(original: Callable) -> Callable:
    """``importlib.util.find_spec`` while installed: None for torch's spec queries
    (``find_spec("triton") is None`` is how parts of torch ask), which would
    otherwise see the alias in ``sys.modules`` or get this finder's refusal."""
    def find_spec(name, package=None):
        if _is_triton(name) and installed() and hidden_from_importer(sys._getframe(1).f_globals):
            return None
        return original(name, package)
    return find_spec


# The two ways torch asks for ``triton``, wrapped while the hook is installed.
PATCHES = ((builtins, "__import__", _hiding_import), (importlib.util, "find_spec", _hiding_find_spec))


def installed() -> bool:
    """True while the hook is installed."""
    return _state["finder"] is not None


def install() -> None:
    """Make ``import triton`` resolve to tilec in this process (idempotent).

    Raises ImportError when a real Triton is already imported: modules holding
    its objects would then mix with tilec's."""
    if installed():
        return
    if "triton" in sys.modules:
        raise ImportError("tilec.triton_compat.install(): a `triton` module is already imported "
                          f"({getattr(sys.modules['triton'], '__file__', None)}); install before anything imports triton")
    _state.update(finder=TritonFinder(), explained=[], patched=[], language_extra=vars(tilec.language).get("extra"))
    sys.meta_path.insert(0, _state["finder"])
    for owner, attribute, wrap in PATCHES:
        wrapper = wrap(getattr(owner, attribute))
        _state["patched"].append((owner, attribute, getattr(owner, attribute), wrapper))
        setattr(owner, attribute, wrapper)


def uninstall() -> None:
    """Undo ``install()``: the hook goes, and so does every ``triton`` module it made
    (objects user code still holds keep working: they are tilec's)."""
    if not installed():
        return
    sys.meta_path.remove(_state["finder"])
    for owner, attribute, original, wrapper in _state["patched"]:
        if getattr(owner, attribute) is wrapper:  # else someone wrapped it since: ours stays, inert
            setattr(owner, attribute, original)
    for module, original in _state["explained"]:
        if original is None:
            module.__dict__.pop("__getattr__", None)
        else:
            module.__getattr__ = original
    _forget_triton_modules()
    _state.update(finder=None, patched=None, explained=None, language_extra=None)


def _forget_triton_modules() -> None:
    """Drop every ``triton`` module from ``sys.modules``, and put back what
    ``tilec.language.extra`` was (the import system sets it to ours when
    ``triton.language.extra`` is imported)."""
    for name in [n for n in sys.modules if _is_triton(n)]:
        del sys.modules[name]
    if _state["language_extra"] is None:
        vars(tilec.language).pop("extra", None)
    else:
        tilec.language.extra = _state["language_extra"]
