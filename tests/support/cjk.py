"""Sentences in scripts written without spaces (Chinese, Japanese, Korean) and words inside them,
with an English one beside them: what the CJK search tests store and look for."""

from __future__ import annotations

SENTENCES = {
    "zh": "我们选择了数据库PostgreSQL，因为它支持事务。",
    "ja": "データベースにはPostgreSQLを選びました。理由は信頼性です。",
    "ko": "데이터베이스는 PostgreSQL을 선택했습니다.",
    "en": "We keep the cache in Redis, not in the database.",
}
# A word inside each sentence, and one that is not in any of them.
WORDS = [("数据库", "zh"), ("事务", "zh"), ("選びました", "ja"), ("データベース", "ja")]
WORDS += [("信頼", "ja"), ("데이터베이스", "ko"), ("선택", "ko")]
