"""kubectl-disagg as one file: this zip carries kubectl_disagg and its dependencies as pure
Python, and runs them from the zip. Run under the name kubectl_complete-disagg (a link), it
answers kubectl's completion requests instead.
"""

import sys

if sys.version_info < (3, 11):
    sys.exit(f"kubectl-disagg: error: needs python3 >= 3.11; this is {sys.version.split()[0]}")

if sys.argv[0].rpartition("/")[2].startswith("kubectl_complete-"):
    from kubectl_disagg.commands.complete import complete_main as main
else:
    from kubectl_disagg.cli import main

main()
