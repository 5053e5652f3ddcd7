"""The exit codes of every command, in one table: one `IntEnum` per command (or family of
commands that share their codes), each code with its words: --help names it by their first ones
(`labels`), the CLI reference and the troubleshooting page give them whole.

The library computes a code from this table, the command returns it, and `cli.py` alone ends
the process with it. The numbers are a contract (scripts, CI jobs and docs rely on them): they
never change meaning.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Self

class ExitCode(IntEnum):
    """A code with the words that explain it (`help`)."""

    help: str

    def __new__(cls, value: int, help: str = "") -> Self:
        code = int.__new__(cls, value)
        code._value_ = value
        code.help = help
        return code


Codes = type[ExitCode] | tuple[ExitCode, ...]  # a table, or the codes of it a command ends with


class Exit(ExitCode):
    """What every command may end with, whatever it does."""

    OK = 0, "success"
    ERROR = 1, "error: invalid input, an API or network error"
    USAGE = 2, "usage: invalid flags"  # click's own code for usage errors
    INTERRUPTED = 130, "interrupted (Ctrl-C); SIGTERM and SIGHUP end with 128 + their number"


def terminated(signum: int) -> int:
    """The code of a run a signal stopped, as a shell reports it: 128 + the signal's number."""
    return 128 + signum


class StepExit(ExitCode):
    """`rollout step`, against the cluster or --gitops (docs/gitops.md): one table for both
    stores. 5 (waiting) and 6 (complete) only --gitops yields: a cluster step waits for
    readiness itself, and ends 0 on a complete set; with --gitops 0 says the next state was
    written (`GITOPS_STEP` words each code as --gitops means it)."""

    OK = 0, ("done: every pass ran (with --until-complete: every set is complete; with --dry-run=server: "
             "the API server would accept every write)")
    ERROR = 1, ("error: invalid input, an API or network error, a write the server refused (409: something "
                "changed since it was read; run the step again; with --dry-run=server: every write it would "
                "refuse is listed)")
    USAGE = 2, "usage: invalid flags"
    REFUSED = 3, ("refused (that pass changed nothing): the live objects cannot be explained, an object not "
                  "managed by kubectl-disagg is in the way, another stepper holds (or took over) the set's lease, "
                  "or the DisaggregatedSet controller runs the set (its objects are owned by it, or the stored "
                  "set's status shows it reconciles it: see --ignore-controller)")
    TIMEOUT = 4, ("timeout: --until-complete ran out of time (the rollout stays where it is), "
                  "--wait-for-lease gave up before the lease was free, or an analysis gate could not end "
                  "within --timeout (nothing recorded)")
    WAITING = 5, ("waiting: the cluster does not show the committed state yet (not synced or pruned), or the new "
                  "revision is not ready (nothing written)")
    COMPLETE = 6, "complete: the rollout is done (nothing written)"
    HELD = 7, ("held: the set's RolloutPolicy holds the rollout (at a gate after a wave, paused, or aborted and "
               "rolled back) and the pass changed nothing; the message says what passes it (rollout promote, "
               "resume, a soak's end)")


# The codes a `rollout step` against the cluster ends with, in its table's words.
STEP_CLUSTER = (StepExit.OK, StepExit.ERROR, StepExit.USAGE, StepExit.REFUSED, StepExit.TIMEOUT, StepExit.HELD)
# `rollout step --gitops` (what a step did): every code, in its own words.
GITOPS_STEP: dict[ExitCode, str] = {
    StepExit.OK: "advanced: the next state was written beside the set; commit it",
    StepExit.ERROR: "error: invalid input or state file, an API or network error",
    StepExit.USAGE: "usage: invalid flags",
    StepExit.REFUSED: "refused: the live objects cannot be explained (nothing written)",
    StepExit.TIMEOUT: ("timeout: --wait ran out of time, or an analysis gate could not end within --timeout "
                       "(nothing written)"),
    StepExit.WAITING: StepExit.WAITING.help,
    StepExit.COMPLETE: StepExit.COMPLETE.help,
    StepExit.HELD: ("held: the set's RolloutPolicy holds the rollout (a gate, paused, aborted and rolled back); "
                    "nothing written; the message says what passes it"),
}


class StatusExit(ExitCode):
    """`rollout status`, against the cluster or --gitops: one table for both stores. Against the
    cluster it says whether the set has reached what --for names; with --gitops it is the next
    action's code, as `rollout step --gitops` would end (`GITOPS_NEXT_ACTION` words each code so:
    0 the step is next, 3 refused); 5 (waiting) and 6 (complete) only --gitops yields."""

    AVAILABLE = 0, ("Available: every role has all replicas ready at the current revision (after an abort: at the "
                    "stable revision it rolled back to; --for=complete: and the rollout is complete, no old "
                    "revision's LeaderWorkerSet left)")
    ERROR = 1, "error (invalid input, API server unreachable or refusing)"
    USAGE = 2, "usage error"
    NOT_AVAILABLE = 3, "not Available (--for=complete: not complete) (without --watch)"
    TIMEOUT = 4, "timeout: --watch ran out of time before the set became Available (--for=complete: complete)"
    WAITING = 5, "waiting: the next action is to wait for the sync or readiness"
    COMPLETE = 6, "complete"
    HELD = 7, ("held (--watch): the set's RolloutPolicy holds the rollout where rollout step would (at a gate "
               "after a wave, paused, or with --for=complete aborted and rolled back), or at an analysis gate no "
               "running rollout step measures; the line on stderr says what passes it")


# The codes a `rollout status` against the cluster ends with, in its table's words.
STATUS_CLUSTER = (StatusExit.AVAILABLE, StatusExit.ERROR, StatusExit.USAGE, StatusExit.NOT_AVAILABLE,
                  StatusExit.TIMEOUT, StatusExit.HELD)
# `rollout status --gitops` reads the codes as the next action to take.
GITOPS_NEXT_ACTION: dict[ExitCode, str] = {
    StatusExit.AVAILABLE: "step: the next action is rollout step --gitops",
    StatusExit.ERROR: "error (invalid input or state file, API server unreachable or refusing)",
    StatusExit.USAGE: "usage error",
    StatusExit.NOT_AVAILABLE: "refused: the live objects cannot be explained",
    StatusExit.TIMEOUT: ("timeout: --watch ran out of time before the next action changed (--for: before every "
                         "set reached it)"),
    StatusExit.WAITING: StatusExit.WAITING.help,
    StatusExit.COMPLETE: StatusExit.COMPLETE.help,
    StatusExit.HELD: ("held: by the set's RolloutPolicy (a gate, a pause, an abort over), or with -w at an "
                      "analysis gate only rollout step --gitops measures; the reasons name the command that passes it"),
}


class VerbExit(ExitCode):
    """`rollout promote|pause|resume|abort|retry`, against the cluster or --gitops."""

    OK = 0, "done: the position was written (the next rollout step acts on it)"
    ERROR = 1, ("error: invalid input, no RolloutPolicy for the set, an API or network error (409: the "
                "RolloutState changed since it was read; run it again)")
    USAGE = 2, "usage: invalid flags"
    REFUSED = 3, ("refused (nothing written): the verb does not apply where the rollout stands (the message says "
                  "why), or another stepper holds the set's lease")


class HandoverExit(ExitCode):
    """`handover to-controller|to-plugin`."""

    OK = 0, "handed over (with --dry-run: would be)"
    ERROR = 1, ("error: API or network error, an object changed meanwhile, or the garbage collector did not let "
                "the set go within --timeout (run it again)")
    USAGE = 2, "usage: invalid flags"
    REFUSED = 3, ("refused: an object would not be adopted, or (to-plugin) the set is mid-rollout; nothing was "
                  "changed")


class CmpExit(ExitCode):
    """`cmp generate|discover`, run by Argo CD's repo-server sidecar."""

    OK = 0, "rendered: the manifests on stdout"
    ERROR = 1, "nothing safe to apply: one line on stderr, nothing on stdout"


# `cmp discover` reads the same codes: Argo CD's "no" is empty output, not an exit code.
CMP_DISCOVER: dict[ExitCode, str] = {CmpExit.OK: "answered: the file found, or nothing when none holds a set",
                                     CmpExit.ERROR: "invalid parameters: one line on stderr"}


def label(text: str) -> str:
    """A code's label, as --help names it: its words up to the first ":", " (" or ";" ("refused
    (that pass changed nothing): ..." is "refused")."""
    ends = [i for i in (text.find(":"), text.find(" ("), text.find(";")) if i > 0]
    return text[:min(ends)] if ends else text


def labels(codes: type[ExitCode] | tuple[ExitCode, ...], words: dict[ExitCode, str] | None = None) -> str:
    """`codes` on one line by their labels: "0 done, 1 error, 2 usage, 3 refused"."""
    return ", ".join(f"{code.value} {label((words or {}).get(code, code.help))}" for code in codes)
