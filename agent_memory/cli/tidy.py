"""``agent-memory tidy``: the report of service/hygiene/tidy.py for a person (or as JSON), and, with
--apply, the merge of its clusters after showing them. A dry run by default: it writes
nothing. Registered on the group by cli.py.
"""

from __future__ import annotations

import sys
import time
from typing import Any

import click

from agent_memory.cli import display
from agent_memory.cli.command_support import (
    EXIT_FAILED,
    EXIT_USAGE,
    answering,
    arguments,
    number,
    open_service,
    print_json,
    stop,
)
from agent_memory.cli.terminal import Subcommand, quiet
from agent_memory.contract.vocabulary import count
from agent_memory.storage.base import EXISTING, READ

PROBLEMS = {
    "no_current_replacement": "no current memory replaces it (what replaced it has expired, "
    "or the replacements go in a circle)",
    "still_related": "still related to",
}


@click.command(cls=Subcommand)
@click.option("--scope", metavar="SCOPE", help="Only memories of this scope (default: all).")
@click.option(
    "--unused-days",
    metavar="N",
    help="List the memories not used in N days (1-36500, default 90).",
)
@click.option(
    "--apply",
    is_flag=True,
    help="Merge each cluster into the member that holds every word of the others (it "
    "supersedes them and takes their tags), one transaction per cluster, after showing them.",
)
@click.option(
    "--keep",
    "keep",
    multiple=True,
    metavar="ID",
    help="Keep this member of its cluster (repeat: one per cluster); a cluster no member "
    "holds is merged only so.",
)
@click.option("--yes", "-y", is_flag=True, help="With --apply: do not ask before merging.")
@click.option("--json", "as_json", is_flag=True, help="The report (and what --apply did) as JSON.")
@click.pass_obj
@quiet
def tidy(
    settings: Any,
    scope: str | None,
    unused_days: str | None,
    keep: tuple[str, ...],
    apply: bool,
    yes: bool,
    as_json: bool,
) -> None:
    """Find near-duplicates, superseded memories still treated as current, and memories
    not used in N days. A dry run unless --apply: nothing is written.

    Near-duplicates are compared within a scope, by the model's cosine when the database
    holds vectors of a model with a measured threshold (and --embedder is not none), else
    by keyword overlap; the report says which. The model itself is never loaded."""
    if apply and as_json and not yes:
        stop("--apply with --json needs --yes (there is no one to ask)", EXIT_USAGE)
    named = [number(memory_id) for memory_id in keep] or None
    args = arguments(scope=scope, unused_days=number(unused_days), keep=named)
    service = open_service(settings, EXISTING if apply else READ)
    with answering(service):
        report = service.tidy(args)
        if not as_json:
            for line in report_lines(report, int(time.time())):
                click.echo(line)
        ready = [c for c in report["clusters"] if c["keep_reason"] is not None]
        applied = None
        if apply and ready:
            if not yes and not _confirmed(len(ready)):
                stop("nothing was written", EXIT_FAILED)
            applied = service.tidy_merge(ready, report["scope"])
    if as_json:
        print_json(report if applied is None else {**report, "applied": applied})
        return
    if applied is not None:
        for line in applied_lines(applied):
            click.echo(line)
    elif ready and not apply:
        n = count(len(ready), "cluster")
        click.echo(f"dry run: nothing was written; `agent-memory tidy --apply` merges the {n}")
    unheld = len(report["clusters"]) - len(ready)
    if unheld:
        click.echo(
            f"{count(unheld, 'cluster')} not merged: no member holds every word of the others; "
            "`--keep ID` names the member to keep"
        )


def _confirmed(clusters: int) -> bool:
    if not sys.stdin.isatty():
        stop("--apply asks before merging: pass --yes to merge without asking", EXIT_USAGE)
    return click.confirm(f"Merge {count(clusters, 'cluster')}?", default=False)


def _shown(memory: dict[str, Any]) -> str:
    return f"#{memory['id']} {memory['type']} '{display.printable(memory['snippet'])}'"


def _tags(tags: list[str]) -> str:
    return display.printable(", ".join(tags)) or "none"


def report_lines(report: dict[str, Any], now: int) -> list[str]:
    """The report for a person: the clusters, the superseded, the unused."""
    signal = "cosine similarity" if report["signal"] == "cosine" else "keyword overlap"
    why = f"; {report['signal_note']}" if "signal_note" in report else ""
    where = "" if report["scope"] is None else f" in scope '{display.printable(report['scope'])}'"
    lines = [
        f"near-duplicates by {signal} (>= {report['threshold']}{why}): "
        f"{count(len(report['clusters']), 'cluster')} among "
        f"{count(report['memories'], 'current memory')}{where}"
    ]
    if report["not_compared"]:
        lines.append(
            f"  {count(report['not_compared'], 'memory')} without a vector not compared "
            "(`agent-memory embed` makes them)"
        )
    for cluster in report["clusters"]:
        lines += _cluster_lines(cluster)
    lines.append(f"superseded but still treated as current: {len(report['superseded'])}")
    for memory in report["superseded"]:
        by = ", ".join(f"#{i}" for i in memory["superseded_by"])
        said = []
        for problem in memory["problems"]:
            text = PROBLEMS[problem]
            if problem == "still_related":
                text += " " + ", ".join(f"#{r['id']} ({r['kind']})" for r in memory["related"])
            said.append(text)
        lines.append(f"  {_shown(memory)} superseded by {by}: {'; '.join(said)}")
    unused = report["unused"]
    lines.append(
        f"not used in {report['unused_days']} days: {count(unused['count'], 'memory')}"
        + (" (the longest unused first)" if unused["count"] else "")
    )
    for memory in unused["memories"]:
        days = (now - memory["last_accessed"]) // 86_400
        uses = count(memory["access_count"], "use")
        lines.append(f"  {_shown(memory)} last used {days} days ago, {uses}")
    if unused["count"] > len(unused["memories"]):
        lines.append(f"  ... and {unused['count'] - len(unused['memories'])} more (--json)")
    return lines


def _cluster_lines(cluster: dict[str, Any]) -> list[str]:
    """A cluster: the member kept and why, the others with the words of theirs it lacks."""
    from agent_memory.service.hygiene.tidy import HOLDS_THE_REST

    keep = cluster["keep"]
    reason = cluster["keep_reason"]
    if reason is None:
        lines = [
            "  no member holds every word of the others (merged only with --keep ID):",
            f"    {_shown(keep)}",
        ]
        role = ""
    else:
        why = "holds every word of the others" if reason == HOLDS_THE_REST else "named by --keep"
        lines = [f"  keep {_shown(keep)} ({why})"]
        role = "merge "
    for member in cluster["merge"]:
        said = f"similarity {member['similarity']}"
        if member["missing_words"]:
            said += f"; #{keep['id']} lacks: {_tags(member['missing_words'])}"
        lines.append(f"    {role}{_shown(member)} ({said})")
    if reason is not None:
        lines.append(f"    tags after: {_tags(cluster['tags'])}")
    return lines


def applied_lines(applied: list[dict[str, Any]]) -> list[str]:
    """What --apply did, a line per cluster."""
    lines = []
    for entry in applied:
        merged = ", ".join(f"#{i}" for i in entry["merge"])
        if "skipped" in entry:
            lines.append(f"skipped #{entry['keep']} <- {merged}: {entry['skipped']}")
        else:
            lines.append(f"merged {merged} into #{entry['keep']} (it supersedes them)")
    done = sum("skipped" not in e for e in applied)
    lines.append(f"merged {count(done, 'cluster')}")
    return lines


COMMANDS = (tidy,)
