"""Texts about nothing a software project's memory holds: what "unrelated" looks like to a
model, asked per query.

A model's cosine similarity has no fixed meaning: one model gives unrelated texts 0.1,
another (multilingual e5) 0.75. The relevance floor of a hybrid search (ranking.fuse) is
therefore set per query, from the query's similarity to these passages: a memory counts as
found by meaning only when it stands clearly above them. They span everyday topics and
several languages, so that no single subject or script sets the floor; none is about
software, where the memories are.
"""

from __future__ import annotations

UNRELATED: tuple[str, ...] = (
    "Knead the dough for ten minutes, then let it rise in a warm place until it doubles.",
    "The home team equalised in the last minute and won the match on penalties.",
    "Tomatoes want full sun, deep watering twice a week and a stake once they flower.",
    "The river floods the valley every spring, and the farmers plant after it recedes.",
    "She practised the cello sonata every evening before the concert in the old chapel.",
    "Low tide uncovers the rock pools, where crabs and starfish hide under the weed.",
    "The museum's new wing shows bronze age jewellery found in a peat bog.",
    "Le train de nuit pour Vienne part à vingt-deux heures du quai numéro trois.",
    "Der Hund schläft gern in der Sonne auf der Terrasse hinter dem Haus.",
    "Para la sopa, sofríe la cebolla con ajo y añade el caldo de pollo caliente.",
    "今日は雨なので、午後は図書館で小説を読むつもりです。",
    "A warm front brings drizzle tonight and clearing skies by Sunday afternoon.",
)
