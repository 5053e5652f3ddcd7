"""What `rollout history` prints: a set's revisions newest first, one line each (text), or a
document (-o yaml|json); with `--revision R`, that revision whole with its template diff; and
what `rollout undo` says and commits (`undo_message`, `undo_next`). Pure."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kubectl_disagg.core.delivery.waves import ANALYSIS_BY
from kubectl_disagg.core.delivery.history import ABORTED, Commit, RevisionEntry
from kubectl_disagg.core.delivery.undo import ByHand
from kubectl_disagg.gitops.history import UNDO_TRAILER
from kubectl_disagg.manifests.source import JsonObject
from kubectl_disagg.manifests.writer import format_objects
from kubectl_disagg.views.gitops_report import commit_subject
from kubectl_disagg.views.invocation import Invocation
from kubectl_disagg.views.templating import table
from kubectl_disagg.views.template_diff import changes


def driven_through_git(name: str, state_path: str, command: str) -> str:
    """Why a set's history is not read from the cluster: it is driven through git."""
    return (f"disaggregatedset/{name} is driven through git (its rollout state is in {state_path}): its "
            f"history is git's: `{command}`")


def _when(date: str) -> str:
    """An RFC 3339 date as a person reads it in a table: `2026-12-06 12:00`."""
    return date[:16].replace("T", " ")


def _ref(commit: Commit) -> str:
    """` (3a3c39b)`: the commit, where git recorded it (the cluster's entries have none)."""
    return f" ({commit.sha[:7]})" if commit.sha else ""


def _started(commit: Commit) -> str:
    return f"{_when(commit.date)} {commit.author}{_ref(commit)}"


def outcome_words(entry: RevisionEntry) -> str:
    """`complete 2026-12-06 12:05 (3a3c39b)`, `aborted … by bob: why`, `replaced …`, `rolling`."""
    if entry.ended is None:
        return entry.outcome
    words = f"{entry.outcome} {_when(entry.ended.date)}{_ref(entry.ended)}"
    if entry.outcome == ABORTED:
        # a failed analysis records itself as who aborted, its reason saying so
        by = f" by {entry.by}" if entry.by and entry.by != ANALYSIS_BY else ""
        words += by + (f": {entry.why}" if entry.why else "")
    return words


def change_words(entry: RevisionEntry) -> str:
    if entry.before is None:
        return "first revision"
    if entry.retry or entry.before.revision == entry.revision:  # started again after its abort
        return f"retry of {entry.revision}"
    summary = changes([entry.before], entry.record)["summary"]
    words = "; ".join(summary) if summary else "no template change"
    return f"back to it: {words}" if entry.back else words


def format_histories(shown: Sequence[tuple[str, str, Sequence[RevisionEntry], RevisionEntry | None]],
                     output: str) -> str:
    """Each set's history, or with `--revision` its one entry: (name, namespace, entries, the
    entry or None) each. Text (or wide: more columns) one set after another; -o yaml|json one
    document per set, several as kubectl prints several objects (JSON: one List, YAML: a stream)."""
    if output in ("text", "wide"):  # wide: a revision's page is the same (its diff is whole already)
        return "\n".join(format_history(name, namespace, entries, wide=output == "wide") if entry is None
                         else format_revision(name, namespace, entry) for name, namespace, entries, entry in shown)
    return format_objects([{"name": name, "namespace": namespace,
                            "revisions": [_document(e) for e in reversed(entries)]}
                           if entry is None else _revision_document(name, namespace, entry)
                           for name, namespace, entries, entry in shown], output)


def format_history(name: str, namespace: str, entries: Sequence[RevisionEntry], wide: bool = False) -> str:
    """A set's revisions for people, newest first, one line each (`wide`, as kubectl's -o wide:
    who ended each rollout and the commit that started it too)."""
    if not entries:
        return f"disaggregatedset/{name} in {namespace}: no revisions recorded yet\n"
    rows = [[e.revision, _started(e.started), outcome_words(e), change_words(e),
             *([e.by or "-", e.started.subject or "-"] if wide else [])] for e in reversed(entries)]
    lines = [f"disaggregatedset/{name} in {namespace}: {len(entries)} revision{'s' if len(entries) != 1 else ''}, "
             "newest first"]
    lines += table(["REVISION", "STARTED", "ENDED", "CHANGE", *(["ENDED BY", "COMMIT SUBJECT"] if wide else [])],
                   rows, indent="  ")
    return "\n".join(lines) + "\n"


def format_revision(name: str, namespace: str, entry: RevisionEntry) -> str:
    """One revision whole for people: when and by whom it started, how it ended, its template's diff."""
    diff = changes([entry.before], entry.record) if entry.before is not None else None
    lines = [f"disaggregatedset/{name} in {namespace}, revision {entry.revision}",
             f"  started: {_when(entry.started.date)} by {entry.started.author}" + (
                 f", commit {entry.started.sha[:12]} \"{entry.started.subject}\"" if entry.started.sha else ""),
             f"  ended:   {outcome_words(entry)}",
             f"  change:  {change_words(entry)}"]
    if diff and entry.before is not None:
        lines += [f"  from revision {entry.before.revision}:", *(f"    {line}" for line in diff["diff"])]
        if diff["truncated"]:
            where = (f": git diff {entry.started.sha[:12]}~1 {entry.started.sha[:12]}" if entry.started.sha
                     else ": -o yaml shows the templates")
            lines.append(f"    ({diff['truncated']} more lines{where})")
    return "\n".join(lines) + "\n"


def _revision_document(name: str, namespace: str, entry: RevisionEntry) -> JsonObject:
    """One revision whole, for programs: its entry, its diff, and its templates."""
    diff = changes([entry.before], entry.record) if entry.before is not None else None
    document = {"name": name, "namespace": namespace, **_document(entry), "diff": diff["diff"] if diff else []}
    if entry.templates is not None:  # what `rollout undo --to-revision` writes back
        document["roles"] = [{"name": role.name, **dict(role.spec)} for role in entry.templates.roles]
    return document


def _document(entry: RevisionEntry) -> JsonObject:
    document: JsonObject = {"revision": entry.revision, "started": _mark(entry.started, "author"),
                      "outcome": entry.outcome}
    if entry.ended is not None:
        document["ended"] = _mark(entry.ended)
    if entry.by:
        document["by"] = entry.by
    if entry.why:
        document["why"] = entry.why
    if entry.before is not None:
        document["previousRevision"] = entry.before.revision
        document["changes"] = changes([entry.before], entry.record)["summary"]
    if entry.back:
        document["rollback"] = True
    if entry.retry:
        document["retry"] = True
    return document


def _mark(commit: Commit, who: str = "") -> JsonObject:
    """Where and when (git: the commit, its subject; the cluster: when and by whom)."""
    mark: JsonObject = {"commit": commit.sha} if commit.sha else {}
    if who and commit.author:
        mark["author" if commit.sha else "by"] = commit.author
    mark["at"] = commit.date
    if commit.subject:
        mark["subject"] = commit.subject
    return mark


def undo_refusal(why: str | ByHand) -> str:
    """Why undo does not write a field (core/delivery/undo.py `undo_edits`), in words: a value to
    write by hand with the command that shows it."""
    if isinstance(why, str):
        return why
    return (f"revision {why.revision} has {why.shown} here: write it by hand (`rollout history "
            f"--revision {why.revision} -o yaml` shows the template)")


def undo_message(targets: Mapping[str, RevisionEntry]) -> str:
    """The commit of `rollout undo --gitops --commit` (its pull request): titled as the rollback,
    each set's revision written back and where it first started, and a `Rollout-Undo: NAME R`
    trailer per set, which the steps that follow read (gitops/history.py `going_back`)."""
    names = sorted(targets)
    title = (f"Roll back {names[0]} to revision {targets[names[0]].revision}" if len(names) == 1
             else f"Roll back {len(names)} sets to earlier revisions")
    body = [f"- {name}: the templates of revision {targets[name].revision} written back (first "
            f"started {targets[name].started.date} by {targets[name].started.author}"
            + (f", commit {targets[name].started.sha[:12]}" if targets[name].started.sha else "") + ")"
            for name in names]
    trailers = [f"{UNDO_TRAILER}: {name} {targets[name].revision}" for name in names]
    subject, whole = commit_subject(title)  # a set's long name: the whole title heads the body
    return "\n".join([subject, "", *([whole, ""] if whole else []), "rollout undo: each set's role templates "
                      "as they were at an earlier revision. Merging this starts the rollout back, paced "
                      "by the set's RolloutPolicy like any template change.", "", *body, "", *trailers]) + "\n"


def undo_next(invocation: Invocation, uncommitted: bool) -> str:
    """The line after an undo: the rollout back is taken by `rollout step` of the same set, as
    the user named it, once the rewritten file is committed where it is not yet."""
    return (f"next: the rollout back is paced like any other: {invocation.command('step')}"
            + (" (commit the file first)" if uncommitted else ""))
