"""The one input reader, below the rollout layers: the -f inputs (files, directories, stdin) and an
Argo CD application directory read from disk once per command (globs, Argo CD's skipped files,
the state files beside their sets), handed to the layers above as bytes to load."""
