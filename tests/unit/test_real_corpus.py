"""bench/real_corpus.py's drawn vectors are unit length and near their source."""

from __future__ import annotations

import pytest

from bench import real_corpus


def test_drawn_vectors_are_unit_and_near_their_source() -> None:
    np = pytest.importorskip("numpy")
    rng = np.random.default_rng(0)
    real = rng.standard_normal((50, real_corpus.DIMENSION)).astype(np.float32)
    real /= np.linalg.norm(real, axis=1, keepdims=True)
    drawn = real_corpus.draw(real, 500, 0.01, seed=3)
    assert drawn.shape == (500, real_corpus.DIMENSION)
    assert np.allclose(np.linalg.norm(drawn, axis=1), 1.0, atol=1e-5)
    assert (drawn @ real.T).max(axis=1).min() > 0.97  # each is a small step from a real one
    assert np.array_equal(drawn, real_corpus.draw(real, 500, 0.01, seed=3))
    stats = real_corpus.neighbour_cosines(real, real[:5], skip_self=True)
    assert set(stats) == {"nn1", "nn10", "nn11"} and stats["nn1"] >= stats["nn10"] >= stats["nn11"]
