"""Problems as the command line words them: a `UserError`'s lines, each problem in the CLI's
words where core left it as data (a namespace asked for with -n, `NamespaceProblem`), else as
it reads. Pure."""

from __future__ import annotations

from dataclasses import replace

from kubectl_disagg.core.api import apirules
from kubectl_disagg.core.api.model import NamespaceProblem
from kubectl_disagg.errors import Problem, UserError, escaped


def worded(problem: Problem | str) -> str:
    """One problem as the CLI prints it: a namespace asked for is `--namespace`, and the line
    says what to pass instead."""
    if not isinstance(problem, NamespaceProblem):
        return escaped(str(problem))
    if problem.document is None:
        return escaped(f'--namespace "{problem.asked}": {apirules.NAMESPACE_MESSAGE}')
    return str(replace(problem, message=(
        f'disaggregatedset/{problem.name} is in namespace "{problem.document}", which does not match '
        f'--namespace "{problem.asked}"; pass --namespace={problem.document} or leave it out')))


def lines(err: UserError) -> list[str]:
    """What the CLI prints of `err`: one line per problem."""
    return [worded(problem) for problem in err.problems]
