"""One command as a whole process: its wall time, CPU time and peak RSS; every benchmark that
times processes measures them here.

The command is not started by the benchmark itself but by this file run as a small launcher
(`python -I -S measure.py FD ARGV...`). A process's peak RSS (ru_maxrss) counts the memory of the
process it was spawned from until it execs: started by a benchmark holding a control plane
client and 2,000 objects, `kubectl get` and `rollout status` would both report the benchmark's
80 MB as their own. The launcher is a few MB, so no command is charged for more than it uses.
It times the command around its own spawn and reap, so its start-up is not counted either.
"""

import json
import os
import subprocess
import sys
import time
from collections import namedtuple

# seconds: wall time around spawn and reap; cpu_seconds: user + system (less disturbed by load);
# peak_kib: peak RSS in KiB (Linux's ru_maxrss unit).
Run = namedtuple("Run", "seconds cpu_seconds peak_kib")


class CommandFailed(Exception):
    """The command could not start, or exited with a code it should not have."""


def measure(argv: list, stdout_path=None, capture: bool = False, ok: tuple = (0,)) -> tuple:
    """Run `argv` to completion: (Run, its stdout when `capture`, else b""). Without `capture`,
    stdout goes to `stdout_path` or nowhere. Raises CommandFailed when its exit code is not in `ok`."""
    report_read, report_write = os.pipe()
    try:
        with open(stdout_path or os.devnull, "wb") as sink:
            proc = subprocess.Popen([sys.executable, "-I", "-S", __file__, str(report_write), *argv],
                                    stdin=subprocess.DEVNULL, stdout=subprocess.PIPE if capture else sink,
                                    stderr=subprocess.PIPE, pass_fds=(report_write,))
            os.close(report_write)
            report_write = None
            out, err = proc.communicate()
        with os.fdopen(report_read, "rb") as report:
            report_read = None
            result = json.loads(report.read() or b"{}")
    finally:
        for fd in (report_read, report_write):
            if fd is not None:
                os.close(fd)
    if "code" not in result:
        raise CommandFailed(f"{argv[0]} did not run: {result.get('error') or err.decode(errors='replace')[-2000:]}")
    if result["code"] not in ok:
        raise CommandFailed(f"{' '.join(argv)} exited {result['code']}: {err.decode(errors='replace')[-2000:].strip()}")
    return Run(result["seconds"], result["cpu_seconds"], result["peak_kib"]), out or b""


def _launch(report_fd: int, argv: list) -> None:
    os.set_inheritable(report_fd, False)  # the command must not hold the report open
    with os.fdopen(report_fd, "w") as report:
        start = time.perf_counter()
        try:
            pid = os.posix_spawnp(argv[0], argv, os.environ)
        except OSError as err:
            json.dump({"error": str(err)}, report)
            return
        _, status, usage = os.wait4(pid, 0)
        seconds = time.perf_counter() - start
        json.dump({"code": os.waitstatus_to_exitcode(status), "seconds": seconds,
                   "cpu_seconds": usage.ru_utime + usage.ru_stime, "peak_kib": usage.ru_maxrss}, report)


if __name__ == "__main__":
    _launch(int(sys.argv[1]), sys.argv[2:])
