"""Fixtures of the teams area. Repositories come from `tests/conftest.py`: `make_repo` (an http URL on the
local Git server, what users give), `make_local_repo` (a bare repository on disk), `hosted_git_root`."""
