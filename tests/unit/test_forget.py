from __future__ import annotations

from tests.support.files import dump


def test_forget_deletes_and_reports(service, raw):
    service.store({"content": "forget me please", "type": "TODO"})
    assert service.forget({"id": 1}) == {"id": 1, "deleted": True}
    assert service.list({}) == []
    assert service.search({"query": "forget"})["results"] == []
    assert raw.execute(
        "SELECT count(*) FROM memories_fts WHERE memories_fts MATCH 'forget'"
    ).fetchone() == (0,)


def test_forget_unknown_id_is_a_clean_not_found(service, db_path):
    service.store({"content": "stays", "type": "TODO"})
    before = dump(db_path)
    assert service.forget({"id": 99}) == {"id": 99, "deleted": False, "reason": "not_found"}
    assert service.forget({"id": -1}) == {"id": -1, "deleted": False, "reason": "not_found"}
    assert dump(db_path) == before
