"""The near-duplicate hint's cosine threshold against the labelled set
(tests/support/near_duplicate_set.py), on the local model's vectors."""

from __future__ import annotations

from agent_memory.embedders.local import MODEL_NAME, LocalModel
from agent_memory.service.hygiene import similar
from tests.support import near_duplicate_set as labelled
from tests.support.local_model import needs_model


@needs_model
def test_the_shipped_threshold_keeps_precision_on_the_labelled_set():
    """The cosine threshold, on the local model's vectors of the labelled set: at least 0.9
    precision (a wrong hint must stay rare) and a useful recall (bench/near_duplicates.py
    reports both)."""
    model = LocalModel(num_threads=1)
    pairs = labelled.pairs()
    texts = sorted({t for _, a, b in pairs for t in (a, b)})
    vectors = dict(zip(texts, model.encode_array(texts, query=False), strict=True))
    threshold = similar.COSINE_THRESHOLDS[similar.model_key(MODEL_NAME)]
    hinted = [label for label, a, b in pairs if float(vectors[a] @ vectors[b]) >= threshold]
    assert hinted.count("same") / len(hinted) >= 0.9
    assert hinted.count("same") / len(labelled.SAME) >= 0.75
    assert "unrelated" not in hinted
