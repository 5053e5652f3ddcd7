"""The floor of the template-change step: the same writes, sent by a minimal client of our own
at the same concurrency. A yardstick for the budgets (issue 30), not a tool.

    python benchmarks/write_floor.py KUBECONFIG CONTEXT WRITES FROM TO [--in-flight N]

WRITES is what `step_writes.py` recorded of one step in namespace FROM; they are sent to
namespace TO (FROM replaced in each path and body), where the same set is deployed as it was in
FROM before the step. `--in-flight` threads (default 16, the step's `--max-in-flight`) take the
writes in the recorded order, each over its own kept-alive TLS connection, and read each answer
whole without decoding it; any answer but 2xx stops the process (exit 1). It prints the number
of writes and the seconds from the first sent to the last answered. What this takes is the
API server and etcd storing those writes on this machine, plus the least a CPython client (with
click and PyYAML imported, as `status_floor.py` connects) spends sending them. No reads, no
Lease, no planning.
"""

import argparse
import json
import queue
import sys
import threading
import time

from status_floor import connect, read_answer  # this directory is on sys.path: run as a script

SKIPPED_HEADERS = {"host", "authorization", "content-length", "user-agent"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kubeconfig")
    parser.add_argument("context")
    parser.add_argument("writes")
    parser.add_argument("source", metavar="FROM")
    parser.add_argument("target", metavar="TO")
    parser.add_argument("--in-flight", type=int, default=16)
    args = parser.parse_args()
    open_socket, host, token, _ = connect(args.kubeconfig, args.context)
    old, new = args.source.encode(), args.target.encode()
    messages: queue.SimpleQueue = queue.SimpleQueue()
    count = 0
    with open(args.writes, "rb") as lines:
        for line in lines:
            write = json.loads(line)
            body = write["body"].encode("latin-1").replace(old, new)
            target = write["target"].replace(f"/namespaces/{args.source}/", f"/namespaces/{args.target}/")
            head = [f"{write['method']} {target} HTTP/1.1",
                    f"Host: {host}", f"Authorization: Bearer {token}", "Accept-Encoding: gzip",
                    *(f"{k}: {v}" for k, v in write["headers"].items() if k.lower() not in SKIPPED_HEADERS),
                    f"Content-Length: {len(body)}"]
            messages.put(("\r\n".join(head) + "\r\n\r\n").encode() + body)
            count += 1
    failures: list[str] = []

    def worker() -> None:
        with open_socket() as sock, sock.makefile("rb") as stream:
            while not failures:
                try:
                    message = messages.get_nowait()
                except queue.Empty:
                    return
                sock.sendall(message)
                status, answer = read_answer(stream)
                if not 200 <= status <= 299:
                    failures.append(f"{message.split(b' HTTP/1.1')[0].decode()}: HTTP {status}: {answer[:300]!r}")

    threads = [threading.Thread(target=worker) for _ in range(min(args.in_flight, count))]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seconds = time.perf_counter() - started
    if failures:
        print(f"write_floor: {len(failures)} write(s) refused; first: {failures[0]}", file=sys.stderr)
        return 1
    print(count, f"{seconds:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
