# The Argo CD config management plugin sidecar: Python, the kubectl-disagg wheel and
# plugin.yaml. Build from the repository root (docs/argocd.md):
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
