#!/bin/sh
# One run of the rollout driver, as its Job and its GitHub workflow run it (docs/gitops.md, "The
# driver"): clone REPO_URL's BRANCH, then `kubectl disagg rollout step --gitops -f APP_DIR --push
# origin` until the rollout is complete or a decision waits for a person.
#
#   REPO_URL      the repository Argo CD deploys from (https)
#   BRANCH        the branch it deploys (default main)
#   APP_DIR       the application's directory in it (the sets and their state files)
#   GIT_TOKEN     a token that may push to BRANCH and create branches (from a Secret); none: the
#                 clone's own credentials (a GitHub workflow's checkout)
#   DRIVER_FLAGS  more flags (--review, --on-decision, --timeout, -q), quoted as in a shell
#
# Exit codes: the driver's, but 7 (a decision waits for a person) is a run that did its work: 0.
set -eu

: "${APP_DIR:?APP_DIR names the application directory}"
if [ -n "${REPO_URL:-}" ]; then
  workdir=$(mktemp -d)
  if [ -n "${GIT_TOKEN:-}" ]; then
    # The token never lands in a file or a URL: git asks this helper for it.
    git config --global credential.helper \
      '!f() { echo username=x-access-token; echo "password=${GIT_TOKEN}"; }; f'
  fi
  git clone --quiet --branch "${BRANCH:-main}" "${REPO_URL}" "${workdir}"
  cd "${workdir}"
fi
eval "set -- ${DRIVER_FLAGS:-}"  # the flags as a shell would split them (a quoted --on-decision command)
set +e
kubectl-disagg rollout step --gitops -f "${APP_DIR}" --push origin "$@"
code=$?
set -e
if [ "${code}" -eq 7 ]; then
  echo "a decision waits for a person: this run is done"
  exit 0
fi
exit "${code}"
