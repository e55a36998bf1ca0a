"""The docs site's build (host only): the pages ``docs/pages`` leaves to be generated,
and the checks that fail ``python3 build.py docs``.

MkDocs runs :mod:`.mkdocs_hooks`; the generators live in :mod:`.generated` and the
docstring check in :mod:`.api_check`.
"""
