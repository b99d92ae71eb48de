"""The on-disk cache: compiled kernels and autotuning results that outlive the process.

    cache_dir()/kernel/<key>.bin    one compiled variant (every stage of ``asm``, the metadata)
    cache_dir()/tuning/<key>.bin    one autotuning choice (``tilec.autotune``)

``cache_dir()`` is ``$TILEC_CACHE_DIR``, else ``~/.cache/tilec``; ``TILEC_CACHE=0``
turns the cache off (nothing is read or written), and ``TILEC_CHECK`` or
``TILEC_DUMP`` bypass the kernel cache (they watch the compiler at work).  ``python -m tilec cache`` lists
and clears it through ``entries()`` and ``clear()``.  Nothing creates the folder but a write; when it
cannot be created or written, tilec works on without it after one warning (``unusable``).

A kernel's key (``kernel_key``) hashes everything its code depends on: the
source of the kernel and of every ``@jit`` function, plain function and
compile-time global it reads (followed through callees, ``source_fingerprint``),
the file and line it starts at (locations in the IR name them), the
specialization (every argument's type, attributes or constexpr value), the
options, the target, the toolchain of the target's backend
(``Backend.toolchain``: for a GPU, LLVM's version and which assembler and math
library are installed), and ``tilec_source_hash()``: a changed compiler never
reuses a stale binary.  A value with no stable text (an object whose repr is its
address) makes the variant uncacheable: it is compiled, never stored.

Every entry is ``MAGIC``, the payload's length and SHA-256, then the payload:
data only, a JSON header and named text or bytes sections (``cache_entry.py``),
never a pickle.  Writes go to a temporary file in the same directory and are
moved into place with ``os.replace`` (atomic on POSIX and Windows), so a reader
sees a whole entry or none, whatever other processes or a crash do.  An entry whose header,
length or checksum is wrong, or whose payload is malformed (crafted, say), is a
miss: it is logged, counted corrupt, recompiled and overwritten.

A hit re-reads the optimized tile IR, printed with its source locations (so a
runtime error of a cached kernel still names the user's line), with the IR parser
instead of rebuilding it: the launchers need ``CompiledKernel.fn``, and parsing
costs a fraction of building and optimizing (about 4 ms against 19 ms for the
softmax tutorial on the host, 17 ms against 70 ms for the matmul; against 0.1 s
and 0.65 s for their GPU compiles), so host variants are cached too.
"""
from __future__ import annotations

import ast
import functools
import hashlib
import logging
import os
import tempfile
import types
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

from tilec import language as tl
from tilec.environment import cache_dir, cache_enabled, check_enabled
from tilec.frontend.source import FunctionSource, closure_values, read_source
from tilec.launch.args import KernelArg
from tilec.launch.cache_entry import FORMAT, EntryError, deserialize_kernel, serialize_kernel  # noqa: F401 (tilec.cache's API)
from tilec.launch.compiler import CompiledKernel, Options
from tilec.launch.dump import requested_names
from tilec.language.core import ConstexprFunction
from tilec.targets.registry import backend_for

MAGIC = b"tilec-cache\n"
HEADER = len(MAGIC) + 8 + 32  # magic, payload length (8 bytes, little endian), sha256 of the payload
KINDS = ("kernel", "tuning")
TEMP_SUFFIX = ".tmp"
MAX_ENTRY_BYTES = 256 << 20  # far above any kernel's stages (a GPU binary is a few MB)

log = logging.getLogger("tilec.cache")

#: What this process did with the kernel cache (tests and ``python -m tilec`` read it).
STATS = {"hit": 0, "miss": 0, "corrupt": 0, "stored": 0, "uncacheable": 0}


class Uncacheable(Exception):
    """A key part with no stable text: the variant is compiled but not stored."""


# --------------------------------------------------------------------------- #
# Where, and whether
# --------------------------------------------------------------------------- #

def problem(path: Path) -> Optional[str]:
    """Why the cache folder ``path`` cannot be used, as far as can be told without
    creating anything (``python -m tilec cache``); None when nothing is known to be wrong."""
    folder = next(f for f in (path, *path.parents) if f.exists())  # the root exists
    if not folder.is_dir():
        return f"{folder} is not a folder"
    return None if os.access(folder, os.W_OK) else f"{folder} is not writable"


_WARNED: set[str] = set()  # the cache folders this process has warned about


def unusable(error: OSError) -> None:
    """Say that the cache folder cannot be used, once per folder and process (not
    once per kernel): compiles, launches and tuning go on without a disk cache."""
    try:
        where = str(cache_dir())
    except OSError:
        where = "~/.cache/tilec"
    if where not in _WARNED:
        _WARNED.add(where)
        log.warning("tilec cache: %s cannot be used (%s); working without a disk cache", where, error)


@functools.lru_cache(maxsize=None)
def tilec_source_hash() -> str:
    """SHA-256 over every ``.py`` file of the installed tilec package (names and
    contents, in a fixed order); computed once per process."""
    root = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


# --------------------------------------------------------------------------- #
# Entries: checked bytes, written atomically
# --------------------------------------------------------------------------- #

@dataclass(frozen=True)
class Entry:
    """One file of the cache: ``kind`` is ``"kernel"``, ``"tuning"`` or ``"temp"``
    (a write that a killed process left behind)."""

    path: Path
    size: int
    mtime: float
    kind: str


def entry_path(kind: str, key: str) -> Path:
    if kind not in KINDS:
        raise ValueError(f"unknown cache entry kind {kind!r}; kinds: {', '.join(KINDS)}")
    return cache_dir() / kind / f"{key}.bin"


def write_entry(kind: str, key: str, payload: bytes) -> None:
    """Store ``payload`` under (``kind``, ``key``) atomically: a temporary file in
    the same directory, flushed, then ``os.replace``d over any older entry."""
    path = entry_path(kind, key)
    path.parent.mkdir(parents=True, exist_ok=True)
    header = MAGIC + len(payload).to_bytes(8, "little") + hashlib.sha256(payload).digest()
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{key[:16]}-", suffix=TEMP_SUFFIX)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(header + payload)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temp, path)
    except BaseException:
        with suppress(OSError):
            os.unlink(temp)
        raise


def store_entry(kind: str, key: str, payload: bytes) -> bool:
    """``write_entry``, a failure only reported (once: ``unusable``); whether it was stored."""
    try:
        write_entry(kind, key, payload)
        return True
    except OSError as e:
        unusable(e)
        return False


def read_bounded(path: Path) -> Optional[bytes]:
    """The file's bytes, or None (nothing read) when it is larger than any
    entry tilec writes: a planted huge file must not fill the memory."""
    with path.open("rb") as f:
        if os.fstat(f.fileno()).st_size > MAX_ENTRY_BYTES:
            return None
        return f.read(MAX_ENTRY_BYTES + 1)


def read_entry(kind: str, key: str) -> Optional[bytes]:
    """The payload stored under (``kind``, ``key``); None when there is none, or
    when it is unreadable (reported once), truncated or fails its checksum (logged)."""
    try:
        path = entry_path(kind, key)
        data = read_bounded(path)
    except (FileNotFoundError, NotADirectoryError):  # no entry, or no folder yet: a write reports why
        return None
    except OSError as e:
        unusable(e)
        return None
    if data is None:
        log.warning("tilec cache: %s is larger than any entry (%d bytes at most); it will be rewritten",
                    path, MAX_ENTRY_BYTES)
        STATS["corrupt"] += 1
        return None
    payload = data[HEADER:]
    if (not data.startswith(MAGIC) or int.from_bytes(data[len(MAGIC):len(MAGIC) + 8], "little") != len(payload)
            or hashlib.sha256(payload).digest() != data[len(MAGIC) + 8:HEADER]):
        log.warning("tilec cache: %s is corrupt (bad header, length or checksum); it will be rewritten", path)
        STATS["corrupt"] += 1
        return None
    return payload


def entries() -> list[Entry]:
    """Every file under the cache's kind directories (nothing else in ``cache_dir()`` is touched)."""
    try:
        root = cache_dir()
    except OSError:  # no home folder: no cache
        return []
    found = []
    for kind in KINDS:
        folder = root / kind
        for path in sorted(folder.rglob("*") if folder.is_dir() else ()):
            with suppress(OSError):  # another process may remove it meanwhile
                if path.is_file():
                    stat = path.stat()
                    found.append(Entry(path, stat.st_size, stat.st_mtime,
                                       "temp" if path.name.endswith(TEMP_SUFFIX) else kind))
    return found


def clear() -> int:
    """Remove every entry (and leftover temporary file); how many were removed."""
    removed = 0
    for entry in entries():
        with suppress(FileNotFoundError):
            entry.path.unlink()
            removed += 1
    return removed


# --------------------------------------------------------------------------- #
# Keys: stable text for everything a variant depends on
# --------------------------------------------------------------------------- #

def digest(*parts: Any) -> str:
    """SHA-256 of the stable text of ``parts`` (raises ``Uncacheable``)."""
    return hashlib.sha256(repr(tuple(stable_token(p) for p in parts)).encode()).hexdigest()


def stable_token(value: Any) -> Any:
    """A representation of ``value`` that is the same in every process (no addresses):
    functions by their source fingerprint, types by name, containers element-wise."""
    if value is None or isinstance(value, (bool, int, float, str, bytes)):
        return (type(value).__name__, value)
    if isinstance(value, (tuple, list, frozenset, set)):
        items = [stable_token(v) for v in value]
        return (type(value).__name__, sorted(items, key=repr) if isinstance(value, (set, frozenset)) else items)
    if isinstance(value, dict):
        return ("dict", sorted(((repr(stable_token(k)), stable_token(v)) for k, v in value.items())))
    if getattr(value, "is_tilec_jit", False) and not isinstance(value, type):  # a kernel, not the JITFunction class
        return ("jit", source_fingerprint(value.fn))
    if getattr(value, "__tilec_builtin__", False):  # a tl stub: made by a factory, its source is its siblings'
        return ("builtin", f"{value.__module__}.{value.__qualname__}")
    if isinstance(value, types.FunctionType):
        return ("function", source_fingerprint(value))
    if isinstance(value, ConstexprFunction):  # runs at compile time: its source is part of the kernel
        return ("constexpr_function", source_fingerprint(value.fn))
    if isinstance(value, type):
        return ("type", f"{value.__module__}.{value.__qualname__}")
    if isinstance(value, types.ModuleType):
        return ("module", value.__name__)
    if isinstance(value, tl.constexpr):
        return ("constexpr", stable_token(value.value))
    return _checked_repr(value)  # IR types, dtypes, options: dataclasses and reprs of their fields


def _checked_repr(value: Any) -> tuple[str, str]:
    text = repr(value)
    if " at 0x" in text or "object at" in text:
        raise Uncacheable(f"{type(value).__qualname__} has no stable text: {text}")
    return (f"{type(value).__module__}.{type(value).__qualname__}", text)


def source_fingerprint(pyfn: types.FunctionType) -> str:
    """SHA-256 of ``pyfn``'s source, file and first line, and of everything
    global it reads: ``@jit`` callees and plain functions (recursively),
    compile-time constants (``BLOCK = 128``, ``tl.constexpr(...)``, dtypes) and
    module attributes (``helpers.act``).  tilec's own functions (``tl.*``) are
    covered by ``tilec_source_hash`` and only named."""
    tokens: list = []
    _collect_function(pyfn, tokens, set())
    return hashlib.sha256(repr(tokens).encode()).hexdigest()


def _collect_function(pyfn: types.FunctionType, tokens: list, seen: set) -> None:
    if pyfn in seen:
        return
    seen.add(pyfn)
    source = _source(pyfn)
    tokens.append(("source", source.file, source.first_line, source.text))
    for ref in outside_references(pyfn):
        tokens.append((ref.name, *ref.attrs, _dependency_token(ref.value, tokens, seen)))


@dataclass(frozen=True)
class Reference:
    """A name a function's source reads from outside it (a global or a closure
    variable), with the ``attrs`` read off it (``helpers.act`` -> ``("act",)``);
    ``value`` is what the chain gives followed as far as modules go (the first
    ``followed`` attributes)."""

    name: str
    attrs: tuple[str, ...]
    value: Any
    followed: int
    in_closure: bool


def outside_references(pyfn: types.FunctionType) -> list[Reference]:
    """Every name ``pyfn``'s source reads that it does not define, in source order
    (what ``source_fingerprint`` keys on, and the launcher's globals check watches)."""
    tree = _syntax_tree(_source(pyfn))
    closure = closure_values(pyfn)
    scope, local, refs = {**pyfn.__globals__, **closure}, _local_names(tree), []
    for name, attrs in _global_references(tree):
        if name in local or name not in scope:
            continue
        value, followed = scope[name], 0
        for attr in attrs:  # follow ``module.attr.attr`` as far as modules go
            if not isinstance(value, types.ModuleType) or not hasattr(value, attr):
                break
            value, followed = getattr(value, attr), followed + 1
        refs.append(Reference(name, attrs, value, followed, name in closure))
    return refs


def _dependency_token(value: Any, tokens: list, seen: set) -> Any:
    """A global's part of the fingerprint; a function it names is followed."""
    target = value.fn if getattr(value, "is_tilec_jit", False) else value
    if isinstance(target, types.FunctionType):
        if target.__module__ and target.__module__.split(".")[0] == "tilec":
            return ("tilec", target.__qualname__)
        _collect_function(target, tokens, seen)
        return ("function", target.__qualname__)
    if isinstance(value, types.ModuleType):
        return ("module", value.__name__)
    try:
        return stable_token(value)
    except Uncacheable:
        return ("object", type(value).__qualname__)  # a kernel cannot read it (not compile-time): its type is enough


def _source(pyfn: types.FunctionType) -> FunctionSource:
    """``pyfn``'s source as the front end reads it; ``Uncacheable`` when it has none."""
    try:
        return read_source(pyfn)
    except (OSError, TypeError) as e:
        raise Uncacheable(f"no source for `{pyfn.__qualname__}`: {e}") from e


def _syntax_tree(source: FunctionSource) -> ast.AST:
    """``source``'s tree; an empty one when the text does not parse on its own
    (a lambda's line, say: the text alone still keys it)."""
    try:
        return source.tree
    except SyntaxError as e:
        log.debug("tilec cache: cannot parse the source in %s:%d: %s", source.file, source.first_line, e)
        return ast.Module(body=[], type_ignores=[])


def _local_names(tree: ast.AST) -> set[str]:
    """Parameters and assigned names of the function (they shadow globals)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            names.add(node.id)
    fdef = next((n for n in getattr(tree, "body", []) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))),
                None)
    if fdef is not None:
        names.discard(fdef.name)  # a recursive call reads the global
    return names


def _global_references(tree: ast.AST) -> list[tuple[str, tuple[str, ...]]]:
    """Every loaded name with the attribute chain read off it (``a.b.c`` -> ``("a", ("b", "c"))``),
    decorators excluded (``@tilec.jit`` is not part of the kernel), in source order, once each."""
    decorators = {id(d) for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) for d in n.decorator_list}
    refs: dict[tuple, None] = {}
    chained = set()
    for node in ast.walk(tree):
        if id(node) in decorators:
            chained.update(id(n) for n in ast.walk(node))
        if id(node) in chained:
            continue
        if isinstance(node, ast.Attribute):
            attrs, base = [], node
            while isinstance(base, ast.Attribute):
                attrs.append(base.attr)
                chained.add(id(base))
                base = base.value
            if isinstance(base, ast.Name):
                chained.add(id(base))
                refs[(base.id, tuple(reversed(attrs)))] = None
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            refs[(node.id, ())] = None
    return list(refs)


def kernel_key(pyfn: types.FunctionType, args: Sequence[KernelArg], options: Options, target: str) -> str:
    """The cache key of one variant (raises ``Uncacheable``)."""
    return digest(FORMAT, tilec_source_hash(), source_fingerprint(pyfn), [a.key for a in args],
                  options, target, backend_for(target).toolchain(target))


# --------------------------------------------------------------------------- #
# Compiled kernels
# --------------------------------------------------------------------------- #

def bypassed() -> Optional[str]:
    """Why the kernel cache is not used now (None when it is): ``TILEC_CACHE=0``, or a
    mode that watches the compiler work -- ``TILEC_CHECK`` (verify every kernel
    as built) and ``TILEC_DUMP`` (print or write its stages) -- which a cached
    kernel would skip.  The test suite runs under ``TILEC_CHECK=1``."""
    if not cache_enabled():
        return "TILEC_CACHE=0"
    if check_enabled():
        return "TILEC_CHECK is set"
    return "TILEC_DUMP is set" if requested_names() else None


def load_or_compile(pyfn: types.FunctionType, args: Sequence[KernelArg], options: Options, target: str,
                    compile: Callable[[], CompiledKernel]) -> CompiledKernel:
    """The variant from the disk cache, else ``compile()`` it and store it there."""
    if bypassed():
        return compile()
    try:
        key = kernel_key(pyfn, args, options, target)
    except Uncacheable as e:
        log.debug("tilec cache: `%s` not cached: %s", pyfn.__qualname__, e)
        STATS["uncacheable"] += 1
        return compile()
    compiled = load_kernel(key, args, options, target)
    if compiled is not None:
        STATS["hit"] += 1
        return compiled
    STATS["miss"] += 1
    compiled = compile()
    store_kernel(key, compiled)
    return compiled


def store_kernel(key: str, compiled: CompiledKernel) -> None:
    """Write ``compiled``'s stages and metadata; a failed write (read-only or full disk) is only reported."""
    if store_entry("kernel", key, serialize_kernel(compiled)):
        STATS["stored"] += 1


def load_kernel(key: str, args: Sequence[KernelArg], options: Options, target: str) -> Optional[CompiledKernel]:
    """The stored variant; None when absent or unusable (an unusable one is
    logged, and overwritten when the recompiled kernel is stored)."""
    payload = read_entry("kernel", key)
    if payload is None:
        return None
    try:
        return deserialize_kernel(payload, args, options, target)
    except Exception as e:  # a checked payload that still does not load (a tilec bug): never trust it
        log.warning("tilec cache: kernel entry %s does not load (%s: %s); recompiling", key, type(e).__name__, e)
        STATS["corrupt"] += 1
        return None
