"""What the documentation site generates from the code at build time
(`tools.docs.hooks`, named in mkdocs.yml): the TOML and CLI references, the
worked examples from ``tests/transcripts``, the window-kind pictures, and the
performance pages from ``benchmarks/``."""
