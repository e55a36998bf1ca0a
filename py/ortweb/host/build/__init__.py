"""What the host builds for the browser: the wheels, the Pyodide packages, the sites.

Nothing is imported here: ``build.py`` loads some of these modules by path, before
any virtual environment exists, and each command imports only what it needs.
"""
