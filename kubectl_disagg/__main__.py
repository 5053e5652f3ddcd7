from kubectl_disagg.cli import main

main()
