"""A basic-memory project folder of Markdown notes (PyPI basic-memory).

A note is YAML front matter (title, type, permalink, tags) and Markdown. Its observations,
list items ``- [category] text #tag (context)``, become memories ``TITLE: text`` (each reads
without its tags; unless it begins with the title already), tagged with the note's title,
the category and the hashtags; its relations, list items ``- relation [[Target]]``, link the
note's first memory to the target note's. A note without observations becomes one memory of
its title, a blank line and its text (the title once: not again before a text that begins
with it, as a heading), cut at the size limit. Notes are dated by their file's modification
time. The walk stays inside the folder: symlinked folders are not entered and a symlinked
note that leads outside is left out (both counted); hidden folders (.git, .obsidian) are
not read. Only regular files are read: a FIFO, socket or device named ``*.md`` would block
the read or never end, so it is left out and counted.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path

from agent_memory.transfer.importers.common import Found, cut, mtime, standing, type_of

SOURCE = "basic-memory"
NOT_REGULAR = "notes that are not regular files (a FIFO, a socket, a device)"
_OBSERVATION = re.compile(r"^\s*[-*]\s+\[([^\[\]]+)\]\s+(.+)$")
_TASK = re.compile(r"^\s*[-*]\s+\[[ xX-]\]\s")
_RELATION = re.compile(r"""^\s*[-*]\s+("[^"]+"|'[^']+'|[^\s\[]+)\s+\[\[([^\[\]]+)\]\]""")
_HASHTAG = re.compile(r"(?:^|\s)#([\w/-]+)")
_FIELD = re.compile(r"^([A-Za-z_][\w-]*):\s*(.*)$")


@dataclass
class _Note:
    where: str
    title: str
    kind: str
    tags: list[str]
    body: str
    created: int
    names: set[str] = field(default_factory=set)  # title, permalink, file stem (lower case)


def read(path: Path, max_content_bytes: int) -> Found:
    found = Found(SOURCE, path)
    if not path.is_dir():
        raise found.refuse("not a folder (a basic-memory project is a folder of notes)")
    notes = [note for root, file in _files(found, path) if (note := _note(found, root, file))]
    anchors: dict[str, int] = {}
    relations: list[tuple[int, str, str]] = []
    for note in notes:
        key = _memories(found, note, max_content_bytes, relations)
        for name in note.names:
            anchors.setdefault(name, key)
    for key, relation, target in relations:
        other = anchors.get(target.strip().lower())
        if not other:
            found.skip("relations to a note not in the folder")
        else:
            found.link(key, other, relation)
    return found


def _files(found: Found, top: Path) -> list[tuple[Path, Path]]:
    """The notes under ``top``, in a stable order, never leaving it."""
    root = top.resolve()
    out = []
    for folder, dirs, files in os.walk(root, followlinks=False):
        here = Path(folder)
        for name in list(dirs):
            if name.startswith(".") or (here / name).is_symlink():
                dirs.remove(name)
                if not name.startswith("."):
                    found.skip("symlinked folders not entered")
        dirs.sort()
        for name in sorted(files):
            file = here / name
            if not name.lower().endswith(".md"):
                continue
            if file.is_symlink():
                try:
                    target = file.resolve(strict=True)
                except (OSError, RuntimeError):  # a loop, or nothing there
                    found.skip("broken or looping symlinks")
                    continue
                if not target.is_relative_to(root):
                    found.skip("notes outside the folder")
                    continue
            if not file.is_file():  # stat only: a FIFO is never opened
                found.skip(NOT_REGULAR)
                continue
            out.append((root, file))
    return out


def _note(found: Found, root: Path, file: Path) -> _Note | None:
    """The note in ``file``; None (counted) when it is no regular file by the time it is
    opened."""
    where = str(file.relative_to(root))
    try:
        data = _regular_bytes(file)
        if data is None:
            found.skip(NOT_REGULAR)
            return None
        text = data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        raise found.refuse(f"{where}: not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise found.refuse(f"{where}: {exc.strerror or exc}") from None
    if "\x00" in text:
        raise found.refuse(f"{where}: holds a NUL character")
    meta, body = _front_matter(found, where, text)
    title = _scalar(meta.get("title")) or file.stem
    tags = meta.get("tags", [])
    tags = tags if isinstance(tags, list) else [t for t in re.split(r"[,\s]+", tags) if t]
    note = _Note(where, title, _scalar(meta.get("type")), tags, body, mtime(file))
    note.names = {n.lower() for n in (title, _scalar(meta.get("permalink")), file.stem) if n}
    note.names.add(where.removesuffix(".md").lower())
    return note


def _regular_bytes(file: Path) -> bytes | None:
    """The bytes of ``file``, None when it is not a regular file. Opened without blocking
    and checked on the open descriptor: a FIFO put in the note's place after the walk
    neither waits for a writer nor is read."""
    descriptor = os.open(file, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(descriptor, "rb") as opened:
        if not stat.S_ISREG(os.fstat(opened.fileno()).st_mode):
            return None
        return opened.read()


def _scalar(value: str | list[str] | None) -> str:
    if not isinstance(value, str):
        return ""
    return value.strip().strip("\"'").strip()


def _front_matter(found: Found, where: str, text: str) -> tuple[dict[str, str | list[str]], str]:
    """The simple YAML basic-memory writes (``key: value`` and ``- item`` lists), and the
    text after it."""
    lines = text.split("\n")
    if not lines or lines[0].strip() != "---":
        return {}, text
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].strip() in ("---", "..."))
    except StopIteration:
        raise found.refuse(f"{where}: its front matter (opened by ---) is never closed") from None
    meta: dict[str, str | list[str]] = {}
    last = None
    for line in lines[1:end]:
        item = re.match(r"^\s*-\s+(.*)$", line)
        if item and last is not None:
            current = meta.get(last)
            meta[last] = [*(current if isinstance(current, list) else []), _scalar(item[1])]
            continue
        match = _FIELD.match(line)
        if match:
            last = match[1]
            value = match[2].strip()
            if value.startswith("[") and value.endswith("]"):
                meta[last] = [_scalar(v) for v in value[1:-1].split(",") if v.strip()]
            else:
                meta[last] = value
    return meta, "\n".join(lines[end + 1 :])


def _memories(
    found: Found, note: _Note, max_bytes: int, relations: list[tuple[int, str, str]]
) -> int:
    """The note's memories; the key of its first (0: none), what its relations link."""
    keys = []
    targets = []
    fenced = False
    for line in note.body.split("\n"):
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        if fenced or _TASK.match(line):
            continue
        relation = _RELATION.match(line)
        if relation:
            targets.append((relation[1].strip("\"'"), relation[2].split("|")[0]))
            continue
        observation = _OBSERVATION.match(line)
        if observation:
            category, text = observation[1].strip(), observation[2]
            tags = [note.title, category, *_HASHTAG.findall(text), *note.tags]
            kind = type_of(category)
            keys.append(found.add(standing(note.title, text), kind, tags, note.created, note.where))
    if not keys:
        body = cut(standing(note.title, note.body.strip() or note.title, "\n\n"), max_bytes)
        keys.append(
            found.add(body, type_of(note.kind), [note.title, *note.tags], note.created, note.where)
        )
    first = next((key for key in keys if key), 0)
    relations.extend((first, kind, target) for kind, target in targets)
    return first
