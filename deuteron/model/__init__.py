"""The data every command shares: the profile tree, traces, kernel accesses, findings, metrics
and devices. Nothing here imports anything else of Deuteron, so every layer can build on it."""
