# The Argo CD config management plugin sidecar: Python, the kubectl-disagg wheel and
# plugin.yaml (and, as the target `driver`, the image of the rollout driver). Build from the repository root (docs/argocd.md):
#
#   docker build -t kubectl-disagg-cmp:0.1.0 .
#
# The entrypoint, argocd-cmp-server, is not in the image: the repo-server's init container
# copies it into the shared var-files volume (deploy/argocd/repo-server-sidecar.yaml).

FROM python:3.12-slim AS wheel
WORKDIR /src
COPY pyproject.toml README.md ./
COPY kubectl_disagg ./kubectl_disagg
COPY templates ./templates
COPY config ./config
RUN pip wheel --no-cache-dir --no-deps --wheel-dir /wheels .

# The rollout driver (docs/gitops.md, "The driver"): the same wheel with git, running
# deploy/driver/drive.sh, as deploy/driver/cronjob.yaml does:
#
#   docker build --target driver -t kubectl-disagg-driver:0.1.0 .
FROM python:3.12-slim AS driver
COPY --from=wheel /wheels /wheels
RUN apt-get update && apt-get install -y --no-install-recommends git ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && pip install --no-cache-dir /wheels/*.whl && rm -rf /wheels \
    && kubectl-disagg --version
COPY deploy/driver/drive.sh /usr/local/bin/drive.sh
ENV HOME=/tmp \
    XDG_CACHE_HOME=/tmp/.cache \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
USER 999:999
WORKDIR /tmp
ENTRYPOINT ["/usr/local/bin/drive.sh"]

# The sidecar (the default target: the last stage).
FROM python:3.12-slim
COPY --from=wheel /wheels /wheels
# Installed (and byte-compiled) as root: at run time nothing under / needs to be writable.
RUN pip install --no-cache-dir /wheels/*.whl && rm -rf /wheels \
    && kubectl-disagg --version
COPY plugin.yaml /home/argocd/cmp-server/config/plugin.yaml
# Argo CD runs sidecars as uid 999 and may give them no writable HOME: keep everything in /tmp.
ENV HOME=/tmp \
    XDG_CACHE_HOME=/tmp/.cache \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1
USER 999:999
WORKDIR /tmp
ENTRYPOINT ["/var/run/argocd/argocd-cmp-server"]
