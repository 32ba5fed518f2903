"""Texts about nothing a software project's memory holds: what "unrelated" looks like to a
model, asked per query.

A model's cosine similarity has no fixed meaning: one model gives unrelated texts 0.1,
another (multilingual e5) 0.75. A hybrid search (ranking.fuse) therefore measures a memory's
similarity in standard deviations above the query's similarity to these passages: a memory
counts as found by meaning only when it stands clearly above them. They span everyday topics
and several languages, so that no single subject or script sets the scale, and half of them
read like notes an agent keeps (a decision, a rule, a fix), so that the form of a memory
does not count as meaning; none is about software, where the memories are. The more of
them, the steadier the spread measured for each query.
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
    # The same everyday life written as a memory store holds its own: decisions, rules,
    # reminders, mistakes and how-tos, so that a question's likeness to that form of text
    # does not pass for likeness to its subject.
    "Decided to wash dark clothes in cold water from now on; the colours faded too fast in hot.",
    "Rule for the house plants: water the fern twice a week, the cactus once a month.",
    "To fix a squeaky door hinge, lift the pin out and rub it with a little soap.",
    "We chose the dentist near the station because it is open on Saturday mornings.",
    "Reminder: renew the passport three months before the summer trip.",
    "The bicycle chain slipped because it was dry; oil it after every rainy ride.",
    "Always brew green tea with water below boiling, or it turns bitter.",
    "Birthday party plan: twelve children, a treasure hunt in the garden, pizza at six.",
    "Mistake: painting the bathroom without primer; the paint peeled within a month.",
    "Sew a loose button with the thread doubled and wrap it around the stitches twice.",
    "Swimming lessons moved to Tuesdays at the public pool, lane three.",
    "Keep the cat's food bowl away from its water; it drinks more that way.",
    "The moving company needs the boxes packed and labelled by room before Friday.",
    "Glass goes in the green bin, paper in the blue one, collected every other Monday.",
    "Jam sets when a drop on a cold plate wrinkles as you push it with a finger.",
    "Chess club: the beginners play on the left tables, the rated games on the right.",
    "Running shoes last about eight hundred kilometres before the soles wear out.",
    "To sleep better, keep the bedroom cool and put the phone in another room.",
    "The library fines for late books were dropped, but lost ones must be paid for.",
    "Homework rule: the children finish their reading before any screen time.",
    "Piano practice works best in short daily sessions rather than one long weekend one.",
    "When camping, pitch the tent on high ground so rain does not pool underneath.",
    "Trout bite best at dawn; use a light line and a small fly in clear water.",
    "Decision: the family holiday will be by train this year, not by plane.",
    "La receta de la abuela lleva canela, azúcar moreno y una pizca de sal.",
    "Pour le jardin, arroser le soir pour que l'eau ne s'évapore pas au soleil.",
    "Die Waschmaschine tropft, weil die Dichtung an der Tür alt und rissig ist.",
    "Ricordati di annaffiare il basilico ogni mattina quando fa caldo.",
    "Não deixe o leite fora da geladeira por mais de duas horas no verão.",
    "每天早上跑步三十分钟，周末去游泳。",
    "梅雨の時期は洗濯物を部屋干しにして、除湿機をつける。",
    "아이들 숙제는 저녁 먹기 전에 끝내기로 했다.",
    "Зимой закрывайте окна на ночь, чтобы не простудиться.",
    "Yoga on Sunday mornings: bring your own mat, the studio ran out.",
    "The photo album from the wedding is on the top shelf of the hall cupboard.",
    "Wine stains come out of a tablecloth with salt and cold water if treated at once.",
)
