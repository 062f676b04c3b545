"""`python -m platform_app.cli`: the same as the `svc` console script."""
from platform_app.cli.main import main

main()
