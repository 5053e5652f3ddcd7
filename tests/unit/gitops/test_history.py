"""`rollout history --gitops`: the revisions of a set read from git (gitops/history.py), the
rules over synthetic commits and the command over a real repository."""

from __future__ import annotations

import json
import subprocess

from kubectl_disagg.gitops.history import ABORTED, COMPLETE, ROLLING, Commit, WrittenBack, going_back, revisions
from kubectl_disagg.views.history import format_history
from tests.support.cli import run
from tests.support.sets import NS, make_set
from tests.support.stepping import model, write_set


def commit(n: int) -> Commit:
    return Commit(f"{n:040d}", "alice", f"2026-12-0{n}T12:00:00Z", f"commit {n}")


def state(*revs: str, aborted: str | None = None) -> dict:
    document: dict = {"slices": [{"slice": 0, "revisions": [{"revision": r, "replicas": {"prefill": 1}}
                                                            for r in revs]}]}
    if aborted:
        document["position"] = {"revision": aborted, "aborted": {"at": "2026-12-06T12:00:00Z", "by": "bob",
                                                                 "reason": "ttft too slow"}}
    return document


def test_each_revision_starts_where_the_set_changed_and_ends_as_its_state_says():
    a, b, c = (make_set({"prefill": 1, "decode": 1}, image=image) for image in ("img:1", "img:2", "img:3"))
    entries = revisions([
        (commit(1), a, state(a.revision)),                            # deployed
        (commit(2), b, state(a.revision)),                            # the template change
        (commit(3), b, state(a.revision, b.revision)),                # a step
        (commit(4), b, state(b.revision)),                            # the removal: complete
        (commit(5), c, state(b.revision)),
        (commit(6), c, state(b.revision, c.revision, aborted=c.revision)),
        (commit(7), b, state(b.revision, c.revision, aborted=c.revision)),  # reverted
        (commit(8), None, state(b.revision)),                         # a broken set file: no new rollout
    ])
    assert [(e.revision, e.outcome, e.ended.sha[-1] if e.ended else None, e.back) for e in entries] == [
        (a.revision, COMPLETE, "1", False), (b.revision, COMPLETE, "4", False),
        (c.revision, ABORTED, "6", False), (b.revision, COMPLETE, "8", True)]
    assert (entries[2].by, entries[2].why) == ("bob", "ttft too slow") and entries[1].before.revision == a.revision
    text = format_history("llm", NS, entries).splitlines()
    assert text[0] == f"disaggregatedset/llm in {NS}: 4 revisions, newest first"
    assert text[1].split() == ["REVISION", "STARTED", "ENDED", "CHANGE"]
    assert text[2].startswith(f"  {b.revision}  2026-12-07 12:00 alice (0000000)  complete 2026-12-08 12:00")
    assert "back to it: " in text[2]
    assert "aborted 2026-12-06 12:00 (0000000) by bob: ttft too slow" in text[3]
    assert text[5].endswith("first revision")
    replaced = revisions([(commit(1), a, state(a.revision)), (commit(2), b, state(a.revision)),
                          (commit(3), c, state(a.revision, b.revision))])  # no step recorded b: it never ran
    assert [(e.revision, e.outcome) for e in replaced] == [(a.revision, COMPLETE), (c.revision, ROLLING)]


def git(directory, *args: str) -> str:
    return subprocess.run(["git", "-C", str(directory), *args], check=True, capture_output=True, text=True,
                          env={"GIT_AUTHOR_NAME": "alice", "GIT_AUTHOR_EMAIL": "a@example.invalid",
                               "GIT_COMMITTER_NAME": "alice", "GIT_COMMITTER_EMAIL": "a@example.invalid",
                               "PATH": "/usr/bin:/bin", "HOME": str(directory)}).stdout


def test_history_reads_the_sets_commits_in_a_repository(tmp_path, capsys):
    git(tmp_path, "init", "-q", "-b", "main")
    path = write_set(tmp_path, NS, {"prefill": 1, "decode": 1}, image="img:1")
    assert run(["rollout", "state", "init", "-f", str(tmp_path)], capsys)[0] == 0
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-q", "-m", "deploy")
    write_set(tmp_path, NS, {"prefill": 1, "decode": 1}, image="img:2").replace(path)  # the same file, edited
    git(tmp_path, "commit", "-q", "-am", "img:2")
    code, out, err = run(["rollout", "history", "--gitops", "-f", str(tmp_path)], capsys)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].endswith(": 2 revisions, newest first")
    assert "rolling" in lines[2] and "prefill, decode: image img `1 → 2`" in lines[2] and "alice" in lines[2]
    assert "complete" in lines[3] and lines[3].endswith("first revision")
    code, out, _ = run(["rollout", "history", "--gitops", "-f", str(tmp_path), "-o", "json"], capsys)
    document = json.loads(out)
    assert [r["outcome"] for r in document["revisions"]] == ["rolling", "complete"]
    newest = document["revisions"][0]["revision"]
    code, out, _ = run(["rollout", "history", "--gitops", "-f", str(tmp_path), "--revision", newest], capsys)
    assert code == 0 and "-  img:1" in out and "+  img:2" in out and '"img:2"' in out
    code, _, err = run(["rollout", "history", "--gitops", "-f", str(tmp_path), "--revision", "0000"], capsys)
    assert code == 1 and "no revision 0000 in its history" in err


def test_undo_through_git_writes_the_revision_before_back_as_one_commit(tmp_path, capsys):
    git(tmp_path, "init", "-q", "-b", "main")
    path = write_set(tmp_path, NS, {"prefill": 1, "decode": 1}, image="img:1")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-q", "-m", "deploy")
    for image in ("img:2", "img:3"):
        write_set(tmp_path, NS, {"prefill": 1, "decode": 1}, image=image).replace(path)
        git(tmp_path, "commit", "-q", "-am", image)
        committed_state(tmp_path, "step", model(path).revision, [model(path).revision])  # a step rolled it
    revisions_now = [r["revision"] for r in json.loads(run(
        ["rollout", "history", "--gitops", "-f", str(tmp_path), "-o", "json"], capsys)[1])["revisions"]]
    before = path.read_text()
    code, out, err = run(["rollout", "undo", "--gitops", "-f", str(tmp_path), "--dry-run", "-o", "yaml"], capsys)
    assert code == 0 and out.count("image: img:2") == 2 and path.read_text() == before, err
    code, out, err = run(["rollout", "undo", "--gitops", "-f", str(tmp_path), "--to-revision", "0000"], capsys)
    assert code == 1 and "no revision 0000 in its history (revisions: " in err and path.read_text() == before
    code, out, err = run(["rollout", "undo", "--gitops", "-f", str(tmp_path), "--commit"], capsys)
    assert (code, out) == (0, f"disaggregatedset/llm rolled back to revision {revisions_now[1]}\n"), err
    assert "committed " in err and "rollout step --gitops -f " in err
    assert git(tmp_path, "log", "-1", "--format=%s").strip() == f"Roll back llm to revision {revisions_now[1]}"
    assert f"Rollout-Undo: llm {revisions_now[1]}" in git(tmp_path, "log", "-1", "--format=%B")
    assert going_back(model(path), NS) == WrittenBack()  # what the steps after it read (a rollback)
    assert git(tmp_path, "status", "--porcelain") == ""
    assert path.read_text() == before.replace("img:3", "img:2")  # only the image lines changed
    listed = json.loads(run(["rollout", "history", "--gitops", "-f", str(tmp_path), "-o", "json"], capsys)[1])
    assert listed["revisions"][0]["revision"] == revisions_now[1] and listed["revisions"][0]["rollback"] is True


def test_undo_writes_a_structural_difference_back_in_place_keeping_the_rest_of_the_file(tmp_path, capsys):
    """An argument list added since the revision: the undo removes its lines (and only them),
    the file's comment stays, and the set names the revision again."""
    git(tmp_path, "init", "-q", "-b", "main")
    path = write_set(tmp_path, NS, {"prefill": 1, "decode": 1}, image="img:1")
    path.write_text("# the serving fleet, owned by the platform team\n" + path.read_text())
    assert run(["rollout", "state", "init", "-f", str(tmp_path)], capsys)[0] == 0
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-q", "-m", "deploy")
    deployed = path.read_text()
    first = model(path).revision
    lines = deployed.split("\n")
    image = next(i for i, line in enumerate(lines) if "image: img:1" in line)
    lines.insert(image + 1, lines[image].replace("image: img:1", "args: [--fast]  # tried for a day"))
    path.write_text("\n".join(lines))
    git(tmp_path, "commit", "-q", "-am", "args")
    assert model(path).revision != first
    code, out, err = run(["rollout", "undo", "--gitops", "-f", str(tmp_path), "--commit"], capsys)
    assert (code, out) == (0, f"disaggregatedset/llm rolled back to revision {first}\n"), err
    assert path.read_text() == deployed and model(path).revision == first
    code, _, err = run(["rollout", "undo", "--gitops", "-f", str(tmp_path), "--to-revision", first], capsys)
    assert code == 1 and f"the set is at revision {first} already" in err


def test_a_git_revert_of_the_commit_that_moved_the_set_reads_as_going_back(tmp_path):
    """A hand-made `git revert` (GitHub's revert button makes the same commit) of the commit that
    changed the set's revision: the steps after it are a rollback, and say who wrote it back. A
    revert of a commit that did not move the set, or a plain new commit, is not."""
    git(tmp_path, "init", "-q", "-b", "main")
    path = write_set(tmp_path, NS, {"prefill": 1, "decode": 1}, image="img:1")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-q", "-m", "deploy")
    first = model(path).revision
    write_set(tmp_path, NS, {"prefill": 1, "decode": 1}, image="img:2").replace(path)
    git(tmp_path, "commit", "-q", "-am", "img:2")
    moved = git(tmp_path, "rev-parse", "HEAD").strip()
    assert going_back(model(path), NS) is None
    git(tmp_path, "revert", "--no-edit", "HEAD")
    assert model(path).revision == first
    assert going_back(model(path), NS) == WrittenBack(moved)
    path.write_text(path.read_text() + "# a note\n")
    git(tmp_path, "commit", "-q", "-am", "a note")
    git(tmp_path, "revert", "--no-edit", "HEAD")  # reverts a commit that left the revision alone
    assert going_back(model(path), NS) is None


def deployed(root, capsys, app=None):
    """A repository at `root` whose directory `app` (the root by default) holds the set at img:1
    and its rollout state, committed as "deploy": the set's file."""
    app = app or root
    git(root, "init", "-q", "-b", "main")
    path = write_set(app, NS, {"prefill": 1, "decode": 1}, image="img:1")
    assert run(["rollout", "state", "init", "-f", str(app)], capsys)[0] == 0
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "deploy")
    return path


def two_sets(tmp_path, capsys):
    """A repository whose directory holds two sets (llm at img:1, chat at img:5) and their state
    file (one document each), committed."""
    git(tmp_path, "init", "-q", "-b", "main")
    paths = [write_set(tmp_path, NS, {"prefill": 1, "decode": 1}, image="img:1"),
             write_set(tmp_path, NS, {"prefill": 1, "decode": 1}, image="img:5", name="chat")]
    code, _, err = run(["rollout", "state", "init", "-f", str(tmp_path)], capsys)
    assert code == 0, err
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-q", "-m", "deploy")
    return paths


def test_issue47_history_of_two_sets_as_json_is_one_document(tmp_path, capsys):
    """`-o json` over several sets prints one JSON document, a List (as kubectl does)."""
    llm, chat = two_sets(tmp_path, capsys)
    code, out, err = run(["rollout", "history", "--gitops", "-f", str(tmp_path), "-o", "json"], capsys)
    assert code == 0, err
    document = json.loads(out)
    assert (document["kind"], document["apiVersion"]) == ("List", "v1")
    assert [(item["name"], [r["revision"] for r in item["revisions"]]) for item in document["items"]] == [
        ("chat", [model(chat).revision]), ("llm", [model(llm).revision])]


def test_issue47_each_set_of_a_directory_is_judged_from_its_own_state_document(tmp_path, capsys):
    """Two sets share the directory's state file, a document each: each set's rollout ends as
    its own document says (complete at the state's creation), not as the first document does."""
    two_sets(tmp_path, capsys)
    code, out, err = run(["rollout", "history", "--gitops", "-f", str(tmp_path), "-o", "json"], capsys)
    assert code == 0, err
    assert [(item["name"], [r["outcome"] for r in item["revisions"]]) for item in json.loads(out)["items"]] == [
        ("chat", ["complete"]), ("llm", ["complete"])]


def test_issue47_history_and_undo_follow_the_app_directory_when_it_moves(tmp_path, capsys):
    """`git mv` of the application's directory: the history still starts at the set's first
    commit (who deployed it, not who moved it), and undo still finds the revision before."""
    app = tmp_path / "apps" / "llama"
    app.mkdir(parents=True)
    path = deployed(tmp_path, capsys, app)
    first = model(path).revision
    write_set(app, NS, {"prefill": 1, "decode": 1}, image="img:2").replace(path)
    git(tmp_path, "commit", "-q", "-am", "img:2")
    git(tmp_path, "mv", "apps/llama", "apps/llama-70b")
    git(tmp_path, "commit", "-q", "-m", "rename the app")
    moved = tmp_path / "apps" / "llama-70b"
    code, out, err = run(["rollout", "history", "--gitops", "-f", str(moved), "-o", "json"], capsys)
    assert code == 0, err
    listed = json.loads(out)["revisions"]
    assert [(r["outcome"], r["started"]["subject"]) for r in listed] == [("rolling", "img:2"), ("complete", "deploy")]
    code, out, err = run(["rollout", "undo", "--gitops", "-f", str(moved), "--dry-run"], capsys)
    assert (code, out) == (0, f"disaggregatedset/llm rolled back to revision {first} (dry run)\n"), err


def test_issue47_history_of_a_git_driven_set_without_gitops_is_refused_naming_it(tmp_path, capsys):
    """As `rollout step` refuses a set whose rollout state is beside it, and names --gitops."""
    two_sets(tmp_path, capsys)
    for verb in ("history", "undo"):
        code, out, err = run(["rollout", verb, "-f", str(tmp_path)], capsys)
        assert (code, out) == (1, ""), (verb, out)
        lines = err.splitlines()
        assert len(lines) == 2 and all("is driven through git" in line and
                                       f"`kubectl disagg rollout {verb} --gitops -f " in line for line in lines), err


def committed_state(tmp_path, message: str, target: str, slices: list[str], position: dict | None = None) -> None:
    """The state file as a step or a verb writes it (what history reads of it), committed."""
    document: dict = {"apiVersion": "kubectl-disagg.x-k8s.io/v1alpha1", "kind": "RolloutState",
                      "metadata": {"name": "llm", "namespace": NS}, "target": {"revision": target},
                      "slices": [{"slice": 0, "revisions": [{"revision": r, "replicas": {"prefill": 1}}
                                                           for r in slices]}]}
    if position is not None:
        document["position"] = position
    (tmp_path / "disagg-rollout-state.yaml").write_text(json.dumps(document))
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-q", "-m", message)


def img2_committed(tmp_path):
    """A repository whose set deployed img:1 (its state committed), then img:2 committed: the
    set's file, img:1's revision and img:2's."""
    git(tmp_path, "init", "-q", "-b", "main")
    path = write_set(tmp_path, NS, {"prefill": 1, "decode": 1}, image="img:1")
    one = model(path).revision
    committed_state(tmp_path, "deploy", one, [one])
    write_set(tmp_path, NS, {"prefill": 1, "decode": 1}, image="img:2").replace(path)
    git(tmp_path, "commit", "-q", "-am", "img:2")
    return path, one, model(path).revision


def test_issue47_an_image_aborted_retried_and_completed_is_what_undo_goes_back_to(tmp_path, capsys):
    """As in the cluster: the retry is an entry of its own, complete; the undo from the next
    image goes back to it, not past it."""
    path, one, two = img2_committed(tmp_path)
    aborted = {"at": "2026-12-07T12:00:00Z", "by": "bob", "reason": "p99 doubled"}
    retried = {"at": "2026-12-07T13:00:00Z", "by": "carol", "reason": "node fixed"}
    committed_state(tmp_path, "step", two, [one, two], {"revision": two})
    committed_state(tmp_path, "abort", two, [one, two], {"revision": two, "aborted": aborted})
    committed_state(tmp_path, "rolled back", two, [one], {"revision": two, "aborted": aborted})
    committed_state(tmp_path, "retry", two, [one], {"revision": two, "retried": retried})
    committed_state(tmp_path, "step", two, [one, two], {"revision": two, "retried": retried})
    committed_state(tmp_path, "removal", two, [two], {"revision": two, "retried": retried})
    write_set(tmp_path, NS, {"prefill": 1, "decode": 1}, image="img:3").replace(path)
    git(tmp_path, "commit", "-q", "-am", "img:3")
    code, out, err = run(["rollout", "history", "--gitops", "-f", str(tmp_path), "-o", "json"], capsys)
    assert code == 0, err
    assert [(r["revision"], r["outcome"], r.get("retry", False)) for r in json.loads(out)["revisions"]] == [
        (model(path).revision, "rolling", False), (two, "complete", True), (two, "aborted", False),
        (one, "complete", False)]
    code, out, err = run(["rollout", "undo", "--gitops", "-f", str(tmp_path), "--dry-run"], capsys)
    assert (code, out) == (0, f"disaggregatedset/llm rolled back to revision {two} (dry run)\n"), err


def test_issue47_an_analysis_abort_recorded_by_the_rollback_step_ends_the_image_aborted(tmp_path, capsys):
    """As a real git rollout writes it: the step whose analysis failed rolls toward the stable
    revision (its `target`), its position recording the abort of img:2; the rollback's commits
    and img:3's rollout follow. img:2 ended aborted (as in the cluster), not replaced."""
    path, one, two = img2_committed(tmp_path)
    aborted = {"revision": two, "stable": one, "wave": 0, "aborted": {
        "at": "2026-12-07T12:00:00Z", "by": "analysis", "reason": "analysis failed after wave 1: ttft"}}
    committed_state(tmp_path, "step 1", two, [one, two], {"revision": two, "stable": one, "wave": 0})
    committed_state(tmp_path, "rollback step 1", one, [one, two], aborted)
    committed_state(tmp_path, "rollback step 2", one, [one], aborted)
    write_set(tmp_path, NS, {"prefill": 1, "decode": 1}, image="img:3").replace(path)
    git(tmp_path, "commit", "-q", "-am", "img:3")
    three = model(path).revision
    committed_state(tmp_path, "step 1", three, [one, three], {"revision": three, "stable": one, "wave": 0})
    committed_state(tmp_path, "step 2", three, [three], {"revision": three, "stable": one, "wave": 1})
    code, out, err = run(["rollout", "history", "--gitops", "-f", str(tmp_path), "-o", "json"], capsys)
    assert code == 0, err
    listed = json.loads(out)["revisions"]
    assert [(r["revision"], r["outcome"]) for r in listed] == [(three, "complete"), (two, "aborted"),
                                                               (one, "complete")]
    assert listed[1]["why"] == "analysis failed after wave 1: ttft"


def test_issue47_an_image_replaced_before_any_step_is_not_a_revision_to_go_back_to(tmp_path, capsys):
    """img:2 committed, then img:3 before any step: img:2 never ran a pod, so (as in the
    cluster, where no pass ever saw it) history does not list it and undo goes to img:1."""
    path = deployed(tmp_path, capsys)
    one = model(path).revision
    for image in ("img:2", "img:3"):
        write_set(tmp_path, NS, {"prefill": 1, "decode": 1}, image=image).replace(path)
        git(tmp_path, "commit", "-q", "-am", image)
    code, out, err = run(["rollout", "history", "--gitops", "-f", str(tmp_path), "-o", "json"], capsys)
    assert code == 0, err
    assert [(r["revision"], r["outcome"]) for r in json.loads(out)["revisions"]] == [
        (model(path).revision, "rolling"), (one, "complete")]
    code, out, err = run(["rollout", "undo", "--gitops", "-f", str(tmp_path), "--dry-run"], capsys)
    assert (code, out) == (0, f"disaggregatedset/llm rolled back to revision {one} (dry run)\n"), err
def test_an_undo_of_a_long_named_set_commits_a_subject_of_72_characters_at_most(tmp_path, capsys):
    """Issue 47: every commit subject the tool writes fits 72 characters; the whole title heads the body."""
    name = "llama-3-70b-instruct-disaggregated-eu-west-1"  # as long as its Service names allow, with roles p, d
    git(tmp_path, "init", "-q", "-b", "main")
    path = write_set(tmp_path, NS, {"p": 1, "d": 1}, image="img:1", name=name)
    assert run(["rollout", "state", "init", "-f", str(tmp_path)], capsys)[0] == 0  # img:1 recorded as run
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-q", "-m", "deploy")
    write_set(tmp_path, NS, {"p": 1, "d": 1}, image="img:2", name=name).replace(path)
    git(tmp_path, "commit", "-q", "-am", "img:2")
    code, _, err = run(["rollout", "undo", "--gitops", "-f", str(tmp_path), "--commit"], capsys)
    assert code == 0, err
    subject, blank, title = git(tmp_path, "log", "-1", "--format=%B").splitlines()[:3]
    assert len(subject) <= 72 and blank == "" and title.startswith(f"Roll back {name} to revision ")


def test_issue48_an_undo_whose_commit_fails_puts_the_file_back_through_the_stores_transaction(tmp_path, capsys):
    """Issue 48: the undo's commit was made in the command, a third commit path; it goes through
    the git store's transaction (`commit_or_restore`): a commit refused (here by a hook) puts the
    set's file back as it was read and says nothing was written."""
    git(tmp_path, "init", "-q", "-b", "main")
    path = write_set(tmp_path, NS, {"prefill": 1, "decode": 1}, image="img:1")
    assert run(["rollout", "state", "init", "-f", str(tmp_path)], capsys)[0] == 0
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-q", "-m", "deploy")
    write_set(tmp_path, NS, {"prefill": 1, "decode": 1}, image="img:2").replace(path)
    git(tmp_path, "commit", "-q", "-am", "img:2")
    before, head = path.read_bytes(), git(tmp_path, "rev-parse", "HEAD")
    hook = tmp_path / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\necho 'refused by policy' >&2\nexit 1\n")
    hook.chmod(0o755)
    code, out, err = run(["rollout", "undo", "--gitops", "-f", str(tmp_path), "--commit"], capsys)
    assert (code, out) == (1, ""), err
    assert err.rstrip().endswith("; nothing was written"), err
    assert path.read_bytes() == before and git(tmp_path, "rev-parse", "HEAD") == head
    assert git(tmp_path, "status", "--porcelain") == ""


def test_issue48_a_retry_before_any_step_starts_a_retry_entry_as_in_the_cluster():
    """Issue 48 (found by the store contract's twin runs): a set committed, aborted and retried
    before any step wrote a state for it. The cluster lists the aborted entry and the retry;
    git ignored the retry's commit (its state was still written for the stable revision, and
    its position no longer records the abort), so git's history lacked the retry."""
    a, b = (make_set({"prefill": 1, "decode": 1}, image=image) for image in ("img:1", "img:2"))
    aborted = state(a.revision, aborted=b.revision)
    retried = {"slices": aborted["slices"], "position": {
        "revision": b.revision, "retried": {"at": "2026-12-07T12:00:00Z", "by": "carol", "reason": "fixed"}}}
    entries = revisions([(commit(1), a, state(a.revision)), (commit(2), b, state(a.revision)),
                         (commit(3), b, aborted), (commit(4), b, retried)])
    assert [(e.revision, e.outcome, e.retry) for e in entries] == [
        (a.revision, COMPLETE, False), (b.revision, ABORTED, False), (b.revision, ROLLING, True)]
