"""kubectl-disagg launcher (a zipapp holding the kubectl-disagg wheel).

The Kubernetes client kubectl-disagg uses ships compiled modules, which cannot be imported from
a zip file, so this one file installs the wheel it carries into a virtual environment of its own
on first use ($XDG_CACHE_HOME/kubectl-disagg/launcher/<wheel digest>/, dependencies from PyPI)
and from then on hands every run straight to it. Run under the name kubectl_complete-disagg
(a link), it answers kubectl's completion requests instead.
"""

import fcntl
import hashlib
import os
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

MIN_PYTHON = (3, 11)


def fail(message: str) -> "NoReturn":  # noqa: F821 - typing not imported on purpose (start-up time)
    print(f"kubectl-disagg: error: {message}", file=sys.stderr)
    sys.exit(1)


def main() -> None:
    if sys.version_info < MIN_PYTHON:
        fail(f"needs python3 >= {MIN_PYTHON[0]}.{MIN_PYTHON[1]}; this is {sys.version.split()[0]}")
    archive = Path(__file__).resolve().parent
    with zipfile.ZipFile(archive) as zipped:
        (wheel_name,) = [n for n in zipped.namelist() if n.endswith(".whl")]
        wheel = zipped.read(wheel_name)
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    home = cache / "kubectl-disagg" / "launcher" / hashlib.sha256(wheel).hexdigest()[:16]
    program = "kubectl_complete-disagg" if Path(sys.argv[0]).name.startswith("kubectl_complete-") else "kubectl-disagg"
    target = home / "venv" / "bin" / program
    if not (home / "ready").exists():
        install(home, wheel_name, wheel)
    os.execv(target, [program, *sys.argv[1:]])


def install(home: Path, wheel_name: str, wheel: bytes) -> None:
    home.mkdir(parents=True, exist_ok=True)
    with open(home / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two first runs at once: one installs, the other waits
        if (home / "ready").exists():
            return
        print(f"kubectl-disagg: first run: installing into {home} (dependencies from PyPI)", file=sys.stderr)
        (home / wheel_name).write_bytes(wheel)
        try:
            venv.EnvBuilder(with_pip=True, clear=True).create(home / "venv")
        except (OSError, subprocess.CalledProcessError) as err:
            fail(f"cannot create a virtual environment in {home}: {err} (Debian/Ubuntu: apt-get install python3-venv)")
        pip = [str(home / "venv" / "bin" / "python"), "-m", "pip", "install", "--quiet",
               "--disable-pip-version-check", str(home / wheel_name)]
        if subprocess.run(pip, stdout=sys.stderr).returncode != 0:
            fail(f"installing {wheel_name} failed (see pip's message above); run again to retry")
        (home / "ready").touch()


main()
